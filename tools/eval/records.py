#!/usr/bin/python3
"""Render and verify the measured records of docs/research/ from their committed readings.

    tools/eval/records.py --write        render determinism-cost.md, reproducibility.md and
                                         classic-codecs.md from docs/research/data/*.tsv
    tools/eval/records.py --check        re-render and compare with the committed records; check
                                         the readings' own consistency and that the models
                                         (pairs, quality files and the variable-rate models
                                         these name), pictures (and checkpoints, where present)
                                         the readings were made with are the committed ones;
                                         exit 1 on any mismatch
    tools/eval/records.py --self-test    show that the check fails on an edited figure, an edited
                                         reading and an edited model hash, and that the BD-rate
                                         code gives known answers (copies in a temporary folder)

Needs only python3 and numpy (tools/eval/evalmath.py). Every figure of the three records is
computed here from the readings; none is typed into a record by hand. `meson test eval-records`
runs --check and --self-test.
"""

import argparse
import hashlib
import os
import re
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import evalmath as E  # noqa: E402
import waiformat as W  # noqa: E402

RECORDS = ("determinism-cost.md", "reproducibility.md", "classic-codecs.md")


class Fail(Exception):
    pass


def read_tsv(path):
    rows = []
    with open(path) as f:
        head = f.readline().lstrip("# ").rstrip("\n").split("\t")
        for line in f:
            if line.strip():
                rows.append(dict(zip(head, line.rstrip("\n").split("\t"))))
    return rows


def write_tsv(path, header, lines, only_q=None):
    """Write a readings table: the header and lines. With only_q (a set of qualities that were
    re-measured), the rows of the other qualities already in path (column 2) are kept; the
    result is in quality order, each quality's rows in their order."""
    if only_q is not None and os.path.exists(path):
        old = [ln for ln in open(path) if ln.strip() and not ln.startswith("#")]
        lines = [ln for ln in old if int(ln.split("\t")[1]) not in only_q] + lines
        lines.sort(key=lambda ln: int(ln.split("\t")[1]))   # stable: order within a quality kept
    with open(path, "w") as f:
        f.write(header)
        f.writelines(lines)


def load(data):
    d = {}
    for name in ("rd-wai", "det-diag", "repro-float", "repro-int", "rd-classic", "inputs"):
        d[name] = read_tsv(os.path.join(data, name + ".tsv"))
    d["machine"] = {r["key"]: r["value"] for r in read_tsv(os.path.join(data, "machine.tsv"))}
    return d


def model_names(d):
    """The WHM1 names of the models the readings were made with (machine.tsv model_name_q<N> of
    the pairs, in quality order, then model_name_<NAME> of the variable-rate models that quality
    files name; written by run-all.sh), or None for readings made before those keys existed."""
    m = d["machine"]
    pairs = sorted((k for k in m if re.match(r"model_name_q\d+$", k)), key=lambda k: int(k[12:]))
    named = [k for k in m if k.startswith("model_name_") and k not in pairs]
    return [m[k] for k in pairs + named] or None


def rated(d):
    """{quality: "NAME rate K"} of the qualities that were a rate of a variable-rate model
    (machine.tsv quality_q<N>, written by run-all.sh from the models' quality files)."""
    m = d["machine"]
    return {int(k[9:]): v for k, v in m.items() if re.match(r"quality_q\d+$", k)}


def qlabel(d, q):
    """q8, or q8 (wai-vr1 rate 5) for a quality that is a rate of a variable-rate model."""
    r = rated(d).get(q)
    return "q%d" % q if r is None else "q%d (%s)" % (q, r)


def qlist(d, quals):
    return ", ".join(qlabel(d, q) for q in quals)


def container_note(d):
    """The container bytes a stream pays: 136, 140 with a rate's WIH2 payload header."""
    return "136 container bytes" + (", 140 at a rate of a variable-rate model, whose WIH2 "
                                    "payload header is 4 bytes longer," if rated(d) else "")


def rate_checkpoints(d):
    """`tools/train/checkpoints/NAME.pt` of the variable-rate models the qualities are rates of."""
    names = sorted({v.split(" rate ")[0] for v in rated(d).values()})
    return ", ".join("`tools/train/checkpoints/%s.pt`" % n for n in names)


def training_note(d, old):
    """What the readings' models were: their WHM1 names (base, fine-tune iterations), else
    OLD, the wording of readings made with the first ~2500-iteration models."""
    names = model_names(d)
    return old if names is None else "models " + "; ".join("`%s`" % n for n in names)


def pct(v, nd=2):
    if v is None:
        return "n/a"
    return "%+.*f %%" % (nd, 0.0 if abs(v) < 0.5 * 10 ** -nd else v)


def pct3(v):
    return pct(v, 3)


def summ_line(vals, fmt=pct):
    if not vals:
        return "n/a | n/a | n/a | n/a"
    med, mean, lo, hi = E.summary(vals)
    return " | ".join(fmt(v) for v in (med, mean, lo, hi))


def picture_pixels(root=ROOT):
    """{picture name: pixels} from samples/eval/manifest.tsv."""
    sizes = {}
    for line in open(os.path.join(root, "samples", "eval", "manifest.tsv")):
        if line.strip() and not line.startswith("#"):
            f = line.split("\t")
            w, h = f[1].split("x")
            sizes[os.path.splitext(f[0])[0]] = int(w) * int(h)
    return sizes


def machine_block(m, what):
    lines = [
        "- Date of the readings: %s. Machine: %s, %s cores (`lscpu`, `nproc`), %s." %
        (m["date"], m["cpu"], m["cores"], m["kernel"]),
        "- Load (1/5/15-minute load average) at the start of the run %s, at its end %s; the whole "
        "run (`tools/eval/run-all.sh`) took %s s. The machine was shared with other jobs." %
        (m["load_start"], m["load_end"], m["run_seconds"]),
        "- Software: code at commit `%s`, `%s` (meson debugoptimized), Python %s, PyTorch %s, "
        "numpy %s, Pillow %s%s." % (m["code_commit"], m["cc"], m["python"], m["torch"], m["numpy"],
                                     m["pillow"], what),
    ]
    if "merged_qualities" in m:
        lines.append(
            "- **Re-measured later: quality %s** (a new model; `tools/eval/run-all.sh --qualities "
            "%s`, which keeps every other reading, the classic codecs' included), on %s: %s, %s "
            "cores, code at commit `%s`, PyTorch %s, load %s at the start and %s at the end, %s s. "
            "The rows of the other qualities are those of the run above." %
            (m["merged_qualities"], m["merged_qualities"], m["merged_date"], m["merged_cpu"],
             m["merged_cores"], m["merged_code_commit"], m["merged_torch"],
             m["merged_load_start"], m["merged_load_end"], m["merged_run_seconds"]))
    return "\n".join(lines)


def inputs_block(d):
    lines = ["Inputs (SHA-256, checked by `tools/eval/records.py --check` against the files):", ""]
    for r in d["inputs"]:
        if r["file"].startswith("models/"):
            lines.append("- `%s` `%s`" % (r["file"], r["sha256"]))
    ck = "tools/train/checkpoints/"
    vr = [r["file"] for r in d["inputs"] if r["file"].startswith(ck) and
          not re.match(r"q\d+\.pt$", r["file"][len(ck):])]
    lines.append("- the evaluation pictures `samples/eval/*.png` (provenance in "
                 "`samples/eval/manifest.tsv`) and the checkpoints `tools/train/checkpoints/q*.pt`"
                 "%s with the hashes in `docs/research/data/inputs.tsv`." %
                 ("" if not vr else " (a pair's) and %s (the variable-rate models')" %
                  ", ".join("`%s`" % f for f in vr)))
    return "\n".join(lines)


FOOT = ("Regenerate: `tools/eval/run-all.sh` (readings and records); verify: "
        "`tools/eval/records.py --check` (the meson test `eval-records`).")


# ---------------------------------------------------------------- determinism cost

def rd_curves(rows, side):
    """{picture: (bpp list, psnr list, msssim-dB list)} for one side, sorted by quality."""
    out = {}
    for r in sorted((r for r in rows if r["side"] == side), key=lambda r: int(r["quality"])):
        c = out.setdefault(r["picture"], ([], [], []))
        c[0].append(float(r["bpp"]))
        c[1].append(float(r["psnr_db"]))
        c[2].append(E.msssim_db(float(r["msssim"])))
    return out


def det_figures(d):
    rows = d["rd-wai"]
    fi, ff = rd_curves(rows, "integer"), rd_curves(rows, "float")
    return fi, ff

def det_bd(fi, ff):
    bd_p, bd_m = {}, {}
    for pic in fi:
        bd_p[pic] = E.bd_rate(ff[pic][0], ff[pic][1], fi[pic][0], fi[pic][1])
        bd_m[pic] = E.bd_rate(ff[pic][0], ff[pic][2], fi[pic][0], fi[pic][2])
    return bd_p, bd_m


def rate_method(d):
    """The float side at a rate of a variable-rate model (determinism.py), for readings that
    have such qualities."""
    if not rated(d):
        return ""
    return ("A quality that is a rate of a variable-rate model (%s) uses that model's checkpoint "
            "(%s) at its rate, with the rate's exported steps "
            "(qstep, rstep: the WHM1 rate table, Q12): table index = spec 7.4 with `4096 * scale "
            "<= threshold * qstep`, y symbols `round((y - mean) / dq)`, dq = qstep / 4096 (as "
            "the C encoder rounds them), g_s on `symbol * rstep / 4096 + mean`; its float "
            "likelihood is the model's forward at that rate. " %
            (qlist(d, sorted(rated(d))), rate_checkpoints(d)))


def render_determinism(d):
    m = d["machine"]
    fi, ff = det_figures(d)
    bd_p, bd_m = det_bd(fi, ff)
    lk_p, lk_m = det_bd(fi, rd_curves(d["rd-wai"], "float-likelihood"))
    pics = sorted(bd_p)
    med_p = E.summary([v for v in bd_p.values() if v is not None])[0]
    rows = d["rd-wai"]
    quals = sorted({int(r["quality"]) for r in rows})
    out = ["# Determinism cost: the integer decoder against the float model", "",
           "Record of %s; every figure below is computed by `tools/eval/records.py` from the "
           "readings in `docs/research/data/` (`rd-wai.tsv`, `det-diag.tsv`), which "
           "`tools/eval/determinism.py` measured." % m["date"], "",
           machine_block(m, ""), "", inputs_block(d), "",
           "## Method", "",
           "- **Integer codec**: `wai encode IN.png --quality Q --model-dir models` (the C "
           "encoder: float g_a/h_a, integer h_s for the means and table indices) and `wai decode` "
           "(integer h_s and g_s). Bits = the stream file's size. The encoder runs with its "
           "default colour-mean correction (`docs/research/mean-correction.md`: it decodes its "
           "own frame and codes the picture again where a channel's mean is off by more than "
           "half a level), which the float side below does not have: these figures include "
           "that correction's effect, not only the integer arithmetic's.",
           "- **Float model**: the checkpoint the model was exported from "
           "(`tools/train/checkpoints/qQ.pt`, `tools/train/model.py`) in PyTorch, float32, one "
           "thread: g_a, h_a; z symbols `round(z - median)` with the exported z medians; float "
           "h_s on z_hat gives scales and means; table index = spec 7.4 applied to `4096 * "
           "scale`; y symbols `round(y - mean)`; g_s on `symbol + mean`; RGB8 = "
           "`clamp(floor(255 x + 1/2))`. " + rate_method(d) + "Its bits are the size of a "
           "stream coding these symbols with the same 16-bit tables, escape codes and container "
           "bytes (`tools/eval/"
           "waiformat.py`, a numpy reading of the format whose rANS encoder reproduces the C "
           "encoder's streams byte for byte), so both sides pay the same entropy-coding overhead.",
           "- Quality: PSNR over the RGB8 samples; MS-SSIM (5 scales, Gaussian 11/1.5, per channel,"
           " mean of R, G, B) interpolated in dB (`-10 log10(1 - MS-SSIM)`).",
           "- BD-rate: Bjontegaard, log-rate as a PCHIP function of quality, integrated over the "
           "overlap of the two curves (`tools/eval/evalmath.py`); per picture over the %d "
           "qualities %s; the integer codec is the test, the float model the anchor (positive = "
           "the integer codec needs more bits for the same quality)." %
           (len(quals), qlist(d, quals)), "",
           "## Figures", "",
           "**Median BD-rate by PSNR over the %d pictures: %s** (target: at most +1.00 %%: %s)." %
           (len(pics), pct3(med_p), "met" if med_p <= 1.0 else "NOT met"), "",
           "| BD-rate, integer vs float | median | mean | min | max |", "|---|---|---|---|---|",
           "| by PSNR | %s |" % summ_line([v for v in bd_p.values() if v is not None], pct3),
           "| by MS-SSIM (dB) | %s |" % summ_line([v for v in bd_m.values() if v is not None], pct3),
           "| by PSNR, against the float model's likelihood bits | %s |" %
           summ_line([v for v in lk_p.values() if v is not None], pct3),
           "| by MS-SSIM (dB), against the likelihood bits | %s |" %
           summ_line([v for v in lk_m.values() if v is not None], pct3), "",
           "The first two rows are the determinism cost proper (same tables and container on "
           "both sides: what the integer transforms cost). The last two compare the real integer "
           "streams with the float model's own rate estimate (-log2 likelihood, continuous "
           "scales, no container, z around its learnt medians), the comparison a paper would "
           "make; a negative figure there means the real streams are smaller than the "
           + ("young " if model_names(d) is None else "") + "model's own estimate, although "
           "the " + container_note(d) + " count against them. Why was "
           "not measured here; two candidates: the 64 tables round every scale up to the next "
           "table scale (wider than predicted), and an outlier costs the likelihood up to "
           "log2(1e9) = 30 bits (its floor) but a table escape about 16 + 4 + 4n bits.", "",
           "Per picture:", "", "| picture | BD-rate by PSNR | BD-rate by MS-SSIM |", "|---|---|---|"]
    for p in pics:
        out.append("| %s | %s | %s |" % (p, pct3(bd_p[p]), pct3(bd_m[p])))
    nonmono = [p for p in pics if np.any(np.diff(fi[p][1]) <= 0) or np.any(np.diff(ff[p][1]) <= 0)]
    young = " (a young model)" if model_names(d) is None else ""
    out += ["", ("Not monotone: for %d of %d pictures (%s) the PSNR of a higher quality "
                 "(more bits) is not above that of the next lower one, on one side or both%s. "
                 "The BD-rate still takes the points sorted by quality; with such curves it "
                 "is a rougher figure than usual.") % (len(nonmono), len(pics),
                                                      ", ".join(nonmono) or "none", young)]
    out += ["", "Per quality (mean over the pictures; Δ = integer − float, median [min, max] over "
            "the pictures):", "",
            "| quality | bpp integer | bpp float | Δ bits | PSNR integer | PSNR float | Δ PSNR dB "
            "| MS-SSIM integer | MS-SSIM float | bpp float likelihood |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for q in quals:
        ri = {r["picture"]: r for r in rows if int(r["quality"]) == q and r["side"] == "integer"}
        rf = {r["picture"]: r for r in rows if int(r["quality"]) == q and r["side"] == "float"}
        rl = {r["picture"]: r for r in rows if int(r["quality"]) == q and r["side"] == "float-likelihood"}
        db = [(int(ri[p]["bytes"]) / int(rf[p]["bytes"]) - 1) * 100 for p in ri]
        dp = [float(ri[p]["psnr_db"]) - float(rf[p]["psnr_db"]) for p in ri]

        def mean(rs, k):
            return float(np.mean([float(r[k]) for r in rs.values()]))
        out.append("| %s | %.4f | %.4f | %s [%s, %s] | %.3f | %.3f | %+.3f [%+.3f, %+.3f] | %.4f "
                   "| %.4f | %.4f |" % (qlabel(d, q), mean(ri, "bpp"), mean(rf, "bpp"),
                                        pct3(float(np.median(db))),
                                        pct3(min(db)), pct3(max(db)), mean(ri, "psnr_db"),
                                        mean(rf, "psnr_db"), float(np.median(dp)), min(dp), max(dp),
                                        mean(ri, "msssim"), mean(rf, "msssim"), mean(rl, "bpp")))
    dg = d["det-diag"]
    zn = sum(int(r["z_elements"]) for r in dg)
    zd = sum(int(r["z_sym_differ_torch_vs_c"]) for r in dg)
    yn = sum(int(r["y_elements"]) for r in dg)
    yd = [int(r["y_index_differ_float_vs_int"]) for r in dg]
    out += ["", "Where the two differ (`det-diag.tsv`, %d streams):" % len(dg), "",
            "- z symbols of the PyTorch analysis against the C encoder's (read back from its "
            "streams): %d of %d differ." % (zd, zn),
            "- y table indices of the float h_s against the integer h_s on the same z: %d of %d "
            "elements differ (%.3f %%; per stream median %d, min %d, max %d). The float model "
            "codes each element with its own table, so here this costs bits, not correctness; "
            "a float *decoder* facing an integer or other-platform encoder would desynchronise "
            "(see reproducibility.md)." % (sum(yd), yn, 100.0 * sum(yd) / yn,
                                            int(np.median(yd)), min(yd), max(yd)),
            "", "## Not measured", "",
            "- Other pictures or sizes than the six 512-wide evaluation pictures; qualities "
            "other than %s; other training states (these readings: %s; the "
            "cost of 12-bit weights may change as training goes on)." %
            (qlist(d, quals),
             training_note(d, "~2500-iteration checkpoints")),
            "- The float model's own entropy coder (CompressAI's range coder with its own CDFs) "
            "was not run: the likelihood rows use its ideal rate estimate, not a real stream.",
            "- A float decode on a GPU or another CPU; decode speed.", "", FOOT, ""]
    return "\n".join(out)


# ---------------------------------------------------------------- reproducibility

VARIANT_TEXT = {"float32-t1": "float32, 1 thread", "float32-t2": "float32, 2 threads",
                "float64": "float64, 1 thread", "bfloat16": "bfloat16, 1 thread"}


def render_reproducibility(d):
    m = d["machine"]
    ri = d["repro-int"]
    streams = sorted({(int(r["quality"]), r["picture"]) for r in ri})
    configs = []
    for r in ri:
        c = (r["kernels"], r["threads"], r["device"])
        if c not in configs:
            configs.append(c)
    unavailable = sorted({"%s/%s/%s" % (r["kernels"], r["threads"], r["device"])
                          for r in ri if r["rgb_sha256"] == "unavailable"})
    distinct = []
    for s in streams:
        hs = {r["rgb_sha256"] for r in ri if (int(r["quality"]), r["picture"]) == s
              and r["rgb_sha256"] != "unavailable"}
        distinct.append(len(hs))
    identical = sum(1 for n in distinct if n == 1)
    errors = sum(1 for r in ri if r["rgb_sha256"].startswith("error"))
    if errors:   # a failed decode is never "identical"
        identical = min(identical, len(streams) - len({(r["quality"], r["picture"]) for r in ri
                                                        if r["rgb_sha256"].startswith("error")}))
    decodes = sum(1 for r in ri if r["rgb_sha256"] != "unavailable")
    out = ["# Reproducibility: integer decode against float decode", "",
           "Record of %s; every figure below is computed by `tools/eval/records.py` from "
           "`docs/research/data/repro-int.tsv` (measured by `tools/eval/repro_int.py`) and "
           "`repro-float.tsv` (`tools/eval/determinism.py`)." % m["date"], "",
           machine_block(m, "; Vulkan: %s, %s" % (m["vulkan_device"], m["vulkan_driver"])), "",
           inputs_block(d), "",
           "## Integer decoder", "",
           "The %d streams of determinism-cost.md (6 pictures x qualities %s, made by `wai "
           "encode`), each decoded by `wai decode --sha256` (SHA-256 of the RGB8 output, spec 8) "
           "under %d configurations: kernel sets %s x threads %s (0 = automatic) on the CPU, and "
           "`--device vulkan` (Mesa lavapipe, the only Vulkan device here)." %
           (len(streams), qlist(d, sorted({s[0] for s in streams})),
            len(configs), ", ".join(sorted({c[0] for c in configs if c[2] == "cpu"})),
            "/".join(sorted({c[1] for c in configs if c[2] == "cpu"}))), "",
           "**%d of %d streams decode to one identical output in every configuration** (%d "
           "decodes; the most distinct outputs of any stream: %d; failed decodes: %d). "
           "Unavailable here: %s." % (identical, len(streams), decodes, max(distinct), errors,
                                      ", ".join(unavailable) or "none"), "",
           "## Float decoder", "",
           "The same checkpoints in PyTorch decode the same streams' symbols: float h_s on the "
           "stream's z_hat gives scales and means, the table index is spec 7.4 on `4096 * scale`,"
           " g_s runs on `y symbol + mean`%s. Each variant is compared with the integer decoder "
           "and with float32 on 1 thread. A *table index* that differs from the encoder's makes "
           "an entropy decoder read the rest of the stream with the wrong table: one such element "
           "destroys the picture from that point on. A differing mean (rounded to Q12) moves "
           "the reconstruction only." % (
               "" if not rated(d) else " (at a rate of a variable-rate model, %s: its "
               "checkpoint %s, the index with the rate's qstep, g_s on `y symbol * rstep / 4096 "
               "+ mean`)" % (qlist(d, sorted(rated(d))), rate_checkpoints(d))), "",
           "Counts over the %d streams, %d y elements and %d RGB bytes in all (sums over the "
           "streams; in brackets the number of streams with at least one):" %
           (len(streams), sum(int(r["y_elements"]) for r in d["repro-float"]
                              if r["variant"] == "float32-t1"),
            3 * sum(picture_pixels()[r["picture"]] for r in d["repro-float"]
                    if r["variant"] == "float32-t1")), "",
           "| variant | index ≠ integer | mean ≠ integer | index ≠ float32/1 | mean ≠ float32/1 "
           "| RGB bytes ≠ float32/1 | RGB bytes ≠ integer |", "|---|---|---|---|---|---|---|"]
    rf = d["repro-float"]
    variants = []
    for r in rf:
        if r["variant"] not in variants:
            variants.append(r["variant"])
    for v in variants:
        rs = [r for r in rf if r["variant"] == v]

        def col(k):
            vals = [int(r[k]) for r in rs]
            return "%d (%d)" % (sum(vals), sum(1 for x in vals if x))
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            VARIANT_TEXT.get(v, v), col("index_differ_vs_int"), col("mean_differ_vs_int"),
            col("index_differ_vs_f32t1"), col("mean_differ_vs_f32t1"),
            col("rgb_bytes_differ_vs_f32t1"), col("rgb_bytes_differ_vs_int")))
    f32 = [r for r in rf if r["variant"] == "float32-t1"]
    tot = sum(int(r["y_elements"]) for r in f32)
    idx_int = sum(int(r["index_differ_vs_int"]) for r in f32)
    out += ["",
            "So a float decoder facing the integer encoder's streams would pick a different "
            "table for %d of %d y elements (%.3f %%) and fail on %d of %d streams; facing a "
            "float32 encoder on another thread count, precision or platform, it fails where the "
            "column \"index ≠ float32/1\" is non-zero. The integer decoder has no such column: "
            "its table indices are part of the format." %
            (idx_int, tot, 100.0 * idx_int / tot,
             sum(1 for r in f32 if int(r["index_differ_vs_int"])), len(f32)),
            "", "## Not measured", "",
            "- Other CPUs (ARM/NEON, other x86 vendors), other operating systems, a hardware GPU "
            "(only Mesa's lavapipe software Vulkan driver runs here), 32-bit builds.",
            "- The float decoder on a GPU (cuDNN, TF32) or with other PyTorch/oneDNN versions, "
            "where float divergence is usually larger than between CPU thread counts.",
            "- Decode speed (see decode-throughput.md).", "", FOOT, ""]
    return "\n".join(out)


# ---------------------------------------------------------------- classic codecs

CODEC_TEXT = {
    "jpeg": "JPEG: libjpeg-turbo `cjpeg -quality Q -sample 2x2 -optimize` (4:2:0, optimised "
            "Huffman tables), `djpeg`",
    "webp": "WebP: `cwebp -q Q` (lossy, 4:2:0, method 4), `dwebp`",
    "avif": "AVIF: `avifenc --min A --max A -y 420 -s 6` (libaom, 4:2:0, speed 6), `avifdec`",
}


def classic_figures(d):
    wai = rd_curves(d["rd-wai"], "integer")
    res = {}
    for codec in ("jpeg", "webp", "avif"):
        rows = [r for r in d["rd-classic"] if r["codec"] == codec]
        per = {}
        for pic in sorted(wai):
            rs = sorted((r for r in rows if r["picture"] == pic), key=lambda r: float(r["bpp"]))
            bpp = [float(r["bpp"]) for r in rs]
            ps = [float(r["psnr_db"]) for r in rs]
            ms = [E.msssim_db(float(r["msssim"])) for r in rs]
            exc_p, exc_m = [], []
            for rw, pw, mw in zip(*wai[pic]):
                cp = [b for b, q in zip(bpp, ps) if q >= pw]
                cm = [b for b, q in zip(bpp, ms) if q >= mw]
                exc_p.append((rw / min(cp) - 1) * 100 if cp else None)
                exc_m.append((rw / min(cm) - 1) * 100 if cm else None)
            per[pic] = dict(exc_psnr=exc_p, exc_msssim=exc_m,
                psnr=E.bd_rate(bpp, ps, wai[pic][0], wai[pic][1]),
                msssim=E.bd_rate(bpp, ms, wai[pic][0], wai[pic][2]),
                wai_psnr=(min(wai[pic][1]), max(wai[pic][1])), c_psnr=(min(ps), max(ps)),
                wai_bpp=(min(wai[pic][0]), max(wai[pic][0])), c_bpp=(min(bpp), max(bpp)),
                wai_ms=(min(wai[pic][2]), max(wai[pic][2])), c_ms=(min(ms), max(ms)))
        res[codec] = per
    return res


def targets_block(d, res):
    """Issue 12's four targets, each with the figure it is judged by and met / not met; only
    for readings with the colour-cast columns (mean_err_*, since 2026-12-03's session 6)."""
    rows = [r for r in d["rd-wai"] if r["side"] == "integer"]
    if not rows or "mean_err_r" not in rows[0]:
        return []
    quals = sorted({int(r["quality"]) for r in rows})
    pics = sorted({r["picture"] for r in rows})
    fi, ff = det_figures(d)
    yes = lambda ok: "**met**" if ok else "not met"   # noqa: E731
    # 1. BD-rate by PSNR against JPEG, median over the pictures with one
    vj = [v["psnr"] for v in res["jpeg"].values() if v["psnr"] is not None]
    med_j = float(np.median(vj)) if vj else None
    # 2. qualities, mean rates, monotone pictures (more bits and more PSNR at each step)
    mean_bpp = {q: float(np.mean([float(r["bpp"]) for r in rows if int(r["quality"]) == q]))
                for q in quals}
    mono = [p for p in pics if all(b1 > b0 and p1 > p0 for b0, b1, p0, p1 in zip(
        fi[p][0], fi[p][0][1:], fi[p][1], fi[p][1][1:]))]
    ok2 = (len(quals) >= 6 and min(mean_bpp.values()) <= 0.15 and max(mean_bpp.values()) >= 1.2
           and len(mono) == len(pics))
    # 3. colour casts: the largest |channel-mean error| over pictures and channels, per quality
    cast = {q: max(abs(float(r[k])) for r in rows if int(r["quality"]) == q
                   for k in ("mean_err_r", "mean_err_g", "mean_err_b")) for q in quals}
    worst = max(cast.values())
    # 4. the integer codec against its float model: BD-rate by PSNR, median over the pictures
    bd_p, _ = det_bd(fi, ff)
    vf = [v for v in bd_p.values() if v is not None]
    med_f = float(np.median(vf)) if vf else None
    out = ["", "## Issue 12's targets", "",
           "| target | figure | |", "|---|---|---|",
           "| 1. BD-rate by PSNR against JPEG <= -15 %% (median over the pictures) | %s (%d of %d "
           "pictures have one) | %s |" % (pct(med_j) if med_j is not None else "n/a", len(vj),
                                          len(pics), yes(med_j is not None and med_j <= -15)),
           "| 2. >= 6 qualities from <= 0.15 to >= 1.2 bpp (means), each picture monotone | %d "
           "qualities, %.3f to %.3f bpp; monotone: %d of %d pictures%s | %s |" % (
               len(quals), min(mean_bpp.values()), max(mean_bpp.values()), len(mono), len(pics),
               "" if len(mono) == len(pics) else " (not: %s)" % ", ".join(
                   p for p in pics if p not in mono), yes(ok2)),
           "| 3. every channel mean within 1.0 level, every picture and quality | worst %.2f "
           "levels | %s |" % (worst, yes(worst <= 1.0)),
           "| 4. integer codec within +1.0 %% BD-rate of its float model (median) | %s | %s |" % (
               pct3(med_f) if med_f is not None else "n/a", yes(med_f is not None and med_f <= 1.0)),
           "", "Per quality (integer codec; mean over the pictures, and the worst channel-mean "
           "error over pictures and channels, decoded minus original):", "",
           "| quality | bpp | PSNR dB | worst channel-mean error (levels) |", "|---|---|---|---|"]
    for q in quals:
        rq = [r for r in rows if int(r["quality"]) == q]
        worst_r = max(rq, key=lambda r: max(abs(float(r[k])) for k in
                                            ("mean_err_r", "mean_err_g", "mean_err_b")))
        k = max(("mean_err_r", "mean_err_g", "mean_err_b"), key=lambda k: abs(float(worst_r[k])))
        out.append("| %s | %.4f | %.3f | %+.2f (%s, %s) |" % (
            qlabel(d, q), mean_bpp[q], float(np.mean([float(r["psnr_db"]) for r in rq])),
            float(worst_r[k]),
            worst_r["picture"], "RGB"[("mean_err_r", "mean_err_g", "mean_err_b").index(k)]))
    return out


def render_classic(d):
    m = d["machine"]
    res = classic_figures(d)
    quals = sorted({int(r["quality"]) for r in d["rd-wai"]})
    out = ["# WAI against JPEG, WebP and AVIF", "",
           "Record of %s; every figure below is computed by `tools/eval/records.py` from "
           "`docs/research/data/rd-classic.tsv` (measured by `tools/eval/classic.py`) and the "
           "integer-codec rows of `rd-wai.tsv` (`tools/eval/determinism.py`)." % m["date"], "",
           machine_block(m, "; %s (libjpeg-turbo-progs %s), webp %s, avifenc %s (libavif-bin %s)"
                         % ("cjpeg", m["libjpeg-turbo-progs"], m["webp"], m["avifenc"],
                            m["libavif-bin"])), "",
           inputs_block(d), "",
           "## Method", "",
           "- WAI: the integer codec (`wai encode`/`wai decode`) at %s, bits = stream size "
           "(with its %s)." % (qlist(d, quals), container_note(d).rstrip(","))]
    settings = {}
    for r in d["rd-classic"]:
        settings.setdefault(r["codec"], [])
        if r["setting"] not in settings[r["codec"]]:
            settings[r["codec"]].append(r["setting"])
    for c in ("jpeg", "webp", "avif"):
        out.append("- %s; settings %s. Bits = file size (with its container)." %
                   (CODEC_TEXT[c], ", ".join(settings.get(c, []))))
    out += ["- Quality: PSNR over RGB8 samples, MS-SSIM in dB as in determinism-cost.md; the "
            "decoded pictures are converted to RGB by the codecs' own decoders.",
            "- BD-rate of WAI (test) against each codec (anchor), per picture, PCHIP over the "
            "overlap of the two quality ranges; positive = WAI needs that many percent more bits "
            "for the same quality. A picture whose WAI quality range does not overlap the codec's"
            " has no BD-rate (\"n/a\") and is left out of the summary.", "",
            "## Figures", "",
            "| WAI against | BD-rate by PSNR: median | mean | min | max | pictures | "
            "by MS-SSIM: median | mean | min | max | pictures |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in ("jpeg", "webp", "avif"):
        per = res[c]
        vp = [v["psnr"] for v in per.values() if v["psnr"] is not None]
        vm = [v["msssim"] for v in per.values() if v["msssim"] is not None]
        out.append("| %s | %s | %d of %d | %s | %d of %d |" % (
            c.upper() if c != "webp" else "WebP", summ_line(vp), len(vp), len(per),
            summ_line(vm), len(vm), len(per)))
    out += ["", "Where no BD-rate exists (the codec's lowest setting already gives a higher "
            "quality than WAI's best point), a plainer figure: for each WAI point (picture x "
            "quality, %d in all), the extra bits WAI spends over the cheapest measured setting of"
            " the codec that reaches at least the same PSNR (or MS-SSIM), "
            "`bits_WAI / bits_codec - 1`. No interpolation; the codec could need fewer bits "
            "still at a setting between those measured, so these are lower bounds." %
            sum(len(v["exc_psnr"]) for v in res["jpeg"].values()), "",
            "| WAI against | extra bits at equal PSNR: median | min | max | points | "
            "at equal MS-SSIM: median | min | max | points |", "|---|---|---|---|---|---|---|---|---|"]
    for c in ("jpeg", "webp", "avif"):
        vp = [x for v in res[c].values() for x in v["exc_psnr"] if x is not None]
        vm = [x for v in res[c].values() for x in v["exc_msssim"] if x is not None]
        n = sum(len(v["exc_psnr"]) for v in res[c].values())

        def three(vals):
            if not vals:
                return "n/a | n/a | n/a"
            return " | ".join(pct(x) for x in (float(np.median(vals)), min(vals), max(vals)))
        out.append("| %s | %s | %d of %d | %s | %d of %d |" % (
            c.upper() if c != "webp" else "WebP", three(vp), len(vp), n, three(vm), len(vm), n))
    out += ["", "Per picture (BD-rate by PSNR / by MS-SSIM; the PSNR ranges in dB that the "
            "overlap is taken over):", "",
            "| picture | WAI PSNR range | JPEG | JPEG PSNR range | WebP | WebP PSNR range | AVIF "
            "| AVIF PSNR range |", "|---|---|---|---|---|---|---|---|"]
    for pic in sorted(res["jpeg"]):
        cells = ["%.2f-%.2f" % res["jpeg"][pic]["wai_psnr"]]
        for c in ("jpeg", "webp", "avif"):
            v = res[c][pic]
            cells.append("%s / %s" % (pct(v["psnr"]), pct(v["msssim"])))
            cells.append("%.2f-%.2f" % v["c_psnr"])
        out.append("| %s | %s |" % (pic, " | ".join(cells)))
    allx = [x for c in res for v in res[c].values() for x in v["exc_psnr"] + v["exc_msssim"]
            if x is not None]
    worse = sum(1 for x in allx if x > 0)
    out += targets_block(d, res)
    out += ["", "Plainly: in %d of %d of these point comparisons WAI needs more bits than the "
            "classic codec for the same quality (%s)." % (
                worse, len(allx), training_note(d, "these are young models, ~2500 training "
                                                   "iterations at N=64/M=96")),
            "", "## Not measured", "",
            "- 4:4:4 JPEG/AVIF, other encoder speeds or tunings (e.g. `cjpeg -dct float`, "
            "`cwebp -m 6`, AVIF `--tune ssim`), JPEG XL, HEIC, video codecs.",
            "- Other pictures than the six evaluation pictures; encode/decode speed; "
            "subjective quality.",
            "- WAI against the classic codecs at rates where their quality ranges do not "
            "overlap (no BD-rate is defined there).", "", FOOT, ""]
    return "\n".join(out)


# ---------------------------------------------------------------- checks

def render_all(d):
    return {"determinism-cost.md": render_determinism(d),
            "reproducibility.md": render_reproducibility(d),
            "classic-codecs.md": render_classic(d)}


def consistency(d, root):
    """Checks of the readings themselves, and of the inputs against the committed files."""
    errs = []
    sizes = picture_pixels(root)
    for table in ("rd-wai", "rd-classic"):
        for r in d[table]:
            bpp = 8.0 * int(r["bytes"]) / sizes[r["picture"]]
            if "%.6f" % bpp != r["bpp"]:
                errs.append("%s: %s bpp %s, but 8 * bytes / pixels = %.6f" %
                            (table, r["picture"], r["bpp"], bpp))
    for r in d["inputs"]:
        path = os.path.join(root, r["file"])
        if not os.path.exists(path):
            if r["file"].startswith("tools/train/checkpoints/"):
                continue   # checkpoints are optional in a checkout
            errs.append("input %s: missing" % r["file"])
            continue
        h = hashlib.sha256(open(path, "rb").read()).hexdigest()
        if h != r["sha256"]:
            errs.append("input %s: SHA-256 %s, the readings were made with %s" %
                        (r["file"], h, r["sha256"]))
    # every quality's files (a pair, or a quality file and the variable-rate pair it names)
    named = {r["file"] for r in d["inputs"]}
    mdir = os.path.join(root, "models")
    files = {f for f in os.listdir(mdir) if re.match(r"wai-q\d+\.(whm|ana|rate)$", f)}
    try:
        for stem, rate in W.ladder(mdir).values():
            if rate is not None:
                files |= {os.path.basename(stem) + ".whm", os.path.basename(stem) + ".ana"}
    except ValueError as e:
        errs.append("models: %s" % e)
    for f in sorted(files):
        if "models/" + f not in named:
            errs.append("models/%s is committed but has no readings" % f)
    return errs


def check(root, data=None, docs=None, quiet=False):
    docs = docs or os.path.join(root, "docs", "research")
    data = data or os.path.join(docs, "data")
    d = load(data)
    errs = consistency(d, root)
    for name, text in render_all(d).items():
        path = os.path.join(docs, name)
        have = open(path).read() if os.path.exists(path) else None
        if have != text:
            a = (have or "").splitlines()
            b = text.splitlines()
            first = next((i for i in range(max(len(a), len(b)))
                          if i >= len(a) or i >= len(b) or a[i] != b[i]), 0)
            errs.append("%s differs from its readings at line %d:\n  committed: %s\n  readings:  "
                        "%s" % (name, first + 1, a[first] if first < len(a) else "<none>",
                                b[first] if first < len(b) else "<none>"))
    if not quiet:
        for e in errs:
            print("records: " + e)
        print("records: %s" % ("OK, %d records match their readings" % len(RECORDS)
                               if not errs else "%d mismatch(es)" % len(errs)))
    return not errs


def self_test():
    ok = True

    def expect(name, cond):
        nonlocal ok
        print("self-test: %-62s %s" % (name, "ok" if cond else "FAILED"))
        ok = ok and cond

    # BD-rate on known cases
    expect("BD-rate of doubled rates is +100 %",
           abs(E.bd_rate([1, 2, 3, 4], [30, 32, 34, 36], [2, 4, 6, 8], [30, 32, 34, 36]) - 100) < 1e-9)
    expect("BD-rate of identical curves is 0 %",
           abs(E.bd_rate([1, 2, 4], [30, 33, 35], [1, 2, 4], [30, 33, 35])) < 1e-12)
    expect("BD-rate without overlap is undefined",
           E.bd_rate([1, 2], [30, 31], [1, 2], [32, 33]) is None)
    # PCHIP on a cubic-free case: linear data integrates exactly
    expect("PCHIP integral of a line", abs(E.pchip_integral([0, 1, 3], [0, 2, 6], 0.5, 2.5) - 6.0) < 1e-12)
    # monotone data: PCHIP keeps monotonicity (no overshoot) -> integral within the box
    v = E.pchip_integral([0, 1, 2, 3], [0, 0, 1, 1], 0, 3)
    expect("PCHIP integral of a step stays within bounds", 0.999 <= v <= 2.001)
    with tempfile.TemporaryDirectory() as tmp:
        docs = os.path.join(tmp, "research")
        shutil.copytree(os.path.join(ROOT, "docs", "research"), docs)
        data = os.path.join(docs, "data")
        expect("the committed records verify", check(ROOT, data, docs, quiet=True))
        det = os.path.join(docs, "determinism-cost.md")
        orig = open(det).read()
        mm = re.search(r"Median BD-rate by PSNR over the \d+ pictures: ([+-]\d+\.\d+) %", orig)
        expect("the median BD-rate figure is found in the record", mm is not None)
        if mm:
            nd = len(mm.group(1).split(".")[1])
            edited = "%+.*f" % (nd, float(mm.group(1)) + 10 ** -nd)
            open(det, "w").write(orig[:mm.start(1)] + edited + orig[mm.end(1):])
            expect("an edited figure (%s -> %s) fails" % (mm.group(1), edited),
                   not check(ROOT, data, docs, quiet=True))
            open(det, "w").write(orig)
        rd = os.path.join(data, "rd-wai.tsv")
        orig = open(rd).read()
        lines = orig.split("\n")
        f = lines[1].split("\t")
        f[5] = "%.4f" % (float(f[5]) + 0.1)
        open(rd, "w").write("\n".join(lines[:1] + ["\t".join(f)] + lines[2:]))
        expect("an edited reading (a PSNR) fails", not check(ROOT, data, docs, quiet=True))
        open(rd, "w").write(orig)
        inp = os.path.join(data, "inputs.tsv")
        orig = open(inp).read()
        open(inp, "w").write(re.sub(r"(models/[^\t]+\.whm\t)([0-9a-f])",
                                    lambda x: x.group(1) + ("0" if x.group(2) != "0" else "1"),
                                    orig, count=1))
        expect("a model hash other than the committed model's fails",
               not check(ROOT, data, docs, quiet=True))
        open(inp, "w").write(orig)
        expect("restored copies verify again", check(ROOT, data, docs, quiet=True))
    print("self-test: %s" % ("OK" if ok else "FAILED"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if not (a.write or a.check or a.self_test):
        ap.error("give --write, --check and/or --self-test")
    if a.write:
        docs = os.path.join(ROOT, "docs", "research")
        for name, text in render_all(load(os.path.join(docs, "data"))).items():
            open(os.path.join(docs, name), "w").write(text)
            print("records: wrote docs/research/%s" % name)
    ok = True
    if a.check:
        ok = check(ROOT) and ok
    if a.self_test:
        ok = self_test() and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
