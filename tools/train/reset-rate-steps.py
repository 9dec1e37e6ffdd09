#!/usr/bin/python3
"""Replace one rate's steps in a variable-rate training checkpoint (train.py --rates; a full
one, with its optimiser state) by the geometric mean of its neighbours' (log-steps averaged),
and zero the Adam moments of that row, so training goes on from there:

    /usr/bin/python3 tools/train/reset-rate-steps.py CKPT RATE

Stop the trainer first (run-background.sh stop). Used once, session 21, on vr-n128m192 at
iteration 1,407, rate 4, whose reconstruction steps had gone wrong while the weights were fixed
(docs/research/variable-rate.md section 4; val-rate-steps.py measures a rate's steps).
"""
import sys

import torch


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    path, r = sys.argv[1], int(sys.argv[2])
    c = torch.load(path, map_location="cpu", weights_only=False)
    if not c.get("rates") or c.get("lean") or "opt" not in c:
        raise SystemExit("%s: not a full variable-rate checkpoint" % path)
    if not 0 < r < len(c["rates"]) - 1:
        raise SystemExit("rate %d has no two neighbours" % r)
    m = c["model"]
    for k in ("rate_log_dq", "rate_log_dr"):
        m[k][r] = (m[k][r - 1] + m[k][r + 1]) / 2
    rows = 0
    for st in c["opt"]["state"].values():
        for key in ("exp_avg", "exp_avg_sq"):
            if key in st and tuple(st[key].shape) == tuple(m["rate_log_dq"].shape):
                st[key][r].zero_()
                rows += 1
    torch.save(c, path)
    print("%s: rate %d's steps from rates %d and %d (iteration %d); %d Adam moment rows zeroed"
          % (path, r, r - 1, r + 1, c["iteration"], rows))


if __name__ == "__main__":
    main()
