#!/bin/bash
# The Debian packages (debian/, issue 14): build them from a copy of this checkout with
# `dpkg-buildpackage -b -us -uc`, run lintian (any E: fails), install them, check that they work
# with no environment (GStreamer: gst-inspect, playbin, gst-discoverer, a decode to the pinned
# hash; `wai decode --sha256`, `wai encode --list-qualities`, a program built with
# `pkg-config --cflags --libs wai`), then purge them and check that nothing they installed is
# left. Ends with "debian-packages: N passed, M failed"; exits non-zero on a failure.
#
#   tests/debian-packages.sh          (as root, or a user with sudo; tools/install-deps.sh first)
#
# DEB_BUILD_OPTIONS is used as given, else "parallel=2". The build runs the short build-time
# test subset of debian/rules (DEB_BUILD_OPTIONS=nocheck skips it). WAI_DEB_LOG_DIR, if set,
# receives the build log and lintian's output (debian-build.log, debian-lintian.log).
# Time: about 2 minutes (110 and 131 s measured on 2026-12-03 on the 2-core CI machine, with
# DEB_BUILD_OPTIONS=parallel=1 under nice 19 while a training job kept both cores busy: the
# build with its tests 76-93 s, lintian 11-16 s, install, checks and purge about 20 s).
#
# "No environment": every check of the installed packages runs under `env -i` with only
# PATH=/usr/bin:/bin, LANG=C.UTF-8 and HOME set, from an empty directory. So no WAI_MODEL_PATH,
# GST_PLUGIN_PATH, GST_PLUGIN_SYSTEM_PATH, GST_REGISTRY or LD_LIBRARY_PATH reaches them; HOME
# is a new empty directory, as a new user has: GStreamer builds its registry cache there on
# first use from the system plugin directory alone (no stale cache of this user's, and this
# user's cache is not touched).
#
# It leaves the machine as it found it: an EXIT trap purges the WAI packages and any package the
# install pulled in, even when a check fails or the script is interrupted. It refuses to run
# when a WAI package is already installed (it would remove it). The installed system plugin
# would shadow the build-tree plugin of the other tests, which is why tools/run-tests.sh runs
# this stage last.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh          # $tmp, pass/fail counting: expect, check, finish
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
pkgs="libwai0 libwai-dev wai-tools gstreamer1.0-wai wai-gdk-pixbuf python3-wai wai-models"
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=2}

installed_pkgs() {   # every installed package (name:arch), sorted
    dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' 2>/dev/null |
        awk '$1 ~ /^.i/ { print $2 }' | sed 's/:all$//' | sort
}
ours_installed() {   # those of our packages still known to dpkg (installed or config-files)
    local p; for p in $pkgs; do
        dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.[^n]' && echo "$p"
    done
}
purge_all() {        # our packages, and what the install added (compared with $tmp/before)
    local extra=""
    [ -f "$tmp/before" ] && extra=$(installed_pkgs | comm -13 "$tmp/before" - | tr '\n' ' ')
    local left; left="$(ours_installed | tr '\n' ' ')$extra"
    [ -n "${left// /}" ] || return 0
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get purge -y -q $left > "$tmp/purge.log" 2>&1 ||
        DEBIAN_FRONTEND=noninteractive $SUDO dpkg --purge $left >> "$tmp/purge.log" 2>&1
}
cleanup() { [ -n "${installed:-}" ] && purge_all; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

t0=$(date +%s)
already=$(ours_installed | tr '\n' ' ')
if [ -n "$already" ]; then
    echo "FAIL WAI packages are already installed ($already): remove them first"
    fail=$((fail + 1)); finish debian-packages; exit 1
fi

# --- build from a copy: tracked files and untracked ones that git does not ignore
mkdir -p "$tmp/src" "$tmp/run" "$tmp/home"
b=$tmp/src/wai
mkdir "$b"
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
    xargs -0 cp -a --parents -t "$b"
(cd "$b" && dpkg-buildpackage -b -us -uc) > "$tmp/build.log" 2>&1; rc=$?
[ -n "${WAI_DEB_LOG_DIR:-}" ] && cp "$tmp/build.log" "$WAI_DEB_LOG_DIR/debian-build.log"
check "dpkg-buildpackage -b -us -uc ($DEB_BUILD_OPTIONS; $(($(date +%s) - t0)) s)" -- test $rc -eq 0
[ $rc -eq 0 ] || tail -40 "$tmp/build.log"
debs=""
for p in $pkgs; do
    d=$(ls "$tmp"/src/${p}_*.deb 2>/dev/null | head -1)
    check "package $p built" -- test -n "$d"
    debs="$debs $d"
done
check "build-time tests ran and passed (or nocheck)" -- sh -c \
    'case " $2 " in *" nocheck "*) exit 0;; esac; grep -Eq "^Ok: *[1-9]" "$1" && grep -Eq "^Fail: *0" "$1"' \
    sh "$tmp/build.log" "$(echo "$DEB_BUILD_OPTIONS" | tr ',' ' ')"
check "dpkg-gensymbols: debian/libwai0.symbols matches the library (no new or missing symbols)" -- \
    sh -c 'test -f "$1/debian/libwai0.symbols" && ! grep -q "dpkg-gensymbols: warning" "$2"' sh "$b" "$tmp/build.log"
if [ $rc -ne 0 ] || [ -z "$(ls "$tmp"/src/*.changes 2>/dev/null)" ]; then finish debian-packages; exit 1; fi

# --- lintian: errors fail; warnings are listed (debian/README.source says why each is left)
t1=$(date +%s)
lintian --no-tag-display-limit --info "$tmp"/src/*.changes > "$tmp/lintian.log" 2>&1
grep -E '^E: ' "$tmp/lintian.log" > "$tmp/lintian-errors"
[ -n "${WAI_DEB_LOG_DIR:-}" ] && cp "$tmp/lintian.log" "$WAI_DEB_LOG_DIR/debian-lintian.log"
check "lintian: no errors ($(wc -l < "$tmp/lintian-errors") E:, $(grep -c '^W: ' "$tmp/lintian.log") W:; $(($(date +%s) - t1)) s)" -- \
    test ! -s "$tmp/lintian-errors"
sed 's/^/  | /' "$tmp/lintian-errors" | head -20
grep -E '^W: ' "$tmp/lintian.log" | sed 's/^/  lintian | /'

# --- install
installed_pkgs > "$tmp/before"
installed=1
expect 0 "apt-get install the packages" -- env DEBIAN_FRONTEND=noninteractive $SUDO \
    apt-get install -y -q --no-install-recommends $debs
for p in $pkgs; do dpkg -L "$p" 2>/dev/null; done | sort -u |
    while IFS= read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "$f"; done > "$tmp/files"
check "the packages installed files ($(wc -l < "$tmp/files"))" -- test -s "$tmp/files"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
check "plugin in the system plugin directory" -- test -f "/usr/lib/$multiarch/gstreamer-1.0/libgstwai.so"

# --- the checks, with no environment (header): run from an empty directory
clean() { (cd "$tmp/run" && env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME="$tmp/home" "$@"); }
sample=$b/samples/coffee-q3.wai
want=$(awk '$1 == "coffee-q3.wai" { print $2 }' "$b/samples/manifest.txt")
check "samples/manifest.txt pins coffee-q3.wai" -- test -n "$want"

expect 0 "gst-inspect-1.0 waidec" -- clean gst-inspect-1.0 waidec
# (/lib: GStreamer names the directory it found libgstreamer in; /lib is /usr/lib, merged /usr)
check "waidec comes from the system plugin" -- \
    grep -Eq "Filename +(/usr)?/lib/$multiarch/gstreamer-1.0/libgstwai.so$" "$tmp/out"
grep -E "^ *Filename" "$tmp/out" | sed 's/^ */  | /' 
expect 0 "gst-launch-1.0 playbin (fake sinks)" -- clean timeout 120 gst-launch-1.0 playbin \
    "uri=file://$sample" video-sink=fakesink audio-sink=fakesink
check "playbin reached the end of the stream" -- grep -q "EOS" "$tmp/out"
expect 0 "gst-discoverer-1.0 samples/coffee-q3.wai" -- clean timeout 120 gst-discoverer-1.0 "$sample"
check "discoverer reports a 600x400 image (one picture: image/x-wai)" -- sh -c \
    'grep -q "video(image) #0: image/x-wai" "$1" && grep -Eq "Width: 600" "$1" && grep -Eq "Height: 400" "$1"' sh "$tmp/out"
expect 0 "gst-launch-1.0 filesrc ! waidec ! filesink" -- clean timeout 120 gst-launch-1.0 -q \
    filesrc "location=$sample" ! waidec ! filesink "location=$tmp/run/gst.rgb"
check "GStreamer decode has the manifest's hash" -- \
    test "$(sha256sum < "$tmp/run/gst.rgb" | cut -d' ' -f1)" = "$want"

expect 0 "wai decode --sha256" -- clean wai decode "$sample" --sha256
check "wai decode gives the manifest's hash ($want)" -- test "$(cat "$tmp/out")" = "$want"
# the committed qualities: the pairs wai-qN.whm + .ana and the quality files wai-qN.rate
committed=$(for k in $(ls "$b/models" | sed -n 's/^wai-q\([0-9]*\)\.\(whm\|rate\)$/\1/p' | sort -nu); do
    { [ -f "$b/models/wai-q$k.whm" ] && [ -f "$b/models/wai-q$k.ana" ]; } ||
        [ -f "$b/models/wai-q$k.rate" ] && printf '%s\n' "$k"; done |
    paste -sd, - | sed 's/,/, /g')
expect 0 "wai encode --list-qualities" -- clean wai encode --list-qualities
check "lists the qualities of models/ ($committed)" -- test "$(cat "$tmp/out")" = "$committed"
# rate control (issue 25): a target size picks the quality whose stream fits, byte for byte
# the stream of that quality; GStreamer's bitrate property
clean wai decode "$sample" -o "$tmp/run/pic.png" > /dev/null 2>&1
expect 0 "wai encode --quality 2 (installed models)" -- clean wai encode -q pic.png -o q2.wai --quality 2
expect 0 "wai encode --target-size (q2's size)" -- clean wai encode pic.png -o t2.wai --target-size "$(stat -c %s "$tmp/run/q2.wai")"
check "the same bytes as --quality 2, and it says so" -- sh -c \
    'cmp -s "$1/q2.wai" "$1/t2.wai" && grep -q "chose quality 2 (1 frame) in [0-9]* codings\?; target met" "$2"' sh "$tmp/run" "$tmp/err"
expect 0 "python3: wai.encode(target_size=) gives the CLI's stream" -- clean python3 -c \
    "import sys, wai; from PIL import Image; import numpy as np; a = np.asarray(Image.open('pic.png').convert('RGB')); st = []; d = wai.encode(a, target_size=int(sys.argv[1]), stats=st); print(d == open('t2.wai', 'rb').read(), st[0]['quality'])" "$(stat -c %s "$tmp/run/q2.wai")"
check "True, quality 2" -- grep -qx "True 2" "$tmp/out"
kbps=$(( $(stat -c %s "$tmp/run/q2.wai") * 8 * 25 / 1000 + 1 ))   # room for q2's frame at 25 fps
expect 0 "gst-launch-1.0 pngdec ! waienc bitrate=$kbps ! filesink" -- clean timeout 300 gst-launch-1.0 -q \
    filesrc location=pic.png ! pngdec ! videoconvert ! waienc bitrate=$kbps ! filesink location=gb.wai
check "within $kbps kbit/s at 25 fps (one frame and the header)" -- \
    test "$(stat -c %s "$tmp/run/gb.wai")" -le $((96 + kbps * 1000 / 8 / 25))
expect 0 "wai decode of waienc's stream" -- clean wai decode gb.wai --sha256
clean wai bench --help > "$tmp/bench.out" 2>&1
check "wai bench --help runs the installed wai-bench" -- grep -q 'usage: wai-bench' "$tmp/bench.out"

# GdkPixbuf (wai-gdk-pixbuf): the packages' triggers registered the loader and the MIME type
cache=/usr/lib/$multiarch/gdk-pixbuf-2.0/2.10.0/loaders.cache
check "libgdk-pixbuf's trigger added the loader to $cache" -- grep -q 'libpixbufloader-wai.so' "$cache"
expect 0 "gio info: the MIME type of a .wai file" -- clean gio info -a standard::content-type "$sample"
check "it is image/x-wai" -- grep -q 'standard::content-type: image/x-wai' "$tmp/out"
cp "$sample" "$tmp/run/no-extension"
expect 0 "gio info: a WAI stream without the extension (magic)" -- clean gio info -a standard::content-type no-extension
check "it is image/x-wai" -- grep -q 'standard::content-type: image/x-wai' "$tmp/out"
expect 0 "cc pixbuf-load.c \$(pkg-config --cflags --libs gdk-pixbuf-2.0)" -- clean sh -c \
    "cc -o pixbuf-load $b/gdk-pixbuf-wai/tests/pixbuf-load.c \$(pkg-config --cflags --libs gdk-pixbuf-2.0)"
expect 0 "GdkPixbufLoader opens the sample" -- clean ./pixbuf-load "$sample"
check "GdkPixbuf gives the manifest's hash, through the wai loader" -- grep -qx "600x400 $want wai 3" "$tmp/out"
expect 0 "gdk-pixbuf-thumbnailer -s 64 (the thumbnailer entry's command)" -- \
    clean timeout 120 gdk-pixbuf-thumbnailer -s 64 "file://$sample" thumb.png
check "a 64x43 PNG thumbnail" -- test "$(python3 "$b/gdk-pixbuf-wai/tests/png-size.py" "$tmp/run/thumb.png")" = 64x43

# the damaged set of the loader's test (gdk-pixbuf-wai/tests/pixbuf-tests.sh), from a sample:
# cuts, one flipped bit in each part, the header alone: each a GError with libwai's message
# through the installed loader, and an OSError (not "unidentified") through Pillow
/usr/bin/python3 - "$b/samples/coffee-q1.wai" "$tmp/run" <<'PYEOF'
import sys
data = open(sys.argv[1], "rb").read()
names = []
for n in (4, 11, 50, 95, 100, len(data) // 2, len(data) - 1):
    open("%s/dmg-cut-%d.wai" % (sys.argv[2], n), "wb").write(data[:n])
for off in (5, 14, 60, 93, 97, 110, len(data) // 2, len(data) - 2):
    d = bytearray(data); d[off] ^= 0x10
    open("%s/dmg-flip-%d.wai" % (sys.argv[2], off), "wb").write(d)
open(sys.argv[2] + "/dmg-header-only.wai", "wb").write(data[:96])
PYEOF
n_dmg=0; bad_dmg=""
for f in "$tmp"/run/dmg-*.wai; do
    n_dmg=$((n_dmg + 1))
    out=$(clean timeout 60 ./pixbuf-load "$(basename "$f")" 7 2>&1); rc=$?
    case "$rc:$out" in "1:error: WAI: "*) ;; *) bad_dmg="$bad_dmg $(basename "$f") ($rc: $out)" ;; esac
done
check "GdkPixbuf: the damaged set ($n_dmg files) each gives a GError with libwai's message" -- test -z "$bad_dmg"
[ -z "$bad_dmg" ] || echo "  $bad_dmg"
expect 0 "python3: Pillow on the damaged set" -- clean python3 -c \
    "import glob, wai; from PIL import Image, UnidentifiedImageError
bad = []
for f in sorted(glob.glob('dmg-*.wai')):
    try:
        Image.open(f).load(); bad.append(f + ': no error')
    except UnidentifiedImageError as e: bad.append(f + ': unidentified')
    except OSError as e:
        if not str(e): bad.append(f + ': no message')
print(len(glob.glob('dmg-*.wai')), bad)"
check "each an OSError with libwai's message" -- grep -qx "$n_dmg \[\]" "$tmp/out"
# Eye of GNOME under Xvfb opens the sample through the installed loader and MIME type
expect 0 "Eye of GNOME under Xvfb shows the sample" -- clean sh "$b/gdk-pixbuf-wai/tests/eog-test.sh" --installed "$b"

# Python (python3-wai): the module finds the installed libwai and models by itself
expect 0 "python3: wai.decode the sample" -- clean python3 -c \
    "import hashlib, sys, wai; a = wai.decode(open(sys.argv[1], 'rb').read()); print(a.shape, hashlib.sha256(a.tobytes()).hexdigest())" "$sample"
check "wai.decode gives the manifest's hash" -- grep -qx "(1, 400, 600, 3) $want" "$tmp/out"
check "the module is Debian's (/usr/lib/python3/dist-packages/wai)" -- test -f /usr/lib/python3/dist-packages/wai/__init__.py
expect 0 "python3: Pillow opens and saves through the plugin" -- clean python3 -c \
    "import hashlib, io, sys, wai; from PIL import Image; im = Image.open(sys.argv[1]); b = io.BytesIO(); im.save(b, format='WAI', quality=2); print(im.format, im.size, hashlib.sha256(im.tobytes()).hexdigest(), wai.info(b.getvalue())['frames'])" "$sample"
check "Image.open: WAI 600x400 with the manifest's hash; save made a stream" -- grep -qx "WAI (600, 400) $want 1" "$tmp/out"

# a program built against the installed development package
cat > "$tmp/run/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wai/wai.h>
#include <wai/version.h>
int main(int argc, char **argv)
{
    if (argc != 2 || strcmp(wai_version_string(), WAI_VERSION_STRING)) return 10;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 11;
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    WaiSettings s;
    wai_default_settings(&s);   /* the model from the installed model directory */
    WaiDecoder *d = NULL;
    int r = wai_decoder_open(&d, &s);
    if (r) { fprintf(stderr, "open: %s\n", wai_strerror(r)); return 12; }
    if ((r = wai_send_data(d, buf, n)) || (r = wai_send_eos(d))) {
        fprintf(stderr, "send: %s\n", wai_decoder_last_error(d)); return 13;
    }
    WaiPicture p;
    if ((r = wai_get_picture(d, &p))) { fprintf(stderr, "get: %s\n", wai_decoder_last_error(d)); return 14; }
    printf("libwai %s (%06x): %ux%u\n", wai_version_string(), wai_version(), p.width, p.height);
    wai_picture_unref(&p);
    wai_decoder_close(&d);
    return 0;
}
EOF
expect 0 "cc prog.c \$(pkg-config --cflags --libs wai)" -- clean sh -c \
    'cc -std=c11 -Wall -Werror prog.c $(pkg-config --cflags --libs wai) -o prog'
expect 0 "the program runs: decodes the sample with the installed library and model" -- \
    clean ./prog "$sample"
check "it printed the version and 600x400" -- grep -Eq '^libwai [0-9.]+ \([0-9a-f]+\): 600x400$' "$tmp/out"
check "linked to the installed soname" -- sh -c \
    'readelf -d "$1" | grep -Eq "NEEDED.*\[libwai\.so\.[0-9]+\]"' sh "$tmp/run/prog"

# --- purge: every file they installed is gone, nothing left in /usr/share/wai
purge_all; rc=$?
check "apt-get purge the packages (and what the install added)" -- test $rc -eq 0
check "no WAI package left (dpkg)" -- test -z "$(ours_installed)"
installed_pkgs > "$tmp/after"
check "the package set is as before the install" -- cmp -s "$tmp/before" "$tmp/after"
while IFS= read -r f; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done < "$tmp/files" > "$tmp/left"
check "every installed file is gone ($(wc -l < "$tmp/files") checked)" -- test ! -s "$tmp/left"
head -5 "$tmp/left" | sed 's/^/  | left: /'
check "the loader is gone from GdkPixbuf's cache" -- sh -c '! grep -q libpixbufloader-wai.so "$1"' sh "$cache"
check "nothing left in /usr/share/wai" -- sh -c '[ ! -e /usr/share/wai ] || [ -z "$(ls -A /usr/share/wai)" ]'
installed=""
echo "time: $(($(date +%s) - t0)) s"
finish debian-packages
