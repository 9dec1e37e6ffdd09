#!/bin/sh
# The scope of a patched FFmpeg build of ffmpeg-patches/build.sh (issue 15): its wrappers give the
# build to one command alone, and its env.sh, which gives it to a whole shell, says what that
# breaks, in words that agree with what the build has.
#
#   tests/ffmpeg/env-check.sh WORKDIR VECTOR SHA256
#
# WORKDIR: a work dir of build.sh (either series); VECTOR: a .wai whose model WAI_MODEL_PATH
# finds; SHA256: that of its decoded RGB24. tests/ffmpeg/run.sh runs it on its build (both
# series). Prints PASS/FAIL lines, then "env-check: N passed, M failed"; exits 1 on a failure.
#   wrappers  WORKDIR/bin/ffmpeg-wai, ffprobe-wai and with-wai-ffmpeg exist and run: ffmpeg-wai
#             decodes VECTOR to SHA256, ffprobe-wai names codec wai, with-wai-ffmpeg gives CMD
#             this build's PATH and library path first (the caller's kept after them) and passes
#             CMD's exit status on; the calling shell's PATH and LD_LIBRARY_PATH are the same after
#  env.sh     still sets PATH and LD_LIBRARY_PATH; sourced, it prints its warning on stderr (the
#             word MINIMAL, the wrappers), and nothing with WAI_FFMPEG_ENV_QUIET=1
#  has/lacks  its "has decoders/encoders/demuxers/muxers/protocols/bsfs/filters/devices" lines are
#             exactly what the build's ffmpeg lists (-decoders, ...), its "lacks" lines name
#             h264, mov, mp4 and http, none of which that ffmpeg lists, and its words "no audio
#             decoder" hold
#  shadows    its "shadows" line names exactly the build's sonames that the system's ld.so cache
#             has too; its "missing functions" are in those system libraries and not in the build
#  mpv        (if installed) Debian's mpv: its own decoders include h264; under env.sh it has
#             libwai and no h264 where env.sh says it shadows mpv's libavcodec, and keeps its own
#             where env.sh says it does not; with-wai-ffmpeg mpv has libwai; after that, mpv in
#             the calling shell has its own decoders again
set -u

WORK=${1:?usage: env-check.sh WORKDIR VECTOR SHA256}
WORK=$(cd "$WORK" && pwd) || exit 1
VECTOR=${2:?usage: env-check.sh WORKDIR VECTOR SHA256}
WANT=${3:?usage: env-check.sh WORKDIR VECTOR SHA256}
ENV=$WORK/env.sh
BIN=$WORK/bin
INST=$WORK/install

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "PASS env: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL env: $*"; }
finish() {
    echo "env-check: $pass passed, $fail failed"
    [ "$fail" -eq 0 ] && exit 0
    exit 1
}
T=$(mktemp -d /tmp/wai-env-check.XXXXXX)
trap 'rm -rf "$T"' EXIT

# The caller (run.sh) may have sourced env.sh already: start from a shell without this build,
# with a marker as the caller's own library path
PATH=$(printf '%s\n' "$PATH" | tr ':' '\n' | grep -vxF "$INST/bin" | grep -vxF "$BIN" | paste -sd: -)
LD_LIBRARY_PATH=/nonexistent/wai-env-check-caller
export PATH LD_LIBRARY_PATH
unset WAI_FFMPEG_ENV_QUIET
path0=$PATH; ldp0=$LD_LIBRARY_PATH
sha() { sha256sum | cut -d' ' -f1; }
# words of a list, one a line, sorted
words() { tr ' ,' '\n\n' | sed '/^$/d' | sort -u; }
# env.sh's "  KEY: LIST" line (of its comment), the list
stated() { sed -n "s/^#   $1: *//p" "$ENV" | head -n 1; }
contains() { printf '%s\n' "$1" | words | grep -qxF "$2"; }

for w in ffmpeg-wai ffprobe-wai with-wai-ffmpeg; do
    [ -x "$BIN/$w" ] || bad "no executable $BIN/$w"
done
[ -f "$ENV" ] || bad "no $ENV"
[ "$fail" -eq 0 ] || finish
ok "wrappers ffmpeg-wai, ffprobe-wai, with-wai-ffmpeg in $BIN"

# --- wrappers -------------------------------------------------------------------------------
got=$("$BIN/ffmpeg-wai" -nostdin -v error -i "$VECTOR" -f rawvideo -pix_fmt rgb24 - 2>"$T/err" | sha)
[ "$got" = "$WANT" ] && ok "ffmpeg-wai decodes $(basename "$VECTOR") (sha256 matches)" ||
    bad "ffmpeg-wai decode: $got, want $WANT; $(head -c 300 "$T/err")"
got=$("$BIN/ffprobe-wai" -v error -show_entries stream=codec_name -of default=nw=1 "$VECTOR" 2>&1)
[ "$got" = "codec_name=wai" ] && ok "ffprobe-wai: $got" || bad "ffprobe-wai: '$got', want codec_name=wai"
# the library path and PATH CMD sees: this build's first, the caller's after them
got=$("$BIN/with-wai-ffmpeg" sh -c 'printf "%s\n%s\n" "$LD_LIBRARY_PATH" "$(command -v ffmpeg)"')
ldp=$(printf '%s\n' "$got" | sed -n 1p); cmdff=$(printf '%s\n' "$got" | sed -n 2p)
case $ldp in
    "$INST/lib:"*":$ldp0") lib_ok=1 ;;
    *) lib_ok=0 ;;
esac
if [ $lib_ok = 1 ] && [ "$cmdff" = "$INST/bin/ffmpeg" ]; then
    ok "with-wai-ffmpeg: CMD gets LD_LIBRARY_PATH $INST/lib first (the caller's kept) and this ffmpeg"
else
    bad "with-wai-ffmpeg: CMD got LD_LIBRARY_PATH '$ldp', ffmpeg '$cmdff'"
fi
"$BIN/with-wai-ffmpeg" sh -c 'exit 3'; rc=$?
"$BIN/with-wai-ffmpeg" >/dev/null 2>&1; rc0=$?
got=$("$BIN/with-wai-ffmpeg" ffprobe -v error -show_entries stream=codec_name -of default=nw=1 "$VECTOR" 2>&1)
[ $rc = 3 ] && [ $rc0 = 2 ] && [ "$got" = "codec_name=wai" ] &&
    ok "with-wai-ffmpeg: exit status passed on (3), usage error without CMD, with-wai-ffmpeg ffprobe: $got" ||
    bad "with-wai-ffmpeg: exit status $rc (want 3), without CMD $rc0 (want 2), ffprobe '$got'"
# what the wrappers must not do: change the calling shell
[ "$LD_LIBRARY_PATH" = "$ldp0" ] && [ "$PATH" = "$path0" ] &&
    ok "after the wrappers the calling shell's LD_LIBRARY_PATH and PATH are unchanged" ||
    bad "after the wrappers the calling shell has LD_LIBRARY_PATH=$LD_LIBRARY_PATH PATH=$PATH"

# --- env.sh: what it does, and that it says so ----------------------------------------------
got=$(env -u WAI_FFMPEG_ENV_QUIET sh -c '. "$1" 2>/dev/null; printf "%s\n%s\n" "$LD_LIBRARY_PATH" "$(command -v ffmpeg)"' sh "$ENV")
ldp=$(printf '%s\n' "$got" | sed -n 1p); cmdff=$(printf '%s\n' "$got" | sed -n 2p)
case $ldp in "$INST/lib:"*":$ldp0") lib_ok=1 ;; *) lib_ok=0 ;; esac
[ $lib_ok = 1 ] && [ "$cmdff" = "$INST/bin/ffmpeg" ] &&
    ok "env.sh sets LD_LIBRARY_PATH ($INST/lib first) and PATH (this ffmpeg) for the shell" ||
    bad "env.sh: the shell got LD_LIBRARY_PATH '$ldp', ffmpeg '$cmdff'"
env -u WAI_FFMPEG_ENV_QUIET sh -c '. "$1"' sh "$ENV" >"$T/out" 2>"$T/warn"
WAI_FFMPEG_ENV_QUIET=1 sh -c '. "$1"' sh "$ENV" >"$T/qout" 2>"$T/quiet"
if grep -q MINIMAL "$T/warn" && grep -qF "$BIN/with-wai-ffmpeg" "$T/warn" && grep -q "lacks decoders:" "$T/warn" &&
   [ ! -s "$T/out" ] && [ ! -s "$T/qout" ] && [ ! -s "$T/quiet" ]; then
    ok "env.sh, sourced, warns on stderr ($(wc -l <"$T/warn") lines: MINIMAL, what it lacks, the wrappers); quiet with WAI_FFMPEG_ENV_QUIET=1"
else
    bad "env.sh warning: stderr '$(head -c 200 "$T/warn")', stdout '$(head -c 100 "$T/out")', quiet stderr '$(head -c 100 "$T/quiet")'"
fi
grep -q '^# .*MINIMAL' "$ENV" && grep -q '^# Configured with: .*--disable-everything' "$ENV" &&
    ok "env.sh's comment says it (MINIMAL, the configure line)" || bad "env.sh's comment lacks MINIMAL or the configure line"

# --- env.sh's lists against the build's ffmpeg ------------------------------------------------
FFW="$BIN/ffmpeg-wai -hide_banner"
# names ffmpeg lists after its legend's dashes, first of a comma list (matroska,webm)
listed() { $FFW -"$1" 2>/dev/null | awk 'on && NF >= 2 { print $2 } /^ *-+ *$/ { on = 1 }' | cut -d, -f1 | sort -u; }
listed decoders >"$T/decoders"; listed encoders >"$T/encoders"
listed demuxers >"$T/demuxers"; listed muxers >"$T/muxers"; listed devices >"$T/devices"
$FFW -protocols 2>/dev/null | awk '/^(Input|Output):/ { on = 1; next } on && NF == 1 { print $1 }' | sort -u >"$T/protocols"
$FFW -bsfs 2>/dev/null | awk 'NR > 1 && NF == 1 { print $1 }' | sort -u >"$T/bsfs"
$FFW -filters 2>/dev/null | awk '$3 ~ /->/ { print $2 }' |
    grep -vxE 'a?buffer(sink)?' | sort -u >"$T/filters"
[ -s "$T/decoders" ] && [ -s "$T/demuxers" ] && [ -s "$T/filters" ] || { bad "ffmpeg-wai lists no decoders/demuxers/filters"; finish; }
for kind in decoders encoders demuxers muxers protocols bsfs filters devices; do
    st=$(stated "has $kind" | sed 's/ (and .*//')
    [ "$st" = none ] && st=
    printf '%s\n' "$st" | words >"$T/st"
    if [ -n "$(stated "has $kind")" ] && cmp -s "$T/st" "$T/$kind"; then
        ok "env.sh 'has $kind: $(stated "has $kind" | cut -c1-60)' = ffmpeg-wai -$kind"
    else
        bad "env.sh 'has $kind' = '$(stated "has $kind")', ffmpeg-wai -$kind lists '$(tr '\n' ' ' <"$T/$kind")'"
    fi
done
for pair in decoders:h264 demuxers:mov muxers:mp4 protocols:http; do
    kind=${pair%:*}; must=${pair#*:}
    st=$(stated "lacks $kind")
    there=$(printf '%s\n' "$st" | words | grep -xFf "$T/$kind" | tr '\n' ' ')
    if contains "$st" "$must" && [ -z "$there" ]; then
        ok "env.sh 'lacks $kind' names $must, and ffmpeg-wai -$kind lists none of '$st'"
    else
        bad "env.sh 'lacks $kind: $st': must name $must, and ffmpeg-wai lists none of it (lists: '$there')"
    fi
done
if grep -q '^# .*no audio decoder' "$ENV"; then
    naudio=$($FFW -decoders 2>/dev/null | awk 'on && $1 ~ /^A/ { n++ } /^ *-+ *$/ { on = 1 } END { print n + 0 }')
    [ "$naudio" = 0 ] && ok "env.sh says 'no audio decoder': ffmpeg-wai -decoders has none" ||
        bad "env.sh says 'no audio decoder', ffmpeg-wai -decoders has $naudio"
fi

# --- what it replaces on this system ------------------------------------------------------------
sonames=$(cd "$INST/lib" && ls | grep -E '^lib.*\.so\.[0-9]+$' | sort)
cache=$(PATH=$PATH:/sbin:/usr/sbin ldconfig -p 2>/dev/null)
shadow=
for so in $sonames; do
    sys=$(printf '%s\n' "$cache" | awk -v s="$so" '$1 == s { print $NF; exit }')
    [ -n "$sys" ] && [ -f "$sys" ] && shadow="$shadow $so"
done
st=$(stated shadows)
[ "$st" = none ] && st=
if [ -n "$(stated shadows)" ] && [ "$(printf '%s\n' "$st" | words)" = "$(printf '%s\n' "$shadow" | words)" ]; then
    ok "env.sh 'shadows: $(stated shadows | cut -c1-60)' = the build's sonames the system has too"
else
    bad "env.sh 'shadows: $(stated shadows)', the system has: '${shadow# }'"
fi
missing=$(stated "missing functions")
if [ -n "$missing" ] && command -v nm >/dev/null 2>&1; then
    : >"$T/sym.sys"; : >"$T/sym.ours"
    for so in $shadow; do
        sys=$(printf '%s\n' "$cache" | awk -v s="$so" '$1 == s { print $NF; exit }')
        nm -D --defined-only "$sys" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' >>"$T/sym.sys"
        nm -D --defined-only "$INST/lib/$so" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' >>"$T/sym.ours"
    done
    wrong=
    for f in $missing; do
        in_sys=0; in_ours=0
        grep -qxF "$f" "$T/sym.sys" && in_sys=1
        grep -qxF "$f" "$T/sym.ours" && in_ours=1
        [ $in_sys = 1 ] && [ $in_ours = 0 ] || wrong="$wrong $f(system:$in_sys build:$in_ours)"
    done
    [ -z "$wrong" ] && ok "env.sh's missing functions ($missing): in the system's libraries, not in the build's" ||
        bad "env.sh's missing functions wrong:$wrong"
elif [ -n "$shadow" ] && [ -z "$missing" ] && command -v nm >/dev/null 2>&1; then
    echo "note: env.sh names no missing functions (the build exports all the system's)"
fi

# --- mpv: what env.sh says it breaks, and that the wrapper does not --------------------------------
if command -v mpv >/dev/null 2>&1; then
    vd() { "$@" --no-config --vd=help 2>/dev/null | awk '{ print $1 }'; }
    mso=$(ldd "$(command -v mpv)" 2>/dev/null | awk '$1 ~ /^libavcodec\.so\./ { print $1; exit }')
    vd mpv >"$T/mpv-own"
    env -u WAI_FFMPEG_ENV_QUIET sh -c '. "$1" 2>/dev/null; shift; exec "$@"' sh "$ENV" mpv --no-config --vd=help 2>/dev/null |
        awk '{ print $1 }' >"$T/mpv-env"
    vd "$BIN/with-wai-ffmpeg" mpv >"$T/mpv-wrap"
    vd mpv >"$T/mpv-after"
    if ! grep -qx h264 "$T/mpv-own"; then
        bad "mpv (without this build) has no h264 decoder: cannot tell"
    elif contains "$(stated shadows)" "$mso"; then
        grep -qx libwai "$T/mpv-env" && ! grep -qx h264 "$T/mpv-env" &&
            ok "mpv under env.sh: libwai and no h264, as env.sh says (it shadows mpv's $mso)" ||
            bad "mpv under env.sh: $(grep -cx libwai "$T/mpv-env") libwai, $(grep -cx h264 "$T/mpv-env") h264; env.sh says it shadows $mso"
        grep -qx libwai "$T/mpv-wrap" && ok "with-wai-ffmpeg mpv: libwai" ||
            bad "with-wai-ffmpeg mpv: no libwai decoder"
    else
        grep -qx h264 "$T/mpv-env" && ! grep -qx libwai "$T/mpv-env" &&
            ok "mpv under env.sh keeps its own decoders (h264), as env.sh says (mpv loads $mso, not shadowed)" ||
            bad "mpv under env.sh lost its decoders, but env.sh does not name $mso as shadowed"
    fi
    grep -qx h264 "$T/mpv-after" && ! grep -qx libwai "$T/mpv-after" &&
        ok "mpv in the calling shell after with-wai-ffmpeg: its own decoders (h264)" ||
        bad "mpv in the calling shell after with-wai-ffmpeg: not its own decoders"
else
    echo "note: no mpv: the checks of what env.sh breaks in another program are skipped"
fi

finish
