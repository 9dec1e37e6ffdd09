"""The error classes of the specification (section 9.1), one exception type each.

Every error the decoder reports is one of these; the command line turns the class into an exit
code (README.md of this folder).
"""


class WaiError(Exception):
    """A decoding error of one of the specification's classes."""
    name = "error"          # the class name as the spec writes it
    exit_code = 1

    def __init__(self, detail):
        super().__init__(detail)
        self.detail = detail

    def __str__(self):
        return "%s: %s" % (self.name, self.detail)


class BitstreamError(WaiError):
    name = "bitstream error"
    exit_code = 10


class TruncatedError(WaiError):
    name = "truncated"
    exit_code = 11


class CrcError(WaiError):
    name = "CRC error"
    exit_code = 12


class UnsupportedError(WaiError):
    name = "unsupported"
    exit_code = 13


class ModelNotFoundError(WaiError):
    name = "model not found"
    exit_code = 14


class InvalidModelError(WaiError):
    name = "invalid model"
    exit_code = 15


class LimitError(WaiError):
    name = "limit exceeded"
    exit_code = 16


ALL_CLASSES = (BitstreamError, TruncatedError, CrcError, UnsupportedError,
               ModelNotFoundError, InvalidModelError, LimitError)

# exit code -> short class name, for the command line and the tests
CLASS_BY_EXIT = {c.exit_code: c.name for c in ALL_CLASSES}
