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
expect 0 "decode in 3-row stripes" -- "$wai" decode --stripe-rows 3 "$vdir/v03-100x75.wai" --sha256
check "3-row stripes give the pinned hash" -- grep -q "$(pinned v03-100x75.wai)" "$tmp/out"
expect 0 "WAI_STRIPE_ROWS=2" -- env WAI_STRIPE_ROWS=2 "$wai" decode "$vdir/v03-100x75.wai" --sha256
check "WAI_STRIPE_ROWS=2 gives the pinned hash" -- grep -q "$(pinned v03-100x75.wai)" "$tmp/out"
expect 2 "--stripe-rows -1 is a usage error" -- "$wai" decode --stripe-rows -1 "$vdir/v03-100x75.wai" --sha256

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
# what the first bytes say: not WAI at all (a PNG named .wai), an empty file (issue 14)
printf '\211PNG\r\n\032\n\000\000\000\rIHDR\000\000\000\001\000\000\000\001\010\002\000\000\000' > "$tmp/pic.wai"
expect 1 "a PNG named .wai" -- "$wai" decode "$tmp/pic.wai" --sha256
check "it is named as not a WAI stream" -- grep -q "invalid bitstream: not a WAI stream" "$tmp/err"
check "no resynchronisation noise for it" -- test -z "$(grep resynchronising "$tmp/err")"
expect 1 "info on a PNG named .wai" -- "$wai" info "$tmp/pic.wai"
check "info names it as not a WAI stream" -- grep -q "not a WAI stream" "$tmp/err"
: > "$tmp/empty.wai"
expect 1 "an empty file" -- "$wai" decode "$tmp/empty.wai" --sha256
check "it is named as empty" -- grep -q "the stream is empty" "$tmp/err"

# -o /dev/null (a device or FIFO): accepted, every frame decoded (timing a decode)
expect 0 "decode to /dev/null" -- "$wai" decode "$vdir/v09-video-3x64x48.wai" -o /dev/null
expect 0 "decode to /dev/null with --sha256" -- "$wai" decode "$vdir/v09-video-3x64x48.wai" -o /dev/null --sha256
check "/dev/null output: the pinned hash of all frames" -- grep -q "$(pinned v09-video-3x64x48.wai)" "$tmp/out"

# a PNG pattern names files by frame index: a damaged frame leaves a gap, the rest keep their
# names (and pictures)
off=$("$wai" info "$vdir/v09-video-3x64x48.wai" | awk '$1 == "frame" && $2 == 1 && $3 == "at" { sub(":", "", $4); print $4 }')
cp "$vdir/v09-video-3x64x48.wai" "$tmp/dmg.wai"
printf '\377' | dd of="$tmp/dmg.wai" bs=1 seek=$((off + 40)) conv=notrunc 2>/dev/null
expect 1 "PNG pattern of a stream whose frame 1 is damaged" -- "$wai" decode "$tmp/dmg.wai" -o "$tmp/d-%03d.png"
check "frames 0 and 2 keep their names, frame 1 leaves a gap" -- test -f "$tmp/d-000.png" -a ! -f "$tmp/d-001.png" -a -f "$tmp/d-002.png" -a ! -f "$tmp/d-003.png"
check "d-002.png is frame 2" -- cmp -s "$tmp/f-002.png" "$tmp/d-002.png"

# where decoding stops does not depend on the 64 KiB reads (spec 9.1): a frame unit before any
# header, a header whose model is missing (reported, decoding goes on), filler frame units, the
# same header again (at a 64 KiB boundary in one layout, not in the other), then v09: both
# layouts give v09's three frames and status 1
v09=$vdir/v09-video-3x64x48.wai
python3 - "$v09" "$tmp" <<'PYEOF'
import struct, sys, zlib
v = open(sys.argv[1], 'rb').read()
hdr = bytearray(v[:96])
hdr[60] ^= 0xff                          # another model (not found), valid CRC
hdr[92:96] = struct.pack('<I', zlib.crc32(bytes(hdr[:92])) & 0xffffffff)
f0, f1 = v[96:694], v[694:1288]          # frame units of 598 and 594 bytes
assert f0[:4] == b'WAIF' and f1[:4] == b'WAIF' and len(f0) == 598 and len(f1) == 594
for name, n0 in (('span', 10), ('inside', 0)):
    s = f0 + bytes(hdr) + f0 * n0 + f1 * (109 - n0)
    at = len(s)                          # the second copy of the header
    assert (65536 - 96 < at < 65536) == (name == 'span'), (name, at)
    open('%s/chunk-%s.wai' % (sys.argv[2], name), 'wb').write(s + bytes(hdr) + v)
PYEOF
for layout in span inside; do
    expect 1 "unusable headers, the second one $layout a 64 KiB read" -- "$wai" decode "$tmp/chunk-$layout.wai" -o "$tmp/chunk-$layout.rgb"
    check "... decoding goes on to v09's frames ($layout)" -- test "$(sha256sum < "$tmp/chunk-$layout.rgb" | cut -d' ' -f1)" = "$(pinned v09-video-3x64x48.wai)"
done
check "the header is reported as its model not found" -- grep -q "model not found" "$tmp/err"

printf 'v01-64x64.wai 0000000000000000000000000000000000000000000000000000000000000000 1 64x64\n' > "$tmp/bad-manifest.txt"
cp "$vdir/v01-64x64.wai" "$tmp/"
expect 1 "verify detects a wrong hash" -- "$wai" verify "$tmp/bad-manifest.txt"

finish cli
