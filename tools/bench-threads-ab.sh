#!/bin/bash
# Thread speed-up of two builds, alternating (decode-throughput.md, "Spread across runs"):
# ROUNDS rounds, each running A's then B's wai-bench on the whole g_s (q6 topology, 768x512)
# with auto/1 and auto/2 interleaved in one process, REPS runs each; one line per run with the
# two wall medians, their ratio, the ratio of the minima and the 1-minute load average.
# wai-bench checks that every policy gives the same output hash.
#   tools/bench-threads-ab.sh BUILD_A BUILD_B [ROUNDS] [REPS]    (defaults 10, 15)
# e.g. BUILD_A a build of the commit before a change (git worktree), BUILD_B of the change.
set -eu
A=${1:?usage: bench-threads-ab.sh BUILD_A BUILD_B [ROUNDS] [REPS]}
B=${2:?usage: bench-threads-ab.sh BUILD_A BUILD_B [ROUNDS] [REPS]}
ROUNDS=${3:-10}
REPS=${4:-15}
MODEL=${TMPDIR:-/tmp}/wai-bench-q6.whm
"$B/tools/wai-mkmodel" --topology q6 -o "$MODEL" > /dev/null
for i in $(seq 1 "$ROUNDS"); do
    for side in A B; do
        if [ $side = A ]; then dir=$A; else dir=$B; fi
        "$dir/tools/wai-bench" --model "$MODEL" --reps "$REPS" --cases gs \
            --gs-policies auto/1,auto/2 2>&1 | awk -v i="$i" -v side="$side" \
            -v load="$(cut -d' ' -f1 /proc/loadavg)" '
            $1 == "auto/1" { m1 = $4; n1 = $7 + 0 }
            $1 == "auto/2" { m2 = $4; n2 = $7 + 0 }
            END { if (!m2) exit 1
                  printf "%s %s auto/1 %s auto/2 %s ratio %.3f minratio %.3f load %s\n",
                         i, side, m1, m2, m1 / m2, n1 / n2, load }'
    done
done
