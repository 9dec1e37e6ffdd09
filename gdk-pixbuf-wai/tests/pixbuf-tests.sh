#!/bin/sh
# The GdkPixbuf loader, the thumbnailer entry and the MIME definition, from the build tree
# (meson test gdk-pixbuf; the environment comes from gdk-pixbuf-wai/meson.build):
#  1. every conformance vector, the corpus (but the 12 MP c07) and the samples load through
#     GdkPixbufLoader (in 64 KiB pieces, and in 7-byte pieces for the small ones) to frame 0's
#     RGB8: the manifest's pinned SHA-256 for single-frame vectors, `wai decode`'s frame 0
#     for the rest;
#  2. damaged, truncated and foreign files each give a GError carrying libwai's message
#     ("WAI: ..."), exit status 1, no crash, no hang;
#  3. gdk-pixbuf-thumbnailer makes a PNG thumbnail of a sample at the size asked;
#  4. shared-mime-info: with wai-mime.xml installed in a scratch data directory, GIO names a
#     .wai file, and a WAI stream under another name (magic), image/x-wai.
set -u
src=$WAI_SOURCE_ROOT; wai=$WAI_CLI; load=$PIXBUF_LOAD
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "PASS $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

. "$src/gdk-pixbuf-wai/tests/scratch-env.sh"   # the MIME type and the loader, in $tmp
export WAI_MODEL_PATH="$WAI_MODEL_PATH:$src/models:$src/vectors/corpus"

# frame 0 of FILE as `wai decode` gives it: SHA-256 of its first W*H*3 raw bytes
frame0() {
    "$wai" decode "$1" -o "$tmp/all.rgb" > /dev/null 2>&1 || return 1
    size=$("$wai" info "$1" 2>/dev/null | sed -n 's/^ *display *\([0-9]*\)x\([0-9]*\).*/\1 \2/p' | head -1)
    set -- $size
    head -c $(($1 * $2 * 3)) "$tmp/all.rgb" | sha256sum | cut -d' ' -f1
}

# 1. pictures
check() { # FILE EXPECTED_SHA WxH CHUNK
    got=$(timeout 120 "$load" "$1" "$4")
    case "$got" in
    "$3 $2 wai 3") ok "$(basename "$1") in $4-byte pieces: $3 $2" ;;
    *) bad "$(basename "$1") in $4-byte pieces: got '$got', expected $3 $2" ;;
    esac
}
while read -r f sha frames size; do
    case "$f" in ''|\#*) continue ;; esac
    [ "$frames" = 1 ] || sha=$(frame0 "$src/vectors/$f") || { bad "$f: wai decode"; continue; }
    check "$src/vectors/$f" "$sha" "$size" 65536
    check "$src/vectors/$f" "$sha" "$size" 7
done < "$src/vectors/manifest.txt"
for f in "$src"/vectors/corpus/c0[1-6]*.wai "$src"/samples/coffee-q[158].wai; do
    sha=$(frame0 "$f") || { bad "$(basename "$f"): wai decode"; continue; }
    size=$(timeout 120 "$load" "$f" | cut -d' ' -f1)
    check "$f" "$sha" "$size" 65536
done
# the size comes from the loader above, but the hash is of W*H*3 bytes of `wai decode`'s
# output, so a wrong size cannot pass; and the corpus's sizes are in its file names:
case "$(timeout 120 "$load" "$src/vectors/corpus/c03-sunset-1001x667.wai")" in
"1001x667 "*) ok "c03's size from the loader" ;; *) bad "c03's size from the loader" ;; esac

# 2. damaged, truncated and foreign files
v01=$src/vectors/v01-64x64.wai; n01=$(wc -c < "$v01")
damaged() { # NAME: expects a GError with libwai's message
    out=$(timeout 60 "$load" "$tmp/$1" 7); rc=$?
    case "$rc:$out" in
    "1:error: WAI: "*) ok "$1: $out" ;;
    *) bad "$1: exit $rc, '$out'" ;;
    esac
}
# (3 bytes, or a frame unit first: no sequence header's start code, not recognisable as WAI;
# GdkPixbuf's own error, but an error)
refused() {
    out=$(timeout 60 "$load" "$tmp/$1" 7); rc=$?
    case "$rc:$out" in "1:error: "*) ok "$1: $out" ;; *) bad "$1: exit $rc, '$out'" ;; esac
}
head -c 3 "$v01" > "$tmp/cut-3.wai"; refused cut-3.wai
for cut in 4 11 50 95 100 $((n01 / 2)) $((n01 - 1)); do
    head -c "$cut" "$v01" > "$tmp/cut-$cut.wai"; damaged "cut-$cut.wai"
done
/usr/bin/python3 - "$v01" "$tmp" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
# one flipped bit in the header's fields, its CRC, the frame unit's header and its payload
for off in (5, 14, 60, 93, 97, 110, len(data) // 2, len(data) - 2):
    d = bytearray(data); d[off] ^= 0x10
    open("%s/flip-%d.wai" % (sys.argv[2], off), "wb").write(d)
open(sys.argv[2] + "/header-only.wai", "wb").write(data[:96])
open(sys.argv[2] + "/frame-first.wai", "wb").write(data[96:] + data[:96])
EOF
for f in "$tmp"/flip-*.wai; do damaged "$(basename "$f")"; done
damaged header-only.wai
refused frame-first.wai
# not WAI at all: the loader must not claim it (GdkPixbuf's own "unknown type" error)
head -c 4096 /dev/urandom > "$tmp/garbage.bin"
out=$(timeout 60 "$load" "$tmp/garbage.bin"); rc=$?
case "$rc:$out" in
"1:error: "*) case "$out" in *"WAI:"*) bad "garbage claimed by the WAI loader: $out" ;; *) ok "garbage: $out" ;; esac ;;
*) bad "garbage: exit $rc, '$out'" ;;
esac
# a model nobody has: the header cannot be used
WAI_MODEL_PATH=$tmp timeout 60 "$load" "$src/vectors/corpus/c05-fig-33x17.wai" > "$tmp/out.txt"; rc=$?
case "$rc:$(cat "$tmp/out.txt")" in
"1:error: WAI: "*"not found"*) ok "model not found: $(cat "$tmp/out.txt")" ;;
*) bad "model not found: exit $rc, '$(cat "$tmp/out.txt")'" ;;
esac

# 3. the thumbnailer entry's command, as a file manager runs it
exe=$(sed -n 's/^Exec=//p' "$src/gdk-pixbuf-wai/wai.thumbnailer")
[ "$exe" = "gdk-pixbuf-thumbnailer -s %s %u %o" ] && ok "thumbnailer Exec line" || bad "thumbnailer Exec line: $exe"
if command -v gdk-pixbuf-thumbnailer > /dev/null; then
    timeout 120 gdk-pixbuf-thumbnailer -s 64 "file://$src/samples/coffee-q5.wai" "$tmp/thumb.png"
    dims=$(/usr/bin/python3 "$src/gdk-pixbuf-wai/tests/png-size.py" "$tmp/thumb.png" 2>&1)
    # coffee is 768x512: the thumbnail's longer side is the size asked
    [ "$dims" = "64x43" ] || [ "$dims" = "64x42" ] && ok "thumbnail $dims" || bad "thumbnail: $dims"
else
    bad "gdk-pixbuf-thumbnailer not installed (libgdk-pixbuf2.0-bin)"
fi

# 4. shared-mime-info (installed above, by scratch-env.sh)
if command -v gio > /dev/null; then
    cp "$v01" "$tmp/picture.wai"; cp "$v01" "$tmp/no-extension"
    for f in picture.wai no-extension; do
        t=$(gio info -a standard::content-type "$tmp/$f" | sed -n 's/.*standard::content-type: //p')
        [ "$t" = image/x-wai ] && ok "MIME type of $f: $t" || bad "MIME type of $f: '$t'"
    done
else
    bad "gio not installed (libglib2.0-bin)"
fi

echo "gdk-pixbuf: $pass passed, $fail failed"
[ "$fail" = 0 ]
