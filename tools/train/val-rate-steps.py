#!/usr/bin/python3
"""Where a rate's steps of a variable-rate checkpoint lose: one rate measured (validation
pictures, float model, rounded latents; as val-rates.py) with its own steps and with three
replacements:

    /usr/bin/python3 tools/train/val-rate-steps.py VR_CKPT RATE [RATE...]

  own          the learned quantisation steps dq and reconstruction steps dr
  dr = dq      its dq, reconstruction at the quantisation step (no shrinkage)
  neighbours   dq and dr the geometric mean of rates RATE-1 and RATE+1's (inner rates)
  uniform      one dq and one dr for every channel: the medians of its own

(Session 21: rate 4 of vr-n128m192 lost 0.4-0.5 dB against the curve through its neighbours;
docs/research/variable-rate.md section 4.)
"""
import importlib.util
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dataset  # noqa: E402

_spec = importlib.util.spec_from_file_location("val_rates", os.path.join(HERE, "val-rates.py"))
val_rates = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(val_rates)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    torch.set_num_threads(2)
    pics = [dataset.load_eval(r["path"]) for r in dataset.read_manifest(check=False)
            if r["split"] == "val"]
    m, ck = val_rates.load(sys.argv[1])
    if not ck.get("rates"):
        raise SystemExit("%s is not a variable-rate checkpoint" % sys.argv[1])
    dq, dr = m.rate_log_dq.data, m.rate_log_dr.data
    print("%s (iteration %d), %d validation pictures" % (sys.argv[1], ck["iteration"], len(pics)))
    for r in (int(v) for v in sys.argv[2:]):
        q0, r0 = dq[r].clone(), dr[r].clone()
        tries = [("own", q0, r0), ("dr = dq", q0, q0)]
        if 0 < r < len(ck["rates"]) - 1:
            tries.append(("neighbours", (dq[r - 1] + dq[r + 1]) / 2, (dr[r - 1] + dr[r + 1]) / 2))
        tries.append(("uniform", q0.median().expand_as(q0).clone(),
                      r0.median().expand_as(r0).clone()))
        for name, q, d in tries:
            dq[r], dr[r] = q, d
            bpp, psnr = val_rates.measure(m, pics, r)
            print("rate %2d (lambda %g) %-10s %.4f bpp %.2f dB" % (r, ck["rates"][r], name, bpp, psnr),
                  flush=True)
        dq[r], dr[r] = q0, r0


if __name__ == "__main__":
    main()
