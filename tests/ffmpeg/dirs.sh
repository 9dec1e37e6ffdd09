# Where the FFmpeg and VLC stages build: sourced (with ROOT = the checkout) by
# tests/ffmpeg/run.sh, tests/ffmpeg/vlc.sh, tests/fuzz/ffmpeg/build.sh and tools/planted-faults.sh,
# so that they agree. Every default is a folder of build-ext/ in this checkout (git ignores it,
# so tests/debian-packages.sh's copy of the tree and `git status` leave it out; it holds the
# FFmpeg source and builds, about 250 MB):
#
#   WAI_EXT_BUILD  the folder of them all                 (default <repo>/build-ext)
#   WAI_BUILD      meson build dir of libwai-core         (default $WAI_EXT_BUILD/libwai)
#   WAI_PREFIX     where that build installs libwai-core  (default $WAI_EXT_BUILD/libwai-prefix)
#   FFMPEG_WORK    ffmpeg-patches/build.sh work dir       (default $WAI_EXT_BUILD/ffmpeg)
#                  of the FFmpeg 5.1 series
#   FFMPEG71_WORK  the same for the FFmpeg 7.1 series     (default $WAI_EXT_BUILD/ffmpeg-7.1)
#   FFMPEG_FULL_WORK  the full 5.1 build (FFMPEG_FULL=1; tests/ffmpeg/full-check.sh, by hand,
#                  not in CI)                             (default $WAI_EXT_BUILD/ffmpeg-full)
#   VLC_BUILD      where the vlc-wai plugin is built      (default $WAI_EXT_BUILD/vlc)
#   (tests/fuzz/ffmpeg/build.sh: FUZZ_WORK, default $WAI_EXT_BUILD/ffmpeg-fuzz, or
#   $WAI_EXT_BUILD/ffmpeg-cov with COVERAGE=1; for the 7.1 series FUZZ71_WORK, default
#   $WAI_EXT_BUILD/ffmpeg71-fuzz, or $WAI_EXT_BUILD/ffmpeg71-cov)
#
# A value set in the environment is kept (a relative one is taken from the current directory).
# FFmpeg does not build in a path with whitespace: for a checkout in one, set WAI_EXT_BUILD.
wai_abs_dir() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
WAI_EXT_BUILD=$(wai_abs_dir "${WAI_EXT_BUILD:-$ROOT/build-ext}")
WAI_BUILD=$(wai_abs_dir "${WAI_BUILD:-$WAI_EXT_BUILD/libwai}")
WAI_PREFIX=$(wai_abs_dir "${WAI_PREFIX:-$WAI_EXT_BUILD/libwai-prefix}")
FFMPEG_WORK=$(wai_abs_dir "${FFMPEG_WORK:-$WAI_EXT_BUILD/ffmpeg}")
FFMPEG71_WORK=$(wai_abs_dir "${FFMPEG71_WORK:-$WAI_EXT_BUILD/ffmpeg-7.1}")
# shellcheck disable=SC2034  # read by tests/ffmpeg/full-check.sh
FFMPEG_FULL_WORK=$(wai_abs_dir "${FFMPEG_FULL_WORK:-$WAI_EXT_BUILD/ffmpeg-full}")
VLC_BUILD=$(wai_abs_dir "${VLC_BUILD:-$WAI_EXT_BUILD/vlc}")
# The test scripts source a build's env.sh (PATH and LD_LIBRARY_PATH for their shell): this
# keeps its warning about the minimal build (ffmpeg-patches/build.sh) out of their logs.
# shellcheck disable=SC2034  # read by the env.sh a script sources after this
WAI_FFMPEG_ENV_QUIET=1
