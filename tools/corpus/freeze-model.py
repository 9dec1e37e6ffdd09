#!/usr/bin/python3
"""Freeze a shipped model pair under a new name: the conformance model of the real-content corpus.

    /usr/bin/python3 tools/corpus/freeze-model.py SRC.whm SRC.ana NAME OUT_PREFIX

writes OUT_PREFIX.whm and OUT_PREFIX.ana: byte for byte the source pair except
- the WHM1 `name` field (offset 16, 64 bytes, informative: docs/spec/wai-format.md section 4)
  set to NAME, and the WHM1 CRC (its last 4 bytes) recomputed;
- the WAA1 `name` field (offset 16, 64 bytes) set to NAME, its `whm_sha256` (offset 96) set to
  the SHA-256 of the new WHM1, and its CRC recomputed (docs/spec/wai-encoder-weights.md).
Every weight, table and threshold is unchanged, so the new pair codes and decodes the same
pictures as the source pair; only its SHA-256 (what a stream names in its sequence header)
differs, so streams coded with it never depend on the shipped models/wai-qN.whm, which are
retrained and replaced. Prints the SHA-256 of the four files and checks, before writing, that
the source pair belongs together (the .ana's whm_sha256 is the source WHM1's SHA-256) and that
only the bytes above changed.

The frozen pair is not remade from models/ later (those files change): this tool documents
how it was made, and reruns on the source pair of the commit the README names give the same
bytes (check with sha256sum).
"""
import hashlib
import os
import struct
import sys
import zlib


def sha(b):
    return hashlib.sha256(b).hexdigest()


def set_name(data, name):
    nb = name.encode("utf-8")
    if len(nb) > 64:
        raise SystemExit("name is %d bytes; the field holds 64" % len(nb))
    return data[:16] + nb + bytes(64 - len(nb)) + data[80:]


def fix_crc(data):
    body = data[:-4]
    return body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)


def check_crc(data, what):
    if struct.unpack("<I", data[-4:])[0] != zlib.crc32(data[:-4]) & 0xFFFFFFFF:
        raise SystemExit("%s: CRC mismatch" % what)
    if struct.unpack("<I", data[8:12])[0] != len(data):
        raise SystemExit("%s: file_size field is not the file's size" % what)


def main():
    if len(sys.argv) != 5:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    src_whm, src_ana, name, out = sys.argv[1:]
    whm = open(src_whm, "rb").read()
    ana = open(src_ana, "rb").read()
    if whm[:4] != b"WHM1" or ana[:4] != b"WAA1":
        raise SystemExit("not a WHM1 / WAA1 pair")
    check_crc(whm, src_whm)
    check_crc(ana, src_ana)
    if ana[96:128] != hashlib.sha256(whm).digest():
        raise SystemExit("%s was not exported with %s (whm_sha256 differs)" % (src_ana, src_whm))
    new_whm = fix_crc(set_name(whm, name))
    new_ana = set_name(ana, name)
    new_ana = fix_crc(new_ana[:96] + hashlib.sha256(new_whm).digest() + new_ana[128:])
    # only the name, the whm_sha256 and the CRCs differ
    assert len(new_whm) == len(whm) and len(new_ana) == len(ana)
    assert new_whm[:16] == whm[:16] and new_whm[80:-4] == whm[80:-4]
    assert new_ana[:16] == ana[:16] and new_ana[80:96] == ana[80:96] and new_ana[128:-4] == ana[128:-4]
    for ext, data in ((".whm", new_whm), (".ana", new_ana)):
        tmp = out + ext + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, out + ext)
    print("%s  %s (source)" % (sha(whm), src_whm))
    print("%s  %s (source)" % (sha(ana), src_ana))
    print("%s  %s.whm" % (sha(new_whm), out))
    print("%s  %s.ana" % (sha(new_ana), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
