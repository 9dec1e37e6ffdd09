#!/usr/bin/python3
"""Learning curves from the training logs: eval-set bpp and PSNR against iterations.

    /usr/bin/python3 tools/train/plot-curves.py [-o docs/research/data/learning-curves.png]
                                                [LOG ...]

Reads the `eval it N bpp B psnr P ...` lines of each log (default: every tools/train/logs/*.log
but driver.log) and plots, per log (one quality or the base model), PSNR against iterations,
bpp against iterations, and the rate-distortion path (PSNR against bpp, the iteration rising
along it). The figures are the trainer's own: bpp from the likelihoods of the rounded latents,
PSNR of the clamped float reconstruction, means over the eval pictures (tools/train/README.md).
A log whose model was started from another checkpoint (`init-from ... (NAME iteration N, ...)`
on its start line: a fine-tune) is drawn from that checkpoint's iteration N on, so the
fine-tunes continue the base model's curve (plus NAME's own start when logs/NAME.log is itself a
fine-tune: a fine-tune of a fine-tune; a widened copy named SOURCE-n<N>m<M> by widen.py
continues SOURCE's curve). A variable-rate model's log (train.py --rates) is drawn as one
curve per rate, in one colour. The logs of the first models (session 1, iteration
~2500 each) are in logs/session1/ and not drawn unless named. Needs
python3-matplotlib (Debian).
"""

import argparse
import glob
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EVAL = re.compile(r"eval it (\d+) bpp ([0-9.]+) psnr ([0-9.]+)")
# a variable-rate model (train.py --rates) evaluates every rate: `eval-rate R (lambda L) it ...`
# lines, and the `eval it ...` line of the middle rate ends `rate R (lambda L)`
EVAL_RATE = re.compile(r"eval-rate (\d+) \(lambda ([0-9.e-]+)\) it (\d+) bpp ([0-9.]+) psnr ([0-9.]+)")
MID_RATE = re.compile(r" rate (\d+) \(lambda ([0-9.e-]+)\)\s*$")
START = re.compile(r" start N=(\d+) M=(\d+) lambda=([0-9.e-]+)")
INIT = re.compile(r"init-from \S+ \((\S+) iteration (\d+),")
WIDENED = re.compile(r"^(.+)-n\d+m\d+$")


def read_log(path):
    """[(iteration, bpp, psnr)] of the last run of a log (a log restarted from scratch, i.e.
    with a second `start` line, keeps only what follows it) and its start line's fields; for a
    variable-rate model meta["rates"] = {rate: (lambda, [(iteration, bpp, psnr)])}."""
    points, meta = [], {}
    with open(path) as f:
        for line in f:
            m = START.search(line)
            if m:
                points = []
                i = INIT.search(line)
                meta = {"N": int(m.group(1)), "M": int(m.group(2)), "lambda": float(m.group(3)),
                        "init": (i.group(1), int(i.group(2))) if i else None}
                continue
            m = EVAL_RATE.search(line)
            if m:
                r = meta.setdefault("rates", {}).setdefault(int(m.group(1)), (float(m.group(2)), []))
                r[1].append((int(m.group(3)), float(m.group(4)), float(m.group(5))))
                continue
            m = EVAL.search(line)
            if m:
                pt = (int(m.group(1)), float(m.group(2)), float(m.group(3)))
                points.append(pt)
                mid = MID_RATE.search(line)
                if mid:
                    meta.setdefault("rates", {}).setdefault(
                        int(mid.group(1)), (float(mid.group(2)), []))[1].append(pt)
    return points, meta


def start_of(init, logdir, own, depth=0):
    """Where a fine-tune's curve starts: its source's iteration plus, when the source was a
    fine-tune too (its own log in the same folder names its source), that one's start. `own`
    is the log being drawn: a source named like it is not its own source."""
    if not init:
        return 0
    name, iteration = init
    src = os.path.join(logdir, name + ".log")
    widened = WIDENED.match(name)
    if (not os.path.exists(src) or os.path.samefile(src, own)) and widened:
        # widen.py names its copy SOURCE-n<N>m<M> and keeps the source's iteration count
        src = os.path.join(logdir, widened.group(1) + ".log")
    if depth < 8 and os.path.exists(src) and not os.path.samefile(src, own):
        return iteration + start_of(read_log(src)[1].get("init"), logdir, src, depth + 1)
    return iteration


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="*")
    ap.add_argument("-o", "--output",
                    default=os.path.join(HERE, "..", "..", "docs", "research", "data",
                                         "learning-curves.png"))
    a = ap.parse_args()
    logs = a.logs or sorted(p for p in glob.glob(os.path.join(HERE, "logs", "*.log"))
                            if os.path.basename(p) != "driver.log")
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    colours = plt.get_cmap("tab20").colors  # tab10's cycle repeats after 10 logs
    drawn = []
    for path in logs:
        points, meta = read_log(path)
        if not points:
            continue
        name = os.path.splitext(os.path.basename(path))[0]
        init = meta.get("init")
        rates = meta.get("rates")
        if rates:   # one curve per rate, one colour and one legend entry for the model
            lams = [rates[r][0] for r in sorted(rates)]
            label = "%s (%d rates, lambda %g..%g%s)" % (name, len(rates), min(lams), max(lams),
                                                        ", from %s it %d" % init if init else "")
            curves = [rates[r][1] for r in sorted(rates)]
        else:
            label = "%s (lambda %g%s)" % (name, meta.get("lambda", float("nan")),
                                          ", from %s it %d" % init if init else "")
            curves = [points]
        start = start_of(init, os.path.dirname(path), path)
        for k, pts in enumerate(curves):
            it = [p[0] + start for p in pts]
            bpp = [p[1] for p in pts]
            psnr = [p[2] for p in pts]
            style = {"marker": ".", "label": label if k == 0 else None,
                     "color": colours[len(drawn) % len(colours)]}
            axes[0].plot(it, psnr, **style)
            axes[1].plot(it, bpp, **style)
            axes[2].plot(bpp, psnr, **style)
        axes[2].annotate("%dk" % (it[-1] // 1000), (bpp[-1], psnr[-1]), fontsize=7)
        it = [p[0] + start for p in points]
        bpp = [p[1] for p in points]
        psnr = [p[2] for p in points]
        drawn.append("%s: %d evals, last it %d: %.3f bpp %.2f dB" % (name, len(points), it[-1],
                                                                     bpp[-1], psnr[-1]))
    if not drawn:
        raise SystemExit("no eval lines in %s" % " ".join(logs))
    axes[0].set(xlabel="iteration", ylabel="PSNR (dB, eval-set mean)", title="PSNR")
    axes[1].set(xlabel="iteration", ylabel="bpp (eval-set mean, likelihoods)", title="rate")
    axes[2].set(xlabel="bpp", ylabel="PSNR (dB)", title="RD path during training")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("WAI training: eval set (%d logs)" % len(drawn))
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    fig.savefig(a.output, dpi=90)
    print("wrote %s" % a.output)
    for d in drawn:
        print("  " + d)


if __name__ == "__main__":
    main()
