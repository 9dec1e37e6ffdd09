// The WebAssembly module under Node (issue 26): every stream of a manifest decodes to its
// pinned hash and frame count under every kernel set of the wasm build (reference, c,
// simd128, auto), through the same entry points the browser's worker calls (web/src/wai-web.c).
//
//   node --no-experimental-fetch tests/web-decode.js WAI_CORE_JS MANIFEST [--kernels LIST]
//        [--models DIR]...
// MANIFEST lines: <file> <sha256 of RGB8> <frames> <W>x<H> (files relative to the manifest).
// Models the streams name are looked up by SHA-256 among the .whm files of the --models dirs.
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const KERNELS = { auto: 0, reference: 1, c: 2, simd128: 7 };
const args = process.argv.slice(2);
const coreJs = path.resolve(args.shift());
const manifest = path.resolve(args.shift());
let kernels = ['reference', 'c', 'simd128', 'auto'];
const modelDirs = [];
while (args.length) {
  const a = args.shift();
  if (a === '--kernels') kernels = args.shift().split(',');
  else if (a === '--models') modelDirs.push(args.shift());
  else throw new Error('unknown argument ' + a);
}

const models = new Map();
for (const d of modelDirs) {
  if (!fs.existsSync(d)) continue;
  for (const f of fs.readdirSync(d)) {
    if (!f.endsWith('.whm')) continue;
    const b = fs.readFileSync(path.join(d, f));
    models.set(crypto.createHash('sha256').update(b).digest('hex'), b);
  }
}

function decode(M, bytes, kernel) {
  const stream = M._malloc(Math.max(bytes.length, 1));
  const info = M._malloc(32);
  const list = M._malloc(65 * 16 + 1);
  M.HEAPU8.set(bytes, stream);
  const n = M._waiweb_scan(stream, bytes.length, info, list, 16);
  const dec = M._waiweb_open(KERNELS[kernel]);
  if (!dec) throw new Error(M.UTF8ToString(M._waiweb_open_error()));
  for (const sha of M.UTF8ToString(list).split('\n').filter(Boolean).slice(0, n)) {
    const b = models.get(sha);
    if (!b) continue; // the decoder reports it
    const p = M._malloc(b.length);
    M.HEAPU8.set(b, p);
    M._waiweb_add_model(dec, p, b.length);
    M._free(p);
  }
  const errors = [];
  let frames = 0;
  const drain = () => {
    for (;;) {
      const r = M._waiweb_next(dec);
      if (r === 1) return;
      if (r < 0) errors.push(M.UTF8ToString(M._waiweb_error(dec)));
      else frames++;
    }
  };
  for (let off = 0; off < bytes.length; off += 1 << 20) {
    const r = M._waiweb_send(dec, stream + off, Math.min(1 << 20, bytes.length - off));
    if (r < 0) errors.push(M.UTF8ToString(M._waiweb_error(dec)));
    drain();
  }
  M._waiweb_send_eos(dec);
  drain();
  const sha = M.UTF8ToString(M._waiweb_hash_hex(dec));
  M._waiweb_close(dec);
  M._free(list);
  M._free(info);
  M._free(stream);
  return { sha, frames, errors };
}

require(coreJs)({ print: () => {}, printErr: () => {} }).then((M) => {
  let pass = 0, fail = 0;
  const dir = path.dirname(manifest);
  for (const line of fs.readFileSync(manifest, 'utf8').split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue;
    const [file, sha, frames] = line.trim().split(/\s+/);
    const bytes = fs.readFileSync(path.join(dir, file));
    for (const k of kernels) {
      const t = Date.now();
      const r = decode(M, bytes, k);
      const ok = r.sha === sha && r.frames === Number(frames) && !r.errors.length;
      ok ? pass++ : fail++;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${file} ${k} ${r.frames} frame(s) ${Date.now() - t} ms` +
        (ok ? '' : ` sha ${r.sha} want ${sha}; ${r.errors.join('; ')}`));
    }
  }
  console.log(`web-decode: ${pass} passed, ${fail} failed`);
  process.exit(fail || !pass ? 1 : 0);
});
