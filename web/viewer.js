/* WAI viewer (issue 26): the page that shows what web/wai.mjs decodes.
 *
 *   index.html                       empty state: drop a .wai file or choose one
 *   index.html?src=a.wai             decode a.wai (fetched relative to the page) at load
 *   index.html?src=a.wai&compare=a.png   ... and show a.png beside it (side by side)
 *   &kernels=auto|reference|c|simd128    the kernel set given to WaiDecoder
 *
 * Test interface: once a decode is over, <pre id="wai-result"> holds
 *   {"sha256", "width", "height", "frames", "ms"}   or   {"error": "<libwai's message>"}
 * (a partial decode, pictures and then an error, counts as an error) and document.title
 * becomes "WAI viewer — done" or "WAI viewer — error". */

import { WaiDecoder, WaiError, KERNELS } from './wai.mjs';

const FALLBACK_FPS = 25;
const MAX_UPSCALE = 16;
const IMAGE_NAME = /\.(png|jpe?g|webp|gif|avif|bmp)$/i;

const $ = (id) => document.getElementById(id);
const ui = {
  main: $('main'), dropzone: $('dropzone'), dropzoneCompare: $('dropzone-compare'),
  viewer: $('viewer'), info: $('info'), banners: $('banners'), overlay: $('drop-overlay'),
  openBtn: $('open-btn'), chooseBtn: $('choose-btn'), openInput: $('open-input'),
  compareBtn: $('compare-btn'), compareInput: $('compare-input'),
  modeGroup: $('mode-group'), status: $('status'), zoomReadout: $('zoom-readout'),
  stage: $('stage'), panes: $('panes'), paneCmp: $('pane-cmp'), waiBox: $('wai-box'),
  waiCanvas: $('wai-canvas'), splitCanvas: $('split-canvas'), cmpCanvas: $('cmp-canvas'),
  divider: $('divider'), tagLeft: $('tag-left'), tagRight: $('tag-right'),
  capWai: $('cap-wai'), capCmp: $('cap-cmp'), busy: $('busy'), busyText: $('busy-text'),
  transport: $('transport'), prevBtn: $('prev-btn'), playBtn: $('play-btn'), nextBtn: $('next-btn'),
  slider: $('frame-slider'), counter: $('frame-counter'),
  waiFacts: $('wai-facts'), hashBlock: $('hash-block'), hashValue: $('hash-value'),
  copyHash: $('copy-hash'), cmpSection: $('cmp-section'), cmpFacts: $('cmp-facts'),
  cmpNote: $('cmp-note'), result: $('wai-result'),
};

const params = new URLSearchParams(location.search);
const kernels = params.get('kernels') || 'auto';

const state = {
  gen: 0,            // bumped by every WAI open: late answers of an older one are dropped
  cgen: 0,           // the same for the comparison image
  decoder: null,
  inFlight: false,
  wai: null,         // {name, bytes, width, height, fps, frameCount, models, frames, done, ms, sha256, errors}
  cmp: null,         // {name, bytes, kind, width, height, bitmap}
  frame: 0,
  playing: false,
  raf: 0,
  mode: 'single',    // 'single' | 'side' | 'split'
  zoom: 'fit',       // 'fit' | '100'
  scale: 1,
  split: 0.5,
};

// --- small helpers -------------------------------------------------------------------------

const kib = (bytes) => (bytes / 1024).toFixed(1) + ' KiB';
const grouped = (n) => n.toLocaleString('en-US');
const fmtFps = (fps) => String(+fps.toFixed(3));
const fmtMs = (ms) => ms.toFixed(1) + ' ms';

function baseName(s) {
  let name = String(s).split(/[?#]/)[0].split('/').filter(Boolean).pop() || String(s);
  try { name = decodeURIComponent(name); } catch { /* keep it as written */ }
  return name;
}

function errorMessage(err) {
  if (err instanceof WaiError) return err.message;
  if (err && err.message) return err.message;
  return String(err);
}

function node(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function facts(dl, rows) {
  dl.replaceChildren();
  for (const [label, value, sub, cls] of rows) {
    const dd = node('dd', cls ? { class: cls } : {}, value);
    if (sub) dd.append(node('div', { class: 'sub', text: sub }));
    dl.append(node('dt', { text: label }), dd);
  }
}

function imageKind(name, type) {
  const t = (type || '').toLowerCase();
  if (t === 'image/png' || /\.png$/i.test(name)) return 'PNG';
  if (t === 'image/jpeg' || /\.jpe?g$/i.test(name)) return 'JPEG';
  if (t === 'image/webp' || /\.webp$/i.test(name)) return 'WebP';
  if (t === 'image/gif' || /\.gif$/i.test(name)) return 'GIF';
  if (t === 'image/avif' || /\.avif$/i.test(name)) return 'AVIF';
  const m = /\.([a-z0-9]+)$/i.exec(name);
  return m ? m[1].toUpperCase() : 'Image';
}

const isImageFile = (file) => IMAGE_NAME.test(file.name) || /^image\//.test(file.type);

// --- banners -------------------------------------------------------------------------------

const banners = new Map(); // key ('wai' | 'cmp') -> element

function setBanner(key, kind, title, message) {
  const old = banners.get(key);
  if (old) old.remove();
  banners.delete(key);
  if (!kind) return;
  const close = node('button', { type: 'button', class: 'banner-close', 'aria-label': 'Dismiss' }, '\u00d7');
  const b = node('div', { class: 'banner ' + kind, role: kind === 'error' ? 'alert' : 'status' },
    node('div', { class: 'banner-text' },
      node('span', { class: 'banner-title', text: title }),
      message ? node('span', { class: 'banner-msg', text: message }) : null),
    close);
  close.addEventListener('click', () => setBanner(key, null));
  banners.set(key, b);
  ui.banners.append(b);
  requestLayout();
}

// --- the test interface ----------------------------------------------------------------------

function publish(obj) {
  ui.result.textContent = JSON.stringify(obj);
  document.title = 'error' in obj ? 'WAI viewer \u2014 error' : 'WAI viewer \u2014 done';
}

// --- page states ---------------------------------------------------------------------------

function showEmpty() {
  ui.main.classList.add('is-empty');
  ui.dropzone.hidden = false;
  ui.viewer.hidden = true;
  ui.info.hidden = true;
  renderDropzoneCompare();
}

function showViewer() {
  ui.main.classList.remove('is-empty');
  ui.dropzone.hidden = true;
  ui.viewer.hidden = false;
  ui.info.hidden = false;
}

function renderDropzoneCompare() {
  const c = state.cmp;
  ui.dropzoneCompare.hidden = !c;
  if (c) ui.dropzoneCompare.textContent = `Comparison image ready: ${c.name} (${c.width} \u00d7 ${c.height}, ${kib(c.bytes)}).`;
}

// --- opening a WAI stream ------------------------------------------------------------------

function decoder() {
  if (!state.decoder) state.decoder = new WaiDecoder({ kernels });
  return state.decoder;
}

/** Decode a stream; getBytes() gives its ArrayBuffer (a fetch or a File). */
async function openWai(name, getBytes) {
  const gen = ++state.gen;
  if (state.inFlight && state.decoder) state.decoder.terminate(); // its promise is ignored below
  state.inFlight = false;
  pause();
  setBanner('wai', null);
  ui.result.textContent = '';
  document.title = 'WAI viewer';

  const w = { name, bytes: 0, width: 0, height: 0, fps: 0, frameCount: 0, models: [], frames: [],
    done: false, ms: 0, sha256: '', errors: [] };
  state.wai = w;
  state.frame = 0;
  ui.waiCanvas.width = 0;
  ui.waiCanvas.height = 0;
  showViewer();
  setBusy(`Opening ${name}\u2026`);
  renderAll();

  const fail = (msg) => {
    if (gen !== state.gen) return;
    state.inFlight = false;
    state.wai = null;
    setBusy(null);
    publish({ error: msg });
    setBanner('wai', 'error', `Could not decode ${name}:`, msg);
    showEmpty();
  };

  let data;
  try {
    data = await getBytes();
  } catch (err) {
    fail(errorMessage(err));
    return;
  }
  if (gen !== state.gen) return;
  w.bytes = data.byteLength;

  let dec;
  try {
    dec = decoder();
  } catch (err) {
    fail(errorMessage(err));
    return;
  }
  setBusy(`Decoding ${name}\u2026`);
  renderInfo();

  let result;
  state.inFlight = true;
  try {
    result = await dec.decode(data, {
      onInfo(info) {
        if (gen !== state.gen) return;
        Object.assign(w, { width: info.width, height: info.height, fps: info.fps,
          frameCount: info.frameCount, models: info.models || [] });
        if (info.width && info.height && !w.frames.length) {
          ui.waiCanvas.width = info.width;
          ui.waiCanvas.height = info.height;
          drawSplit();
        }
        renderAll();
      },
      onFrame(frame) {
        if (gen !== state.gen) return;
        w.frames.push(frame);
        if (w.frames.length === 1) {
          setBusy(null);
          showFrame(0);
        }
        renderTransport();
        renderInfo();
      },
    });
  } catch (err) {
    fail(errorMessage(err));
    return;
  }
  if (gen !== state.gen) return;
  state.inFlight = false;

  Object.assign(w, { done: true, ms: result.ms, sha256: result.sha256, errors: result.errors || [],
    frames: result.frames, width: result.width || w.frames[0].width,
    height: result.height || w.frames[0].height, fps: result.fps });
  setBusy(null);
  if (w.errors.length) {
    publish({ error: w.errors[0] });
    const of = w.frameCount ? ` of ${w.frameCount}` : '';
    setBanner('wai', 'warn', `Partial decode: ${w.frames.length}${of} frame${w.frames.length === 1 ? '' : 's'} shown.`,
      w.errors[0] + (w.errors.length > 1 ? ` (and ${w.errors.length - 1} more)` : ''));
  } else {
    publish({ sha256: result.sha256, width: result.width, height: result.height,
      frames: result.frames.length, ms: Math.round(result.ms * 10) / 10 });
  }
  if (state.frame >= w.frames.length) showFrame(0);
  renderAll();
}

/** fetch(src) relative to the page; failures as Errors that name src. */
async function fetchOk(src) {
  let res;
  try {
    res = await fetch(new URL(src, location.href).href);
  } catch (err) {
    throw new Error(`${src}: ${errorMessage(err)}`);
  }
  if (!res.ok) throw new Error(`${src}: HTTP ${res.status}`);
  return res;
}

function openWaiUrl(src) {
  return openWai(baseName(src), async () => (await fetchOk(src)).arrayBuffer());
}

function openWaiFile(file) {
  openWai(file.name, () => file.arrayBuffer());
}

// --- the comparison image ------------------------------------------------------------------

async function openCompare(name, getBlob) {
  const cgen = ++state.cgen;
  setBanner('cmp', null);
  try {
    const blob = await getBlob();
    let bitmap;
    try {
      // the file's own pixels: no colour-space or gamma conversion, as the WAI side has none
      bitmap = await createImageBitmap(blob, { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
    } catch {
      bitmap = await createImageBitmap(blob);
    }
    if (cgen !== state.cgen) return;
    if (state.cmp && state.cmp.bitmap) state.cmp.bitmap.close();
    state.cmp = { name, bytes: blob.size, kind: imageKind(name, blob.type), width: bitmap.width,
      height: bitmap.height, bitmap };
  } catch (err) {
    if (cgen !== state.cgen) return;
    const msg = err && err.name === 'InvalidStateError' ? 'not a picture this browser can read' : errorMessage(err);
    setBanner('cmp', 'error', `Could not open the comparison image ${name}:`, msg);
    return;
  }
  const c = state.cmp;
  ui.cmpCanvas.width = c.width;
  ui.cmpCanvas.height = c.height;
  const ctx = ui.cmpCanvas.getContext('2d');
  ctx.clearRect(0, 0, c.width, c.height);
  ctx.drawImage(c.bitmap, 0, 0);
  drawSplit();
  if (state.mode === 'single') state.mode = 'side';
  renderDropzoneCompare();
  renderAll();
}

function openCompareUrl(src) {
  return openCompare(baseName(src), async () => (await fetchOk(src)).blob());
}

function openCompareFile(file) {
  openCompare(file.name, async () => file);
}

/** The comparison image at the WAI picture's width (its own height kept in proportion). */
function drawSplit() {
  const c = state.cmp;
  const W = ui.waiCanvas.width;
  if (!c || !W) return;
  const H = Math.max(1, Math.round(W * c.height / c.width));
  ui.splitCanvas.width = W;
  ui.splitCanvas.height = H;
  const ctx = ui.splitCanvas.getContext('2d');
  ctx.imageSmoothingEnabled = W !== c.width;
  ctx.imageSmoothingQuality = 'high';
  ctx.clearRect(0, 0, W, H);
  ctx.drawImage(c.bitmap, 0, 0, W, H);
}

// --- frames and playback -------------------------------------------------------------------

const frameCount = () => (state.wai ? state.wai.frames.length : 0);
const isSequence = () => !!state.wai && (state.wai.frames.length > 1 || state.wai.frameCount > 1);

function showFrame(i) {
  const w = state.wai;
  const f = w && w.frames[i];
  if (!f) return;
  const c = ui.waiCanvas;
  if (c.width !== f.width || c.height !== f.height) {
    c.width = f.width;
    c.height = f.height;
    drawSplit();
    requestLayout();
  }
  c.getContext('2d').putImageData(f.image, 0, 0);
  state.frame = i;
  renderTransport();
}

function step(d) {
  const n = frameCount();
  if (n < 2) return;
  showFrame((state.frame + d + n) % n);
}

function play() {
  if (frameCount() < 2 || state.playing) return;
  state.playing = true;
  const interval = 1000 / ((state.wai && state.wai.fps) || FALLBACK_FPS);
  let last = -1; // rAF's clock, from its first call (its times may trail performance.now())
  let acc = 0;
  const tick = (t) => {
    if (!state.playing) return;
    if (last >= 0) acc += Math.max(0, t - last);
    last = t;
    if (acc > interval * 4) acc = interval; // a hidden tab or a slow machine: do not race
    while (acc >= interval) {
      acc -= interval;
      step(1);
    }
    state.raf = requestAnimationFrame(tick);
  };
  step(1);
  state.raf = requestAnimationFrame(tick);
  renderTransport();
}

function pause() {
  if (!state.playing) return;
  state.playing = false;
  cancelAnimationFrame(state.raf);
  renderTransport();
}

const togglePlay = () => (state.playing ? pause() : play());

// --- layout --------------------------------------------------------------------------------

let layoutQueued = false;
function requestLayout() {
  if (layoutQueued) return;
  layoutQueued = true;
  requestAnimationFrame(() => {
    layoutQueued = false;
    layout();
  });
}

function layout() {
  const W = ui.waiCanvas.width, H = ui.waiCanvas.height;
  ui.panes.style.visibility = W && H ? '' : 'hidden'; // nothing to place before the headers are read
  if (ui.viewer.hidden || !W || !H) {
    ui.zoomReadout.textContent = '';
    return;
  }
  const c = state.cmp;
  const mode = c ? state.mode : 'single';
  const PAD = 20, GAP = 16, CAPTION = 26; // .panes padding and gap, figcaption with its margin
  const availW = Math.max(40, ui.stage.clientWidth - 2 * PAD);
  const availH = Math.max(40, ui.stage.clientHeight - 2 * PAD - CAPTION);
  const cmpH = c ? W * c.height / c.width : 0; // the comparison at the WAI picture's width

  let s, column = false;
  if (mode === 'side') {
    const tall = Math.max(H, cmpH);
    const row = Math.min((availW - GAP) / 2 / W, availH / tall);
    const col = Math.min(availW / W, (availH - GAP - CAPTION) / (H + cmpH));
    column = col > row * 1.05;
    s = column ? col : row;
  } else {
    s = Math.min(availW / W, availH / H);
  }
  if (state.zoom === '100') s = 1;
  else if (s > 1) s = Math.min(MAX_UPSCALE, Math.floor(s)); // whole multiples stay crisp
  s = Math.max(s, 0.01);
  state.scale = s;

  const dw = Math.max(1, Math.round(W * s));
  const dh = Math.max(1, Math.round(H * s));
  const ch = Math.max(1, Math.round(cmpH * s));
  ui.panes.classList.toggle('column', mode === 'side' && column);
  // crisp pixels once a picture pixel covers more than one screen pixel (100 % on a HiDPI screen too)
  ui.stage.classList.toggle('pixelated', s > 1 || (s === 1 && window.devicePixelRatio > 1));
  setSize(ui.waiCanvas, dw, dh);
  setSize(ui.splitCanvas, dw, ch);
  setSize(ui.cmpCanvas, dw, ch);
  ui.waiBox.style.width = dw + 'px';
  ui.waiBox.style.height = dh + 'px';
  for (const cap of [ui.capWai, ui.capCmp]) cap.style.maxWidth = Math.max(dw, 220) + 'px';
  ui.zoomReadout.textContent = 'Zoom ' + Math.round(s * 100) + ' %';
}

function setSize(canvas, w, h) {
  canvas.style.width = w + 'px';
  canvas.style.height = h + 'px';
}

// --- rendering the controls and the info panel -----------------------------------------------

function setBusy(text) {
  ui.busy.hidden = !text;
  if (text) ui.busyText.textContent = text;
}

function renderAll() {
  renderMode();
  renderTransport();
  renderInfo();
  requestLayout();
}

function renderMode() {
  const c = state.cmp;
  if (!c && state.mode !== 'single') state.mode = 'single';
  ui.modeGroup.hidden = !c;
  for (const b of ui.modeGroup.querySelectorAll('button')) {
    b.setAttribute('aria-pressed', String(b.dataset.mode === state.mode));
  }
  for (const b of document.querySelectorAll('[data-zoom]')) {
    b.setAttribute('aria-pressed', String(b.dataset.zoom === state.zoom));
  }
  const split = !!c && state.mode === 'split';
  ui.paneCmp.hidden = !(c && state.mode === 'side');
  ui.splitCanvas.hidden = !split;
  ui.divider.hidden = !split;
  ui.tagLeft.hidden = !split;
  ui.tagRight.hidden = !split;
  ui.waiBox.classList.toggle('split', split);
  ui.waiBox.style.setProperty('--split', (state.split * 100).toFixed(3) + '%');
  ui.divider.setAttribute('aria-valuenow', String(Math.round(state.split * 100)));
  if (c) ui.tagRight.textContent = c.kind;

  const w = state.wai;
  const waiLabel = () => {
    const f = document.createDocumentFragment();
    f.append(node('b', { text: 'WAI' }), ` \u00b7 ${w && w.bytes ? kib(w.bytes) : '\u2026'}`);
    return f;
  };
  const cmpLabel = () => {
    const f = document.createDocumentFragment();
    f.append(node('b', { text: c.kind }), ` \u00b7 ${kib(c.bytes)}`);
    return f;
  };
  ui.capWai.classList.toggle('split-cap', split);
  if (split) ui.capWai.replaceChildren(node('span', {}, waiLabel()), node('span', {}, cmpLabel()));
  else ui.capWai.replaceChildren(node('span', {}, waiLabel()));
  if (c) ui.capCmp.replaceChildren(node('span', {}, cmpLabel()));

  // the toolbar's status line: what is happening, or a size mismatch
  const st = [];
  if (w && !w.done && w.frames.length) {
    st.push(node('span', { class: 'spinner', 'aria-hidden': 'true' }),
      `Decoding\u2026 ${w.frames.length}${w.frameCount ? ' / ' + w.frameCount : ''}`);
  } else if (c && w && w.width && (c.width !== w.width || c.height !== w.height) && state.mode !== 'single') {
    st.push('Sizes differ: both shown at the same width');
  } else if (w && !c) {
    st.push(node('span', { class: 'status-name', text: w.name }));
  }
  ui.status.replaceChildren(...st);
}

function renderTransport() {
  const seq = isSequence();
  ui.transport.hidden = !seq;
  if (!seq) return;
  const n = frameCount();
  ui.slider.max = String(Math.max(0, n - 1));
  ui.slider.value = String(state.frame);
  ui.slider.disabled = n < 2;
  const total = state.wai.done ? n : Math.max(n, state.wai.frameCount);
  ui.counter.textContent = `${n ? state.frame + 1 : 0} / ${total}`;
  ui.playBtn.classList.toggle('playing', state.playing);
  ui.playBtn.setAttribute('aria-label', state.playing ? 'Pause' : 'Play');
  for (const b of [ui.playBtn, ui.prevBtn, ui.nextBtn]) b.disabled = n < 2;
}

function renderInfo() {
  const w = state.wai;
  if (!w) return;
  const n = w.frames.length;
  const rows = [];
  rows.push(['File', w.name, null, 'name']);
  rows.push(['Picture', w.width && w.height ? `${w.width} \u00d7 ${w.height}` : '\u2026']);
  let framesText;
  if (w.done) framesText = w.errors.length && w.frameCount > n ? `${n} of ${w.frameCount}` : String(n);
  else framesText = w.frameCount ? `${n} of ${w.frameCount}\u2026` : (n ? `${n}\u2026` : '\u2026');
  rows.push(['Frames', framesText]);
  if (w.fps) rows.push(['Frame rate', `${fmtFps(w.fps)} fps`]);
  else if (isSequence()) rows.push(['Frame rate', 'not given', `played at ${FALLBACK_FPS} fps`]);
  rows.push(['File size', w.bytes ? kib(w.bytes) : '\u2026', w.bytes ? `${grouped(w.bytes)} bytes` : null]);
  const px = w.width * w.height * n;
  rows.push(['Bits per pixel', w.bytes && px ? (w.bytes * 8 / px).toFixed(3) : '\u2026']);
  if (w.done) {
    rows.push(['Decode time', fmtMs(w.ms), n > 1 ? `${fmtMs(w.ms / n)} per frame` : null]);
  } else {
    rows.push(['Decode time', '\u2026']);
  }
  rows.push(['Kernels', kernels, kernels === 'auto' ? 'the fastest set of this build' : null]);
  if (w.models && w.models.length) {
    const list = node('span', { title: w.models.join('\n') }, w.models.map((m) => m.slice(0, 16) + '\u2026').join('\n'));
    rows.push(['Model' + (w.models.length > 1 ? 's' : ''), list, null, 'mono']);
  }
  facts(ui.waiFacts, rows);
  ui.hashBlock.hidden = !w.done || !w.sha256;
  ui.hashValue.textContent = w.sha256 || '';
  renderCompareInfo();
}

function renderCompareInfo() {
  const c = state.cmp, w = state.wai;
  ui.cmpSection.hidden = !c;
  if (!c) return;
  const rows = [
    ['File', c.name],
    ['Format', c.kind],
    ['Picture', `${c.width} \u00d7 ${c.height}`],
    ['File size', kib(c.bytes), `${grouped(c.bytes)} bytes`],
    ['Bits per pixel', (c.bytes * 8 / (c.width * c.height)).toFixed(3)],
  ];
  let note = '', warn = false;
  if (w && w.bytes && w.width) {
    const waiPerFrame = w.bytes / Math.max(1, w.frames.length || 1);
    const ratio = c.bytes / waiPerFrame;
    if (w.done) {
      rows.push(['WAI vs this', ratio >= 1 ? `${ratio.toFixed(1)}\u00d7 smaller` : `${(1 / ratio).toFixed(1)}\u00d7 larger`,
        w.frames.length > 1 ? 'per WAI frame' : null]);
    }
    if (c.width !== w.width || c.height !== w.height) {
      note = `The sizes differ (WAI ${w.width} \u00d7 ${w.height}, ${c.kind} ${c.width} \u00d7 ${c.height}): both are shown at the same display width.`;
      warn = true;
    } else if (w.frames.length > 1) {
      note = 'Compared with every frame of the sequence as it plays.';
    }
  }
  facts(ui.cmpFacts, rows);
  ui.cmpNote.hidden = !note;
  ui.cmpNote.textContent = note;
  ui.cmpNote.classList.toggle('warn', warn);
}

// --- split divider -------------------------------------------------------------------------

function setSplit(x) {
  state.split = Math.min(1, Math.max(0, x));
  ui.waiBox.style.setProperty('--split', (state.split * 100).toFixed(3) + '%');
  ui.divider.setAttribute('aria-valuenow', String(Math.round(state.split * 100)));
}

let dragging = null;
ui.waiBox.addEventListener('pointerdown', (e) => {
  if (!ui.waiBox.classList.contains('split') || e.button !== 0) return;
  dragging = e.pointerId;
  ui.waiBox.setPointerCapture(e.pointerId);
  const r = ui.waiBox.getBoundingClientRect();
  setSplit((e.clientX - r.left) / r.width);
  e.preventDefault();
});
ui.waiBox.addEventListener('pointermove', (e) => {
  if (dragging !== e.pointerId) return;
  const r = ui.waiBox.getBoundingClientRect();
  setSplit((e.clientX - r.left) / r.width);
});
const endDrag = (e) => {
  if (dragging !== e.pointerId) return;
  dragging = null;
  ui.divider.focus({ preventScroll: true });
};
ui.waiBox.addEventListener('pointerup', endDrag);
ui.waiBox.addEventListener('pointercancel', endDrag);
ui.divider.addEventListener('keydown', (e) => {
  const d = { ArrowLeft: -0.02, ArrowRight: 0.02, PageDown: -0.1, PageUp: 0.1 }[e.key];
  if (d !== undefined) setSplit(state.split + (e.shiftKey ? d * 5 : d));
  else if (e.key === 'Home') setSplit(0);
  else if (e.key === 'End') setSplit(1);
  else return;
  e.preventDefault();
  e.stopPropagation();
});

// --- controls ------------------------------------------------------------------------------

// Mouse clicks on these leave the focus where it was, so Space keeps meaning play / pause.
for (const b of [ui.prevBtn, ui.playBtn, ui.nextBtn, ...document.querySelectorAll('.seg button')]) {
  b.addEventListener('mousedown', (e) => e.preventDefault());
}

ui.openBtn.addEventListener('click', () => ui.openInput.click());
ui.chooseBtn.addEventListener('click', (e) => {
  e.stopPropagation();
  ui.openInput.click();
});
ui.dropzone.addEventListener('click', () => ui.openInput.click());
ui.compareBtn.addEventListener('click', () => ui.compareInput.click());
ui.openInput.addEventListener('change', () => {
  const f = ui.openInput.files[0];
  ui.openInput.value = '';
  if (f) openWaiFile(f);
});
ui.compareInput.addEventListener('change', () => {
  const f = ui.compareInput.files[0];
  ui.compareInput.value = '';
  if (f) openCompareFile(f);
});

ui.modeGroup.addEventListener('click', (e) => {
  const b = e.target.closest('button[data-mode]');
  if (!b) return;
  state.mode = b.dataset.mode;
  renderAll();
});
for (const b of document.querySelectorAll('[data-zoom]')) {
  b.addEventListener('click', () => {
    state.zoom = b.dataset.zoom;
    renderMode();
    layout();
  });
}

ui.playBtn.addEventListener('click', togglePlay);
ui.prevBtn.addEventListener('click', () => { pause(); step(-1); });
ui.nextBtn.addEventListener('click', () => { pause(); step(1); });
ui.slider.addEventListener('input', () => {
  pause();
  showFrame(Number(ui.slider.value));
});

ui.copyHash.addEventListener('click', async () => {
  const text = ui.hashValue.textContent;
  try {
    await navigator.clipboard.writeText(text);
    ui.copyHash.textContent = 'Copied';
  } catch {
    getSelection().selectAllChildren(ui.hashValue);
    ui.copyHash.textContent = 'Selected';
  }
  setTimeout(() => { ui.copyHash.textContent = 'Copy'; }, 1500);
});

document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
  const t = e.target;
  const tag = t && t.tagName;
  if (tag === 'TEXTAREA' || tag === 'SELECT' || (t && t.isContentEditable)) return;
  if (tag === 'INPUT' && t.type !== 'range') return;
  if (!isSequence()) return;
  if (e.key === ' ' || e.key === 'Spacebar') {
    if (tag === 'BUTTON') return; // a focused button answers Space itself
    e.preventDefault();
    togglePlay();
  } else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
    if (tag === 'INPUT') return; // the frame slider steps itself
    e.preventDefault();
    pause();
    step(e.key === 'ArrowLeft' ? -1 : 1);
  }
});

// --- drag and drop anywhere ----------------------------------------------------------------

const hasFiles = (e) => !!e.dataTransfer && Array.from(e.dataTransfer.types || []).includes('Files');

window.addEventListener('dragenter', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  ui.overlay.hidden = false;
  document.body.classList.add('dragging');
});
window.addEventListener('dragover', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  e.dataTransfer.dropEffect = 'copy';
  ui.overlay.hidden = false;
});
ui.overlay.addEventListener('dragleave', (e) => {
  if (e.relatedTarget && ui.overlay.contains(e.relatedTarget)) return;
  ui.overlay.hidden = true;
  document.body.classList.remove('dragging');
});
window.addEventListener('drop', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  ui.overlay.hidden = true;
  document.body.classList.remove('dragging');
  const files = Array.from(e.dataTransfer.files);
  const image = files.find(isImageFile);
  const wai = files.find((f) => !isImageFile(f));
  if (wai) openWaiFile(wai);
  if (image) openCompareFile(image);
});

new ResizeObserver(() => requestLayout()).observe(ui.stage);
window.addEventListener('resize', requestLayout);

// --- holding the load event ----------------------------------------------------------------

/* `chromium --headless --dump-dom` (and --screenshot) take the page at its load event, and
 * --virtual-time-budget does not wait for a worker. So while the decode and the comparison
 * image that ?src and ?compare start are under way, a hidden frame whose document is open
 * (document.open() without close()) keeps the page loading, as a browser shows a picture
 * still loading; closing it lets the load event fire, after the result is written. No timer
 * releases it: under virtual time a timer fires at once. Every path of openWai() and
 * openCompare() ends, so the hold always ends. */
function holdLoad() {
  const f = document.createElement('iframe');
  f.hidden = true;
  f.setAttribute('aria-hidden', 'true');
  f.tabIndex = -1;
  document.body.append(f);
  const d = f.contentDocument;
  d.open();
  return () => {
    d.close();
    f.remove();
  };
}

// --- start ---------------------------------------------------------------------------------

const src = params.get('src');
const compare = params.get('compare');
if (!(kernels in KERNELS)) {
  setBanner('wai', 'error', 'Unknown kernel set:',
    `'${kernels}' (one of ${Object.keys(KERNELS).join(', ')})`);
}
const jobs = [];
if (compare) jobs.push(openCompareUrl(compare));
if (src) jobs.push(openWaiUrl(src));
else showEmpty();
if (jobs.length) {
  const release = holdLoad();
  Promise.allSettled(jobs).then(release);
}
