#!/usr/bin/python3
"""Resumable round-robin trainer of mbt2018-mean models, one per quality.

    nice -n 15 /usr/bin/python3 tools/train/train.py --qualities 1,3,5,7

Each quality q has its checkpoint tools/train/checkpoints/q<q>.pt (--out changes tools/train) (weights, both optimisers,
iteration, RNG states; written atomically every --save-every seconds and on SIGTERM/SIGINT) and
its log tools/train/logs/q<q>.log. Starting again resumes every quality where its checkpoint
left it. The qualities take turns, --chunk iterations each, so all progress together.
"""

import argparse
import math
import os
import signal
import sys
import time

# Before torch loads libgomp: idle OpenMP threads sleep instead of spinning. On a loaded shared
# machine spinning made a step 3-6x slower (measured 4.8 s vs 0.8 s wall with 2 threads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _tune_malloc():
    """glibc serves the 1-8 MB activation tensors with mmap/munmap, so every op page-faults
    fresh memory; keeping them on the heap made a step ~2x faster (1.15 -> 0.45 s wall)."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: the glibc maximum
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: do not give the heap back
        libc.mallopt(-2, 64 << 20)  # M_TOP_PAD: grow it in large steps
    except (OSError, AttributeError):
        pass  # not glibc: only slower


_tune_malloc()

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dataset  # noqa: E402
from model import LAMBDAS, MeanScaleHyperprior, rate_distortion  # noqa: E402

CKPT_FORMAT = "wai-train-mbt2018-mean-1"


def now():
    return time.strftime("%Y-%m-%d %H:%M:%S")


def parse_schedule(text):
    """"0:5e-4,40000:1e-4" -> [(0, 5e-4), (40000, 1e-4)]: piecewise constant by iteration.
    An entry "300s:3e-5" counts seconds of this run instead (from when the data is loaded): for
    a stretch of fixed wall time on a machine of unknown speed (device-finetune.sh)."""
    its, secs = [], []
    for part in text.split(","):
        at, lr = part.split(":")
        if at.endswith("s"):
            secs.append((float(at[:-1]), float(lr)))
        else:
            its.append((int(at), float(lr)))
    if secs and its[1:]:
        raise SystemExit("--lr-schedule: after the first entry, use iterations or seconds, not both")
    return sorted(its) + sorted(secs)


RUN_START = [None]  # time.time() when training starts (the "Ns:" entries of --lr-schedule)


REWARM = 200   # iterations of linear warm-up after a resume from a lean checkpoint


def scheduled_lr(args, iteration):
    """The lr of this iteration from --lr-schedule (with --warmup: linear from 0 over the first
    iterations of a new model), or None (keep the optimiser's own: --lr / --lr-override)."""
    if not args.lr_schedule:
        return None
    lr = args.lr_schedule[0][1]
    for i, (at, v) in enumerate(args.lr_schedule):
        if isinstance(at, float):  # seconds of this run
            if RUN_START[0] is not None and time.time() - RUN_START[0] >= at:
                lr = v
        elif iteration >= at:
            lr = v
    if args.warmup and iteration < args.warmup:
        lr *= (iteration + 1) / args.warmup
    return lr


def recipe_string(args):
    sched = (",".join(("%gs:%g" if isinstance(p[0], float) else "%d:%g") % p
                      for p in args.lr_schedule) if args.lr_schedule else "-")
    return ("device %s crop %d batch %d lr %g schedule %s warmup %d aux-lr %g clip %g ste %d "
            "channels-last %d bf16 %d%s"
            % (args.device, args.crop, args.batch, args.lr, sched, args.warmup, args.aux_lr,
               args.clip, args.ste, args.channels_last, args.bf16,
               " cast-weight %g" % args.cast_weight if args.cast_weight else "")
            + (" rates %s (steps' lr x%g, weights fixed until %d)"
               % (",".join("%g" % v for v in args.rates), args.rate_lr_scale, args.freeze_until)
               if args.rates else ""))


class Logger:
    def __init__(self, path):
        self.path = path

    def __call__(self, msg):
        line = "%s %s" % (now(), msg)
        with open(self.path, "a") as f:
            f.write(line + "\n")
        if sys.stdout.isatty():
            print(line, flush=True)


def atomic_save(obj, path):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dfd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class Job:
    """One quality: model, optimisers, RNGs, counters."""

    def __init__(self, q, args, log_main):
        self.q = q
        self.lmbda = args.lmbda if args.lmbda else LAMBDAS[q]
        self.rates = args.rates   # a variable-rate model's lambdas, or None
        self.channels_last = args.channels_last
        self.name = args.name or "q%d" % q
        self.ckpt = os.path.join(args.out, "checkpoints", self.name + ".pt")
        self.log = Logger(os.path.join(args.out, "logs", self.name + ".log"))
        self.nonfinite = 0
        self.device = torch.device(args.device)
        self.gen = torch.Generator(device=self.device)
        self.iteration = 0
        self.train_seconds = 0.0
        self.last_eval = 0
        self.window = []
        self.rewarm_from = None
        resume = os.path.exists(self.ckpt)
        seed = args.seed * 1000 + q
        torch.manual_seed(seed)  # the initial weights of a new model
        self.model = MeanScaleHyperprior(args.N, args.M, len(self.rates) if self.rates else 0)
        if args.init_from and not resume:
            ck = torch.load(args.init_from, map_location="cpu", weights_only=False)
            weights = {k: (v.float() if v.dtype == torch.float16 else v)
                       for k, v in ck["model"].items()}
            if self.rates and "rate_log_dq" not in weights:
                # a plain model becomes variable-rate: each rate's steps start where a uniform
                # quantiser's would be (bits ~ log2(1 / step), MSE ~ step^2: step ~
                # sqrt(lambda_init / lambda)); gain-probe.py measured this start within 3 % of
                # the learned mean step at lambda 0.05 from 0.15
                start = torch.tensor([0.5 * math.log(float(ck["lambda"]) / l) for l in self.rates])
                weights["rate_log_dq"] = start[:, None].repeat(1, args.M)
                weights["rate_log_dr"] = weights["rate_log_dq"].clone()
            self.model.load_state_dict(weights)
            self.init_note = " init-from %s (%s iteration %d, lambda %g)" % (
                os.path.relpath(args.init_from, args.out), ck.get("name", "q%d" % ck["quality"]),
                ck["iteration"], ck["lambda"])
            # where a fine-tune started (kept in its checkpoints; export.py names it)
            self.init_info = {"name": ck.get("name", "q%d" % ck["quality"]),
                              "iteration": int(ck["iteration"]), "lambda": float(ck["lambda"])}
            if ck.get("init"):   # a fine-tune of a fine-tune keeps the whole lineage
                self.init_info["init"] = ck["init"]
        else:
            self.init_note = ""
            self.init_info = None
        self.model = self.model.to(self.device)
        if args.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        main, aux = self.model.parameter_groups()
        if self.rates:
            # the steps (2 x rates x M numbers) learn args.rate_lr_scale times faster
            steps = [self.model.rate_log_dq, self.model.rate_log_dr]
            ids = {id(p) for p in steps}
            main = [{"params": [p for p in main if id(p) not in ids], "lr_scale": 1.0},
                    {"params": steps, "lr": args.lr * args.rate_lr_scale,
                     "lr_scale": args.rate_lr_scale}]
        self.opt = torch.optim.Adam(main, lr=args.lr)
        self.aux_opt = torch.optim.Adam(aux, lr=args.aux_lr)
        if resume:
            self._load(args)
            log_main("%s: resumed at iteration %d from %s (lambda %g)"
                     % (self.name, self.iteration, self.ckpt, self.lmbda))
        else:
            self.gen.manual_seed(seed)
            self.rng = np.random.default_rng(seed)
            log_main("%s: new model N=%d M=%d lambda=%g%s"
                     % (self.name, args.N, args.M, self.lmbda, self.init_note))
            self.log("start N=%d M=%d lambda=%g seed=%d%s"
                     % (args.N, args.M, self.lmbda, seed, self.init_note))
        self.log("recipe: %s" % recipe_string(args))
        if args.lr_override is not None:
            for g in self.opt.param_groups:
                g["lr"] = args.lr_override * g.get("lr_scale", 1.0)

    def _load(self, args):
        ck = torch.load(self.ckpt, map_location="cpu", weights_only=False)  # has RNG states
        if ck.get("format") != CKPT_FORMAT:
            raise SystemExit("%s: unknown checkpoint format %r" % (self.ckpt, ck.get("format")))
        if (ck["N"], ck["M"]) != (args.N, args.M):
            raise SystemExit("%s has N=%d M=%d, asked N=%d M=%d"
                             % (self.ckpt, ck["N"], ck["M"], args.N, args.M))
        if ck.get("rates") != self.rates:
            raise SystemExit("%s has rates %s, asked %s" % (self.ckpt, ck.get("rates"),
                                                           self.rates))
        lean = ck.get("lean", False) and "opt" not in ck
        if "opt" not in ck and not lean:
            raise SystemExit("%s is a weights-only checkpoint (compact-checkpoint.py "
                             "--weights-only): it exports, and starts new models with "
                             "--init-from, but does not resume" % self.ckpt)
        self.model.load_state_dict({k: (v.float() if v.dtype == torch.float16 else v)
                                    for k, v in ck["model"].items()})
        self.init_info = ck.get("init")
        if not args.lmbda and "lambda" in ck:   # a model keeps its lambda when the table changes
            self.lmbda = float(ck["lambda"])
        self.iteration = ck["iteration"]
        if lean and "opt_v" in ck:
            # compact-checkpoint.py --lean-v: Adam's second moments kept (bfloat16; cast to the
            # parameters' dtype on loading), the first moments start at zero: no re-warm-up
            opt = ck["opt_v"]
            for st in opt["state"].values():
                st["exp_avg"] = torch.zeros(st["exp_avg_sq"].shape, dtype=torch.float32)
            self.opt.load_state_dict(opt)
            self.aux_opt.load_state_dict(ck["aux_opt"])
            self.log("resumed lean-v at iteration %d: Adam's second moments kept, first moments "
                     "from zero" % self.iteration)
        elif lean:
            # compact-checkpoint.py --lean: float16 weights, no Adam state. Fresh optimisers,
            # and REWARM iterations of warm-up from here (logged; not bit-exact with a full resume)
            self.rewarm_from = self.iteration
            self.log("resumed lean at iteration %d: new Adam state, %d-iteration re-warm-up"
                     % (self.iteration, REWARM))
        else:
            self.opt.load_state_dict(ck["opt"])
            self.aux_opt.load_state_dict(ck["aux_opt"])
        self.train_seconds = ck.get("train_seconds", 0.0)
        self.last_eval = ck.get("last_eval", 0)
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = ck["rng"]["numpy"]
        if ck.get("device", "cpu") == self.device.type:
            self.gen.set_state(ck["rng"]["torch"])
        else:  # a CPU and a CUDA generator state do not convert: a new noise stream
            self.gen.manual_seed(int(self.rng.integers(2 ** 62)))

    def save(self):
        atomic_save({
            "format": CKPT_FORMAT, "quality": self.q, "lambda": self.lmbda, "name": self.name,
            "N": self.model.N, "M": self.model.M, "iteration": self.iteration,
            "train_seconds": self.train_seconds, "last_eval": self.last_eval,
            "model": self.model.state_dict(), "opt": self.opt.state_dict(),
            "aux_opt": self.aux_opt.state_dict(),
            "rng": {"torch": self.gen.get_state(), "numpy": self.rng.bit_generator.state},
            "device": self.device.type, "init": self.init_info, "rates": self.rates,
        }, self.ckpt)

    def step(self, sampler, args):
        t0 = time.perf_counter()
        x = torch.from_numpy(sampler.batch(self.rng, args.batch)).to(self.device)
        if args.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        lr = scheduled_lr(args, self.iteration)
        if self.rewarm_from is not None and self.iteration - self.rewarm_from < REWARM:
            # resumed from a lean checkpoint: Adam's moments start again from zero
            base = lr if lr is not None else (args.lr_override or args.lr)
            lr = base * (self.iteration - self.rewarm_from + 1) / REWARM
        if lr is not None:
            for g in self.opt.param_groups:
                g["lr"] = lr * g.get("lr_scale", 1.0)
        self.model.train()
        if self.rates and args.freeze_until:
            # --freeze-until: only the steps learn at first (gain-probe.py: steps on the frozen
            # model came within 4-8 % of fine-tuned models, while joint steps from the start
            # moved the shared weights before the steps had found their rates)
            frozen = self.iteration < args.freeze_until
            for p in self.opt.param_groups[0]["params"]:
                p.requires_grad_(not frozen)
        self.opt.zero_grad(set_to_none=True)
        self.aux_opt.zero_grad(set_to_none=True)
        # a variable-rate model: the rates take turns, one per iteration
        rate = self.iteration % len(self.rates) if self.rates else None
        lmbda = self.rates[rate] if self.rates else self.lmbda
        out = self.model(x, self.gen, ste=args.ste, bf16=args.bf16, rate=rate)
        loss, bpp, mse = rate_distortion(out, x, lmbda, args.cast_weight)
        if not torch.isfinite(loss):
            # A diverging step (high lr): skip it; many in a row means the weights are gone.
            self.nonfinite += 1
            self.log("it %d: non-finite loss, step skipped (%d in a row)"
                     % (self.iteration, self.nonfinite))
            if self.nonfinite >= 20:
                raise SystemExit("%s: 20 non-finite losses in a row; resume from the last "
                                 "checkpoint with a lower --lr-schedule" % self.name)
            return
        self.nonfinite = 0
        loss.backward()
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(self.opt.param_groups[0]["params"], args.clip)
        self.opt.step()
        aux = self.model.aux_loss()
        aux.backward()
        self.aux_opt.step()
        dt = time.perf_counter() - t0
        self.iteration += 1
        self.train_seconds += dt
        self.window.append((loss.item(), bpp.item(), mse.item(), aux.item(), dt,
                            -1 if rate is None else rate))
        if self.iteration % args.log_every == 0:
            w = np.array(self.window)
            self.window = []
            if self.rates:
                # per rate: mean bpp / PSNR of its crops in this window (not the "it" line's
                # form, so plot-curves.py and run-background.sh status read the aggregate only)
                per = []
                for r in range(len(self.rates)):
                    k = w[:, 5] == r
                    if k.any():
                        per.append("%g:%.3f/%.2f" % (self.rates[r], w[k, 1].mean(),
                                                     10 * math.log10(1 / max(w[k, 2].mean(), 1e-12))))
                self.log("rates at %d (lambda:bpp/psnr) %s" % (self.iteration, " ".join(per)))
            psnr = 10 * math.log10(1 / max(w[:, 2].mean(), 1e-12))
            self.log("it %d loss %.4f bpp %.4f psnr %.2f aux %.1f s/it %.3f lr %.1e"
                     % (self.iteration, w[:, 0].mean(), w[:, 1].mean(), psnr, w[:, 3].mean(),
                        w[:, 4].mean(), self.opt.param_groups[0]["lr"]))

    def evaluate(self, eval_images):
        if not self.rates:
            return self.evaluate_rate(eval_images, None)
        # a variable-rate model: every rate; the middle one gives the "eval it" line of the
        # curves (plot-curves.py)
        for r in range(len(self.rates)):
            self.evaluate_rate(eval_images, r)

    @torch.no_grad()
    def evaluate_rate(self, eval_images, rate):
        """Rounded latents (as the codec), bpp from the likelihoods (an estimate of the coded
        size: the real rANS tables add a little), PSNR of the clamped reconstruction."""
        t0 = time.perf_counter()
        self.model.eval()
        tot_bits = tot_pix = 0.0
        psnrs = []
        for a in eval_images:
            x = torch.from_numpy(a.transpose(2, 0, 1)[None].astype(np.float32) / 255.0)
            x = x.to(self.device)
            if self.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            out = self.model(x, rate=rate)
            bits = -(torch.log2(out["y_lik"]).sum() + torch.log2(out["z_lik"]).sum()).item()
            mse = torch.mean((out["x_hat"].clamp(0, 1) - x) ** 2).item()
            tot_bits += bits
            tot_pix += x.shape[2] * x.shape[3]
            psnrs.append(10 * math.log10(1 / max(mse, 1e-12)))
        self.model.train()
        self.last_eval = self.iteration
        mid = rate is None or rate == (len(self.rates) - 1) // 2
        self.log("%s it %d bpp %.4f psnr %.2f (per image: %s) %.1fs"
                 % ("eval" if mid else "eval-rate %d (lambda %g)" % (rate, self.rates[rate]),
                    self.iteration, tot_bits / tot_pix, float(np.mean(psnrs)),
                    " ".join("%.2f" % p for p in psnrs), time.perf_counter() - t0)
                 + ("" if rate is None or not mid else " rate %d (lambda %g)"
                    % (rate, self.rates[rate])))


def parse_args():
    ap = argparse.ArgumentParser(description="round-robin mbt2018-mean trainer (resumable)")
    ap.add_argument("--qualities", default="1,3,5,7", help="comma list of 1..%d" % max(LAMBDAS))
    ap.add_argument("--N", type=int, default=64)
    ap.add_argument("--M", type=int, default=96)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-4, help="Adam lr of a new model")
    ap.add_argument("--lr-override", type=float, default=None,
                    help="set this lr on resume too (e.g. 1e-5 for the final stretch)")
    ap.add_argument("--lr-schedule", default=None,
                    help="piecewise constant lr by iteration, e.g. 0:5e-4,40000:1e-4 "
                         "(applied every step, also on resume; overrides --lr/--lr-override)")
    ap.add_argument("--warmup", type=int, default=0,
                    help="with --lr-schedule: linear lr ramp over the first iterations")
    ap.add_argument("--ste", type=int, default=1,
                    help="1: g_s sees rounded y (straight-through), the rate sees noisy y "
                         "(mixed quantisation, Minnen & Singh 2020); 0: noisy y for both")
    ap.add_argument("--bf16", type=int, default=0,
                    help="1: inner transform layers under bfloat16 autocast (1.4x faster step "
                         "here; gradients within cosine 0.998 of float32; README)")
    ap.add_argument("--channels-last", type=int, default=1,
                    help="NHWC tensors (same float results; ~1.9x faster step with oneDNN)")
    ap.add_argument("--name", default=None,
                    help="checkpoint/log name instead of q<N> (one quality only)")
    ap.add_argument("--init-from", default=None,
                    help="every new model (no checkpoint of its own yet) starts from this "
                         "checkpoint's weights (fine-tuning); existing ones resume")
    ap.add_argument("--lambda", dest="lmbda", type=float, default=None,
                    help="override the quality's lambda (one quality only)")
    ap.add_argument("--rates", default=None,
                    help="a variable-rate model (one quality only, with --name): comma list of "
                         "lambdas, one per rate, each with its own quantisation and "
                         "reconstruction steps per latent channel; the rates take turns")
    ap.add_argument("--rate-lr-scale", type=float, default=10.0,
                    help="the steps' lr as a multiple of the weights' lr")
    ap.add_argument("--freeze-until", type=int, default=0,
                    help="with --rates: the weights stay fixed until this iteration (only the "
                         "steps and the aux quantiles learn)")
    ap.add_argument("--aux-lr", type=float, default=1e-3)
    ap.add_argument("--clip", type=float, default=1.0, help="grad-norm clip (0: off)")
    ap.add_argument("--cast-weight", type=float, default=0.0,
                    help="extra weight of each crop's squared channel-mean error (colour "
                    "casts) in the distortion; 0: off (model.rate_distortion)")
    ap.add_argument("--chunk", type=int, default=25, help="iterations per turn")
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--eval-every", type=int, default=500, help="iterations per quality")
    ap.add_argument("--save-every", type=float, default=600, help="seconds")
    ap.add_argument("--max-iterations", type=int, default=150000, help="per quality")
    ap.add_argument("--stop-after", type=float, default=0, help="seconds (0: never)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu or cuda (tools/train/device-stretch.sh)")
    ap.add_argument("--crop", type=int, default=dataset.CROP, help="training crop size")
    ap.add_argument("--data-pack", default=None,
                    help="read the photos from a pack of pack-data.py instead of the "
                         "installed Debian packages")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pid-file", default=None)
    ap.add_argument("--out", default=HERE, help="holds checkpoints/ and logs/ (default: tools/train)")
    args = ap.parse_args()
    args.qualities = [int(q) for q in args.qualities.split(",")]
    for q in args.qualities:
        if q not in LAMBDAS:
            ap.error("quality %d not in 1..%d" % (q, max(LAMBDAS)))
    if (args.name or args.lmbda) and len(args.qualities) != 1:
        ap.error("--name and --lambda need exactly one quality")
    args.lr_schedule = parse_schedule(args.lr_schedule) if args.lr_schedule else None
    if args.rates:
        if not args.name or len(args.qualities) != 1:
            ap.error("--rates needs --name and exactly one quality")
        args.rates = [float(v) for v in args.rates.split(",")]
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    os.makedirs(os.path.join(args.out, "checkpoints"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    log = Logger(os.path.join(args.out, "logs", "driver.log"))
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write("%d\n" % os.getpid())

    stop = {"sig": None}

    def on_signal(signum, _frame):
        stop["sig"] = signum

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    log("driver pid %d qualities %s torch %s threads %d"
        % (os.getpid(), args.qualities, torch.__version__, torch.get_num_threads()))
    rows = (dataset.read_pack(args.data_pack) if args.data_pack
            else dataset.read_manifest(check=True))
    jobs = [Job(q, args, log) for q in args.qualities]
    for j in jobs:
        if not os.path.exists(j.ckpt):
            j.save()  # so that every running quality has a checkpoint from the start
    t_load = time.perf_counter()
    sampler = dataset.CropSampler(rows, log, crop=args.crop)
    eval_images = [dataset.load_eval(r["path"]) for r in rows if r["split"] == "eval"]
    log("dataset loaded in %.1fs; eval %s" % (time.perf_counter() - t_load,
                                             " ".join("%dx%d" % a.shape[1::-1] for a in eval_images)))
    t_start = last_save = RUN_START[0] = time.time()

    def save_all(why):
        t = time.perf_counter()
        for j in jobs:
            j.save()
        log("saved %s (%s) in %.1fs" % (" ".join("%s@%d" % (j.name, j.iteration) for j in jobs),
                                        why, time.perf_counter() - t))

    while stop["sig"] is None:
        active = [j for j in jobs if j.iteration < args.max_iterations]
        if not active:
            log("all qualities reached %d iterations" % args.max_iterations)
            break
        for j in active:
            for _ in range(args.chunk):
                if stop["sig"] is not None or j.iteration >= args.max_iterations:
                    break
                j.step(sampler, args)
            if stop["sig"] is None and j.iteration - j.last_eval >= args.eval_every:
                j.evaluate(eval_images)
            if stop["sig"] is not None:
                break
        if args.stop_after and time.time() - t_start >= args.stop_after:
            log("--stop-after reached")
            break
        if time.time() - last_save >= args.save_every:
            save_all("periodic")
            last_save = time.time()

    save_all("signal %d" % stop["sig"] if stop["sig"] else "end")
    if args.pid_file:
        try:
            with open(args.pid_file) as f:
                if f.read().strip() == str(os.getpid()):
                    os.unlink(args.pid_file)
        except OSError:
            pass
    log("driver exit")


if __name__ == "__main__":
    main()
