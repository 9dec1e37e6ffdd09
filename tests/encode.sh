#!/bin/bash
# `wai encode` with the committed model pairs: round trip through `wai decode`, determinism,
# the model search (--model-dir, $WAI_MODEL_PATH) and the error naming the installed
# qualities, PNG patterns, Y4M (file and stdin; 4:4:4 and 4:2:0), progress output, the summary
# line and exit codes (0 ok, 1 bad input, 2 usage, 3 I/O).
#   encode.sh WAI_CLI TEST_ENCODER MODELS_DIR
set -u
wai=$1; te=$2; models=$3
. "$(dirname "$0")/lib.sh"
"$te" --write-png "$tmp/in.png" || { echo "FAIL cannot write the test picture"; exit 1; }
frames() { "$wai" info "$1" --model-path "$models" | awk '/frame count/ { print $3 }'; }
fps() { "$wai" info "$1" --model-path "$models" | awk '/frame rate/ { print $3 }'; }
# mky4m FILE W H C Y U V FRAMES: a flat Y4M picture sequence
mky4m() {
    local f=$1 w=$2 h=$3 c=$4 cs
    case $c in 444) cs=$((w * h));; 420*) cs=$(( (w + 1) / 2 * ((h + 1) / 2) ));; esac
    { printf 'YUV4MPEG2 W%d H%d F30000:1001 Ip A1:1 C%s\n' "$w" "$h" "$c"
      for _ in $(seq "$8"); do
          printf 'FRAME\n'
          head -c $((w * h)) /dev/zero | tr '\0' "\\$(printf %o "$5")"
          head -c $cs /dev/zero | tr '\0' "\\$(printf %o "$6")"
          head -c $cs /dev/zero | tr '\0' "\\$(printf %o "$7")"
      done; } > "$f"
}
# mean R G B of a raw RGB24 file
meanrgb() { od -An -tu1 -v "$1" | tr -s ' ' '\n' | awk 'NF { s[n % 3] += $1; n++ } END { printf "%d %d %d\n", s[0] * 3 / n, s[1] * 3 / n, s[2] * 3 / n }'; }

expect 0 "encode --help" -- "$wai" encode --help
check "help names --quality, Y4M, patterns, the search path" -- sh -c \
    'grep -q -- --quality "$1" && grep -q Y4M "$1" && grep -q "%03d" "$1" && grep -q WAI_MODEL_PATH "$1"' sh "$tmp/out"
expect 0 "encode q3" -- "$wai" encode "$tmp/in.png" -o "$tmp/a.wai" --quality 3 --model-dir "$models"
check "summary line: bytes and bpp" -- grep -Eq 'a\.wai: 1 frame, [0-9]+ bytes, [0-9.]+ bpp' "$tmp/err"
check "no progress lines when stderr is not a terminal" -- test "$(grep -c 'frame 1' "$tmp/err")" -eq 0
expect 0 "encode again (--quality=3, -q)" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/b.wai" --quality=3 --model-dir="$models"
check "quiet: no summary" -- test ! -s "$tmp/err"
check "encoding is deterministic" -- cmp -s "$tmp/a.wai" "$tmp/b.wai"
check "no temporary file left beside the output" -- test -z "$(ls "$tmp" | grep '\.tmp-')"
expect 0 "explicit --model/--analysis" -- "$wai" encode "$tmp/in.png" -o "$tmp/c.wai" --model "$models/wai-q3.whm" --analysis "$models/wai-q3.ana"
check "same bytes as --quality 3" -- cmp -s "$tmp/a.wai" "$tmp/c.wai"
# the analysis in stripes (rounded to whole latent rows: 16 picture rows for these models) gives
# the same stream as the whole picture: the tiny picture in 5 and in 3 stripes, and a 768x512
# photo of the eval set (one stripe by default) in 32 stripes of one latent row
expect 0 "encode in 16-row stripes" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/s16.wai" --quality 3 --model-dir "$models" --stripe-rows 16
check "16-row stripes: the same bytes" -- cmp -s "$tmp/a.wai" "$tmp/s16.wai"
expect 0 "encode in 40-row stripes (2 latent rows)" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/s40.wai" --quality 3 --model-dir "$models" --stripe-rows 40
check "40-row stripes: the same bytes" -- cmp -s "$tmp/a.wai" "$tmp/s40.wai"
photo=$(dirname "$0")/../samples/eval/coffee.png
# (and the analysis's threads split output channels: 1 and 3 threads, the same bytes)
expect 0 "encode the coffee photo (1 thread)" -- "$wai" encode -q "$photo" -o "$tmp/p.wai" --quality 3 --model-dir "$models" --threads 1
expect 0 "encode the coffee photo in 1-row stripes (one latent row each), 3 threads" -- "$wai" encode -q "$photo" -o "$tmp/p1.wai" --quality 3 --model-dir "$models" --stripe-rows 1 --threads 3
check "the photo in stripes on 3 threads: the same bytes" -- cmp -s "$tmp/p.wai" "$tmp/p1.wai"
# a stripe computes only the rows the last one did not, keeping the rows the windows share
# (encoder.c, AnaCarry): 3 latent rows per stripe (the carried rows then start mid-window), and
# the variable-rate model (N=128, M=192: other channel counts and widths) in 1-row stripes
expect 0 "encode the coffee photo in 48-row stripes (3 latent rows), 2 threads" -- "$wai" encode -q "$photo" -o "$tmp/p3.wai" --quality 3 --model-dir "$models" --stripe-rows 48 --threads 2
check "48-row stripes: the same bytes" -- cmp -s "$tmp/p.wai" "$tmp/p3.wai"
expect 0 "encode q7 (the variable-rate model)" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/v.wai" --quality 7 --model-dir "$models"
expect 0 "encode q7 in 1-row stripes, 2 threads" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/v1.wai" --quality 7 --model-dir "$models" --stripe-rows 1 --threads 2
check "q7 in stripes: the same bytes" -- cmp -s "$tmp/v.wai" "$tmp/v1.wai"
# every kernel set gives the same stream (the float analysis's sums are the same floats:
# checkasm compares them bit for bit; here the whole encoder, with the decoding it does; the
# small test picture, as the reference kernels are slow under qemu and the sanitizers)
expect 0 "encode with the reference kernels" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/kr.wai" --quality 3 --model-dir "$models" --kernels reference
check "reference kernels: the same bytes" -- cmp -s "$tmp/a.wai" "$tmp/kr.wai"
expect 0 "encode with the C kernels, 3 threads" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/kc.wai" --quality 3 --model-dir "$models" --kernels c --threads 3
check "C kernels: the same bytes" -- cmp -s "$tmp/a.wai" "$tmp/kc.wai"
expect 2 "--kernels foo is a usage error" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/x.wai" --model-dir "$models" --kernels foo
expect 2 "--stripe-rows -1 is a usage error" -- "$wai" encode -q "$tmp/in.png" -o "$tmp/x.wai" --model-dir "$models" --stripe-rows -1
expect 0 "two frames" -- "$wai" encode "$tmp/in.png" "$tmp/in.png" -o "$tmp/two.wai" --model-dir "$models" --fps 30000/1001
check "summary says 2 frames" -- grep -q '2 frames' "$tmp/err"
check "header frame count 2" -- test "$(frames "$tmp/two.wai")" = 2
expect 0 "decode" -- "$wai" decode "$tmp/a.wai" -o "$tmp/a.rgb" --model-path "$models"
check "decoded size is 96x80 RGB24" -- test "$(stat -c %s "$tmp/a.rgb")" -eq 23040
expect 0 "decode two frames" -- "$wai" decode "$tmp/two.wai" -o "$tmp/two.rgb" --model-path "$models"
check "two identical frames" -- test "$(head -c 23040 "$tmp/two.rgb" | sha256sum)" = "$(sha256sum < "$tmp/a.rgb")"
expect 0 "decode to PNG" -- "$wai" decode "$tmp/a.wai" -o "$tmp/a.png" --model-path "$models"
expect 0 "info" -- "$wai" info "$tmp/two.wai" --model-path "$models"
check "info shows 96x80" -- grep -q '96x80' "$tmp/out"

# --- model search: $WAI_MODEL_PATH without --model-dir; qualities that are not there
expect 0 "no --model-dir: found through \$WAI_MODEL_PATH" -- env WAI_MODEL_PATH="/nonexistent:$models" "$wai" encode "$tmp/in.png" -o "$tmp/env.wai"
check "same bytes as --model-dir" -- cmp -s "$tmp/a.wai" "$tmp/env.wai"
# the committed pairs, found here (ascending, ", "-separated), so the checks hold for any set
# (and the quality files wai-q<N>.rate)
committed=$(for k in $(ls "$models" | sed -n 's/^wai-q\([0-9]*\)\.\(whm\|rate\)$/\1/p' | sort -nu); do
    { [ -f "$models/wai-q$k.whm" ] && [ -f "$models/wai-q$k.ana" ]; } || [ -f "$models/wai-q$k.rate" ] &&
        printf '%s\n' "$k"; done | paste -sd, - | sed 's/,/, /g')
expect 0 "--list-qualities" -- "$wai" encode --list-qualities --model-dir "$models"
check "lists the committed pairs ($committed)" -- test "$(cat "$tmp/out")" = "$committed"
# a directory with pairs 1 and 3 only: a quality without a pair there is refused
mkdir -p "$tmp/some"
ln -sf "$models/wai-q1.whm" "$models/wai-q1.ana" "$models/wai-q3.whm" "$models/wai-q3.ana" "$tmp/some/"
expect 2 "quality 2 (no model pair)" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --quality 2 --model-dir "$tmp/some"
check "the error names the installed qualities" -- grep -q 'there: 1, 3\($\| \)' "$tmp/err"
check "the error names the file and directory" -- grep -q "wai-q2.whm.*$tmp/some" "$tmp/err"
expect 2 "quality 8 through \$WAI_MODEL_PATH" -- env WAI_MODEL_PATH="$tmp/some" "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --quality 8
check "the error names the installed qualities" -- grep -q 'there: 1, 3\($\| \)' "$tmp/err"

# --- numbered PNG patterns (from the first of 0..4 up to the first gap)
for i in 1 2 3; do cp "$tmp/in.png" "$tmp/f-00$i.png"; done
cp "$tmp/in.png" "$tmp/f-005.png"   # after the gap: not taken
expect 0 "PNG pattern" -- "$wai" encode "$tmp/f-%03d.png" -o "$tmp/pat.wai" --model-dir "$models" --progress
check "3 frames (1..3, not 5)" -- test "$(frames "$tmp/pat.wai")" = 3
check "--progress: frame i/n, bytes, bpp" -- grep -Eq '^wai: frame 3/3, [0-9]+ bytes, [0-9.]+ bpp$' "$tmp/err"
expect 0 "pattern and a file" -- "$wai" encode -q "$tmp/f-%03d.png" "$tmp/in.png" -o "$tmp/pat4.wai" --model-dir "$models"
check "4 frames" -- test "$(frames "$tmp/pat4.wai")" = 4
expect 0 "decode the pattern stream" -- "$wai" decode "$tmp/pat.wai" -o "$tmp/pat.rgb" --model-path "$models"
check "its frames are the single picture's" -- test "$(tail -c 23040 "$tmp/pat.rgb" | sha256sum)" = "$(sha256sum < "$tmp/a.rgb")"
expect 3 "pattern without files" -- "$wai" encode "$tmp/g-%03d.png" -o "$tmp/x.wai" --model-dir "$models"
expect 2 "malformed pattern" -- "$wai" encode "$tmp/g-%d-%d.png" -o "$tmp/x.wai" --model-dir "$models"

# --- Y4M: 4:4:4 full range (what wai decode writes), 4:2:0 limited range, stdin, frame rate
expect 0 "decode two frames to Y4M" -- "$wai" decode "$tmp/two.wai" -o "$tmp/two.y4m" --model-path "$models"
expect 0 "encode Y4M 4:4:4" -- "$wai" encode "$tmp/two.y4m" -o "$tmp/y444.wai" --model-dir "$models"
check "2 frames, rate 30000/1001 from the Y4M header" -- test "$(frames "$tmp/y444.wai") $(fps "$tmp/y444.wai")" = "2 30000/1001"
expect 0 "--fps overrides the Y4M rate" -- "$wai" encode -q "$tmp/two.y4m" -o "$tmp/y444b.wai" --model-dir "$models" --fps 24
check "rate 24/1" -- test "$(fps "$tmp/y444b.wai")" = 24/1
mky4m "$tmp/red.y4m" 64 48 420jpeg 81 90 240 3      # BT.601 limited-range red
expect 0 "encode Y4M 4:2:0" -- "$wai" encode "$tmp/red.y4m" -o "$tmp/red.wai" --model-dir "$models" --quality 7 --progress
check "progress knows the frame count of a Y4M file" -- grep -q 'frame 3/3' "$tmp/err"
expect 0 "decode it" -- "$wai" decode "$tmp/red.wai" -o "$tmp/red.rgb" --model-path "$models"
read -r r g b <<< "$(meanrgb "$tmp/red.rgb")"
check "BT.601 limited red decodes reddish (mean $r $g $b)" -- test "$r" -gt 180 -a "$g" -lt 60 -a "$b" -lt 60
mky4m "$tmp/red709.y4m" 64 48 420 63 102 240 1       # BT.709 limited-range red
expect 0 "--matrix bt709" -- "$wai" encode "$tmp/red709.y4m" -o "$tmp/red709.wai" --model-dir "$models" --quality 7 --matrix bt709
expect 0 "decode it" -- "$wai" decode "$tmp/red709.wai" -o "$tmp/red709.rgb" --model-path "$models"
read -r r g b <<< "$(meanrgb "$tmp/red709.rgb")"
check "BT.709 red decodes reddish (mean $r $g $b)" -- test "$r" -gt 180 -a "$g" -lt 60 -a "$b" -lt 60
expect 0 "Y4M on stdin" -- sh -c '"$1" encode - -o "$2" --model-dir "$3" --quality 7 < "$4"' sh "$wai" "$tmp/red-in.wai" "$models" "$tmp/red.y4m"
check "same bytes as from the file" -- cmp -s "$tmp/red.wai" "$tmp/red-in.wai"
expect 0 "stream to stdout" -- "$wai" encode "$tmp/red.y4m" -o - --model-dir "$models" --quality 7
cp "$tmp/out" "$tmp/red-out.wai"
check "stdout stream: frame_count 0" -- test "$(frames "$tmp/red-out.wai")" = 0
expect 0 "which decodes to the same pictures" -- "$wai" decode "$tmp/red-out.wai" -o "$tmp/red-out.rgb" --model-path "$models"
check "same pictures" -- cmp -s "$tmp/red.rgb" "$tmp/red-out.rgb"
printf 'YUV4MPEG2 W64 H48 F25:1 C420p10\nFRAME\n' > "$tmp/p10.y4m"
expect 1 "10-bit Y4M" -- "$wai" encode "$tmp/p10.y4m" -o "$tmp/x.wai" --model-dir "$models"
check "says what is supported" -- grep -q "C420p10.*not supported" "$tmp/err"
printf 'YUV4MPEG2 W64 H48 F25:1 It C444\nFRAME\n' > "$tmp/it.y4m"
expect 1 "interlaced Y4M" -- "$wai" encode "$tmp/it.y4m" -o "$tmp/x.wai" --model-dir "$models"
head -c 3000 "$tmp/red.y4m" > "$tmp/cut.y4m"
expect 1 "Y4M frame cut short" -- "$wai" encode "$tmp/cut.y4m" -o "$tmp/x.wai" --model-dir "$models"
printf 'YUV4MPEG2 W64 F25:1 C444\n' > "$tmp/nosize.y4m"
expect 1 "Y4M without a height" -- "$wai" encode "$tmp/nosize.y4m" -o "$tmp/x.wai" --model-dir "$models"
head -n 1 "$tmp/red.y4m" > "$tmp/noframe.y4m"
expect 1 "Y4M without frames" -- "$wai" encode "$tmp/noframe.y4m" -o "$tmp/x.wai" --model-dir "$models"
expect 1 "not Y4M on stdin" -- sh -c '"$1" encode - -o "$2" --model-dir "$3" < "$4"' sh "$wai" "$tmp/x.wai" "$models" "$tmp/in.png"
expect 1 "frames of two sizes" -- "$wai" encode "$tmp/red.y4m" "$tmp/in.png" -o "$tmp/x.wai" --model-dir "$models"
check "says which sizes" -- grep -q '96x80.*64x48' "$tmp/err"
expect 2 "stdin twice" -- "$wai" encode - - -o "$tmp/x.wai" --model-dir "$models"
expect 2 "bad --matrix" -- "$wai" encode "$tmp/red.y4m" -o "$tmp/x.wai" --matrix bt2020

expect 2 "no output" -- "$wai" encode "$tmp/in.png" --model-dir "$models"
expect 2 "quality 17 (past the highest)" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --quality 17 --model-dir "$models"
expect 2 "unknown option" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --frobnicate
expect 2 "--model without --analysis" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --model "$models/wai-q3.whm"
expect 3 "unreadable explicit model" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --model "$tmp/none.whm" --analysis "$tmp/none.ana"
expect 3 "missing input" -- "$wai" encode "$tmp/nonexistent.png" -o "$tmp/x.wai" --model-dir "$models"
printf 'not a png' > "$tmp/bad.png"
expect 1 "not a PNG" -- "$wai" encode "$tmp/bad.png" -o "$tmp/x.wai" --model-dir "$models"
check "nothing written on failure" -- test ! -e "$tmp/x.wai"
cp "$tmp/a.wai" "$tmp/keep.wai"
expect 1 "a failure in the second picture" -- "$wai" encode "$tmp/in.png" "$tmp/bad.png" -o "$tmp/keep.wai" --model-dir "$models"
check "leaves an existing output untouched" -- cmp -s "$tmp/a.wai" "$tmp/keep.wai"
check "and no temporary file" -- test -z "$(ls "$tmp" | grep '\.tmp-')"

# rate control (issue 25): the frame a target picks is the frame of that --quality
# the top: the highest committed pair
top=${committed##*, }
for q in 1 5 "$top"; do "$wai" encode -q "$tmp/in.png" -o "$tmp/q$q.wai" --quality "$q" --model-dir "$models"; done
s5=$(stat -c %s "$tmp/q5.wai")
expect 0 "--target-size of q5's stream" -- "$wai" encode "$tmp/in.png" -o "$tmp/t5.wai" --target-size "$s5" --model-dir "$models"
check "the same bytes as --quality 5" -- cmp -s "$tmp/t5.wai" "$tmp/q5.wai"
check "says it chose quality 5, met" -- grep -q -- '--target-size: chose quality 5 (1 frame) in [0-9]* codings\?; target met' "$tmp/err"
expect 0 "--target-size one byte less" -- "$wai" encode "$tmp/in.png" -o "$tmp/t4.wai" --target-size $((s5 - 1)) --model-dir "$models"
check "a smaller stream, at quality 4" -- sh -c 'test $(stat -c %s "$1") -lt $2 && grep -q "chose quality 4 " "$3"' sh "$tmp/t4.wai" "$s5" "$tmp/err"
expect 0 "--target-size 1 (no quality meets it: not an error)" -- "$wai" encode "$tmp/in.png" -o "$tmp/t1.wai" --target-size 1 --model-dir "$models"
check "the smallest frame, q1's, and says so" -- sh -c 'cmp -s "$1" "$2" && grep -q "cannot meet it (the smallest frame taken)" "$3"' sh "$tmp/t1.wai" "$tmp/q1.wai" "$tmp/err"
expect 0 "--target-psnr 99" -- "$wai" encode "$tmp/in.png" -o "$tmp/tp.wai" --target-psnr 99 --model-dir "$models"
check "the highest quality, and says so" -- sh -c 'cmp -s "$1" "$2" && grep -q "lowest PSNR [0-9.]* dB, in [0-9]* codings\?; 1 frame cannot meet it (the highest quality taken)" "$3"' sh "$tmp/tp.wai" "$tmp/q$top.wai" "$tmp/err"
expect 0 "--target-psnr 10 (met by every quality: the lowest)" -- "$wai" encode "$tmp/in.png" -o "$tmp/tq.wai" --target-psnr 10 --model-dir "$models"
check "q1's stream" -- cmp -s "$tmp/tq.wai" "$tmp/q1.wai"
expect 0 "--target-bpp 1.5 over two pictures" -- "$wai" encode "$tmp/in.png" "$tmp/in.png" -o "$tmp/tb.wai" --target-bpp 1.5 --model-dir "$models"
check "within 1.5 bpp (96x80x2 pictures: 2880 bytes)" -- test "$(stat -c %s "$tmp/tb.wai")" -le 2880
"$wai" decode "$tmp/tb.wai" -o "$tmp/tb.rgb" --model-path "$models" 2>/dev/null
check "decodes to two frames" -- test "$(stat -c %s "$tmp/tb.rgb" 2>/dev/null)" = 46080
expect 0 "--target-size 2k with an embedded model (the header alone is bigger)" -- "$wai" encode "$tmp/in.png" -o "$tmp/te.wai" --target-size 2k --embed-model --model-dir "$models"
check "keeps the header's quality: no second model in the stream" -- test "$(stat -c %s "$tmp/te.wai")" -lt $((2 * $(stat -c %s "$models/wai-q3.whm")))
mky4m "$tmp/grey.y4m" 64 48 444 128 128 128 2
expect 2 "--target-size with Y4M from a pipe (no frame count)" -- sh -c '"$1" encode - -o "$2" --target-size 10k --model-dir "$3" < "$4"' sh "$wai" "$tmp/x.wai" "$models" "$tmp/grey.y4m"
expect 0 "--target-bpp with Y4M from a pipe (per frame)" -- sh -c '"$1" encode - -o "$2" --target-bpp 0.5 --model-dir "$3" < "$4"' sh "$wai" "$tmp/tg.wai" "$models" "$tmp/grey.y4m"
check "within 0.5 bpp per frame, plus the header" -- test "$(stat -c %s "$tmp/tg.wai")" -le $((64 * 48 * 2 / 16 + 96))
expect 2 "--target-size 0" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --target-size 0 --model-dir "$models"
expect 2 "--target-bpp -1" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --target-bpp -1 --model-dir "$models"
expect 2 "--target-psnr nan" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --target-psnr nan --model-dir "$models"
expect 2 "two targets" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --target-size 2k --target-psnr 30 --model-dir "$models"
check "says one at most" -- grep -q "one of --target-size, --target-bpp and --target-psnr" "$tmp/err"
expect 2 "a target with --model" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --target-psnr 30 --model "$models/wai-q3.whm" --analysis "$models/wai-q3.ana"
expect 2 "a target with no quality installed" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --target-psnr 30 --model-dir "$tmp/nowhere"
check "says no quality is installed" -- grep -q "no quality is installed" "$tmp/err"

# --rate: a variable-rate model (format 1.1; test_encoder makes q3 with a 3-rate table)
"$te" --write-rates-pair "$models" "$tmp/vr.whm" "$tmp/vr.ana" || echo "FAIL cannot write the rates pair"
check "help names --rate" -- sh -c '"$1" encode --help | grep -q -- "--rate N"' sh "$wai"
expect 0 "--rate 1" -- "$wai" encode "$tmp/in.png" -o "$tmp/r1.wai" --rate 1 --model "$tmp/vr.whm" --analysis "$tmp/vr.ana" --embed-model
expect 0 "--rate 2" -- "$wai" encode "$tmp/in.png" -o "$tmp/r2.wai" --rate 2 --model "$tmp/vr.whm" --analysis "$tmp/vr.ana" --embed-model
expect 0 "info of the --rate 1 stream" -- "$wai" info "$tmp/r1.wai"
check "a WIH2 frame of rate 1" -- grep -q "rate 1," "$tmp/out"
check "rate 1 (qstep 2+) is smaller than rate 2 (qstep 0.5)" -- test "$(stat -c %s "$tmp/r1.wai")" -lt "$(stat -c %s "$tmp/r2.wai")"
expect 0 "decode the --rate 1 stream" -- "$wai" decode "$tmp/r1.wai" -o "$tmp/r1.rgb"
check "decoded size is 96x80 RGB24" -- test "$(stat -c %s "$tmp/r1.rgb")" -eq 23040
expect 0 "no --rate with the same model: WIH1" -- "$wai" encode "$tmp/in.png" -o "$tmp/rn.wai" --model "$tmp/vr.whm" --analysis "$tmp/vr.ana"
expect 0 "info" -- "$wai" info "$tmp/rn.wai"
check "no rate named" -- sh -c '! grep -q "rate [0-9]*," "$1"' sh "$tmp/out"
expect 2 "--rate 3 (the model has 3)" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --rate 3 --model "$tmp/vr.whm" --analysis "$tmp/vr.ana"
check "says the model has 3 rates (0..2)" -- grep -q "rate 3: model wai-q3-rates has 3 rates (0..2)" "$tmp/err"
expect 2 "--rate 0 with a model without rates" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --rate 0 --quality 3 --model-dir "$models"
check "says it has no rate table" -- grep -q "rate 0: model .* has no rate table" "$tmp/err"
expect 2 "--rate with a target" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --rate 0 --target-psnr 30 --model-dir "$models"
expect 2 "--rate -1 (not a number 0..255)" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --rate -1 --model-dir "$models"
# a quality file: quality 4 of a directory is rate 1 of the pair (the same stream as --rate 1)
mkdir -p "$tmp/qf"
cp "$tmp/vr.whm" "$tmp/qf/wai-vrt.whm"; cp "$tmp/vr.ana" "$tmp/qf/wai-vrt.ana"
printf '# quality 4: rate 1 of wai-vrt\nmodel wai-vrt\nrate 1\n' > "$tmp/qf/wai-q4.rate"
printf 'model wai-vrt\nrate 7\n' > "$tmp/qf/wai-q5.rate"
expect 0 "--list-qualities with quality files" -- "$wai" encode --list-qualities --model-dir "$tmp/qf"
check "lists 4 and 5" -- test "$(cat "$tmp/out")" = "4, 5"
expect 0 "--quality 4 from wai-q4.rate" -- "$wai" encode "$tmp/in.png" -o "$tmp/q4.wai" --quality 4 --model-dir "$tmp/qf" --embed-model
check "the same stream as --rate 1 with the pair" -- cmp -s "$tmp/q4.wai" "$tmp/r1.wai"
expect 2 "--quality 5 (rate 7 of a 3-rate model)" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --quality 5 --model-dir "$tmp/qf"
check "says which file and that the model has 3 rates" -- grep -q "rate 7 of .*wai-q5.rate: model wai-q3-rates has 3 rates" "$tmp/err"
expect 2 "--quality 4 --rate 0" -- "$wai" encode "$tmp/in.png" -o "$tmp/x.wai" --quality 4 --rate 0 --model-dir "$tmp/qf"
check "says quality 4 is already rate 1" -- grep -q "quality 4 is already rate 1" "$tmp/err"

finish encode.sh
