#!/bin/sh
# The main job for a new user: install the Debian packages, build, and decode a shipped sample
# to PNG through the library (the `wai` tool) and through GStreamer (waidec).
set -eu
cd "$(dirname "$0")/.."
WAI_SKIP_CROSS=1 tools/install-deps.sh   # the cross-build packages are for the test suite only
[ -d build ] || meson setup build
ninja -C build
export WAI_MODEL_PATH="$PWD/build/tools:$PWD/models"
sample=samples/coffee-q3.wai   # a photo (samples/README.md) coded with the q3 model
mkdir -p out
build/tools/wai info "$sample"
build/tools/wai decode "$sample" -o out/sample-wai.png
echo "quickstart: library decode -> out/sample-wai.png"
if [ -d build/gst-wai ] && command -v gst-launch-1.0 >/dev/null; then
    GST_PLUGIN_PATH="$PWD/build/gst-wai" gst-launch-1.0 -q filesrc location="$sample" ! waidec ! \
        videoconvert ! pngenc ! filesink location=out/sample-gst.png
    echo "quickstart: GStreamer decode -> out/sample-gst.png"
fi
