#!/bin/sh
# Rerun the generators and require byte-identical output: the built model must have the SHA-256
# pinned in the manifest, and wai-mkvectors must rewrite every committed vector and the
# manifest byte for byte.
# The rule models (wai-mkmodel --topology rule-*) follow; each must have a SHA-256 the manifest
# pins on a "# rule model" line.
#   regen-vectors.sh MKVECTORS MODEL VECTOR_DIR [RULE_MODEL...]
set -eu
mkvectors=$1; model=$2; vdir=$3; shift 3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pinned=$(sed -n 's/^# model \([0-9a-f]\{64\}\).*/\1/p' "$vdir/manifest.txt")
actual=$(sha256sum "$model" | cut -d' ' -f1)
if [ "$pinned" != "$actual" ]; then
    echo "FAIL: model $model has sha256 $actual, manifest pins $pinned"; exit 1
fi
rules=""
for r in "$@"; do
    actual=$(sha256sum "$r" | cut -d' ' -f1)
    if ! grep -q "^# rule model $actual " "$vdir/manifest.txt"; then
        echo "FAIL: rule model $r has sha256 $actual, not pinned in the manifest"; exit 1
    fi
    rules="$rules --model $r"
done
# shellcheck disable=SC2086
"$mkvectors" --model "$model" $rules --out-dir "$tmp" --manifest "$tmp/manifest.txt" 2>/dev/null
fail=0; n=0
for f in "$tmp"/*; do
    n=$((n + 1))
    b=$(basename "$f")
    if cmp -s "$f" "$vdir/$b"; then echo "PASS $b identical"; else echo "FAIL $b differs"; fail=$((fail + 1)); fi
done
echo "regen: $((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
