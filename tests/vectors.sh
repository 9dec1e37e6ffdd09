#!/bin/sh
# Decode every conformance vector through the public API (the `wai` tool) and compare the
# SHA-256 of the decoded RGB8, the frame count and the size with the manifest.
#   vectors.sh WAI_CLI MANIFEST [extra wai options: --kernels K, --threads N, --device D]
# A kernel set this CPU does not have is a skip (exit 77), never a pass.
set -u
wai=$1; manifest=$2; shift 2
case " $* " in
*" --kernels "*)
    k=$(echo " $* " | sed 's/.* --kernels \([a-z0-9]*\) .*/\1/')
    # probe with the smallest vector: is the set available here?
    if "$wai" decode --kernels "$k" "$(dirname "$manifest")/v02-1x1.wai" --sha256 2>&1 >/dev/null |
            grep -q "is not available"; then
        echo "SKIP: kernel set $k not available on this CPU"; exit 77
    fi ;;
esac
exec "$wai" verify "$@" "$manifest"
