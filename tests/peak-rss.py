#!/usr/bin/env python3
"""Run a command (stdin, stdout and stderr to /dev/null) and print its peak resident set size
in KiB, from the kernel's accounting of waited-for children (getrusage RUSAGE_CHILDREN: the
largest of the command and its own children), or "failed" if it exits non-zero.

    tests/peak-rss.py COMMAND [ARG...]
"""
import resource
import subprocess
import sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r.returncode == 0 else "failed")
