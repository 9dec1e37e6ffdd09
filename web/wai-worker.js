/* WAI decoding in a Web Worker (issue 26): libwai compiled to WebAssembly (wai-core.js and
 * wai-core.wasm, built from the library's own sources by tools/build-web.sh) decodes here, so
 * the page stays responsive. web/wai.mjs starts this worker and talks to it; nothing else
 * should. The pictures are libwai's, unchanged: this file only moves bytes.
 *
 * Messages in:  {id, type: 'decode', data: ArrayBuffer, modelBase: URL string, kernels: int}
 * Messages out: {id, type: 'info', width, height, fpsNum, fpsDen, frameCount, models}
 *               {id, type: 'frame', index, width, height, pts, rgba: ArrayBuffer (transferred)}
 *               {id, type: 'done', frames, sha256, ms, errors: [string]}
 *               {id, type: 'fail', error: string}   (nothing could be decoded at all) */
'use strict';

importScripts('wai-core.js');

const CHUNK = 1 << 20; // wai.h: sends of at most 1 MiB, each drained, are never refused
const MAX_MODELS = 16;
let corePromise = null;

function core() {
  if (!corePromise) {
    corePromise = createWaiCore({
      locateFile: (path) => new URL(path, self.location.href).href,
      print: () => {},
      printErr: (text) => console.warn('libwai:', text),
    });
  }
  return corePromise;
}

async function fetchModel(base, sha) {
  const url = new URL(sha + '.whm', base).href;
  try {
    const res = await fetch(url);
    if (!res.ok) return { url, status: 'HTTP ' + res.status };
    return { url, bytes: new Uint8Array(await res.arrayBuffer()) };
  } catch (err) {
    return { url, status: String(err && err.message || err) };
  }
}

async function decode(msg) {
  const M = await core();
  const id = msg.id;
  const bytes = new Uint8Array(msg.data);
  const errors = [];
  const heap = () => M.HEAPU8; // re-read after every call: memory growth replaces the buffer

  const stream = M._malloc(Math.max(bytes.length, 1));
  const info = M._malloc(8 * 4);
  const list = M._malloc(65 * MAX_MODELS + 1);
  let dec = 0;
  try {
    if (!stream || !info || !list) throw new Error('out of memory for a ' + bytes.length + '-byte stream');
    heap().set(bytes, stream);

    // The models the stream names without embedding them, and what the page shows at once.
    const nModels = M._waiweb_scan(stream, bytes.length, info, list, MAX_MODELS);
    const w = new Uint32Array(heap().buffer, info, 8).slice();
    const shas = M.UTF8ToString(list).split('\n').filter(Boolean);
    self.postMessage({ id, type: 'info', width: w[0], height: w[1], fpsNum: w[2], fpsDen: w[3],
      frameCount: w[4], headers: w[5], frameUnits: w[6], models: shas });

    dec = M._waiweb_open(msg.kernels | 0);
    if (!dec) throw new Error(M.UTF8ToString(M._waiweb_open_error()));

    // Fetched by SHA-256 name; one that cannot be fetched is left to the decoder to report
    // (its message names the hash), with the fetch's reason added.
    const missing = [];
    for (const sha of shas.slice(0, nModels)) {
      const got = await fetchModel(msg.modelBase, sha);
      if (!got.bytes) {
        missing.push(`${got.url}: ${got.status}`);
        continue;
      }
      const p = M._malloc(got.bytes.length);
      if (!p) throw new Error('out of memory for model ' + sha);
      heap().set(got.bytes, p);
      const r = M._waiweb_add_model(dec, p, got.bytes.length);
      M._free(p);
      if (r < 0) missing.push(`${got.url}: ${M.UTF8ToString(M._waiweb_strerror(r))}`);
    }
    const why = () => M.UTF8ToString(M._waiweb_error(dec)) +
      (missing.length ? ` (model fetch: ${missing.join('; ')})` : '');

    let frames = 0;
    let ms = 0; // time inside libwai only: not the posting of frames
    const drain = () => {
      for (;;) {
        let t = performance.now();
        const r = M._waiweb_next(dec);
        if (r === 1) { ms += performance.now() - t; return; }
        if (r < 0) { ms += performance.now() - t; errors.push(why()); continue; }
        const pw = M._waiweb_pic_width(dec), ph = M._waiweb_pic_height(dec);
        const p = M._waiweb_pic_rgba(dec);
        ms += performance.now() - t;
        if (!p) { errors.push('out of memory for a ' + pw + 'x' + ph + ' picture'); continue; }
        const rgba = heap().slice(p, p + pw * ph * 4).buffer;
        frames++;
        self.postMessage({ id, type: 'frame', index: M._waiweb_pic_index(dec), width: pw,
          height: ph, pts: M._waiweb_pic_ms(dec), rgba }, [rgba]);
      }
    };
    for (let off = 0; off < bytes.length || off === 0; off += CHUNK) {
      const n = Math.min(CHUNK, bytes.length - off);
      let t = performance.now();
      let r = M._waiweb_send(dec, stream + off, n);
      ms += performance.now() - t;
      if (r === 1) { // cannot happen with drained 1 MiB sends; drain and send once more
        drain();
        t = performance.now();
        r = M._waiweb_send(dec, stream + off, n);
        ms += performance.now() - t;
      }
      if (r < 0) errors.push(why());
      drain();
      if (n === 0) break;
    }
    const t = performance.now();
    M._waiweb_send_eos(dec);
    ms += performance.now() - t;
    drain();
    if (!frames && !errors.length) errors.push('no picture in the stream' + (missing.length ? ` (model fetch: ${missing.join('; ')})` : ''));
    self.postMessage({ id, type: 'done', frames, ms, errors,
      sha256: M.UTF8ToString(M._waiweb_hash_hex(dec)) });
  } finally {
    if (dec) M._waiweb_close(dec);
    M._free(list);
    M._free(info);
    M._free(stream);
  }
}

self.onmessage = (e) => {
  const msg = e.data;
  if (!msg || msg.type !== 'decode') return;
  decode(msg).catch((err) => {
    corePromise = null; // an abort leaves the instance unusable: the next decode starts afresh
    self.postMessage({ id: msg.id, type: 'fail', error: String(err && err.message || err) });
  });
};
