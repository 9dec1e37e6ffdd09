#!/bin/bash
# The `wai` command line: outputs, hashes and exit codes (0 ok, 1 bad input, 2 usage, 3 I/O).
#   cli.sh WAI_CLI VECTOR_DIR
set -u
wai=$1; vdir=$2
. "$(dirname "$0")/lib.sh"
pinned() { awk -v f="$1" '$1 == f { print $2 }' "$vdir/manifest.txt"; }

expect 0 "wai --help" -- "$wai" --help
for c in decode info verify; do expect 0 "wai $c --help" -- "$wai" $c --help; done
expect 2 "unknown command" -- "$wai" frobnicate
expect 2 "decode without output" -- "$wai" decode "$vdir/v01-64x64.wai"
expect 2 "unknown option" -- "$wai" decode --bogus "$vdir/v01-64x64.wai" -o "$tmp/a.png"
expect 2 "bad kernel set name" -- "$wai" decode --kernels sse9 "$vdir/v01-64x64.wai" --sha256

expect 0 "decode to PNG" -- "$wai" decode "$vdir/v01-64x64.wai" -o "$tmp/a.png"
check "PNG signature" -- test "$(head -c 8 "$tmp/a.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a
expect 0 "decode --sha256" -- "$wai" decode "$vdir/v03-100x75.wai" --sha256
check "--sha256 equals the pinned hash" -- grep -q "$(pinned v03-100x75.wai)" "$tmp/out"
expect 0 "decode to raw RGB" -- "$wai" decode "$vdir/v09-video-3x64x48.wai" -o "$tmp/v.rgb"
check "raw RGB hash equals the pinned hash" -- test "$(sha256sum < "$tmp/v.rgb" | cut -d' ' -f1)" = "$(pinned v09-video-3x64x48.wai)"
expect 0 "decode to stdout" -- "$wai" decode "$vdir/v02-1x1.wai" -o -
check "stdout is 3 bytes" -- test "$(wc -c < "$tmp/out")" -eq 3
expect 0 "decode to a PNG pattern" -- "$wai" decode "$vdir/v09-video-3x64x48.wai" -o "$tmp/f-%03d.png"
check "three PNG frames" -- test -f "$tmp/f-000.png" -a -f "$tmp/f-002.png" -a ! -f "$tmp/f-003.png"
expect 2 "multi-frame into one PNG" -- "$wai" decode "$vdir/v09-video-3x64x48.wai" -o "$tmp/one.png"
expect 0 "decode to Y4M" -- "$wai" decode "$vdir/v09-video-3x64x48.wai" -o "$tmp/v.y4m"
check "Y4M header" -- test "$(head -1 "$tmp/v.y4m")" = "YUV4MPEG2 W64 H48 F30000:1001 Ip A1:1 C444 XCOLORRANGE=FULL"
check "Y4M size" -- test "$(wc -c < "$tmp/v.y4m")" -eq $((60 + 3 * (6 + 64 * 48 * 3)))
expect 0 "info" -- "$wai" info "$vdir/v09-video-3x64x48.wai"
check "info shows size and frame rate" -- grep -q "64" "$tmp/out"
expect 0 "decode with the reference kernels" -- "$wai" decode --kernels reference "$vdir/v01-64x64.wai" --sha256
check "reference kernels give the pinned hash" -- grep -q "$(pinned v01-64x64.wai)" "$tmp/out"

# bad input: exit 1 with a message, never a crash
head -c 300 "$vdir/v03-100x75.wai" > "$tmp/trunc.wai"
expect 1 "truncated stream" -- "$wai" decode "$tmp/trunc.wai" --sha256
check "truncation is named" -- grep -qi "trunc" "$tmp/err"
cp "$vdir/v03-100x75.wai" "$tmp/flip.wai"
printf '\xff' | dd of="$tmp/flip.wai" bs=1 seek=200 conv=notrunc 2>/dev/null
expect 1 "bit-flipped frame (CRC)" -- "$wai" decode "$tmp/flip.wai" --sha256
check "CRC is named" -- grep -qi "crc" "$tmp/err"
head -c 5000 /dev/urandom > "$tmp/garbage.wai"
expect 1 "garbage" -- "$wai" decode "$tmp/garbage.wai" --sha256
mkdir "$tmp/empty"
expect 1 "model not found" -- env WAI_MODEL_PATH="$tmp/empty" "$wai" decode "$vdir/v01-64x64.wai" --sha256 --model-path "$tmp/empty"
check "missing model is named" -- grep -qi "model" "$tmp/err"
expect 0 "embedded model needs no path" -- env WAI_MODEL_PATH="$tmp/empty" "$wai" decode "$vdir/v10-embedded-32x32.wai" --sha256
expect 1 "memory budget too small" -- "$wai" decode --max-memory 100000 "$vdir/v01-64x64.wai" --sha256
expect 3 "missing input file" -- "$wai" decode "$tmp/nope.wai" --sha256
expect 3 "unwritable output" -- "$wai" decode "$vdir/v01-64x64.wai" -o "$tmp/nodir/a.png"
printf 'v01-64x64.wai 0000000000000000000000000000000000000000000000000000000000000000 1 64x64\n' > "$tmp/bad-manifest.txt"
cp "$vdir/v01-64x64.wai" "$tmp/"
expect 1 "verify detects a wrong hash" -- "$wai" verify "$tmp/bad-manifest.txt"

finish cli
