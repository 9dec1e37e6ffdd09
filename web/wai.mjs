/**
 * WAI in the browser (issue 26): decode a .wai stream to ImageData frames with libwai compiled
 * to WebAssembly, in a Web Worker (wai-worker.js) so the page stays responsive. The pictures
 * are libwai's integers: the same RGB bytes as every native decoder.
 *
 *   import { WaiDecoder } from './wai.mjs';
 *   const dec = new WaiDecoder();                       // models from ./models/<sha256>.whm
 *   const r = await dec.decode(await (await fetch('a.wai')).arrayBuffer());
 *   ctx.putImageData(r.frames[0].image, 0, 0);
 *   // r: {width, height, fps, frames: [{index, width, height, pts, image}], sha256, ms, errors}
 *
 * A stream that gives no picture rejects with a WaiError carrying libwai's message. One that
 * gives pictures and then fails resolves, with the messages in r.errors: what was decoded
 * stays valid. Models are fetched by their SHA-256 name from `modelBase`; a model embedded in
 * the stream needs nothing.
 */

/** The kernel sets of this build (WaiKernels values); all give the same pictures. */
export const KERNELS = Object.freeze({ auto: 0, reference: 1, c: 2, simd128: 7 });

export class WaiError extends Error {
  constructor(message, errors = [message]) {
    super(message);
    this.name = 'WaiError';
    this.errors = errors;
  }
}

export class WaiDecoder {
  /**
   * @param {object} [opts]
   * @param {string|URL} [opts.modelBase] where models/<sha256>.whm live (default: ./models/
   *   beside this module)
   * @param {string} [opts.kernels] 'auto' (default), 'reference', 'c' or 'simd128'
   */
  constructor(opts = {}) {
    this.modelBase = new URL(opts.modelBase || 'models/', new URL('.', import.meta.url)).href;
    const k = opts.kernels || 'auto';
    if (!(k in KERNELS)) throw new WaiError(`unknown kernel set '${k}' (${Object.keys(KERNELS).join(', ')})`);
    this.kernels = KERNELS[k];
    this.worker = null;
    this.nextId = 1;
    this.pending = new Map();
  }

  startWorker() {
    if (this.worker) return;
    this.worker = new Worker(new URL('wai-worker.js', import.meta.url));
    this.worker.onmessage = (e) => {
      const job = this.pending.get(e.data.id);
      if (job) job.handle(e.data);
    };
    this.worker.onerror = (e) => {
      // the worker itself failed (e.g. its script or the .wasm did not load): fail every job
      const msg = 'the decoder worker failed: ' + (e.message || 'could not load wai-worker.js / wai-core.wasm');
      for (const job of this.pending.values()) job.fail(msg);
      this.pending.clear();
      this.worker.terminate();
      this.worker = null;
    };
  }

  /**
   * Decode a whole stream.
   * @param {ArrayBuffer|Uint8Array} data the .wai bytes (copied; the caller keeps its buffer)
   * @param {object} [hooks] onInfo(info) once the headers are read; onFrame(frame) per picture
   * @returns {Promise<object>} see the module comment
   */
  decode(data, hooks = {}) {
    this.startWorker();
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    const copy = bytes.slice().buffer;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const result = { width: 0, height: 0, fps: 0, frameCount: 0, frames: [], sha256: '', ms: 0,
        errors: [], bytes: bytes.length };
      const job = {
        fail: (msg) => reject(new WaiError(msg)),
        handle: (m) => {
          if (m.type === 'info') {
            Object.assign(result, { width: m.width, height: m.height, frameCount: m.frameCount,
              fps: m.fpsDen ? m.fpsNum / m.fpsDen : 0, models: m.models });
            if (hooks.onInfo) hooks.onInfo(result);
          } else if (m.type === 'frame') {
            const frame = { index: m.index, width: m.width, height: m.height, pts: m.pts,
              image: new ImageData(new Uint8ClampedArray(m.rgba), m.width, m.height) };
            result.frames.push(frame);
            if (hooks.onFrame) hooks.onFrame(frame);
          } else if (m.type === 'done' || m.type === 'fail') {
            this.pending.delete(id);
            if (m.type === 'fail') {
              reject(new WaiError(m.error));
              return;
            }
            Object.assign(result, { sha256: m.sha256, ms: m.ms, errors: m.errors });
            if (!m.frames) reject(new WaiError(m.errors[0] || 'no picture in the stream', m.errors));
            else resolve(result);
          }
        },
      };
      this.pending.set(id, job);
      this.worker.postMessage({ id, type: 'decode', data: copy, modelBase: this.modelBase,
        kernels: this.kernels }, [copy]);
    });
  }

  /** Stop the worker (pending decodes reject); a later decode() starts a new one. */
  terminate() {
    if (!this.worker) return;
    this.worker.terminate();
    this.worker = null;
    for (const job of this.pending.values()) job.fail('decoder terminated');
    this.pending.clear();
  }
}

/** Fetch a URL and decode it (see WaiDecoder.decode); opts as the constructor's. */
export async function decodeUrl(url, opts = {}, hooks = {}) {
  const res = await fetch(url);
  if (!res.ok) throw new WaiError(`${url}: HTTP ${res.status}`);
  const dec = new WaiDecoder(opts);
  try {
    return await dec.decode(await res.arrayBuffer(), hooks);
  } finally {
    dec.terminate();
  }
}
