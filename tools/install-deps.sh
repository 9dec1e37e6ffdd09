#!/bin/sh
# Install the Debian 12 packages the WAI suite needs to build and test (idempotent).
# Run as root or with sudo available.
set -eu
pkgs="gcc clang meson ninja-build pkg-config libpng-dev zlib1g-dev nettle-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-base-apps
  gstreamer1.0-gl gstreamer1.0-x xvfb xauth libclang-rt-14-dev llvm
  libvulkan-dev mesa-vulkan-drivers vulkan-tools glslc spirv-tools
  dpkg-dev git make nasm vlc-bin vlc-plugin-base libvlccore-dev mpv python3 python3-numpy
  libgdk-pixbuf-2.0-dev libgdk-pixbuf2.0-bin shared-mime-info libglib2.0-bin ccache
  python3-pil eog"
# (ccache: meson uses it when found. The planted-fault stage rebuilds the tree once per fault
# with one -D more; ccache hashes the preprocessed source, so only the files the fault's macro
# touches recompile: about 8 s a rebuild instead of 16 here.)
if [ -n "${WAI_EXTRA_PACKAGES:-}" ]; then pkgs="$pkgs $WAI_EXTRA_PACKAGES"; fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
# The cross stage (tools/cross-check.sh; WAI_SKIP_CROSS=1 skips both): cross compilers, qemu
# user emulation, and the target's zlib/nettle/libpng from Debian's multiarch archive.
# gcc-12-multilib, not gcc-multilib (which would remove gcc-aarch64-linux-gnu).
cross=""
if [ "${WAI_SKIP_CROSS:-0}" != 1 ]; then
    cross="gcc-aarch64-linux-gnu gcc-12-multilib qemu-user-static"
    for a in arm64 i386; do
        cross="$cross zlib1g-dev:$a nettle-dev:$a libpng-dev:$a"
        dpkg --print-foreign-architectures | grep -qx "$a" || $SUDO dpkg --add-architecture "$a"
    done
fi
# The browser stage (tests/web.sh; WAI_SKIP_WEB=1 skips both): Debian's emscripten builds
# libwai to WebAssembly, Node runs its kernel tests, headless Chromium the viewer page.
if [ "${WAI_SKIP_WEB:-0}" != 1 ]; then
    pkgs="$pkgs emscripten nodejs chromium"
fi
# The Debian packaging stage (tests/debian-packages.sh; WAI_SKIP_DEBIAN=1 skips both): the
# packaging tools; debian/control's Build-Depends are all in the list above.
if [ "${WAI_SKIP_DEBIAN:-0}" != 1 ]; then
    pkgs="$pkgs debhelper lintian dh-python"
fi
missing_of() {
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || printf ' %s' "$p"
    done
}
# shellcheck disable=SC2086
missing=$(missing_of $pkgs); missing_cross=$(missing_of $cross)
[ -z "$missing$missing_cross" ] && exit 0
echo "install-deps: installing$missing$missing_cross"
# A mirror caught mid-sync fails `apt-get update` for one index now and then ("File has
# unexpected size ... Mirror sync in progress?"), and can leave a foreign architecture's
# security index behind the native one's, so that the multiarch -dev packages of the cross
# stage cannot be installed beside the native libraries until it catches up: wait and retry,
# install the native packages on their own, and report the cross packages apart.
tries=0
until $SUDO apt-get update -q; do
    tries=$((tries + 1))
    if [ $tries -ge 3 ]; then
        echo "install-deps: apt-get update still failing; installing from the indexes it has" >&2
        break
    fi
    echo "install-deps: apt-get update failed (mirror sync?); retrying in $((tries * 20)) s" >&2
    sleep $((tries * 20))
done
apt_install() {   # PACKAGES: one retry after a minute and a fresh update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "$@" && return 0
    echo "install-deps: apt-get install failed; updating the indexes and retrying in 60 s" >&2
    sleep 60
    $SUDO apt-get update -q || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "$@"
}
# shellcheck disable=SC2086
if [ -n "$missing" ] && ! apt_install $missing; then
    echo "install-deps: apt-get install failed" >&2
    exit 1
fi
# shellcheck disable=SC2086
if [ -n "$missing_cross" ] && ! apt_install $missing_cross; then
    echo "install-deps: the cross stage's packages could not be installed from this mirror:$missing_cross" >&2
    exit 3
fi
exit 0
