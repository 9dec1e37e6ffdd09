#!/usr/bin/python3
"""Does --bf16 train the same model? Loss and gradient of float32 and of bf16 autocast
(model.forward(bf16=True)) on the same batches, the same noise, from a checkpoint.

    /usr/bin/python3 tools/train/check-bf16.py CKPT [--batches 3] [--seed 5]

Prints per batch both losses, the cosine between the two full gradient vectors and the ratio
of their norms. Batches of 8 train crops (128x128) of the first 20 train photos.
"""
import argparse
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import dataset  # noqa: E402
from model import MeanScaleHyperprior, rate_distortion  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(2)
    ck = torch.load(a.checkpoint, map_location="cpu", weights_only=False)
    m = MeanScaleHyperprior(ck["N"], ck["M"])
    m.load_state_dict(ck["model"])
    m = m.to(memory_format=torch.channels_last)
    rows = [r for r in dataset.read_manifest(check=False) if r["split"] == "train"][:20]
    sampler = dataset.CropSampler(rows, log=lambda *_: None)
    rng = np.random.default_rng(a.seed)
    print("%s (iteration %d, lambda %g)" % (a.checkpoint, ck["iteration"], ck["lambda"]))
    for trial in range(a.batches):
        x = torch.from_numpy(sampler.batch(rng, 8)).contiguous(memory_format=torch.channels_last)
        grads, losses = [], []
        for bf16 in (False, True):
            g = torch.Generator()
            g.manual_seed(trial)
            m.zero_grad()
            loss, _bpp, _mse = rate_distortion(m(x, g, ste=True, bf16=bf16), x, ck["lambda"])
            loss.backward()
            grads.append(torch.cat([p.grad.flatten() for p in m.parameters()
                                    if p.grad is not None]))
            losses.append(loss.item())
        cos = torch.nn.functional.cosine_similarity(grads[0], grads[1], 0).item()
        print("batch %d: loss float32 %.4f bf16 %.4f; gradient cosine %.4f, norm ratio %.4f"
              % (trial, losses[0], losses[1], cos, (grads[1].norm() / grads[0].norm()).item()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
