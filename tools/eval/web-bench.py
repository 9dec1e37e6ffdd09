#!/usr/bin/python3
"""Decode time in the browser against the native library (issue 26; docs/research/web.md).

Interleaved rounds over the same inputs, on this machine, in one run:
  chromium  the viewer page in headless Chromium (`--dump-dom`), its "ms": the time spent in
            libwai (WebAssembly, SIMD128 set, one thread), and the page load's wall time;
  native    `wai decode -o /dev/null` with the automatic kernel set, 1 and 2 threads (wall).
Each decode's hash is checked against `wai decode --sha256`. Prints a Markdown table of the
medians with min-max, and the sizes of what tools/build-web.sh ships.

  tools/eval/web-bench.py [--rounds N] [--build BUILD]    (BUILD: the native build, default build)
"""
import argparse
import hashlib
import html
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--build", default=os.path.join(ROOT, "build"))
a = ap.parse_args()
wai = os.path.join(a.build, "tools", "wai")
env = dict(os.environ, WAI_MODEL_PATH=os.path.join(ROOT, "models") + ":" +
           os.path.join(ROOT, "vectors", "corpus"))
tmp = tempfile.mkdtemp()
site = os.path.join(tmp, "site")
subprocess.run([os.path.join(ROOT, "tools", "build-web.sh"), site], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
shutil.copy(os.path.join(ROOT, "vectors", "corpus", "wai-conformance-1.whm"),
            os.path.join(site, "models", hashlib.sha256(open(os.path.join(
                ROOT, "vectors", "corpus", "wai-conformance-1.whm"), "rb").read()).hexdigest() + ".whm"))

# inputs: the 600x400 sample; a 768x512 photo at quality 5: the top left of the corpus's
# c02-moray (1024x768) decoded, cropped and coded here with the shipped q5 model (the float
# encoder: this build's bytes; the repository has no 768x512 picture of its own); the
# 1920x1080 corpus picture
from PIL import Image  # noqa: E402

inputs = [("coffee-q5 (600x400, sample)", os.path.join(ROOT, "samples", "coffee-q5.wai"))]
moray = os.path.join(tmp, "moray.png")
subprocess.run([wai, "decode", os.path.join(ROOT, "vectors", "corpus", "c02-moray-1024x768.wai"),
                "-o", moray], check=True, env=env, stdout=subprocess.DEVNULL)
Image.open(moray).crop((0, 0, 768, 512)).save(moray)
out = os.path.join(site, "moray-768x512-q5.wai")
subprocess.run([wai, "encode", moray, "-o", out, "--quality", "5", "--model-dir",
                os.path.join(ROOT, "models")], check=True, env=env, stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL)
inputs.append(("moray crop q5 (768x512)", out))
inputs.append(("c01-seeding (1920x1080, corpus)", os.path.join(ROOT, "vectors", "corpus",
                                                               "c01-seeding-1920x1080.wai")))
for _, p in inputs:
    if not p.startswith(site):
        shutil.copy(p, site)

want = {}
for label, p in inputs:
    r = subprocess.run([wai, "decode", p, "--sha256", "-o", "/dev/null"], env=env,
                       capture_output=True, text=True, check=True)
    want[label] = re.search(r"[0-9a-f]{64}", r.stdout + r.stderr).group(0)

server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1",
                           "--directory", site, "0"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
port = int(re.search(r"port (\d+)", server.stdout.readline()).group(1))


def page(p):
    t = time.perf_counter()
    r = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--user-data-dir=" + os.path.join(tmp, "profile"), "--dump-dom",
                        "http://127.0.0.1:%d/index.html?src=%s" % (port, os.path.basename(p))],
                       capture_output=True, text=True, timeout=600)
    wall = (time.perf_counter() - t) * 1000
    m = re.search(r'<pre id="wai-result"[^>]*>(.*?)</pre>', r.stdout, re.S)
    j = json.loads(html.unescape(m.group(1)))
    return j, wall


def native(p, threads):
    t = time.perf_counter()
    subprocess.run([wai, "decode", p, "-o", "/dev/null", "--threads", str(threads)], env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000


res = {(label, k): [] for label, _ in inputs for k in ("wasm", "page", "n1", "n2")}
bad = []
for _ in range(a.rounds):
    for label, p in inputs:
        j, wall = page(p)
        if j.get("sha256") != want[label]:
            bad.append("%s: page gave %s, native %s" % (label, j, want[label]))
        res[(label, "wasm")].append(j.get("ms", 0))
        res[(label, "page")].append(wall)
        res[(label, "n1")].append(native(p, 1))
        res[(label, "n2")].append(native(p, 2))
server.terminate()


def fmt(v):
    return "%.0f (%.0f-%.0f)" % (statistics.median(v), min(v), max(v))


print("| picture | Chromium: in libwai (wasm, 1 thread) | Chromium: page load | native, 1 thread | native, 2 threads | wasm / native 1 thread |")
print("|---|---|---|---|---|---|")
for label, _ in inputs:
    w, n1 = res[(label, "wasm")], res[(label, "n1")]
    print("| %s | %s | %s | %s | %s | %.1fx |" % (label, fmt(w), fmt(res[(label, "page")]), fmt(n1),
                                               fmt(res[(label, "n2")]),
                                               statistics.median(w) / statistics.median(n1)))
print()
print("milliseconds, median (min-max) of %d interleaved rounds; hashes %s" %
      (a.rounds, "all equal to `wai decode --sha256`" if not bad else "DIFFER: " + "; ".join(bad)))
print()
sizes = [(f, os.path.getsize(os.path.join(site, f))) for f in
         ("wai-core.wasm", "wai-core.js", "wai-worker.js", "wai.mjs", "viewer.js", "viewer.css", "index.html")]
print("| shipped file | bytes |")
print("|---|---|")
for f, n in sizes:
    print("| `%s` | %d |" % (f, n))
print("| all but the models | %d |" % sum(n for _, n in sizes))
shutil.rmtree(tmp)
sys.exit(1 if bad else 0)
