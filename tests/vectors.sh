#!/bin/sh
# Decode every conformance vector through the public API (the `wai` tool) and compare the
# SHA-256 of the decoded RGB8, the frame count and the size with the manifest.
#   vectors.sh WAI_CLI MANIFEST [extra wai options...]
set -eu
wai=$1; manifest=$2; shift 2
exec "$wai" verify "$@" "$manifest"
