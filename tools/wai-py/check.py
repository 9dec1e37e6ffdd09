#!/usr/bin/python3
"""The Python decoder against the pinned hashes and against `wai decode` (meson test 'pydec').

    check.py --wai build/tools/wai --source-root . --build-root build --work DIR

1. every vector of vectors/manifest.txt, every stream of the real-content corpus
   (vectors/corpus/manifest.txt, with its frozen model) and every sample of samples/manifest.txt:
   the SHA-256 of the decoded RGB8 and the frame count must equal the pinned ones;
2. the crafted set (craft.py: damaged streams and models, edge cases, synthetic models): the
   Python decoder and `wai decode -o OUT.rgb` must report the same errors in the same order
   (spec 2.4: a decoder goes on after an error) and output the same pictures, and the Python
   decoder's first error must be the one the case expects;
3. the command line: one case of each outcome through waipy.py, for its exit codes.

Prints PASS / FAIL / XFAIL lines and ends with "pydec: N passed, M failed" (exit 1 on a failure).
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True    # nothing written into the source tree
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from craft import make_cases  # noqa: E402
from waidec.decoder import Error, Settings, decode_events  # noqa: E402
from waidec.errors import CLASS_BY_EXIT  # noqa: E402

# the messages of `wai decode` (wai_strerror) -> the spec's class
C_CLASSES = (("invalid bitstream", "bitstream error"), ("truncated data", "truncated"),
             ("CRC mismatch", "CRC error"), ("unsupported", "unsupported"),
             ("model not found", "model not found"), ("invalid model", "invalid model"),
             ("limit exceeded", "limit exceeded"))

# Cases where `wai decode` and the spec (as read here) differ; reported as XFAIL, and a FAIL
# once they agree (so that the entry is removed). SPEC-QUESTIONS.md explains each.
KNOWN = {
    "memory-budget-work-plus-file": "A5: the budget is an implementation limit; C counts its parsed model, not the file",
}

# Cases where the spec allows more than one error class (the C decoder may take either):
# case -> the classes that are all conforming there.
SPEC_ALTERNATIVES = {
    # 4.4 (since 8050adf): a model-store file taken for the model by its name whose bytes have
    # another SHA-256 may be reported as invalid model instead of model not found.
    "model-exact-name-other-sha": ("model not found", "invalid model"),
}


def py_outcome(data, dirs, max_memory=None, as_wai_decode=False):
    """The Python decoder on `data`: (error classes in order, SHA-256 of the pictures output,
    picture count, first error's message).

    `as_wai_decode`: stop where `wai decode` stops reading (spec 9.1, informative: a complete
    sequence header unit that fails while no header is in force ends its reading)."""
    kw = {"model_path": dirs}
    if max_memory:
        kw["max_memory"] = max_memory
    h = hashlib.sha256()
    classes, pictures, first = [], 0, ""
    for ev in decode_events(data, Settings(**kw)):
        if isinstance(ev, Error):
            classes.append(ev.error.name)
            first = first or str(ev.error)
            if as_wai_decode and ev.wai_decode_stops:
                break
        else:
            h.update(ev.rgb)
            pictures += 1
    return classes, h.hexdigest(), pictures, first


def c_outcome(wai, path, dirs, empty_dir, max_memory=None):
    """`wai decode -o OUT.rgb` on `path`: (error classes in order, SHA-256 of OUT.rgb, exit
    status, first message). A message the table does not know is a class of its own."""
    out = path + ".c.rgb"
    cmd = [wai, "decode", path, "-o", out, "--model-path", ":".join(dirs) or empty_dir]
    if max_memory:
        cmd += ["--max-memory", str(max_memory)]
    env = dict(os.environ, WAI_MODEL_PATH=empty_dir)
    if os.path.exists(out):
        os.unlink(out)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    classes = []
    prefix = "wai: %s: " % path
    for line in p.stderr.splitlines():
        if not line.startswith(prefix):
            continue
        msg = line[len(prefix):]
        classes.append(next((name for key, name in C_CLASSES if msg.startswith(key)), "? " + msg))
    h = hashlib.sha256()
    if os.path.exists(out):
        with open(out, "rb") as f:
            h.update(f.read())
    first = next((ln for ln in p.stderr.splitlines() if ln.strip()), "")
    return classes, h.hexdigest(), p.returncode, first


def check_manifest(manifest, dirs, report, max_pixels=0):
    """max_pixels: skip (and say so) streams whose pictures are larger (0: no limit)."""
    base = os.path.dirname(manifest)
    n = 0
    with open(manifest) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, want, frames, size = line.split()
            w, h = (int(v) for v in size.split("x"))
            if max_pixels and w * h > max_pixels:
                print("SKIP %s %s (%dx%d: over --corpus-max-pixels %d)"
                      % (os.path.basename(base), name, w, h, max_pixels))
                continue
            t = time.time()
            with open(os.path.join(base, name), "rb") as g:
                classes, got, nfr, detail = py_outcome(g.read(), dirs)
            ok = not classes and got == want and nfr == int(frames)
            report(ok, "%s %s (%.1f s)" % (os.path.basename(base), name, time.time() - t),
                   "" if ok else "got %s %s, %d pictures; pinned %s, %s %s" % (classes, got, nfr, want, frames, detail))
            n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wai", required=True, help="the C command line tool (build/tools/wai)")
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--build-root", required=True)
    ap.add_argument("--work", required=True, help="directory for the crafted cases (recreated)")
    ap.add_argument("--only", help="run only the cases whose name contains this")
    ap.add_argument("--no-samples", action="store_true", help="skip samples/ (faster)")
    ap.add_argument("--no-corpus", action="store_true", help="skip vectors/corpus/ (faster)")
    ap.add_argument("--corpus-max-pixels", type=int, default=1 << 20,
                    help="skip corpus pictures larger than this (default 2^20: the 1920x1080 one "
                    "takes about a minute here); 0: all")
    args = ap.parse_args()

    src, bld = os.path.abspath(args.source_root), os.path.abspath(args.build_root)
    build_models = os.path.join(bld, "tools")
    counts = {"pass": 0, "fail": 0, "xfail": 0}

    def report(ok, what, detail=""):
        counts["pass" if ok else "fail"] += 1
        print("%s %s" % ("PASS" if ok else "FAIL", what))
        if detail:
            print("  | " + detail)
        sys.stdout.flush()

    t0 = time.time()
    # 1. pinned hashes
    n_vec = n_smp = 0
    if not args.only:
        n_vec = check_manifest(os.path.join(src, "vectors", "manifest.txt"), [build_models], report)
        if not args.no_samples:
            n_smp = check_manifest(os.path.join(src, "samples", "manifest.txt"), [os.path.join(src, "models")], report)
        if not args.no_corpus:  # the real-content corpus, with its frozen model only
            corpus = os.path.join(src, "vectors", "corpus")
            n_vec += check_manifest(os.path.join(corpus, "manifest.txt"), [corpus], report,
                                    args.corpus_max_pixels)
    t1 = time.time()

    # 2. crafted cases
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    empty = os.path.join(work, "no-models")
    os.makedirs(empty)
    with open(os.path.join(build_models, "wai-micro-n8m8.whm"), "rb") as f:
        micro = f.read()
    with open(os.path.join(build_models, "wai-tiny-n64m96.whm"), "rb") as f:
        tiny = f.read()
    cases = make_cases(os.path.join(src, "vectors"), micro, tiny)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    report(not dup, "crafted case names are unique", ", ".join(sorted(dup)))
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    by_outcome = {}
    n_bad = 0
    for case in cases:
        path = os.path.join(work, case.name + ".wai")
        with open(path, "wb") as f:
            f.write(case.stream)
        dirs = []
        if case.models is not None:
            d = os.path.join(work, case.name + ".models")
            os.makedirs(d)
            for fname, data in case.models.items():
                with open(os.path.join(d, fname), "wb") as f:
                    f.write(data)
            dirs.append(d)
        if case.use_build_models:
            dirs.append(build_models)
        py_cls, py_hash, _, py_detail = py_outcome(case.stream, dirs, case.max_memory, as_wai_decode=True)
        c_cls, c_hash, c_rc, c_detail = c_outcome(args.wai, path, dirs, empty, case.max_memory)
        py_first = py_cls[0] if py_cls else "ok"
        if py_cls or case.expect not in (None, "ok"):
            n_bad += 1
        by_outcome.setdefault(py_first, (path, dirs, case.max_memory))
        # the same errors in the same order, the same pictures, and `wai decode`'s exit status
        alt = SPEC_ALTERNATIVES.get(case.name, ())
        c_cmp = [py_cls[i] if i < len(py_cls) and c in alt and py_cls[i] in alt else c
                 for i, c in enumerate(c_cls)]
        agree = py_cls == c_cmp and py_hash == c_hash and c_rc == (1 if c_cls else 0)
        as_expected = case.expect is None or case.expect == py_first
        what = "case %s: python %s, C %s%s" % (case.name, " + ".join(py_cls) or "ok",
                                               " + ".join(c_cls) or ("ok" if c_rc == 0 else "rc %d" % c_rc),
                                               "" if case.expect is None else ", expected " + case.expect)
        if py_hash != c_hash:
            what += " (pictures differ)"
        if alt and c_cmp != c_cls:
            what += " (the spec allows either: %s)" % " or ".join(alt)
        if case.name in KNOWN:
            if agree:
                report(False, what, "listed as a known disagreement but now agrees: remove it from KNOWN")
            else:
                counts["xfail"] += 1
                print("XFAIL %s (%s)" % (what, KNOWN[case.name]))
            continue
        detail = ""
        if not agree:
            detail = "python: %s | C: %s" % (py_detail or py_hash, c_detail or c_hash)
        elif not as_expected:
            detail = "python: %s" % py_detail
        report(agree and as_expected, what, detail)
    t2 = time.time()

    # 3. the command line's exit codes, one stream per outcome
    for cls, (path, dirs, max_memory) in sorted(by_outcome.items()):
        cmd = [sys.executable, os.path.join(HERE, "waipy.py"), "decode", path, "--sha256", "-q",
               "--model-path", ":".join(dirs) or empty]
        if max_memory:
            cmd += ["--max-memory", str(max_memory)]
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, WAI_MODEL_PATH=""))
        got = "ok" if p.returncode == 0 else CLASS_BY_EXIT.get(p.returncode, "rc %d" % p.returncode)
        report(got == cls, "waipy.py exit code %d for %s" % (p.returncode, cls), p.stderr.strip() if got != cls else "")
    p = subprocess.run([sys.executable, os.path.join(HERE, "waipy.py"), "decode", os.path.join(work, "nope.wai"),
                        "--sha256"], capture_output=True, text=True)
    report(p.returncode == 3, "waipy.py exit code %d for a missing file (I/O: 3)" % p.returncode)
    p = subprocess.run([sys.executable, os.path.join(HERE, "waipy.py"), "decode"], capture_output=True, text=True)
    report(p.returncode == 2, "waipy.py exit code %d for a usage error (2)" % p.returncode)

    print("pydec: %d vectors, %d samples (%.1f s); %d crafted cases, %d of them damaged or refused, "
          "%d known disagreements (%.1f s); total %.1f s"
          % (n_vec, n_smp, t1 - t0, len(cases), n_bad, counts["xfail"], t2 - t1, time.time() - t0))
    print("pydec: %d passed, %d failed" % (counts["pass"], counts["fail"]))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
