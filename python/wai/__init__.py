"""WAI pictures in Python: a binding of libwai (ctypes, the C library's public API; no second
decoder) and, once imported, a Pillow plugin.

    import wai
    frames = wai.decode(open("a.wai", "rb").read())   # numpy uint8 (frames, height, width, 3)
    data = wai.encode(frames[0], quality=5)            # bytes of a new stream
    from PIL import Image
    Image.open("a.wai").save("a.png")                  # Pillow, through the plugin

The pixels are the stream's RGB8, the bytes `wai decode` gives. libwai's errors are raised as
wai.WaiError (an OSError) carrying libwai's message and error code. The library is found as
$WAI_LIBRARY when set (a path), else as libwai.so.0 by the system's loader.
"""
import ctypes
import ctypes.util
import errno
import os

import numpy as np

__all__ = ["decode", "encode", "info", "available_qualities", "WaiError", "version"]

# ---- the C declarations (include/wai/wai.h, include/wai/encoder.h) ----

ERR_AGAIN = -errno.EAGAIN       # the codes are negative errno values (wai.h)


class _Settings(ctypes.Structure):
    _fields_ = [("max_width", ctypes.c_uint32), ("max_height", ctypes.c_uint32),
                ("max_memory", ctypes.c_uint64), ("model_path", ctypes.c_char_p),
                ("allow_embedded_model", ctypes.c_int), ("kernels", ctypes.c_int),
                ("threads", ctypes.c_int), ("device", ctypes.c_int), ("device_index", ctypes.c_int),
                ("log_callback", ctypes.c_void_p), ("log_opaque", ctypes.c_void_p),
                ("stripe_rows", ctypes.c_int),
                ("reserved", ctypes.c_uint8 * (64 - 2 * ctypes.sizeof(ctypes.c_void_p) - 4))]


class _SequenceInfo(ctypes.Structure):
    _fields_ = [("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("disp_x", ctypes.c_uint32), ("disp_y", ctypes.c_uint32),
                ("disp_w", ctypes.c_uint32), ("disp_h", ctypes.c_uint32),
                ("fps_num", ctypes.c_uint32), ("fps_den", ctypes.c_uint32),
                ("frame_count", ctypes.c_uint32),
                ("colour_primaries", ctypes.c_uint8), ("transfer", ctypes.c_uint8),
                ("matrix", ctypes.c_uint8), ("full_range", ctypes.c_uint8),
                ("version_major", ctypes.c_uint8), ("version_minor", ctypes.c_uint8),
                ("model_sha256", ctypes.c_uint8 * 32),
                ("model_size", ctypes.c_uint32), ("unit_size", ctypes.c_uint32)]


class _UnitInfo(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("offset", ctypes.c_size_t), ("size", ctypes.c_size_t),
                ("frame_index", ctypes.c_uint32)]


class _Picture(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_uint8)), ("stride", ctypes.c_ssize_t),
                ("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("frame_index", ctypes.c_uint32), ("pts_num", ctypes.c_int64),
                ("pts_den", ctypes.c_int64), ("priv", ctypes.c_void_p)]


class _EncoderSettings(ctypes.Structure):
    _fields_ = [("model_dir", ctypes.c_char_p), ("model_file", ctypes.c_char_p),
                ("analysis_file", ctypes.c_char_p), ("quality", ctypes.c_int),
                ("fps_num", ctypes.c_uint32), ("fps_den", ctypes.c_uint32),
                ("embed_model", ctypes.c_int), ("threads", ctypes.c_int),
                ("max_memory", ctypes.c_uint64), ("mean_correction", ctypes.c_int),
                ("stripe_rows", ctypes.c_int), ("target_frame_bytes", ctypes.c_uint64),
                ("target_psnr", ctypes.c_double), ("kernels", ctypes.c_int),
                ("rate", ctypes.c_int32), ("reserved", ctypes.c_uint8 * 24)]


class _FrameStats(ctypes.Structure):
    _fields_ = [("quality", ctypes.c_int), ("target_met", ctypes.c_int),
                ("bytes", ctypes.c_uint64), ("psnr", ctypes.c_double),
                ("candidates", ctypes.c_int), ("rate", ctypes.c_int32),
                ("reserved", ctypes.c_uint8 * 24)]


def _load():
    path = os.environ.get("WAI_LIBRARY") or ctypes.util.find_library("wai") or "libwai.so.0"
    lib = ctypes.CDLL(path)
    P, c_int, c_size_t = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    u8p = ctypes.POINTER(ctypes.c_uint8)
    sigs = {
        "wai_version_string": (ctypes.c_char_p, []),
        "wai_strerror": (ctypes.c_char_p, [c_int]),
        "wai_default_settings": (None, [ctypes.POINTER(_Settings)]),
        "wai_decoder_open": (c_int, [ctypes.POINTER(P), ctypes.POINTER(_Settings)]),
        "wai_decoder_close": (None, [ctypes.POINTER(P)]),
        "wai_send_data": (c_int, [P, ctypes.c_char_p, c_size_t]),
        "wai_send_eos": (c_int, [P]),
        "wai_get_picture": (c_int, [P, ctypes.POINTER(_Picture)]),
        "wai_picture_unref": (None, [ctypes.POINTER(_Picture)]),
        "wai_decoder_get_sequence_info": (c_int, [P, ctypes.POINTER(_SequenceInfo)]),
        "wai_decoder_last_error": (ctypes.c_char_p, [P]),
        "wai_parse_sequence_header": (c_int, [ctypes.c_char_p, c_size_t, ctypes.POINTER(_SequenceInfo)]),
        "wai_find_unit": (c_int, [P, c_size_t, c_size_t, ctypes.POINTER(_UnitInfo)]),
        "wai_encoder_default_settings": (None, [ctypes.POINTER(_EncoderSettings)]),
        "wai_encoder_open": (c_int, [ctypes.POINTER(P), ctypes.POINTER(_EncoderSettings)]),
        "wai_encoder_close": (None, [ctypes.POINTER(P)]),
        "wai_encode_picture": (c_int, [P, ctypes.c_char_p, ctypes.c_ssize_t, ctypes.c_uint32, ctypes.c_uint32]),
        "wai_encoder_finish": (c_int, [P, ctypes.POINTER(u8p), ctypes.POINTER(c_size_t)]),
        "wai_encoder_last_error": (ctypes.c_char_p, [P]),
        "wai_encoder_last_frame": (c_int, [P, ctypes.POINTER(_FrameStats)]),
        "wai_encoder_available_qualities": (c_int, [ctypes.c_char_p, ctypes.POINTER(c_int), c_int]),
        "wai_kernels_from_name": (c_int, [ctypes.c_char_p, ctypes.POINTER(c_int)]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


_lib = _load()
_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


class WaiError(OSError):
    """An error of libwai: `code` is its negative error code, the message libwai's."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _err(code, msg):
    text = msg.decode("utf-8", "replace") if isinstance(msg, bytes) else str(msg)
    return WaiError(code, text or _lib.wai_strerror(code).decode())


def version():
    """libwai's version string."""
    return _lib.wai_version_string().decode()


def _path(p):
    if p is None:
        return None
    if isinstance(p, (list, tuple)):
        p = ":".join(os.fspath(x) for x in p)
    return os.fsencode(p)


def info(data):
    """The sequence header of a stream as a dict (width, height: the display window; coded_width,
    coded_height, fps, frame_count from the header, frames: the frame units present)."""
    data = bytes(data)
    si = _SequenceInfo()
    r = _lib.wai_parse_sequence_header(data, len(data), ctypes.byref(si))
    if r < 0:
        raise _err(r, "not a usable WAI sequence header: %s" % _lib.wai_strerror(r).decode())
    # the units, found in place (one buffer, addressed at each unit's offset)
    buf = ctypes.create_string_buffer(data, len(data))
    frames, at, u = 0, 0, _UnitInfo()
    while at < len(data) and _lib.wai_find_unit(ctypes.addressof(buf) + at, len(data) - at, len(data),
                                                ctypes.byref(u)) == 0:
        frames += u.type == 2
        at += u.offset + u.size
    return {"width": si.disp_w, "height": si.disp_h, "coded_width": si.width,
            "coded_height": si.height, "fps": (si.fps_num, si.fps_den),
            "frame_count": si.frame_count, "frames": frames,
            "model_sha256": bytes(si.model_sha256).hex()}


def _kernels(name):
    """The WaiKernels value of a kernel set's name ('auto', 'reference', 'c', 'avx2', 'avx512',
    'avx512vnni', 'avx512amx', 'neon', 'simd128'); ValueError for any other."""
    k = ctypes.c_int(0)
    if _lib.wai_kernels_from_name(str(name).encode(), ctypes.byref(k)) < 0:
        raise ValueError("unknown kernel set %r (auto, reference, c, avx2, avx512, avx512vnni, "
                         "avx512amx, neon or simd128)" % (name,))
    return k.value


def decode(data, model_path=None, max_frames=None, threads=0, kernels=None):
    """Decode a WAI stream (bytes-like) to a numpy uint8 array (frames, height, width, 3).

    model_path: extra model directories (a path, or a list), searched before $WAI_MODEL_PATH and
    the installed models. max_frames: stop after that many frames. kernels: a kernel set's name
    (default 'auto'; every set gives the same pictures; one this CPU lacks raises WaiError).
    Any error of libwai (a bad header, a model not found, a damaged or truncated frame) raises
    WaiError."""
    data = memoryview(bytes(data))
    s = _Settings()
    _lib.wai_default_settings(ctypes.byref(s))
    mp = _path(model_path)
    s.model_path = mp
    s.threads = threads
    if kernels is not None:
        s.kernels = _kernels(kernels)
    dec = ctypes.c_void_p()
    r = _lib.wai_decoder_open(ctypes.byref(dec), ctypes.byref(s))
    if r < 0:
        raise _err(r, "cannot open a decoder: %s" % _lib.wai_strerror(r).decode())
    frames = []
    try:
        def fetch():
            while max_frames is None or len(frames) < max_frames:
                pic = _Picture()
                r = _lib.wai_get_picture(dec, ctypes.byref(pic))
                if r == ERR_AGAIN:
                    return
                if r < 0:
                    raise _err(r, _lib.wai_decoder_last_error(dec))
                try:   # one copy, out of libwai's picture (a view until then)
                    rows = np.ctypeslib.as_array(pic.data, shape=(pic.height, pic.stride))
                    frames.append(rows[:, :pic.width * 3].reshape(pic.height, pic.width, 3).copy())
                finally:
                    _lib.wai_picture_unref(ctypes.byref(pic))
        piece = 1 << 20   # with the pictures fetched after each piece, it always fits (wai.h)
        for at in range(0, len(data), piece):
            chunk = bytes(data[at:at + piece])
            r = _lib.wai_send_data(dec, chunk, len(chunk))
            if r < 0:
                raise _err(r, _lib.wai_decoder_last_error(dec))
            fetch()
            if max_frames is not None and len(frames) >= max_frames:
                break
        else:
            r = _lib.wai_send_eos(dec)
            if r < 0:
                raise _err(r, _lib.wai_decoder_last_error(dec))
            fetch()
        if not frames:
            raise WaiError(-errno.EINVAL, "no picture in the stream" if len(data) else "an empty stream")
        return np.stack(frames)
    finally:
        _lib.wai_decoder_close(ctypes.byref(dec))


def available_qualities(model_dir=None):
    """The qualities the encoder finds: model pairs wai-q<N>.whm + .ana and quality files
    wai-q<N>.rate (model_dir, else $WAI_MODEL_PATH and the installed models)."""
    q = (ctypes.c_int * 64)()
    n = _lib.wai_encoder_available_qualities(_path(model_dir), q, 64)
    return list(q[:max(0, min(n, 64))])


def encode(pictures, quality=None, model_dir=None, fps=(25, 1), threads=0, mean_correction=None,
           target_size=None, target_bpp=None, target_psnr=None, stats=None, kernels=None):
    """Encode an RGB8 picture (numpy (height, width, 3) uint8) or a sequence of them
    (frames, height, width, 3) with the model pair of `quality` (default: libwai's, 3) and return
    the stream's bytes.

    Or let the encoder choose the quality of each frame for one target (as `wai encode`):
    target_size (bytes of the whole stream), target_bpp (bits per pixel of the whole stream) or
    target_psnr (dB, RGB8, per frame). Each frame is then the frame of its chosen quality; a
    target no quality meets is met as closely as possible (the smallest frame, or the highest
    quality), not an error. `stats`, a list, gets a dict per frame: quality, bytes, psnr (None
    unless measured, i.e. with target_psnr) and target_met. kernels: a kernel set's name, as for
    decode (every set gives the same stream)."""
    a = np.asarray(pictures)
    if a.ndim == 3:
        a = a[None]
    if a.ndim != 4 or a.shape[-1] != 3 or a.shape[0] < 1:
        raise ValueError("pictures must be (height, width, 3) or (frames, height, width, 3)")
    if a.dtype != np.uint8:
        raise ValueError("pictures must be uint8 RGB, not %s" % a.dtype)
    s = _EncoderSettings()
    _lib.wai_encoder_default_settings(ctypes.byref(s))
    md = _path(model_dir)
    s.model_dir = md
    if quality is not None:
        s.quality = int(quality)
    s.fps_num, s.fps_den = int(fps[0]), int(fps[1])
    s.threads = threads
    if mean_correction is not None:
        s.mean_correction = int(mean_correction)
    if kernels is not None:
        s.kernels = _kernels(kernels)
    targets = [t for t in (target_size, target_bpp, target_psnr) if t is not None]
    if len(targets) > 1:
        raise ValueError("one of target_size, target_bpp and target_psnr at most")
    frames, h, w = a.shape[0], a.shape[1], a.shape[2]
    if target_psnr is not None:
        if not float(target_psnr) > 0 or float(target_psnr) == float("inf"):
            raise ValueError("target_psnr must be a number of dB > 0")
        s.target_psnr = float(target_psnr)
    elif targets:
        if target_bpp is not None:
            if not float(target_bpp) > 0 or float(target_bpp) == float("inf"):
                raise ValueError("target_bpp must be > 0")
            total = float(target_bpp) * w * h * frames / 8
        else:
            if int(target_size) <= 0:
                raise ValueError("target_size must be > 0 bytes")
            total = int(target_size)
        # an even share of what the sequence header (96 bytes, the model not embedded) leaves
        s.target_frame_bytes = max(1, int((total - 96) // frames))
    enc = ctypes.c_void_p()
    r = _lib.wai_encoder_open(ctypes.byref(enc), ctypes.byref(s))
    if r < 0:
        raise _err(r, _lib.wai_encoder_last_error(None))
    try:
        for frame in a:
            buf = np.ascontiguousarray(frame).tobytes()
            r = _lib.wai_encode_picture(enc, buf, w * 3, w, h)
            if r < 0:
                raise _err(r, _lib.wai_encoder_last_error(enc))
            if stats is not None:
                st = _FrameStats()
                _lib.wai_encoder_last_frame(enc, ctypes.byref(st))
                stats.append({"quality": st.quality, "bytes": st.bytes,
                              "psnr": st.psnr if st.psnr >= 0 else None,
                              "target_met": bool(st.target_met)})
        out = ctypes.POINTER(ctypes.c_uint8)()
        size = ctypes.c_size_t()
        r = _lib.wai_encoder_finish(enc, ctypes.byref(out), ctypes.byref(size))
        if r < 0:
            raise _err(r, _lib.wai_encoder_last_error(enc))
        try:
            return ctypes.string_at(out, size.value)
        finally:
            _libc.free(out)
    finally:
        _lib.wai_encoder_close(ctypes.byref(enc))


try:   # the Pillow plugin, when Pillow is there
    from . import pillow as _pillow  # noqa: F401
except ImportError:
    pass
