#!/bin/sh
# One unattended check of the Vulkan backend (h_s and g_s on the GPU) on a machine with a GPU:
# builds (or reuses) a build dir, prints the Vulkan devices and the one used, decodes every
# conformance vector through the backend against its pinned hash with per-vector times (the
# fastest of --repeat decodes, next to the reference kernels on the CPU), runs the full
# layer-by-layer comparison test, and checks the public path (`wai verify --device vulkan`).
#
#   tools/gpu-check.sh [BUILD_DIR]        default $WAI_BUILD_DIR, else /tmp/wai-gpu-check
#   env: WAI_VK_DEVICE (device index, default 0), WAI_GPU_REPEAT (default 3),
#        VK_ICD_FILENAMES (pin a driver, e.g. /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
#
# Needs: a C compiler, meson, ninja, pkg-config, zlib, nettle, libpng (dev packages),
# libvulkan-dev, glslc, and a Vulkan driver; spirv-tools and vulkan-tools are optional.
# Exit status 0 only if every step passed.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${WAI_BUILD_DIR:-/tmp/wai-gpu-check}}
dev=${WAI_VK_DEVICE:-0}
repeat=${WAI_GPU_REPEAT:-3}
manifest=$src/vectors/manifest.txt
status=0

step() { printf '\n== %s\n' "$*"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

for tool in meson ninja glslc; do
    command -v "$tool" >/dev/null 2>&1 || { echo "gpu-check: $tool not found"; exit 2; }
done

step "build ($build)"
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$src" -Dvulkan=enabled -Dgstreamer=disabled >"$build.setup.log" 2>&1 ||
        { tail -20 "$build.setup.log"; echo "gpu-check: meson setup failed"; exit 2; }
fi
ninja -C "$build" tests/test_vulkan tools/wai tools/wai-tiny-n64m96.whm >"$build.ninja.log" 2>&1 ||
    { tail -30 "$build.ninja.log"; echo "gpu-check: build failed"; exit 2; }
echo "built: $build"
export WAI_MODEL_PATH="$build/tools"

step "devices"
if command -v vulkaninfo >/dev/null 2>&1; then
    vulkaninfo --summary 2>/dev/null | grep -E 'GPU[0-9]+:|deviceName|deviceType|driverName|driverInfo|apiVersion' || true
else
    echo "(vulkaninfo not installed)"
fi
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null

step "vectors through Vulkan device $dev (fastest of $repeat; reference kernels on the CPU alongside)"
"$build/tests/test_vulkan" --device "$dev" --vectors-only --cpu-times --repeat "$repeat" "$manifest" ||
    status=1

step "layer-by-layer comparison with the reference kernels (test_vulkan)"
t0=$(date +%s.%N)
"$build/tests/test_vulkan" --device "$dev" "$manifest" >"$build.test_vulkan.log" 2>&1 || status=1
t1=$(date +%s.%N)
grep -E '^(Vulkan device|conv|convT|igdn|tiny|vectors:|vulkan:|test_vulkan)' "$build.test_vulkan.log"
grep -E 'elements differ|^FAIL|CHECK failed|expected|cannot' "$build.test_vulkan.log" | head -20
echo "test_vulkan wall time: $(secs "$t0" "$t1") s"

step "public API: wai verify --device vulkan"
if [ "$dev" = 0 ]; then
    t0=$(date +%s.%N)
    "$build/tools/wai" verify --device vulkan "$manifest" || status=1
    t1=$(date +%s.%N)
    echo "wai verify --device vulkan wall time: $(secs "$t0" "$t1") s"
    t0=$(date +%s.%N)
    "$build/tools/wai" verify "$manifest" >/dev/null || status=1
    t1=$(date +%s.%N)
    echo "wai verify (cpu) wall time: $(secs "$t0" "$t1") s"
else
    echo "(skipped: the CLI has no device index option; WAI_VK_DEVICE=$dev)"
fi

step "result"
if [ "$status" = 0 ]; then echo "gpu-check: PASS"; else echo "gpu-check: FAIL"; fi
exit "$status"
