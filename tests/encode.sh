#!/bin/bash
# `wai encode` with the committed model pair: round trip through `wai decode`, determinism,
# the summary line and exit codes (0 ok, 1 bad input, 2 usage, 3 I/O).
#   encode.sh WAI_CLI TEST_ENCODER MODELS_DIR
set -u
wai=$1; te=$2; models=$3
. "$(dirname "$0")/lib.sh"
"$te" --write-png "$tmp/in.png" || { echo "FAIL cannot write the test picture"; exit 1; }

expect 0 "encode --help" -- "$wai" encode --help
check "help names --quality" -- grep -q -- --quality "$tmp/out"
expect 0 "encode q3" -- "$wai" encode "$tmp/in.png" -o "$tmp/a.wai" --quality 3 --model-dir "$models"
check "summary line: bytes and bpp" -- grep -Eq 'a\.wai: 1 frame, [0-9]+ bytes, [0-9.]+ bpp' "$tmp/err"
expect 0 "encode again (--quality=3, -q)" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/b.wai" --quality=3 --model-dir="$models"
check "quiet: no summary" -- test ! -s "$tmp/err"
check "encoding is deterministic" -- cmp -s "$tmp/a.wai" "$tmp/b.wai"
expect 0 "explicit --model/--analysis" -- "$wai" encode "$tmp/in.png" -o "$tmp/c.wai" --model "$models/wai-q3.whm" --analysis "$models/wai-q3.ana"
check "same bytes as --quality 3" -- cmp -s "$tmp/a.wai" "$tmp/c.wai"
expect 0 "two frames" -- "$wai" encode "$tmp/in.png" "$tmp/in.png" -o "$tmp/two.wai" --model-dir "$models" --fps 30000/1001
check "summary says 2 frames" -- grep -q '2 frames' "$tmp/err"
expect 0 "decode" -- "$wai" decode "$tmp/a.wai" -o "$tmp/a.rgb" --model-path "$models"
check "decoded size is 96x80 RGB24" -- test "$(stat -c %s "$tmp/a.rgb")" -eq 23040
expect 0 "decode two frames" -- "$wai" decode "$tmp/two.wai" -o "$tmp/two.rgb" --model-path "$models"
check "two identical frames" -- test "$(head -c 23040 "$tmp/two.rgb" | sha256sum)" = "$(sha256sum < "$tmp/a.rgb")"
expect 0 "decode to PNG" -- "$wai" decode "$tmp/a.wai" -o "$tmp/a.png" --model-path "$models"
expect 0 "info" -- "$wai" info "$tmp/two.wai" --model-path "$models"
check "info shows 96x80" -- grep -q '96x80' "$tmp/out"

expect 2 "no output" -- "$wai" encode "$tmp/in.png" --model-dir "$models"
expect 2 "quality 9" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --quality 9 --model-dir "$models"
expect 2 "unknown option" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --frobnicate
expect 2 "--model without --analysis" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --model "$models/wai-q3.whm"
expect 3 "missing model pair" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --quality 8 --model-dir "$models"
expect 3 "missing input" -- "$wai" encode "$tmp/nonexistent.png" -o "$tmp/x.wai" --model-dir "$models"
printf 'not a png' > "$tmp/bad.png"
expect 1 "not a PNG" -- "$wai" encode "$tmp/bad.png" -o "$tmp/x.wai" --model-dir "$models"
check "nothing written on failure" -- test ! -e "$tmp/x.wai"

finish encode.sh
