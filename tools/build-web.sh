#!/bin/bash
# Build the web viewer (issue 26): libwai compiled to WebAssembly with Debian's emscripten, the
# JavaScript API and worker, the viewer page and the shipped models under their SHA-256 names,
# all written into DIR, ready to serve as static files:
#
#   tools/build-web.sh DIR            e.g. tools/build-web.sh out/web
#   python3 -m http.server -d DIR --bind 127.0.0.1 8000   then open http://127.0.0.1:8000/
#
# Needs emscripten (Debian's package; apt-get install emscripten), meson and ninja, and
# apt-get source for zlib and nettle, whose sources give the module its CRC-32 and SHA-256 as
# the native library's libz and libnettle do (a deb-src entry is added if there is none, as
# the FFmpeg stage does). Environment:
#   WAI_WEB_BUILD  the meson build directory (default build-web)
#   WAI_EXT_BUILD  where the fetched sources go (default build-ext; they land in web-deps/)
#   WAI_WEB_TEST=1 also run the kernel tests under Node (meson test)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: tools/build-web.sh DIR}
BUILD=${WAI_WEB_BUILD:-$ROOT/build-web}
DEPS=${WAI_EXT_BUILD:-$ROOT/build-ext}/web-deps
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo

die() { echo "build-web: $*" >&2; exit 1; }
log() { echo "build-web: $*" >&2; }
command -v emcc >/dev/null || die "emcc not found: apt-get install emscripten"
command -v meson >/dev/null || die "meson not found: apt-get install meson ninja-build"

# --- zlib and nettle sources (Debian's), unpacked once into $DEPS -------------------------
fetch_source() { # $1 = source package, $2 = the -dev package whose version comes first
    local pkg=$1 dev=$2 want all v dir
    [ -d "$DEPS/$pkg" ] && return 0
    if [ -z "$(apt-cache showsrc "$pkg" 2>/dev/null | sed -n 's/^Version: *//p')" ]; then
        [ -f /etc/apt/sources.list.d/debian.sources ] || die "apt has no deb-src entry for $pkg and there is no debian.sources to copy"
        log "adding /etc/apt/sources.list.d/debian-src.sources (deb-src)"
        sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
            $SUDO tee /etc/apt/sources.list.d/debian-src.sources >/dev/null
        # (a mirror caught mid-sync may fail one index: apt keeps the others it fetched)
        $SUDO apt-get update -q >/dev/null || log "apt-get update failed (a mirror mid-sync?); going on"
    fi
    # the installed -dev package's version first (the code the native build links), then the
    # other Debian revisions of its upstream version, then every other version apt knows,
    # newest first (a security update's source may be gone from the archive)
    want=$(dpkg-query -W -f '${source:Version}\n' "$dev" 2>/dev/null | head -n 1 || true)
    all=$(apt-cache showsrc "$pkg" | sed -n 's/^Version: *//p' | sort -u | sort -rV)
    [ -n "$want" ] && all="$(echo "$all" | grep -F -- "${want%-*}-" || true) $all"
    rm -rf "$DEPS/fetch-$pkg"
    mkdir -p "$DEPS/fetch-$pkg"
    for v in $want $all; do
        if (cd "$DEPS/fetch-$pkg" && apt-get source -q "$pkg=$v") >"$DEPS/fetch-$pkg.log" 2>&1; then
            dir=$(find "$DEPS/fetch-$pkg" -mindepth 1 -maxdepth 1 -type d | head -n 1)
            [ -n "$dir" ] || continue
            mv "$dir" "$DEPS/$pkg"
            echo "$pkg $v" >"$DEPS/$pkg.version"
            rm -rf "$DEPS/fetch-$pkg"
            log "$pkg $v (apt-get source)"
            return 0
        fi
        rm -rf "${DEPS:?}/fetch-$pkg"/*
    done
    die "apt-get source $pkg failed for every version ($want $all); see $DEPS/fetch-$pkg.log"
}
mkdir -p "$DEPS"
fetch_source zlib zlib1g-dev
fetch_source nettle nettle-dev
mkdir -p "$DEPS/include/nettle"
cp "$DEPS/nettle/sha2.h" "$DEPS/nettle/nettle-types.h" "$DEPS/include/nettle/"

# --- the WebAssembly build ----------------------------------------------------------------
# emcc's JavaScript optimizer (run when linking at -O1 and above) requires Node's 'acorn',
# which Debian's node-acorn installs under /usr/share/nodejs: a Node from elsewhere does not
# look there
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup --cross-file "$ROOT/tools/cross/wasm32-emscripten.txt" -Dbuildtype=release \
        -Dweb_deps="$DEPS" -Dvulkan=disabled -Dgstreamer=disabled -Dgdk_pixbuf=disabled \
        "$BUILD" "$ROOT" >"$DEPS/meson-setup.log" 2>&1 ||
        { tail -n 20 "$DEPS/meson-setup.log" >&2; die "meson setup failed (log: $DEPS/meson-setup.log)"; }
fi
ninja -C "$BUILD" >"$DEPS/ninja.log" 2>&1 || { tail -n 30 "$DEPS/ninja.log" >&2; die "the build failed"; }
if [ "${WAI_WEB_TEST:-0}" = 1 ]; then
    meson test -C "$BUILD" --print-errorlogs || die "the kernel tests under Node failed"
fi

# --- the static files -----------------------------------------------------------------------
mkdir -p "$OUT/models"
for f in index.html viewer.css viewer.js wai.mjs wai-worker.js; do
    cp "$ROOT/web/$f" "$OUT/$f"
done
cp "$BUILD/web/wai-core.js" "$BUILD/web/wai-core.wasm" "$OUT/"
# the shipped models, by the name a stream gives them (its SHA-256)
n=0
for m in "$ROOT"/models/*.whm; do
    [ -f "$m" ] || continue
    sha=$(sha256sum "$m" | cut -d' ' -f1)
    cp "$m" "$OUT/models/$sha.whm"
    n=$((n + 1))
done
log "wrote $OUT: page, wai.mjs, wai-worker.js, wai-core.js ($(stat -c %s "$OUT/wai-core.js") bytes), wai-core.wasm ($(stat -c %s "$OUT/wai-core.wasm") bytes), $n models"
