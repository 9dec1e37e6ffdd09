#!/bin/sh
# Eye of GNOME shows a WAI picture through the loader (meson test eog; the environment comes
# from gdk-pixbuf-wai/meson.build). Under Xvfb, eog opens a sample full screen with the build's
# loader and a scratch MIME database; the screen is captured with GStreamer's ximagesrc until
# the picture is drawn and the capture is stable; then the drawn area (the bounding box of the
# non-black pixels) is compared with `wai decode`'s picture resized to it: the mean absolute
# difference must be small, and that of the same picture upside down (what a wrong picture
# gives) large, so the comparison can fail. Exit 77 (skip) only when eog is not installed.
#   eog-test.sh                  the build tree's loader (WAI_SOURCE_ROOT, WAI_CLI, PIXBUF_*)
#   eog-test.sh --installed SRC  the installed packages' loader and MIME type, `wai` from PATH
#                                (tests/debian-packages.sh; SRC: the source tree, for the sample)
set -u
if [ "${1:-}" = --installed ]; then
    src=$2; wai=wai; installed=1
else
    src=$WAI_SOURCE_ROOT; wai=$WAI_CLI; installed=0
fi
command -v eog > /dev/null || { echo "SKIP: eog not installed"; exit 77; }
for t in xvfb-run gst-launch-1.0; do
    command -v $t > /dev/null || { echo "FAIL $t not installed"; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
[ $installed = 1 ] || . "$src/gdk-pixbuf-wai/tests/scratch-env.sh"   # the MIME type and the loader, in $tmp
mkdir -p "$tmp/home"
sample=$src/samples/coffee-q5.wai
"$wai" decode "$sample" -o "$tmp/decoded.png" > /dev/null || { echo "FAIL wai decode"; exit 1; }

cat > "$tmp/drawn.py" <<'EOF'
# drawn.py SHOT [PREVIOUS]: "ok" when SHOT shows a picture (a non-black area of 200x100 or more)
# the same as PREVIOUS's
import sys
import numpy as np
from PIL import Image
a = np.asarray(Image.open(sys.argv[1]).convert("RGB")).astype(int)
ys, xs = np.where(a.sum(2) > 30)
big = len(ys) and xs.max() - xs.min() >= 200 and ys.max() - ys.min() >= 100
same = len(sys.argv) > 2 and np.array_equal(a, np.asarray(Image.open(sys.argv[2]).convert("RGB")).astype(int))
print("ok" if big and same else "wait")
EOF
cat > "$tmp/run.sh" <<'EOF'
#!/bin/sh
# inside xvfb-run: eog full screen, then captures once a second until the picture is drawn
tmp=$1; sample=$2
eog --fullscreen "$sample" > "$tmp/eog.log" 2>&1 &
pid=$!
i=0
while [ $i -lt 60 ]; do
    sleep 1; i=$((i + 1))
    [ -f "$tmp/shot.png" ] && mv "$tmp/shot.png" "$tmp/prev.png"
    gst-launch-1.0 -q ximagesrc num-buffers=1 ! videoconvert ! pngenc ! \
        filesink "location=$tmp/shot.png" > /dev/null 2>&1 || continue
    [ -f "$tmp/prev.png" ] && [ "$(/usr/bin/python3 "$tmp/drawn.py" "$tmp/shot.png" "$tmp/prev.png")" = ok ] && break
done
echo "captures: $i" > "$tmp/captures"
kill $pid 2> /dev/null
wait $pid 2> /dev/null
exit 0
EOF
env HOME="$tmp/home" NO_AT_BRIDGE=1 GSETTINGS_BACKEND=memory \
    timeout 120 xvfb-run -a -s "-screen 0 800x600x24" sh "$tmp/run.sh" "$tmp" "$sample"
cat "$tmp/captures" 2> /dev/null
[ -f "$tmp/shot.png" ] || { echo "FAIL no screen capture"; sed 's/^/  eog | /' "$tmp/eog.log"; exit 1; }

/usr/bin/python3 - "$tmp/shot.png" "$tmp/decoded.png" <<'EOF'
import sys
import numpy as np
from PIL import Image
shot = np.asarray(Image.open(sys.argv[1]).convert("RGB")).astype(int)
ys, xs = np.where(shot.sum(2) > 30)
if not len(ys):
    print("FAIL the screen is black: eog drew no picture"); sys.exit(1)
y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
dec = Image.open(sys.argv[2]).convert("RGB")
def diff(img):
    ref = np.asarray(img.resize((x1 - x0, y1 - y0), Image.BILINEAR)).astype(int)
    return float(np.abs(shot[y0:y1, x0:x1] - ref).mean())
good, wrong = diff(dec), diff(dec.transpose(Image.FLIP_TOP_BOTTOM))
ok = good < 4 and wrong > 20 and abs((x1 - x0) / (y1 - y0) - dec.width / dec.height) < 0.02
print("%s eog drew %dx%d at (%d, %d) for the %dx%d picture: mean |difference| %.2f levels "
      "(the picture upside down: %.2f)" % ("PASS" if ok else "FAIL", x1 - x0, y1 - y0, x0, y0,
                                          dec.width, dec.height, good, wrong))
sys.exit(0 if ok else 1)
EOF
