#!/usr/bin/python3
"""Two builds' encoders on the same pictures: bytes and PSNR of each stream, for a change that
makes the encoder code otherwise (docs/research/camera-size.md, session 30: the analysis's
operands of 12 significant bits). Each stream is decoded by its own build; PSNR over RGB8, peak
255, all three channels.

    /usr/bin/python3 tools/eval/encoder-ab.py --base BASE/tools/wai --new build/tools/wai \
        --models models --qualities 1,3,5,7,10,13 PICTURE.png... > log

Prints one line per picture and quality and, per quality, the total bytes' change and the
mean PSNR change (new minus base)."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--base', required=True)
    ap.add_argument('--new', required=True)
    ap.add_argument('--models', required=True)
    ap.add_argument('--qualities', default='1,5,7')
    ap.add_argument('pictures', nargs='+')
    a = ap.parse_args()
    env = dict(os.environ, WAI_MODEL_PATH=os.path.abspath(a.models))
    quals = a.qualities.split(',')
    builds = [('base', a.base), ('new', a.new)]
    tot = {}
    with tempfile.TemporaryDirectory() as tmp:
        for p in a.pictures:
            ref = np.asarray(Image.open(p).convert('RGB')).astype(np.float64)
            for q in quals:
                row = []
                for b, exe in builds:
                    s, d = os.path.join(tmp, b + '.wai'), os.path.join(tmp, b + '.png')
                    subprocess.run([exe, 'encode', p, '-o', s, '--quality', q, '--model-dir',
                                    a.models], check=True, env=env, capture_output=True)
                    subprocess.run([exe, 'decode', s, '-o', d], check=True, env=env,
                                   capture_output=True)
                    dec = np.asarray(Image.open(d).convert('RGB')).astype(np.float64)
                    psnr = 10 * np.log10(255 ** 2 / ((dec - ref) ** 2).mean())
                    n = os.path.getsize(s)
                    row.append((n, psnr))
                    t = tot.setdefault((b, q), [0, 0.0])
                    t[0] += n
                    t[1] += psnr
                same = open(os.path.join(tmp, 'base.wai'), 'rb').read() == \
                    open(os.path.join(tmp, 'new.wai'), 'rb').read()
                print('%s q%s: base %d B %.4f dB | new %d B %.4f dB | bytes %+.4f%% dPSNR %+.4f%s'
                      % (os.path.basename(p), q, row[0][0], row[0][1], row[1][0], row[1][1],
                         100.0 * (row[1][0] / row[0][0] - 1), row[1][1] - row[0][1],
                         ' same stream' if same else ''), flush=True)
    for q in quals:
        b, n = tot[('base', q)], tot[('new', q)]
        print('q%s total: bytes %+.4f%%, mean dPSNR %+.4f dB'
              % (q, 100.0 * (n[0] / b[0] - 1), (n[1] - b[1]) / len(a.pictures)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
