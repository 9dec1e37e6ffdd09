#!/usr/bin/python3
"""waipy: an independent WAI decoder in Python + numpy, written from docs/spec/wai-format.md.

    waipy.py decode FILE [--model-path DIR[:DIR]] [--sha256] [-o out.rgb]

Exit codes: 0 success, 2 usage, 3 I/O, 10..16 the class of the first error (README.md).
"""

import argparse
import hashlib
import os
import sys

sys.dont_write_bytecode = True    # nothing written into the source tree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from waidec.decoder import DEFAULT_MAX_MEMORY, DEFAULT_MAX_SIZE, Error, Settings, decode_events  # noqa: E402

EXIT_IO = 3


def model_path(arg):
    dirs = []
    if arg:
        dirs += [d for d in arg.split(":") if d]
    dirs += [d for d in os.environ.get("WAI_MODEL_PATH", "").split(":") if d]
    return dirs


def size_arg(text):
    """A byte count with an optional k, M or G suffix (powers of 1024)."""
    mult = {"k": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text[:-1] if mult > 1 else text) * mult


def decode_file(path, settings, out=None, stop_at_first_error=False, report=None):
    """Decode one file. Returns (hex SHA-256 of all pictures output, picture count, errors);
    `report(error)` is called for each error as it is found. Raises OSError."""
    with open(path, "rb") as f:
        data = f.read()
    h = hashlib.sha256()
    n, errors = 0, []
    for ev in decode_events(data, settings):
        if isinstance(ev, Error):
            errors.append(ev.error)
            if report:
                report(ev.error)
            if stop_at_first_error:
                break
            continue
        h.update(ev.rgb)
        n += 1
        if out is not None:
            out.write(ev.rgb)
    return h.hexdigest(), n, errors


def main(argv=None):
    ap = argparse.ArgumentParser(prog="waipy.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("decode", help="decode a stream")
    d.add_argument("file")
    d.add_argument("--model-path", help="':'-separated model directories, searched before $WAI_MODEL_PATH")
    d.add_argument("--sha256", action="store_true", help="print the SHA-256 of all decoded RGB8 bytes")
    d.add_argument("-o", dest="output", help="write raw RGB8 of all frames ('-': stdout)")
    d.add_argument("--max-memory", type=size_arg, default=DEFAULT_MAX_MEMORY,
                   help="memory budget in bytes (suffix k, M, G; default 4G)")
    d.add_argument("--max-size", type=int, default=DEFAULT_MAX_SIZE,
                   help="largest picture width or height (default 16384)")
    d.add_argument("--stop-at-first-error", action="store_true",
                   help="stop at the first error (default: go on as spec section 2.4 says)")
    d.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")
    args = ap.parse_args(argv)
    if not args.sha256 and not args.output:
        ap.error("decode: give --sha256 and/or -o OUT")

    settings = Settings(model_path(args.model_path), args.max_size, args.max_memory)

    def report(err):
        print("waipy: %s: %s" % (args.file, err), file=sys.stderr)

    out = None
    try:
        if args.output == "-":
            out = sys.stdout.buffer
        elif args.output:
            out = open(args.output, "wb")
        digest, n, errors = decode_file(args.file, settings, out, args.stop_at_first_error, report)
    except OSError as e:
        print("waipy: %s" % e, file=sys.stderr)
        return EXIT_IO
    finally:
        if out is not None and out is not sys.stdout.buffer:
            out.close()
    if args.sha256 and not errors:
        print(digest)
    if not args.quiet:
        print("waipy: %s: %d picture(s), %d error(s)" % (args.file, n, len(errors)), file=sys.stderr)
    return errors[0].exit_code if errors else 0


if __name__ == "__main__":
    sys.exit(main())
