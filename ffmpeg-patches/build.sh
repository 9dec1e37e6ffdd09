#!/bin/sh
# Build Debian's FFmpeg with the WAI patch series (a minimal shared build): Debian 12's
# FFmpeg 5.1.x with ffmpeg-patches/00*.patch (the default), or Debian 13's FFmpeg 7.1.x with
# ffmpeg-patches/7.1/00*.patch. FFMPEG_FULL=1: the 5.1 series in a full build with Debian's
# own configure options, a drop-in replacement for Debian 12's FFmpeg libraries (see below).
#
#   ffmpeg-patches/build.sh [WORKDIR]          (default: ./ffmpeg-build, ./ffmpeg-build-7.1)
#   FFMPEG_SERIES=7.1 ffmpeg-patches/build.sh [WORKDIR]
#   FFMPEG_FULL=1 ffmpeg-patches/build.sh [WORKDIR]   (default ./ffmpeg-build-full; not in CI)
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
#   FFMPEG_FULL=1    the full build (5.1 series only; default WORKDIR ./ffmpeg-build-full, a
#                    work dir of its own: the script refuses one that holds the minimal build,
#                    and the other way round): instead of the minimal configuration, the options
#                    of Debian's own build, read from the fetched source's debian/rules (the
#                    "standard" flavour, the one its libavcodec59 ... packages and ffmpeg come
#                    from: CONFIG + CONFIG_standard, evaluated by make for this machine), with
#                    --prefix=WORKDIR/install instead of /usr, --libdir/--incdir (Debian's
#                    multiarch /usr paths) dropped, plus --enable-rpath, libwai's rpath,
#                    --enable-libwai and the WAI components; configure gets the compiler flags
#                    dh gives it (dpkg-buildflags, -Bsymbolic-functions stripped as debian/rules
#                    asks). The "extra" (GPLv3 libraries, no programs) and "static" (no PIC,
#                    no programs) flavours are not built. Installs Debian's build dependencies
#                    of the source (apt-get build-dep --arch-only, about 160 packages on a
#                    Debian 12 without them) unless dpkg-checkbuilddeps finds them all. Same
#                    sonames and symbol versions as Debian's, and every function Debian's
#                    libraries export: Debian's programs (ffmpeg, ffplay, mpv, VLC) run on it
#                    with WORKDIR/install/lib on the library path and keep their formats
#                    (tests/ffmpeg/full-check.sh checks that). Then FATE, unless FFMPEG_FATE=0:
#                    `make -k fate` without SAMPLES (every test that needs no external sample),
#                    then `make fate-libwai SAMPLES=WORKDIR/fate-samples` (the WAI tests, whose
#                    samples are the vectors: VECTORS, default <repo>/vectors); counts, failures
#                    and times go to WORKDIR/fate-result.txt, the output to WORKDIR/fate.log.
#                    Hours of CPU on a 2-core machine (see ffmpeg-patches/README.md).
#   FFMPEG_FATE=0    (full build) skip the FATE step
#   CONFIGURE_ONLY=1 stop once configure has run (and its result was checked)
#
# Layout of WORKDIR: src/ (git repo: Debian source as the base commit, the series on top),
# build/ (out-of-tree build), install/ (make install: bin/ffmpeg, bin/ffprobe, lib/),
# bin/ (wrappers that give the patched build to one command only, the calling shell keeps its
# PATH and library path: ffmpeg-wai, ffprobe-wai, and with-wai-ffmpeg CMD [ARGS...], which runs
# any program with install/bin first in PATH and install/lib first in LD_LIBRARY_PATH),
# env.sh (sets PATH and LD_LIBRARY_PATH for a whole shell; as the build is minimal, the other
# FFmpeg-based programs of that shell lose their usual formats (not so the full build's):
# it says so, in a comment and
# on stderr when sourced, unless WAI_FFMPEG_ENV_QUIET=1; the lists it gives of what the build
# has and lacks come from configure's output), build.log. Running it again reuses all of them:
# the source is re-patched only when the series changed, configure reruns only when its
# arguments changed, make is incremental.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
SERIES=${FFMPEG_SERIES:-5.1}
FULL=${FFMPEG_FULL:-0}
case $FULL in
    0) MODE=minimal ;;
    1) MODE=full ;;
    *) echo "build.sh: FFMPEG_FULL must be 0 or 1, not '$FULL'" >&2; exit 1 ;;
esac
case $SERIES in
    5.1) PATCHES=$HERE;     DEB_SERIES=5.1; DEB_VERSION=${FFMPEG_DEB_VERSION:-}
         EXTRA_VERSION=0+deb12u1; WORK=${1:-$PWD/ffmpeg-build}
         PROTOCOLS=file,pipe ;;
    7.1) PATCHES=$HERE/7.1; DEB_SERIES=7.1; DEB_VERSION=${FFMPEG_DEB_VERSION:-7:7.1.5-0+deb13u1}
         EXTRA_VERSION=0+deb13u1; WORK=${1:-$PWD/ffmpeg-build-7.1}
         PROTOCOLS=file,pipe,fd ;;   # 7.x's ffmpeg and ffprobe read "-" as fd:, not pipe:
    *) echo "build.sh: FFMPEG_SERIES must be 5.1 or 7.1, not '$SERIES'" >&2; exit 1 ;;
esac
if [ "$FULL" = 1 ]; then
    # Debian 12's programs link the 5.1 sonames; Debian 13's build dependencies (for a full
    # 7.1 build) are not installable on Debian 12
    [ "$SERIES" = 5.1 ] || { echo "build.sh: FFMPEG_FULL=1 is for the 5.1 series only" >&2; exit 1; }
    WORK=${1:-$PWD/ffmpeg-build-full}
fi
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
# `apt-get update` that survives a mirror caught mid-sync ("File has unexpected size ... Mirror
# sync in progress?" for one index, often a foreign architecture's): apt keeps every other index
# it fetched, and whatever is really missing fails where it is used below.
apt_update() {
    log "+ $SUDO apt-get update"
    $SUDO apt-get update >>"$LOG" 2>&1 ||
        log "WARNING: apt-get update failed (a mirror mid-sync?); going on with the indexes apt has"
}

# A work dir holds one kind of build (WORK/.mode: full; none: minimal), so that the full build
# never replaces a minimal one that the tests use, nor the other way round (checked before
# anything there is touched, its build.log included)
have_mode=$(cat "$WORK/.mode" 2>/dev/null || echo minimal)
if [ -d "$SRC/.git" ] && [ "$have_mode" != "$MODE" ]; then
    echo "build.sh: ERROR: $WORK holds the $have_mode build: give the $MODE build a work dir of its own" >&2
    exit 1
fi
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
    [ "${NO_APT:-0}" = 1 ] || apt_update
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
    rm -rf "$SRC" "$BUILD" "$INST" "$WORK/env.sh" "${WORK:?}/bin"
fi

if [ ! -d "$SRC/.git" ]; then
    rm -rf "$SRC" "$WORK/fetch"
    mkdir -p "$WORK/fetch"
    # A source of the series in apt's lists, else update them, else add a deb-src entry:
    # 5.1, Debian 12's: a copy of debian.sources with Types: deb-src; 7.1, Debian 13's: one for
    # trixie (source only: no binary package comes from trixie). The system's entries stay.
    if [ -z "$(deb_versions)" ]; then
        [ "${NO_APT:-0}" = 1 ] && die "apt knows no ffmpeg $DEB_SERIES.x source (no deb-src entry for it) and NO_APT=1"
        apt_update
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
        apt_update
    fi
    avail=$(deb_versions)
    [ -n "$avail" ] || die "apt knows no ffmpeg $DEB_SERIES.x source"
    if [ -n "$DEB_VERSION" ] && ! echo "$avail" | grep -qxF "$DEB_VERSION" && [ "${NO_APT:-0}" != 1 ]; then
        apt_update   # the lists may be older than the version asked for
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
    [ "$FULL" = 1 ] && printf '%s\n' full >"$WORK/.mode"
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

# --- full build: Debian's build dependencies -----------------------------------------------
if [ "$FULL" = 1 ]; then
    command -v dpkg-checkbuilddeps >/dev/null 2>&1 || apt_install dpkg-dev
    # Build-Depends and Build-Depends-Arch of the fetched source (not -Indep: the API docs)
    if ! (cd "$SRC" && dpkg-checkbuilddeps -B) >>"$LOG" 2>&1; then
        [ "${NO_APT:-0}" = 1 ] &&
            die "Debian's build dependencies of ffmpeg are missing (dpkg-checkbuilddeps -B in $SRC) and NO_APT=1"
        log "installing Debian's build dependencies of ffmpeg (apt-get build-dep --arch-only $SRC)"
        if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get build-dep -y --arch-only \
                --no-install-recommends "$SRC" >>"$LOG" 2>&1; then
            apt_update   # stale lists: the -dev packages may want newer libraries
            run $SUDO env DEBIAN_FRONTEND=noninteractive apt-get build-dep -y --arch-only \
                --no-install-recommends "$SRC"
        fi
        (cd "$SRC" && dpkg-checkbuilddeps -B) >>"$LOG" 2>&1 || die "build dependencies still missing"
    fi
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

if [ "$FULL" = 1 ]; then
    # Debian's configure options: CONFIG and CONFIG_standard of debian/rules, evaluated by make
    # in the source tree (debian/rules includes dpkg's pkg-info.mk and architecture.mk, which
    # read debian/changelog and this machine: --extra-version, --arch, and the per-architecture
    # additions, e.g. --enable-libmfx on amd64). No build profile or option (DEB_BUILD_PROFILES
    # pkg.ffmpeg.stage1 would drop x264, frei0r, ...; DEB_BUILD_OPTIONS=noopt the optimizations).
    # shellcheck disable=SC2016  # $(...) is make's, not the shell's
    printf '%s\n' 'include debian/rules' 'wai-print-config:' \
        '	@printf "%s\n" $(strip $(CONFIG) $(CONFIG_standard))' >"$WORK/debian-config.mk"
    (cd "$SRC" && env -u DEB_BUILD_PROFILES -u DEB_BUILD_OPTIONS -u MAKEFLAGS -u MFLAGS \
        make -s --no-print-directory -f "$WORK/debian-config.mk" wai-print-config) \
        >"$WORK/debian-configure.txt" 2>>"$LOG" || die "could not read the options of debian/rules"
    if ! grep -qx -- --enable-shared "$WORK/debian-configure.txt" ||
       ! grep -qx -- --enable-libx264 "$WORK/debian-configure.txt"; then
        die "debian/rules gave no --enable-shared/--enable-libx264: $(tr '\n' ' ' <"$WORK/debian-configure.txt")"
    fi
    log "Debian's options ($(grep -c . "$WORK/debian-configure.txt") from debian/rules): $(tr '\n' ' ' <"$WORK/debian-configure.txt")"
    set --
    while IFS= read -r o; do
        case $o in
            --prefix=*) set -- "$@" --prefix="$INST" ;;   # not over the system's /usr
            --libdir=*|--incdir=*) ;;                     # /usr/lib/<multiarch>: default under prefix
            *) set -- "$@" "$o" ;;
        esac
    done <"$WORK/debian-configure.txt"
    set -- "$@" \
        --enable-rpath \
        --extra-ldflags="-Wl,-rpath,$WAI_LIBDIR" \
        --enable-libwai \
        --enable-decoder=libwai --enable-encoder=libwai --enable-parser=wai \
        --enable-demuxer=wai --enable-muxer=wai
    # The compiler flags dh exports to debian/rules' configure (dpkg-buildflags; dh keeps a
    # flag already in the environment, and so does this)
    export DEB_LDFLAGS_MAINT_STRIP=-Wl,-Bsymbolic-functions
    for f in CFLAGS CPPFLAGS CXXFLAGS LDFLAGS OBJCFLAGS OBJCXXFLAGS; do
        eval "isset=\${$f+x}"
        # shellcheck disable=SC2154  # isset: set by the eval
        [ -n "$isset" ] && continue
        v=$(cd "$SRC" && dpkg-buildflags --get "$f") || die "dpkg-buildflags --get $f failed"
        eval "$f=\$v; export $f"
    done
    log "compiler flags (dpkg-buildflags): CFLAGS=$CFLAGS CPPFLAGS=$CPPFLAGS LDFLAGS=$LDFLAGS"
else
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
fi

mkdir -p "$BUILD"
# configure reruns when its arguments, the configure script or the component lists change
cfg_sum=$(cd "$SRC" && cat configure libavcodec/allcodecs.c libavcodec/parsers.c \
          libavcodec/bitstream_filters.c libavformat/allformats.c libavformat/protocols.c \
          libavfilter/allfilters.c libavdevice/alldevices.c | sha256sum | cut -d' ' -f1)
args="$* PKG_CONFIG_PATH=$PKG_CONFIG_PATH sources=$cfg_sum"
[ "$FULL" = 1 ] && args="$args CFLAGS=$CFLAGS CPPFLAGS=$CPPFLAGS CXXFLAGS=$CXXFLAGS LDFLAGS=$LDFLAGS"
if [ "$(cat "$BUILD/.configure-args" 2>/dev/null || true)" != "$args" ] || [ ! -f "$BUILD/config.h" ]; then
    log "configuring"
    t0=$(date +%s)
    (cd "$BUILD" && "$SRC/configure" "$@") >>"$LOG" 2>&1 || {
        tail -n 20 "$BUILD/ffbuild/config.log" >>"$LOG" 2>/dev/null || true
        die "configure failed"
    }
    printf '%s' "$args" >"$BUILD/.configure-args"
    log "configure took $(($(date +%s) - t0)) s"
fi
cat "$BUILD"/config*.h | grep -q '^#define CONFIG_LIBWAI_DECODER 1' || die "libwai decoder not enabled"
cat "$BUILD"/config*.h | grep -q '^#define CONFIG_LIBWAI_ENCODER 1' || die "libwai encoder not enabled"
if [ "$FULL" = 1 ]; then
    # a few of what Debian's programs need from it, and the rest of the WAI components
    for c in H264_DECODER HEVC_DECODER LIBX264_ENCODER MOV_DEMUXER MP4_MUXER HTTPS_PROTOCOL \
             WAI_PARSER WAI_DEMUXER WAI_MUXER; do
        cat "$BUILD"/config*.h | grep -q "^#define CONFIG_$c 1" || die "full build: CONFIG_$c is not enabled"
    done
fi
if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then
    log "CONFIGURE_ONLY: configured in $BUILD (ffbuild/config.log, configure's output in $LOG)"
    exit 0
fi

# --- build and install -------------------------------------------------------------------
log "make -j$JOBS"
run make -C "$BUILD" -j"$JOBS"
run make -C "$BUILD" install

# --- wrappers and env.sh -----------------------------------------------------------------
# What the build has, from configure's output (config.h; 7.x: config_components.h): KIND
# (DECODER, ...) and VALUE (1: enabled, 0: disabled) give the lower-case names, sorted
components() {
    cat "$BUILD"/config*.h | sed -n "s/^#define CONFIG_\([A-Z0-9_]*\)_$1 $2\$/\1/p" |
        grep -vx FRAME_THREAD | tr 'A-Z' 'a-z' | sort -u | tr '\n' ' ' | sed 's/ $//'
}
# those of NAMES that this build leaves out (names that configure knows, set to 0)
lacks() {
    kind=$1; shift
    off=" $(components "$kind" 0) "
    out=
    for n in "$@"; do
        case $off in *" $n "*) out="$out $n" ;; esac
    done
    printf '%s\n' "${out# }"
}
has_devices=$(printf '%s %s' "$(components INDEV 1)" "$(components OUTDEV 1)" | sed 's/^ *//; s/ *$//')
sonames=$(cd "$INST/lib" && ls | grep -E '^lib.*\.so\.[0-9]+$' | sort | tr '\n' ' ' | sed 's/ $//')
LIBPATH="$INST/lib:$WAI_LIBDIR"
# The system's libraries of the same sonames, which LD_LIBRARY_PATH makes this build replace,
# and the functions they export that this build does not (a program calling one fails to start)
shadowed=; nmissing=0; missing_by=; missing=
for so in $sonames; do
    sys=$(PATH=$PATH:/sbin:/usr/sbin ldconfig -p 2>/dev/null | awk -v s="$so" '$1 == s { print $NF; exit }')
    [ -n "$sys" ] && [ -f "$sys" ] || continue
    shadowed="$shadowed $so"
    command -v nm >/dev/null 2>&1 || continue
    nm -D --defined-only "$sys" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u >"$WORK/sym.sys"
    nm -D --defined-only "$INST/lib/$so" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u >"$WORK/sym.ours"
    n=$(comm -23 "$WORK/sym.sys" "$WORK/sym.ours" | grep -c . || true)
    if [ "$n" -gt 0 ]; then
        nmissing=$((nmissing + n))
        missing_by="$missing_by, $so: $n"
        # av_rdft_end first where it is missing (Debian 12's ffplay stops on it), then others
        missing="$missing $(comm -23 "$WORK/sym.sys" "$WORK/sym.ours" |
            awk '$1 == "av_rdft_end" { print; next } { o[++n] = $1 } END { for (i = 1; i <= n && i <= 3; i++) print o[i] }' |
            tr '\n' ' ')"
    fi
    rm -f "$WORK/sym.sys" "$WORK/sym.ours"
done
shadowed=${shadowed# }; missing_by=${missing_by#, }; missing=$(echo $missing)

if [ "$FULL" = 1 ]; then
    KIND_NOTE="A full build (Debian's configure options): see $WORK/env.sh."
else
    KIND_NOTE="A minimal build: other formats are missing (see $WORK/env.sh)."
fi
mkdir -p "$WORK/bin"
# ffmpeg-wai, ffprobe-wai: this build's ffmpeg/ffprobe with its libraries first for that one
# process (the binaries have a RUNPATH, but a caller's LD_LIBRARY_PATH would come before it)
for tool in ffmpeg ffprobe; do
    cat >"$WORK/bin/$tool-wai.tmp" <<EOF
#!/bin/sh
# $tool-wai: $tool of the WAI FFmpeg $SERIES series build in $WORK (written by
# ffmpeg-patches/build.sh). The patched libraries are put first in the library path of this
# one command; the calling shell keeps its own. $KIND_NOTE
LD_LIBRARY_PATH="$LIBPATH\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$INST/bin/$tool" "\$@"
EOF
    chmod +x "$WORK/bin/$tool-wai.tmp"
    mv "$WORK/bin/$tool-wai.tmp" "$WORK/bin/$tool-wai"
done
cat >"$WORK/bin/with-wai-ffmpeg.tmp" <<EOF
#!/bin/sh
# with-wai-ffmpeg CMD [ARGS...]: run CMD with the WAI FFmpeg $SERIES series build in $WORK
# (written by ffmpeg-patches/build.sh): its bin/ first in PATH, its libraries first in
# LD_LIBRARY_PATH, as $WORK/env.sh would give a whole shell, but for CMD (and what it starts)
# alone; the calling shell keeps its own. E.g. with-wai-ffmpeg mpv a.wai (mpv loading
# $sonames).
# $KIND_NOTE
if [ \$# -eq 0 ]; then
    echo "usage: with-wai-ffmpeg CMD [ARGS...]" >&2
    exit 2
fi
PATH="$INST/bin:\$PATH"
LD_LIBRARY_PATH="$LIBPATH\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PATH LD_LIBRARY_PATH
exec "\$@"
EOF
chmod +x "$WORK/bin/with-wai-ffmpeg.tmp"
mv "$WORK/bin/with-wai-ffmpeg.tmp" "$WORK/bin/with-wai-ffmpeg"

# env.sh: what it does and what it breaks, as a comment and (unless WAI_FFMPEG_ENV_QUIET is
# set) on stderr when sourced. The "has"/"lacks" lines are checked against the built ffmpeg
# by tests/ffmpeg/env-check.sh.
{
    echo "env.sh of the WAI FFmpeg $SERIES series build in $WORK"
    echo "(written by ffmpeg-patches/build.sh)."
    echo "Sourcing it gives this build to the WHOLE shell and every program started from it:"
    echo "  PATH             ffmpeg and ffprobe are this build's ($INST/bin), not the system's;"
    echo "  LD_LIBRARY_PATH  $INST/lib (and libwai's) first: a program that loads"
    echo "                   $sonames"
    echo "                   loads this build's."
    if [ -n "$shadowed" ]; then
        echo "  shadows:         $shadowed"
        echo "                   (the system has libraries of these sonames: its ffmpeg, ffprobe, ffplay,"
        echo "                   mpv, VLC and other FFmpeg-based programs get this build instead)"
    else
        echo "  shadows:         none"
        echo "                   (the system has no library of these sonames: its FFmpeg-based programs"
        echo "                   keep their own; where the system's FFmpeg has this major version,"
        echo "                   they would get this build)"
    fi
    if [ "$FULL" = 1 ]; then
    echo "This is a FULL build (FFMPEG_FULL=1: the configure options of Debian's own build, from"
    echo "debian/rules, plus --enable-libwai), so a program that uses it keeps its usual formats"
    echo "and gains WAI (tests/ffmpeg/full-check.sh checks Debian's ffmpeg, ffprobe, ffplay, mpv"
    echo "and VLC on it)."
    else
    echo "This is a MINIMAL build (configure --disable-everything, then WAI and what the series'"
    echo "tests need), so a program that uses it loses its usual formats: there is only what is"
    echo "listed under \"has\" (no H.264, no mp4, no audio decoder, no network protocol)."
    fi
    if [ "$nmissing" -gt 0 ]; then
        echo "It exports $nmissing functions fewer than the system's libraries of the same sonames"
        echo "($missing_by; some are listed under \"missing functions\"): a program that calls one"
        case " $missing " in
        *" av_rdft_end "*)
            echo "does not start (Debian 12's ffplay: \"undefined symbol: av_rdft_end, version LIBAVCODEC_59\")." ;;
        *)  echo "does not start (\"undefined symbol\")." ;;
        esac
    fi
    echo "  has decoders:      $(components DECODER 1)"
    echo "  has encoders:      $(components ENCODER 1)"
    echo "  has parsers:       $(components PARSER 1)"
    echo "  has demuxers:      $(components DEMUXER 1)"
    echo "  has muxers:        $(components MUXER 1)"
    echo "  has protocols:     $(components PROTOCOL 1)"
    echo "  has bsfs:          $(components BSF 1)"
    echo "  has filters:       $(components FILTER 1) (and buffer, buffersink, abuffer, abuffersink)"
    echo "  has devices:       ${has_devices:-none}"
    echo "  lacks decoders:    $(lacks DECODER h264 hevc vp8 vp9 av1 libdav1d mpeg2video mpeg4 mjpeg aac ac3 mp3 opus vorbis flac)"
    echo "  lacks encoders:    $(lacks ENCODER libx264 libx265 libvpx_vp9 libaom_av1 mpeg4 mjpeg aac libopus)"
    echo "  lacks demuxers:    $(lacks DEMUXER mov mpegts avi flv ogg mp3 wav aac yuv4mpegpipe hls)"
    echo "  lacks muxers:      $(lacks MUXER mp4 mov mpegts webm avi ogg mp3 yuv4mpegpipe)"
    echo "  lacks protocols:   $(lacks PROTOCOL http https tcp udp rtmp hls)"
    [ -z "$missing" ] || echo "  missing functions: $missing"
    echo "To use the patched FFmpeg without any of this, run the wrappers instead: they set the"
    echo "library path for that one command, and the calling shell keeps its own:"
    echo "  $WORK/bin/ffmpeg-wai ARGS"
    echo "  $WORK/bin/ffprobe-wai ARGS"
    echo "  $WORK/bin/with-wai-ffmpeg CMD [ARGS...]   (CMD with this PATH and library path)"
    echo "WAI_FFMPEG_ENV_QUIET=1 silences this message when sourcing (the tests set it)."
} >"$WORK/env.txt.tmp"
{
    sed 's/^/# /; s/ $//' "$WORK/env.txt.tmp"
    echo "# Configured with: $*"
    cat <<EOF
export PATH="$INST/bin:\$PATH"
export LD_LIBRARY_PATH="$LIBPATH\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
if [ -z "\${WAI_FFMPEG_ENV_QUIET:-}" ]; then
    cat >&2 <<'WAI_ENV_EOF'
EOF
    cat "$WORK/env.txt.tmp"
    cat <<EOF
WAI_ENV_EOF
fi
EOF
} >"$WORK/env.sh.tmp"
rm -f "$WORK/env.txt.tmp"
mv "$WORK/env.sh.tmp" "$WORK/env.sh"

"$INST/bin/ffmpeg" -hide_banner -decoders 2>/dev/null | grep -q libwai || die "built ffmpeg has no libwai decoder"
"$INST/bin/ffmpeg" -hide_banner -encoders 2>/dev/null | grep -q libwai || die "built ffmpeg has no libwai encoder"
if [ "$FULL" = 1 ] && [ "$nmissing" -gt 0 ]; then
    die "full build: $nmissing functions of the system's libraries are missing ($missing_by: $missing)"
fi
log "done: $INST/bin/ffmpeg, $INST/bin/ffprobe, libs in $INST/lib"
log "run them as $WORK/bin/ffmpeg-wai, $WORK/bin/ffprobe-wai, or any program as"
log "  $WORK/bin/with-wai-ffmpeg CMD [ARGS...] (the patched libraries for CMD alone);"
if [ "$FULL" = 1 ]; then
    log "  $WORK/env.sh gives them to a whole shell (a full build: its FFmpeg-based programs keep"
    log "  their formats; tests/ffmpeg/full-check.sh checks Debian's programs on it)"
else
    log "  $WORK/env.sh gives them to a whole shell, whose other FFmpeg-based programs then lose"
    log "  their usual formats (a minimal build: the list is in env.sh)"
fi

# --- full build: FATE ----------------------------------------------------------------------
# `make fate` without SAMPLES runs every test that needs no external sample (FATE's own list:
# `make fate-list`); the WAI tests (tests/fate/libwai.mak) are sample tests, whose samples are
# this repository's vectors, so they run in a second step with SAMPLES pointing at them. As in
# debian/rules' test step, the build tree's libraries come first in the library path (the
# programs' RUNPATH, from --enable-rpath, names WORK/install/lib) and make goes on after a failure (-k).
if [ "$FULL" = 1 ] && [ "${FFMPEG_FATE:-1}" != 0 ]; then
    VECTORS=${VECTORS:-$HERE/../vectors}
    [ -f "$VECTORS/v01-64x64.wai" ] || die "no vectors in $VECTORS (VECTORS) for fate-libwai"
    VECTORS=$(cd "$VECTORS" && pwd)
    mkdir -p "$WORK/fate-samples"
    ln -sfn "$VECTORS" "$WORK/fate-samples/wai"
    FATE_LOG=$WORK/fate.log
    RES=$WORK/fate-result.txt
    wai_models=$(pkg-config --variable=prefix wai)/share/wai/models
    fate_env() {
        (cd "$BUILD" && env LD_LIBRARY_PATH="libavcodec:libavdevice:libavfilter:libavformat:libavutil:libpostproc:libswresample:libswscale:$WAI_LIBDIR" \
            WAI_MODEL_PATH="$wai_models${WAI_MODEL_PATH:+:$WAI_MODEL_PATH}" "$@")
    }
    # the failed tests of a make -k log: "make: *** [.../tests/Makefile:NNN: fate-NAME] Error 1"
    failed_tests() { sed -n 's/.*\*\*\* \[[^]]*\(fate-[^]: ]*\)\] Error.*/\1/p' "$1" | sort -u; }
    : >"$FATE_LOG"
    # (not a dry run: make first remakes the test programs' dependency files it includes)
    n_list=$(fate_env make -s --no-print-directory fate-list 2>>"$FATE_LOG" | grep -c '^fate-' || true)
    log "make -k -j$JOBS fate (no SAMPLES): $n_list tests; output in $FATE_LOG"
    t0=$(date +%s); rc=0
    fate_env make -k -j"$JOBS" fate >>"$FATE_LOG" 2>&1 || rc=$?
    t_fate=$(($(date +%s) - t0))
    n_run=$(grep -c '^TEST ' "$FATE_LOG" || true)
    fails=$(failed_tests "$FATE_LOG")
    n_fail=$(printf '%s\n' "$fails" | grep -c . || true)
    log "make fate: rc $rc, $n_run tests run of $n_list, $n_fail failed, $t_fate s"
    # the WAI tests
    mark=$(wc -l <"$FATE_LOG")
    t0=$(date +%s); rc_wai=0
    fate_env make -k -j"$JOBS" fate-libwai SAMPLES="$WORK/fate-samples" >>"$FATE_LOG" 2>&1 || rc_wai=$?
    t_wai=$(($(date +%s) - t0))
    tail -n +"$((mark + 1))" "$FATE_LOG" >"$WORK/fate-libwai.log"
    n_wai=$(grep -c '^TEST *libwai-' "$WORK/fate-libwai.log" || true)
    fails_wai=$(failed_tests "$WORK/fate-libwai.log")
    n_fail_wai=$(printf '%s\n' "$fails_wai" | grep -c . || true)
    rm -f "$WORK/fate-libwai.log"
    log "make fate-libwai SAMPLES=$WORK/fate-samples: rc $rc_wai, $n_wai tests, $n_fail_wai failed, $t_wai s"
    {
        echo "FATE on the full build in $BUILD ($(date -u '+%Y-%m-%d %H:%M UTC'), make -k -j$JOBS, $(nproc) CPUs)"
        echo "make fate (no SAMPLES): $n_list tests listed, $n_run run, $n_fail failed, rc $rc, $t_fate s"
        echo "make fate-libwai SAMPLES=$WORK/fate-samples: $n_wai tests, $n_fail_wai failed, rc $rc_wai, $t_wai s"
        [ -z "$fails$fails_wai" ] || { echo "failed:"; printf '%s\n' "$fails" "$fails_wai" | grep .; }
    } >"$RES"
    cat "$RES" >>"$LOG"
    if [ "$rc" != 0 ] || [ "$rc_wai" != 0 ] || [ "$n_fail" != 0 ] || [ "$n_fail_wai" != 0 ] || [ "$n_wai" -lt 5 ]; then
        die "FATE failed: see $RES and $FATE_LOG"
    fi
    log "FATE passed: $RES"
fi
