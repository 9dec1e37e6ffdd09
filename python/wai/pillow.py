"""The Pillow plugin of the wai package (registered by `import wai`): Image.open("a.wai")
gives an RGB image (n_frames, seek() over a sequence), img.save("a.wai", quality=5) encodes.

A file that does not start with a sequence header's start code is not claimed (Pillow then
raises its usual UnidentifiedImageError); a damaged WAI file raises wai.WaiError, an OSError,
with libwai's message: from Image.open() when its header cannot be used, from load() when a
frame cannot be decoded."""
from PIL import Image, ImageFile

import wai


def _accept(prefix):
    return prefix[:4] == b"WAIS"


class WaiImageFile(ImageFile.ImageFile):
    format = "WAI"
    format_description = "WAI learned image"

    def _open(self):
        self._data = self.fp.read()
        meta = wai.info(self._data)             # WaiError (OSError) for an unusable header
        self._size = (meta["width"], meta["height"])
        self.mode = "RGB"
        self.n_frames = max(1, meta["frames"])
        self.is_animated = self.n_frames > 1
        if meta["fps"][0]:
            self.info["duration"] = 1000.0 * meta["fps"][1] / meta["fps"][0]
        self._frames = None
        self._frame = 0
        self.tile = []

    def seek(self, frame):
        if not self._seek_check(frame):
            return
        self._frame = frame
        self.im = None                          # load() makes the frame's image

    def tell(self):
        return self._frame

    def load(self):
        if self.im is None or self._loaded_frame != self._frame:
            if self._frames is None:            # every frame once (a sequence is decoded in order)
                self._frames = wai.decode(self._data)
                self.n_frames = len(self._frames)
            if self._frame >= len(self._frames):
                raise EOFError("frame %d is beyond the %d decoded" % (self._frame, len(self._frames)))
            self.im = Image.core.new(self.mode, self.size)
            self.frombytes(self._frames[self._frame].tobytes())
            self._loaded_frame = self._frame
        return Image.Image.load(self)

    _loaded_frame = -1


def _save(im, fp, filename):
    import numpy as np
    frames = [im.convert("RGB")]
    if im.encoderinfo.get("save_all"):
        frames = []
        for k in range(getattr(im, "n_frames", 1)):
            im.seek(k)
            frames.append(im.convert("RGB"))
    info = im.encoderinfo
    fp.write(wai.encode(np.stack([np.asarray(f) for f in frames]),
                        quality=info.get("quality"), model_dir=info.get("model_dir"),
                        target_size=info.get("target_size"), target_bpp=info.get("target_bpp"),
                        target_psnr=info.get("target_psnr")))


def _save_all(im, fp, filename):
    im.encoderinfo["save_all"] = True
    _save(im, fp, filename)


Image.register_open(WaiImageFile.format, WaiImageFile, _accept)
Image.register_save(WaiImageFile.format, _save)
Image.register_save_all(WaiImageFile.format, _save_all)
Image.register_extension(WaiImageFile.format, ".wai")
Image.register_mime(WaiImageFile.format, "image/x-wai")
