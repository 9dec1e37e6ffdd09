"""Reading a whole stream (spec sections 1, 2, 2.4 and 9): units in order from a read position,
the sequence header in force and its model, one RGB8 picture per frame unit, and the way the
decoder goes on after an error (resynchronisation, unusable headers).

decode_events() yields, in stream order, a Picture for every frame unit that decodes and an Error
for every error; a caller that wants to stop at the first error stops iterating (section 9.1).
"""

import hashlib
import os
from dataclasses import dataclass

from .errors import (BitstreamError, CrcError, InvalidModelError, LimitError, ModelNotFoundError,
                     TruncatedError, WaiError)
from .graph import check_graph, memory_estimate
from .model import load_model
from .payload import decode_picture
from .stream import (SEQ_START, FramingError, find_candidate, framing, parse_frame_unit,
                     parse_sequence_header)

DEFAULT_MAX_SIZE = 16384            # largest width / height (an implementation limit, 2.3)
DEFAULT_MAX_MEMORY = 4 << 30        # memory budget in bytes (an implementation limit, 2.3)


class Settings:
    """The decoder's implementation limits (section 2.3) and its model directories.

    The limits follow libwai-core's, as section 2.3 describes them (informative), so that both
    decoders refuse the same streams; the spec leaves them to the implementation."""

    def __init__(self, model_path=(), max_size=DEFAULT_MAX_SIZE, max_memory=DEFAULT_MAX_MEMORY):
        self.model_path = list(model_path)      # directories, searched in order
        self.max_size = max_size
        self.max_memory = max_memory

    @property
    def max_unit(self):
        """The largest unit: half of a stream buffer of max(4 MiB, min(budget / 4, 1 GiB))."""
        return max(4 << 20, min(self.max_memory // 4, 1 << 30)) // 2

    @property
    def max_model_file(self):
        """Model files larger than this are skipped unread by the search."""
        return min(self.max_memory, 512 << 20)


@dataclass
class Picture:
    index: int              # pictures output so far
    rgb: bytes              # the display window as RGB8 (section 8)
    header: object          # the SequenceHeader it was decoded with


@dataclass
class Error:
    error: WaiError
    offset: int             # the read position of the unit (or bytes) it concerns
    # a sequence header unit that failed as the stream's first unit: where `wai decode` stops
    # reading (section 9.1, informative; SPEC-QUESTIONS.md A3)
    wai_decode_stops: bool = False


class ModelStore:
    """Finds a model file by SHA-256 (section 4.4, informative as to where files come from).

    In each directory of the search path, in order: the file named with the SHA-256 in hex and
    `.whm`, then every other regular `*.whm` file (names sorted); the first whose bytes have the
    SHA-256 is the model. Files above the size limit are skipped unread; if none matched and one
    was skipped, the result is *limit exceeded*, else *model not found*."""

    def __init__(self, settings):
        self.settings = settings
        self.hashes = {}            # path -> SHA-256 of the file

    def find(self, sha):
        skipped = False
        exact = sha.hex() + ".whm"
        for d in self.settings.model_path:
            try:
                names = sorted(os.listdir(d))
            except OSError:
                continue
            names = ([exact] if exact in names else []) + [n for n in names if n != exact]
            for name in names:
                path = os.path.join(d, name)
                if not name.endswith(".whm") or not os.path.isfile(path):
                    continue
                if os.path.getsize(path) > self.settings.max_model_file:
                    skipped = True
                    continue
                if path not in self.hashes:
                    with open(path, "rb") as f:
                        self.hashes[path] = hashlib.sha256(f.read()).digest()
                if self.hashes[path] == sha:
                    with open(path, "rb") as f:
                        return f.read()
        if skipped:
            raise LimitError("model %s not found among the files within the size limit" % sha.hex())
        raise ModelNotFoundError("model %s not found in %s" % (sha.hex(), ":".join(self.settings.model_path)))


class Sequence:
    """A sequence header made ready (section 2.1, "made ready", steps 1-4)."""

    def __init__(self, header, settings, store, previous=None):
        # 1. the picture size limit
        if header.width > settings.max_size or header.height > settings.max_size:
            raise LimitError("picture %dx%d above the maximum %d"
                             % (header.width, header.height, settings.max_size))
        # 2. the model (4.4), validated (4, 4.1, 4.2, the channel walk of 4.3). The order is the
        # decoder's choice; this is libwai-core's (4.4, informative): the model of the header in
        # force just before if its SHA-256 matches, then the embedded model, then the files.
        if previous is not None and previous.model.sha256 == header.model_sha256:
            self.header, self.model = header, previous.model
        elif header.model is not None:
            if hashlib.sha256(header.model).digest() != header.model_sha256:
                raise InvalidModelError("the embedded model's SHA-256 differs from model_sha256")
            self.header, self.model = header, load_model(header.model)
        else:
            self.header, self.model = header, load_model(store.find(header.model_sha256))
        # 3. the checks of 4.3 for this picture size
        hs, gs = check_graph(self.model, header.width, header.height)
        # 4. the memory budget (9.2): `work` plus the model, counted as its file size
        need = memory_estimate(self.model, hs, gs, header.width, header.height,
                               header.disp_y, header.disp_h) + self.model.size
        if need > settings.max_memory:
            raise LimitError("a picture needs %d bytes, above the budget of %d" % (need, settings.max_memory))


def decode_events(data, settings):
    """Decode the stream `data` (bytes); yields Picture and Error events in stream order."""
    data = bytes(data)
    store = ModelStore(settings)
    in_force = None             # the Sequence in force
    unusable = None             # the error class of an unusable header read since the last usable one
    truncated_reported = False  # the end inside a unit is reported once per stream
    pictures = 0
    pos = 0

    if not data:
        yield Error(BitstreamError("a stream of zero bytes has no sequence header"), 0)
        return

    def resync(start):
        """2.4: the next candidate from `start`; the stream ending inside one is *truncated*."""
        nonlocal truncated_reported
        cand, ended_inside = find_candidate(data, start, settings.max_unit)
        err = None
        if ended_inside and not truncated_reported:
            truncated_reported = True
            err = Error(TruncatedError("the stream ends inside a unit (found while resynchronising)"), start)
        return cand, err

    while pos < len(data):
        try:
            code, size = framing(data, pos, settings.max_unit)
        except FramingError as fe:
            if isinstance(fe.error, TruncatedError):
                if not truncated_reported:
                    truncated_reported = True
                    yield Error(fe.error, pos)
            else:
                yield Error(fe.error, pos)
            pos, err = resync(fe.resync_from)
            if err:
                yield err
            continue

        unit = data[pos:pos + size]
        if code == SEQ_START:
            if in_force is not None and unit == in_force.header.unit:
                pos += size                         # a byte-for-byte repeat: ignored
                continue
            try:
                header = parse_sequence_header(unit, pos)
            except WaiError as e:
                yield Error(e, pos, in_force is None and unusable is None)
                if isinstance(e, CrcError):         # one byte on, then resynchronise
                    pos, err = resync(pos + 1)
                    if err:
                        yield err
                else:
                    pos += size
                continue
            was_none = in_force is None and unusable is None
            try:
                in_force, unusable = Sequence(header, settings, store, in_force), None
            except WaiError as e:                   # unusable: no header in force until a usable one
                yield Error(e, pos, was_none)
                in_force, unusable = None, type(e)
            pos += size
            continue

        # a frame unit
        try:
            frame = parse_frame_unit(unit, pos)
        except WaiError as e:
            yield Error(e, pos)
            if isinstance(e, CrcError):
                pos, err = resync(pos + 1)
                if err:
                    yield err
            else:
                pos += size
            continue
        pos += size
        if in_force is None:
            if unusable is not None:
                yield Error(unusable("frame unit at offset %d: the sequence header before it is unusable"
                                     % frame.offset), frame.offset)
            else:
                yield Error(BitstreamError("frame unit at offset %d: no sequence header in force"
                                           % frame.offset), frame.offset)
            continue
        try:
            rgb = decode_picture(frame.payload, in_force.header, in_force.model)
        except WaiError as e:
            yield Error(e, frame.offset)
            continue
        yield Picture(pictures, rgb, in_force.header)
        pictures += 1


def decode_stream(data, settings, on_frame):
    """Decode straight through and stop at the first error, which is raised (a WaiError);
    `on_frame(index, rgb, header)` gets every picture before it. Returns the picture count."""
    n = 0
    for ev in decode_events(data, settings):
        if isinstance(ev, Error):
            raise ev.error
        on_frame(ev.index, ev.rgb, ev.header)
        n += 1
    return n
