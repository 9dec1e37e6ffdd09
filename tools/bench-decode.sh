#!/bin/sh
# Decode-throughput measurement for docs/research/decode-throughput.md: the machine and its
# load, then wai-bench (policies interleaved in one process, outputs hash-checked) and the
# float PyTorch reference of the same topology. Usage:
#   tools/bench-decode.sh BUILD_DIR [REPS] > log
#   tools/bench-decode.sh --short BUILD_DIR [REPS] > log
# BUILD_DIR must have tools/wai-bench and tools/wai-mkmodel built. The PyTorch part needs
# python3-torch (and libopenblas0-pthread for a fair baseline, see below); without torch it
# says "not measured".
#
# --short (about 1-2 minutes on an idle 2-core machine, bounded to 4 minutes): ONE wai-bench
# process, REPS (default 7) interleaved runs per policy, outputs hash-checked, medians with
# min-max, the load average before, between and after:
#   - convT 192->192 k5 s2, 64x64 -> 128x128, one thread, per kernel set (c, avx2, avx512,
#     avx512vnni; sets this CPU lacks are skipped): GMAC/s wall and per CPU-second;
#   - whole g_s at the q6 topology (N=192, M=320), 768x512: auto and avx512 kernels at one
#     thread and at the automatic count / two threads, with the speed-up (ratio of medians).
# A wai-bench that runs past 240 s is stopped (its finished cases are already printed).
set -eu
SHORT=0
if [ "${1:-}" = "--short" ]; then SHORT=1; shift; fi
B=${1:?usage: bench-decode.sh [--short] BUILD_DIR [REPS]}
REPS=${2:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
MODEL=${TMPDIR:-/tmp}/wai-bench-q6.whm

if [ $SHORT = 1 ]; then
    REPS=${2:-7}
    echo "== machine"
    lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L1d|L2|L3|Flags" | sed 's/^\(Flags:\).*\(avx512_vnni\).*/\1 ... \2 .../' || true
    echo "online CPUs: $(getconf _NPROCESSORS_ONLN)"
    echo "git: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown) (working tree may differ)"
    echo "load before: $(cat /proc/loadavg 2>/dev/null || uptime)"
    "$B/tools/wai-mkmodel" --topology q6 -o "$MODEL" > /dev/null
    # one process: g_s first, then the kernel case (wai-bench prints the load after each case)
    timeout 240 "$B/tools/wai-bench" --model "$MODEL" --reps "$REPS" --cases convt,gs \
        --policies c/1,avx2/1,avx512/1,avx512vnni/1 \
        --gs-policies auto/1,auto/0,avx512/1,avx512/2
    echo "load after: $(cat /proc/loadavg 2>/dev/null || uptime)"
    exit 0
fi

echo "== machine"
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L1d|L2|L3" || true
echo "git: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown) (working tree may differ)"
echo "load before: $(uptime)"
"$B/tools/wai-mkmodel" --topology q6 -o "$MODEL"

echo "== whole g_s at 768x512, q6 topology"
"$B/tools/wai-bench" --model "$MODEL" --reps "$REPS" --cases gs \
    --policies c/1,avx2/1,avx512/1,avx512vnni/1,auto/1,auto/0
echo "load: $(uptime)"
# the thread speed-up gets its own case with more runs: its medians are what the target is on
echo "== whole g_s, automatic threads against one, $((REPS * 5)) runs each"
"$B/tools/wai-bench" --model "$MODEL" --reps $((REPS * 5)) --cases gs --policies auto/1,auto/0
echo "load: $(uptime)"
echo "== g_s per layer"
"$B/tools/wai-bench" --model "$MODEL" --reps "$REPS" --cases layers --policies auto/1,auto/0
echo "load: $(uptime)"
echo "== kernels (1 thread unless /N)"
"$B/tools/wai-bench" --reps "$REPS" --cases convt,conv,igdn \
    --policies reference/1,c/1,avx2/1,avx512/1,avx512vnni/1,auto/0
echo "load: $(uptime)"
# Debian's python3-torch calls libblas.so.3: with only the reference BLAS (libblas3) installed
# its 1x1 convolutions and conv_transpose2d are ~10x slower; the record was made with
# libopenblas0-pthread installed (bench-torch.py prints which BLAS it found)
echo "== float PyTorch, same topology"
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
    /usr/bin/python3 "$SRC/tools/bench-torch.py" --reps "$REPS" --threads 1,0
else
    echo "PyTorch not available: not measured"
fi
echo "load after: $(uptime)"
