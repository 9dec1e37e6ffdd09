#!/usr/bin/python3
"""Readings for the integer half of docs/research/reproducibility.md.

    python3 tools/eval/repro_int.py --work DIR [--wai build/tools/wai]

Decodes every stream DIR/*-q*.wai (made by determinism.py) with `wai decode --sha256` under
every kernel set (reference, c, avx2, avx512, avx512vnni, auto) x threads (1, 2, 0 = automatic), and once
with `--device vulkan`; writes docs/research/data/repro-int.tsv (one decoded-RGB SHA-256 a row).
A kernel set this CPU or build lacks is written as `unavailable`, any other failure as
`error:exitN` (counted as a distinct output by the record).
"""

import argparse
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import records as R  # noqa: E402

CONFIGS = [(k, t, "cpu") for k in ("reference", "c", "avx2", "avx512", "avx512vnni", "auto")
           for t in ("1", "2", "0")] + [("auto", "0", "vulkan")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--wai", default=os.path.join(ROOT, "build", "tools", "wai"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "research", "data"))
    ap.add_argument("--qualities", help="comma list: decode only these qualities' streams; "
                    "their rows replace theirs in the file there, the others are kept")
    a = ap.parse_args()
    only_q = {int(q) for q in a.qualities.split(",")} if a.qualities else None
    env = dict(os.environ, WAI_MODEL_PATH=os.path.join(ROOT, "models"))
    rows = []
    for s in sorted(glob.glob(os.path.join(a.work, "*-q*.wai"))):
        name, q = os.path.basename(s)[:-4].rsplit("-q", 1)
        if only_q is not None and int(q) not in only_q:
            continue
        for k, t, dev in CONFIGS:
            cmd = [a.wai, "decode", s, "--sha256", "--kernels", k, "--threads", t, "--device", dev]
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if r.returncode == 0 and r.stdout.split():
                h = r.stdout.split()[0]
            elif "not available on this CPU" in r.stderr:
                h = "unavailable"
            else:   # any other failure is a reading of its own, and fails the record's claim
                h = "error:exit%d" % r.returncode
            rows.append((name, int(q), k, t, dev, h))
        print(name, q, "done", flush=True)
    os.makedirs(a.out, exist_ok=True)
    R.write_tsv(os.path.join(a.out, "repro-int.tsv"),
                "# picture\tquality\tkernels\tthreads\tdevice\trgb_sha256\n",
                ["%s\t%d\t%s\t%s\t%s\t%s\n" % r for r in sorted(rows, key=lambda r: (r[1], r[0]))],
                only_q)
    return 0


if __name__ == "__main__":
    sys.exit(main())
