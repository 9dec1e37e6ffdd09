#!/bin/sh
# Install the Debian 12 packages the WAI suite needs to build and test (idempotent).
# Run as root or with sudo available.
set -eu
pkgs="gcc clang meson ninja-build pkg-config libpng-dev zlib1g-dev nettle-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-base-apps
  gstreamer1.0-gl gstreamer1.0-x xvfb xauth libclang-rt-14-dev llvm
  libvulkan-dev mesa-vulkan-drivers vulkan-tools glslc spirv-tools
  dpkg-dev git make nasm vlc-bin vlc-plugin-base libvlccore-dev python3 python3-numpy"
if [ -n "${WAI_EXTRA_PACKAGES:-}" ]; then pkgs="$pkgs $WAI_EXTRA_PACKAGES"; fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing$missing"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
