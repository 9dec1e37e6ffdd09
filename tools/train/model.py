"""mbt2018-mean (Minnen, Balle, Toderici 2018, mean-scale hyperprior without context model) in
plain PyTorch, layer for layer the same as CompressAI's `MeanScaleHyperprior` (a CompressAI
state dict maps onto ours by renaming keys and dropping its CDF buffers).

    g_a : conv5/2 GDN conv5/2 GDN conv5/2 GDN conv5/2              3 -> N -> N -> N -> M
    h_a : conv3/1 LReLU conv5/2 LReLU conv5/2                      M -> N -> N -> N
    h_s : deconv5/2 LReLU deconv5/2 LReLU conv3/1                  N -> M -> 3M/2 -> 2M
    g_s : deconv5/2 IGDN deconv5/2 IGDN deconv5/2 IGDN deconv5/2   M -> N -> N -> N -> 3

h_s output = (scales, means), scales first (matches spec section 6). y is 16x, z 64x down.
Loss: lambda * 255^2 * MSE + bpp (CompressAI's RateDistortionLoss).
"""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# Lambdas of qualities 1..9 (MSE). Since session 7: a geometric-like ladder from 0.0005 to 0.2,
# because the session-6 fine-tunes on {1: 0.0009, 2: 0.0018, 3: 0.0035, 4: 0.0067, 5: 0.0130,
# 6: 0.0250, 7: 0.0483, 8: 0.0932} gave 0.19 bpp at q1 (target <= 0.15) and 0.985 at q8
# (target >= 1.2; the rate grows slowly above 0.05 as the small N=64/M=96 model saturates),
# trainer figures on the 6 eval pictures (logs/session6/). Until session 5 it was
# {1: 0.0018, 2: 0.0035, 3: 0.0067, 4: 0.0130, 5: 0.0250, 6: 0.0483, 7: 0.0932, 8: 0.1800}
# (the models of iteration ~2500 and the base model base-q5, lambda 0.025, were made with it).
# Session 10: q8 at 0.3 (was 0.2 until session 9): its rate at 0.2 stayed below target 2's
# 1.2 bpp; 0.3 gave +17 % bits and a PSNR above q7 on every validation picture
# (docs/research/top-quality.md). 0.4 bought no PSNR at all (the transforms' ceiling).
# Session 19: nine qualities; q7..q9 are the larger model (N=128/M=192: train.py --N 128
# --M 192), q9 its base at 0.15, q8 its fine-tune at 0.05, q7 q8's at 0.02 (the N=64 q7 at
# 0.07 and q8 at 0.3 are gone). Its lambdas are not comparable with the N=64 ones below them
# (q7 at 0.02 spends more bits than q6 at 0.026: the two models trade rate for PSNR
# differently, the small one saturating).
LAMBDAS = {1: 0.0005, 2: 0.0011, 3: 0.0024, 4: 0.0052, 5: 0.0115, 6: 0.0260, 7: 0.0200, 8: 0.0500,
           9: 0.1500}

SCALE_BOUND = 0.11
LIKELIHOOD_BOUND = 1e-9
LEAKY_SLOPE = 0.01  # nn.LeakyReLU default; the WHM1 export writes round(0.01 * 2^16) = 655


class _LowerBound(torch.autograd.Function):
    """max(x, bound) whose gradient still flows where it would push x up past the bound."""

    @staticmethod
    def forward(ctx, x, bound):
        ctx.save_for_backward(x, bound)
        return torch.max(x, bound)

    @staticmethod
    def backward(ctx, grad):
        x, bound = ctx.saved_tensors
        pass_through = (x >= bound) | (grad < 0)
        return pass_through.type(grad.dtype) * grad, None


def lower_bound(x, bound):
    return _LowerBound.apply(x, torch.as_tensor(bound, dtype=x.dtype, device=x.device))


class NonNegative(nn.Module):
    """Reparametrisation p -> max(p, sqrt(min + ped))^2 - ped (Balle 2016), ped = 2^-36."""

    def __init__(self, minimum=0.0, offset=2 ** -18):
        super().__init__()
        self.pedestal = offset ** 2
        self.bound = (minimum + self.pedestal) ** 0.5

    def init(self, x):
        return torch.sqrt(torch.clamp(x + self.pedestal, min=self.pedestal))

    def forward(self, p):
        return lower_bound(p, self.bound) ** 2 - self.pedestal


class GDN(nn.Module):
    """y_i = x_i / sqrt(beta_i + sum_j gamma_ij x_j^2); inverse: x_i * sqrt(...)."""

    def __init__(self, channels, inverse=False, beta_min=1e-6, gamma_init=0.1):
        super().__init__()
        self.inverse = inverse
        self.beta_reparam = NonNegative(minimum=beta_min)
        self.gamma_reparam = NonNegative()
        self.beta = nn.Parameter(self.beta_reparam.init(torch.ones(channels)))
        self.gamma = nn.Parameter(self.gamma_reparam.init(gamma_init * torch.eye(channels)))

    def effective(self):
        """The real (beta >= 1e-6, gamma >= 0) values: what an export writes."""
        return self.beta_reparam(self.beta), self.gamma_reparam(self.gamma)

    def forward(self, x):
        beta, gamma = self.effective()
        c = x.shape[1]
        norm = F.conv2d(x * x, gamma.reshape(c, c, 1, 1), beta)
        return x * (torch.sqrt(norm) if self.inverse else torch.rsqrt(norm))


def conv(cin, cout, k=5, s=2):
    return nn.Conv2d(cin, cout, k, stride=s, padding=k // 2)


class SubpixelDeconv(nn.ConvTranspose2d):
    """nn.ConvTranspose2d(k=5, stride=2, padding=2, output_padding=1), same parameters and
    state dict, computed as one 3x3 conv with 4*cout outputs and a pixel shuffle. Exact
    (output phase r of a row takes taps ky = 4, 2, 0 (r = 0) or -, 3, 1 (r = 1) at input rows
    a-1, a, a+1); about 4x faster on CPU than Debian torch 1.13's slow_conv_transpose2d."""

    _IDX = torch.tensor([[4, 2, 0], [5, 3, 1]])  # 5: a zero tap (the weight is padded)

    def forward(self, x):
        if (self.kernel_size, self.stride, self.padding, self.output_padding) != \
                ((5, 5), (2, 2), (2, 2), (1, 1)):
            return super().forward(x)
        w = F.pad(self.weight, (0, 1, 0, 1))
        idx = self._IDX
        k = w[:, :, idx.view(2, 1, 3, 1), idx.view(1, 2, 1, 3)]  # cin, cout, r, s, ky, kx
        cin, cout = w.shape[:2]
        k = k.permute(1, 2, 3, 0, 4, 5).reshape(cout * 4, cin, 3, 3)
        return F.pixel_shuffle(F.conv2d(x, k, self.bias.repeat_interleave(4), padding=1), 2)


def deconv(cin, cout, k=5, s=2):
    return SubpixelDeconv(cin, cout, k, stride=s, padding=k // 2, output_padding=s - 1)


def _noise(x, gen):
    return torch.empty_like(x).uniform_(-0.5, 0.5, generator=gen)


class EntropyBottleneck(nn.Module):
    """Balle 2018 factorised density (appendix 6.1), CompressAI defaults: filters (3,3,3,3),
    init_scale 10, tail_mass 1e-9. quantiles[c] = (lower tail, median, upper tail) are learnt by
    the aux loss; the median is the rounding offset at eval and the z-table centre at export."""

    def __init__(self, channels, filters=(3, 3, 3, 3), init_scale=10.0, tail_mass=1e-9):
        super().__init__()
        self.channels = channels
        self.filters = tuple(filters)
        f = (1,) + self.filters + (1,)
        scale = init_scale ** (1 / (len(self.filters) + 1))
        self.matrices = nn.ParameterList()
        self.biases = nn.ParameterList()
        self.factors = nn.ParameterList()
        for i in range(len(self.filters) + 1):
            init = float(np.log(np.expm1(1 / scale / f[i + 1])))
            self.matrices.append(nn.Parameter(torch.full((channels, f[i + 1], f[i]), init)))
            self.biases.append(nn.Parameter(torch.empty(channels, f[i + 1], 1).uniform_(-0.5, 0.5)))
            if i < len(self.filters):
                self.factors.append(nn.Parameter(torch.zeros(channels, f[i + 1], 1)))
        q = torch.tensor([-init_scale, 0.0, init_scale]).repeat(channels, 1, 1)
        self.quantiles = nn.Parameter(q)
        t = math.log(2 / tail_mass - 1)
        self.register_buffer("target", torch.tensor([-t, 0.0, t]))

    def medians(self):
        return self.quantiles[:, 0, 1]

    def logits_cumulative(self, x, stop_gradient):
        """x: (C, 1, n) -> logit of the CDF, (C, 1, n)."""
        for i in range(len(self.filters) + 1):
            m, b = self.matrices[i], self.biases[i]
            if stop_gradient:
                m, b = m.detach(), b.detach()
            x = torch.matmul(F.softplus(m), x) + b
            if i < len(self.filters):
                fac = self.factors[i].detach() if stop_gradient else self.factors[i]
                x = x + torch.tanh(fac) * torch.tanh(x)
        return x

    def aux_loss(self):
        logits = self.logits_cumulative(self.quantiles, stop_gradient=True)
        return torch.abs(logits - self.target).sum()

    def likelihood(self, v):
        lower = self.logits_cumulative(v - 0.5, stop_gradient=False)
        upper = self.logits_cumulative(v + 0.5, stop_gradient=False)
        # Evaluate in the tail where the sigmoid is not saturated (numerically stable).
        sign = -torch.sign(lower + upper).detach()
        return torch.abs(torch.sigmoid(sign * upper) - torch.sigmoid(sign * lower))

    def forward(self, z, gen=None):
        b, c, h, w = z.shape
        v = z.permute(1, 0, 2, 3).reshape(c, 1, -1)
        if self.training:
            v = v + _noise(v, gen)
        else:
            med = self.medians().detach().reshape(c, 1, 1)
            v = torch.round(v - med) + med
        lik = lower_bound(self.likelihood(v), LIKELIHOOD_BOUND)
        z_hat = v.reshape(c, b, h, w).permute(1, 0, 2, 3)
        return z_hat, lik.reshape(c, b, h, w).permute(1, 0, 2, 3)


class GaussianConditional(nn.Module):
    """y ~ N(mu, sigma) convolved with U(-1/2, 1/2); sigma bounded below by 0.11.

    With steps (a variable-rate model, MeanScaleHyperprior(rates=R)): dq is the quantisation
    step of each channel (the symbol is round((y - mu) / dq), its scale sigma / dq) and dr the
    reconstruction step (y_hat = symbol * dr + mu); dq = dr = 1 is the plain model."""

    def forward(self, y, scales, means, gen=None, dq=None, dr=None):
        if dq is not None:
            u = (y - means) / dq
            u = u + _noise(u, gen) if self.training else torch.round(u)
            s = lower_bound(scales / dq, SCALE_BOUND)
            v = torch.abs(u)
            c = -(2 ** -0.5)
            lik = 0.5 * torch.erfc(c * (0.5 - v) / s) - 0.5 * torch.erfc(c * (-0.5 - v) / s)
            return u * dr + means, lower_bound(lik, LIKELIHOOD_BOUND)
        if self.training:
            y_hat = y + _noise(y, gen)
        else:
            y_hat = torch.round(y - means) + means  # CompressAI "dequantize" mode
        s = lower_bound(scales, SCALE_BOUND)
        v = torch.abs(y_hat - means)
        c = -(2 ** -0.5)
        lik = 0.5 * torch.erfc(c * (0.5 - v) / s) - 0.5 * torch.erfc(c * (-0.5 - v) / s)
        return y_hat, lower_bound(lik, LIKELIHOOD_BOUND)


class MeanScaleHyperprior(nn.Module):
    y_down = 16
    z_down = 64
    pad_multiple = 64

    def __init__(self, N=64, M=96, rates=0):
        super().__init__()
        if M % 2:
            raise ValueError("M must be even (h_s has 3M/2 channels)")
        self.N, self.M, self.rates = N, M, rates
        if rates:
            # a variable-rate model: per rate and latent channel the log of the quantisation
            # step dq and of the reconstruction step dr (asymmetric gains, Cui et al. 2021)
            self.rate_log_dq = nn.Parameter(torch.zeros(rates, M))
            self.rate_log_dr = nn.Parameter(torch.zeros(rates, M))
        self.g_a = nn.Sequential(conv(3, N), GDN(N), conv(N, N), GDN(N), conv(N, N), GDN(N),
                                 conv(N, M))
        self.g_s = nn.Sequential(deconv(M, N), GDN(N, inverse=True), deconv(N, N),
                                 GDN(N, inverse=True), deconv(N, N), GDN(N, inverse=True),
                                 deconv(N, 3))
        self.h_a = nn.Sequential(conv(M, N, k=3, s=1), nn.LeakyReLU(LEAKY_SLOPE), conv(N, N),
                                 nn.LeakyReLU(LEAKY_SLOPE), conv(N, N))
        self.h_s = nn.Sequential(deconv(N, M), nn.LeakyReLU(LEAKY_SLOPE),
                                 deconv(M, M * 3 // 2), nn.LeakyReLU(LEAKY_SLOPE),
                                 conv(M * 3 // 2, M * 2, k=3, s=1))
        self.entropy_bottleneck = EntropyBottleneck(N)
        self.gaussian_conditional = GaussianConditional()

    def steps(self, rate):
        """(dq, dr) of rate index `rate` as (1, M, 1, 1) tensors."""
        return (torch.exp(self.rate_log_dq[rate])[None, :, None, None],
                torch.exp(self.rate_log_dr[rate])[None, :, None, None])

    def forward(self, x, gen=None, ste=False, bf16=False, rate=None):
        """ste (training only): g_s gets round(y - mean) + mean with a straight-through
        gradient, as the decoder will, while the rate still sees y + noise (mixed quantisation,
        Minnen & Singh 2020, "Channel-wise autoregressive entropy models", section 3.3).
        bf16 (train.py --bf16): the inner layers of g_a, h_s and g_s run under bfloat16
        autocast; their last layers, h_a, the entropy models and the loss stay float32, so
        y, z, the means and scales and x_hat have float32 precision."""
        def amp(module, t):
            if not bf16:
                return module(t)
            with torch.autocast(t.device.type, dtype=torch.bfloat16):
                return module(t).float()
        y = self.g_a[-1](amp(self.g_a[:-1], x))
        z = self.h_a(y)
        z_hat, z_lik = self.entropy_bottleneck(z, gen)
        scales, means = self.h_s[-1](amp(self.h_s[:-1], z_hat)).chunk(2, 1)
        if rate is not None:
            dq, dr = self.steps(rate)
            y_hat, y_lik = self.gaussian_conditional(y, scales, means, gen, dq, dr)
            if ste and self.training:
                u = (y - means) / dq
                y_hat = (u + (torch.round(u) - u).detach()) * dr + means
        else:
            y_hat, y_lik = self.gaussian_conditional(y, scales, means, gen)
            if ste and self.training:
                y_hat = y + (torch.round(y - means) + means - y).detach()
        x_hat = self.g_s[-1](amp(self.g_s[:-1], y_hat))
        return {"x_hat": x_hat, "y_lik": y_lik, "z_lik": z_lik}

    def aux_loss(self):
        return self.entropy_bottleneck.aux_loss()

    def parameter_groups(self):
        """(main, aux): the quantiles are trained only by the aux loss (own optimiser)."""
        main, aux = [], []
        for name, p in self.named_parameters():
            (aux if name.endswith("quantiles") else main).append(p)
        return main, aux


def rate_distortion(out, x, lmbda, cast_weight=0.0):
    """Returns (loss, bpp, mse); bpp counts y and z, per pixel of x. cast_weight (train.py
    --cast-weight) adds that many times the squared channel-mean error of each crop to the
    distortion (MSE already holds it once): a colour cast costs more than its share of MSE."""
    n_pix = x.shape[0] * x.shape[2] * x.shape[3]
    bits = -(torch.log(out["y_lik"]).sum() + torch.log(out["z_lik"]).sum()) / math.log(2)
    bpp = bits / n_pix
    mse = F.mse_loss(out["x_hat"], x)
    dist = mse
    if cast_weight:
        dist = dist + cast_weight * ((out["x_hat"] - x).mean((2, 3)) ** 2).mean()
    return lmbda * 255 ** 2 * dist + bpp, bpp, mse
