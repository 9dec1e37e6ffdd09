#!/bin/sh
# Build Debian's FFmpeg with the WAI patch series (a minimal shared build): Debian 12's
# FFmpeg 5.1.x with ffmpeg-patches/00*.patch (the default), or Debian 13's FFmpeg 7.1.x with
# ffmpeg-patches/7.1/00*.patch.
#
#   ffmpeg-patches/build.sh [WORKDIR]          (default: ./ffmpeg-build, ./ffmpeg-build-7.1)
#   FFMPEG_SERIES=7.1 ffmpeg-patches/build.sh [WORKDIR]
#
# Environment:
#   FFMPEG_SERIES    5.1 (default) or 7.1: which series, and which Debian source it applies to.
#                    5.1: the newest 7:5.1.x source apt knows (Debian 12's); 7.1: Debian 13's
#                    7:7.1.5-0+deb13u1 (FFMPEG_DEB_VERSION overrides it; if the archive no
#                    longer has it, the newest 7:7.1.x it has, with a warning). For 7.1 a
#                    deb-src entry for trixie is added when apt has no 7.1 source
#                    (/etc/apt/sources.list.d/wai-trixie-src.sources, root or sudo).
#   WAI_PREFIX       where libwai-core is installed (meson install --prefix/--destdir);
#                    its pkgconfig dirs are added to PKG_CONFIG_PATH
#   PKG_CONFIG_PATH  used as is as well (a libwai-core build tree's meson-uninstalled/
#                    directory works: pkg-config picks up wai-uninstalled.pc)
#   JOBS             make -j (default 2)
#   NO_APT=1         never call apt-get (fail if something is missing instead)
#   FETCH_ONLY=1     stop once WORKDIR/src is fetched and patched (tests/fuzz/ffmpeg/build.sh
#                    builds its own configuration from it)
#
# Layout of WORKDIR: src/ (git repo: Debian source as the base commit, the series on top),
# build/ (out-of-tree build), install/ (make install: bin/ffmpeg, bin/ffprobe, lib/),
# env.sh (sets PATH and LD_LIBRARY_PATH), build.log. Running it again reuses all of them:
# the source is re-patched only when the series changed, configure reruns only when its
# arguments changed, make is incremental.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
SERIES=${FFMPEG_SERIES:-5.1}
case $SERIES in
    5.1) PATCHES=$HERE;     DEB_SERIES=5.1; DEB_VERSION=${FFMPEG_DEB_VERSION:-}
         EXTRA_VERSION=0+deb12u1; WORK=${1:-$PWD/ffmpeg-build}
         PROTOCOLS=file,pipe ;;
    7.1) PATCHES=$HERE/7.1; DEB_SERIES=7.1; DEB_VERSION=${FFMPEG_DEB_VERSION:-7:7.1.5-0+deb13u1}
         EXTRA_VERSION=0+deb13u1; WORK=${1:-$PWD/ffmpeg-build-7.1}
         PROTOCOLS=file,pipe,fd ;;   # 7.x's ffmpeg and ffprobe read "-" as fd:, not pipe:
    *) echo "build.sh: FFMPEG_SERIES must be 5.1 or 7.1, not '$SERIES'" >&2; exit 1 ;;
esac
JOBS=${JOBS:-2}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
LOG=$WORK/build.log
[ "${FETCH_ONLY:-0}" = 1 ] && LOG=$WORK/fetch.log   # keep the build's log
SRC=$WORK/src
BUILD=$WORK/build
INST=$WORK/install

log() { printf '%s\n' "build.sh: $*" | tee -a "$LOG" >&2; }
die() { log "ERROR: $*"; log "see $LOG"; exit 1; }
run() { log "+ $*"; "$@" >>"$LOG" 2>&1 || die "failed: $*"; }

: >"$LOG"
log "work dir $WORK, FFmpeg $SERIES series ($PATCHES)"
# FFmpeg's configure refuses an out-of-tree build from a source path with whitespace
case $WORK in *[[:space:]]*) die "FFmpeg does not build in a path with whitespace: choose another WORKDIR" ;; esac

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
apt_install() {
    [ "${NO_APT:-0}" = 1 ] && die "missing: $* (NO_APT=1)"
    run $SUDO apt-get install -y --no-install-recommends "$@"
}

# --- tools and build dependencies ----------------------------------------------------
need=
command -v dpkg-source >/dev/null 2>&1 || need="$need dpkg-dev"
command -v git >/dev/null 2>&1 || need="$need git"
command -v make >/dev/null 2>&1 || need="$need make"
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v nasm >/dev/null 2>&1 || need="$need nasm"
[ -f /usr/include/zlib.h ] || need="$need zlib1g-dev"
if [ -n "$need" ]; then
    [ "${NO_APT:-0}" = 1 ] || run $SUDO apt-get update
    # shellcheck disable=SC2086
    apt_install $need
fi

# --- source --------------------------------------------------------------------------
# the ffmpeg source versions of the series that apt knows, one a line, newest first
deb_versions() {
    all=$(apt-cache showsrc ffmpeg 2>/dev/null | sed -n 's/^Version: *//p' | sort -u)
    for v in $all; do
        case ${v#*:} in "$DEB_SERIES".*) ;; *) continue ;; esac
        n=0   # how many are newer
        for o in $all; do dpkg --compare-versions "$o" gt "$v" && n=$((n + 1)); done
        echo "$n $v"
    done | sort -n | cut -d' ' -f2
}

# The work dir holds one series: another one's source (or one from before the series were
# recorded: 5.1) is fetched anew
have_series=$(cat "$WORK/.series" 2>/dev/null || echo 5.1)
if [ -d "$SRC/.git" ] && [ "$have_series" != "$SERIES" ]; then
    log "$WORK holds the $have_series series: fetching the $SERIES source anew"
    rm -rf "$SRC" "$BUILD" "$INST" "$WORK/env.sh"
fi

if [ ! -d "$SRC/.git" ]; then
    rm -rf "$SRC" "$WORK/fetch"
    mkdir -p "$WORK/fetch"
    # A source of the series in apt's lists, else update them, else add a deb-src entry:
    # 5.1, Debian 12's: a copy of debian.sources with Types: deb-src; 7.1, Debian 13's: one for
    # trixie (source only: no binary package comes from trixie). The system's entries stay.
    if [ -z "$(deb_versions)" ]; then
        [ "${NO_APT:-0}" = 1 ] && die "apt knows no ffmpeg $DEB_SERIES.x source (no deb-src entry for it) and NO_APT=1"
        run $SUDO apt-get update
    fi
    if [ -z "$(deb_versions)" ]; then
        case $SERIES in
        5.1)
            [ -f /etc/apt/sources.list.d/debian.sources ] || die "no deb-src entry and no debian.sources to copy"
            f=/etc/apt/sources.list.d/debian-src.sources
            log "adding $f (deb-src)"
            sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
                $SUDO tee "$f" >/dev/null ;;
        7.1)
            f=/etc/apt/sources.list.d/trixie-src.sources
            log "adding $f (deb-src, trixie)"
            printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' 'Suites: trixie' \
                'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' |
                $SUDO tee "$f" >/dev/null ;;
        esac
        run $SUDO apt-get update
    fi
    avail=$(deb_versions)
    [ -n "$avail" ] || die "apt knows no ffmpeg $DEB_SERIES.x source"
    if [ -n "$DEB_VERSION" ] && ! echo "$avail" | grep -qxF "$DEB_VERSION" && [ "${NO_APT:-0}" != 1 ]; then
        run $SUDO apt-get update   # the lists may be older than the version asked for
        avail=$(deb_versions)
    fi
    if [ -z "$DEB_VERSION" ]; then
        DEB_VERSION=$(echo "$avail" | head -n 1)
    elif ! echo "$avail" | grep -qxF "$DEB_VERSION"; then
        log "WARNING: ffmpeg $DEB_VERSION is not in the archive any more; using $(echo "$avail" | head -n 1)"
        DEB_VERSION=$(echo "$avail" | head -n 1)
    fi
    log "fetching the Debian source (apt-get source ffmpeg=$DEB_VERSION)"
    (cd "$WORK/fetch" && apt-get source "ffmpeg=$DEB_VERSION") >>"$LOG" 2>&1 ||
        die "apt-get source ffmpeg=$DEB_VERSION failed"
    dir=$(find "$WORK/fetch" -maxdepth 1 -type d -name "ffmpeg-$DEB_SERIES*" | head -n 1)
    [ -n "$dir" ] || die "apt-get source gave no ffmpeg-$DEB_SERIES.x tree"
    mv "$dir" "$SRC"
    rm -rf "$WORK/fetch"
    (
        cd "$SRC"
        git init -q
        echo .pc >>.git/info/exclude
        git add -A
        git -c user.name=debian -c user.email=debian@localhost commit -q \
            -m "Debian ffmpeg $(dpkg-parsechangelog -S Version 2>/dev/null || echo "$DEB_SERIES.x") (apt-get source)"
        git tag debian-base
    ) >>"$LOG" 2>&1 || die "creating the git repo failed"
    printf '%s\n' "$SERIES" >"$WORK/.series"
fi

# Apply the series. .wai-series lists the SHA-256 of each applied patch (one commit each on
# top of the Debian base): the commits after the longest common prefix of what is applied
# and what is wanted are dropped (git reset), the rest of the series applied. Unchanged
# files keep their times, so make only rebuilds what the changed patches touch.
applied=$(cat "$SRC/.wai-series" 2>/dev/null || true)
wanted=$(for p in "$PATCHES"/00*.patch; do sha256sum "$p" | cut -d' ' -f1; done)
if [ "$applied" != "$wanted" ]; then
    n_applied=$(printf '%s\n' "$applied" | grep -c . || true)
    n_common=0
    for i in $(seq 1 "$n_applied"); do
        [ "$(printf '%s\n' "$applied" | sed -n "${i}p")" = "$(printf '%s\n' "$wanted" | sed -n "${i}p")" ] || break
        n_common=$i
    done
    # the tree must be the base plus exactly the applied commits, else start from the base
    n_commits=$(cd "$SRC" && git rev-list --count debian-base..HEAD 2>/dev/null || echo x)
    [ "$n_commits" = "$n_applied" ] || n_common=0
    todo=$(ls "$PATCHES"/00*.patch | tail -n +"$((n_common + 1))")
    log "keeping $n_common applied patches, applying $(echo "$todo" | grep -c .)"
    (
        cd "$SRC"
        git am --abort >/dev/null 2>&1 || true
        if [ "$n_common" -gt 0 ]; then
            git reset -q --hard "HEAD~$((n_applied - n_common))"
        else
            git reset -q --hard debian-base
        fi
        git clean -qfdx -e .pc
    ) >>"$LOG" 2>&1 || die "git reset failed"
    # shellcheck disable=SC2086
    (cd "$SRC" && git -c user.name=wai -c user.email=wai@localhost am -q $todo) >>"$LOG" 2>&1 ||
        { (cd "$SRC" && git am --abort) >/dev/null 2>&1; die "git am failed"; }
    printf '%s\n' "$wanted" >"$SRC/.wai-series"
fi
if [ "${FETCH_ONLY:-0}" = 1 ]; then
    log "FETCH_ONLY: patched source in $SRC"
    exit 0
fi

# --- configure -------------------------------------------------------------------------
if [ -n "${WAI_PREFIX:-}" ]; then
    for d in "$WAI_PREFIX"/lib/*/pkgconfig "$WAI_PREFIX"/lib/pkgconfig "$WAI_PREFIX"/lib64/pkgconfig; do
        [ -d "$d" ] && PKG_CONFIG_PATH=$d${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    done
fi
export PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-}
pkg-config --exists wai || die "pkg-config cannot find wai (libwai-core): set WAI_PREFIX or PKG_CONFIG_PATH"
WAI_LIBDIR=$(pkg-config --variable=libdir wai)
log "libwai $(pkg-config --modversion wai) from $(pkg-config --variable=pcfiledir wai)"

ASM=
command -v nasm >/dev/null 2>&1 || ASM=--disable-x86asm

set -- \
    --prefix="$INST" \
    --extra-version=$EXTRA_VERSION \
    --enable-gpl \
    --enable-shared --disable-static \
    --enable-rpath \
    --extra-ldflags="-Wl,-rpath,$WAI_LIBDIR" \
    --disable-doc --disable-ffplay \
    --disable-autodetect \
    --disable-everything \
    --enable-pthreads --enable-zlib $ASM \
    --enable-libwai \
    --enable-decoder=libwai,png,rawvideo \
    --enable-parser=wai \
    --enable-demuxer=wai,matroska,image2,rawvideo \
    --enable-muxer=wai,matroska,rawvideo,image2,framecrc,framemd5,null \
    --enable-encoder=libwai,png,rawvideo,wrapped_avframe \
    --enable-protocol=$PROTOCOLS \
    --enable-filter=scale,format,null

mkdir -p "$BUILD"
# configure reruns when its arguments, the configure script or the component lists change
cfg_sum=$(cd "$SRC" && cat configure libavcodec/allcodecs.c libavcodec/parsers.c \
          libavcodec/bitstream_filters.c libavformat/allformats.c libavformat/protocols.c \
          libavfilter/allfilters.c libavdevice/alldevices.c | sha256sum | cut -d' ' -f1)
args="$* PKG_CONFIG_PATH=$PKG_CONFIG_PATH sources=$cfg_sum"
if [ "$(cat "$BUILD/.configure-args" 2>/dev/null || true)" != "$args" ] || [ ! -f "$BUILD/config.h" ]; then
    log "configuring"
    (cd "$BUILD" && "$SRC/configure" "$@") >>"$LOG" 2>&1 || {
        tail -n 20 "$BUILD/ffbuild/config.log" >>"$LOG" 2>/dev/null || true
        die "configure failed"
    }
    printf '%s' "$args" >"$BUILD/.configure-args"
fi
cat "$BUILD"/config*.h | grep -q '^#define CONFIG_LIBWAI_DECODER 1' || die "libwai decoder not enabled"
cat "$BUILD"/config*.h | grep -q '^#define CONFIG_LIBWAI_ENCODER 1' || die "libwai encoder not enabled"

# --- build and install -------------------------------------------------------------------
log "make -j$JOBS"
run make -C "$BUILD" -j"$JOBS"
run make -C "$BUILD" install

cat >"$WORK/env.sh" <<EOF
# source this: the patched FFmpeg first in PATH and the library path
export PATH="$INST/bin:\$PATH"
export LD_LIBRARY_PATH="$INST/lib:$WAI_LIBDIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
EOF

"$INST/bin/ffmpeg" -hide_banner -decoders 2>/dev/null | grep -q libwai || die "built ffmpeg has no libwai decoder"
"$INST/bin/ffmpeg" -hide_banner -encoders 2>/dev/null | grep -q libwai || die "built ffmpeg has no libwai encoder"
log "done: $INST/bin/ffmpeg, $INST/bin/ffprobe, libs in $INST/lib; source $WORK/env.sh"
