#!/bin/bash
# Each synthesis layer of two (or more) builds, alternating (docs/research/camera-size.md,
# session 27): ROUNDS rounds, each running every build's `wai-bench --cases layers` in turn
# (REPS repetitions of each layer per run, one kernel policy), then per layer and build the
# median, minimum and maximum over the rounds of the runs' wall medians (ms). wai-bench checks
# that its policies agree; across builds compare the output hashes it prints with
# `--cases layers` by hand where that matters.
#   tools/bench-layers-ab.sh ROUNDS CASES BUILD...     (CASES: wai-bench's, e.g. layers)
# Environment: T threads (default 1), KERNELS (default avx512amx), MODEL (default
# models/wai-vr1.whm), SIZE (default 1920x1088), REPS (default 3).
# e.g. T=2 tools/bench-layers-ab.sh 3 layers <build of the base commit> build
set -eu
rounds=${1:?usage: bench-layers-ab.sh ROUNDS CASES BUILD...}
cases=${2:?usage: bench-layers-ab.sh ROUNDS CASES BUILD...}
shift 2
[ $# -ge 1 ] || { echo "usage: bench-layers-ab.sh ROUNDS CASES BUILD..." >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
model=${MODEL:-$root/models/wai-vr1.whm}
for r in $(seq "$rounds"); do
    for b in "$@"; do
        "$b/tools/wai-bench" --model "$model" --size "${SIZE:-1920x1088}" --reps "${REPS:-3}" \
            --policies "${KERNELS:-avx512amx}/${T:-1}" --cases "$cases" 2>&1 |
            awk -v b="$b" '/^g_s layer|^IGDN|^conv/ { name = $1 " " $2 " " $3 " " $4 }
                           /wall median/ { print b, name, $4 }'
    done
done | awk '{ k = $1 " " $2 " " $3 " " $4 " " $5; v[k] = v[k] " " $6 }
            END { for (k in v) print k, v[k] }' | sort -k2,5 |
while read -r b g l n t rest; do
    echo "$g $l $n $t $b: $(echo "$rest" | tr ' ' '\n' | sort -n |
        awk '{ a[NR] = $1 } END { printf "median %.1f min %.1f max %.1f", a[int((NR + 1) / 2)], a[1], a[NR] }')"
done
