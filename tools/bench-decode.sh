#!/bin/sh
# Decode-throughput measurement for docs/research/decode-throughput.md: the machine and its
# load, then wai-bench (policies interleaved in one process, outputs hash-checked) and the
# float PyTorch reference of the same topology. Usage:
#   tools/bench-decode.sh BUILD_DIR [REPS] > log
# BUILD_DIR must have tools/wai-bench and tools/wai-mkmodel built.
set -eu
B=${1:?usage: bench-decode.sh BUILD_DIR [REPS]}
REPS=${2:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
MODEL=${TMPDIR:-/tmp}/wai-bench-q6.whm

echo "== machine"
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L1d|L2|L3" || true
echo "git: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown) (working tree may differ)"
echo "load before: $(uptime)"
"$B/tools/wai-mkmodel" --topology q6 -o "$MODEL"

echo "== whole g_s at 768x512, q6 topology"
"$B/tools/wai-bench" --model "$MODEL" --reps "$REPS" --cases gs \
    --policies c/1,avx2/1,avx512/1,auto/1,auto/0
echo "load: $(uptime)"
echo "== g_s per layer"
"$B/tools/wai-bench" --model "$MODEL" --reps "$REPS" --cases layers --policies auto/1,auto/0
echo "load: $(uptime)"
echo "== kernels (1 thread unless /N)"
"$B/tools/wai-bench" --reps "$REPS" --cases convt,conv,igdn \
    --policies reference/1,c/1,avx2/1,avx512/1,auto/0
echo "load: $(uptime)"
echo "== float PyTorch, same topology"
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
    /usr/bin/python3 "$SRC/tools/bench-torch.py" --reps "$REPS" --threads 1,0
else
    echo "PyTorch not available: not measured"
fi
echo "load after: $(uptime)"
