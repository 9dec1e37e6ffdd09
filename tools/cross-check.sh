#!/bin/sh
# Cross checks of the kernels: aarch64 (the NEON set) and i386 (the C set with a 32-bit
# size_t), each run under qemu user emulation. Without zlib/nettle/libpng for the target
# (the full meson cross build, tools/cross/*.txt, needs them) this compiles the DSP subset
# the kernel tests need -- reference and fast kernels, CPU detection, thread pool, graph --
# and runs checkasm (every set against the reference) and test_graph-free unit checks.
#   tools/cross-check.sh [OUTDIR]      needs: gcc-aarch64-linux-gnu, gcc-12-multilib,
#                                             qemu-user-static
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/tmp/wai-cross}
mkdir -p "$OUT/gen/wai"
sed -e 's/@WAI_VERSION_MAJOR@/0/' -e 's/@WAI_VERSION_MINOR@/1/' -e 's/@WAI_VERSION_PATCH@/0/' \
    -e 's/@WAI_VERSION@/0.1.0/' "$SRC/libwai-core/include/wai/version.h.in" > "$OUT/gen/wai/version.h"
S=$SRC/libwai-core/src
CORE="$S/dsp_ref.c $S/dsp.c $S/dsp_c.c $S/cpu.c $S/threadpool.c $S/graph.c $S/lib.c"
FLAGS="-std=c11 -O2 -g -Wall -Wextra -Wpedantic -Wshadow -Wmissing-prototypes -Wno-unused-parameter
  -D_POSIX_C_SOURCE=200809L -ffp-contract=fast -fno-math-errno
  -I$OUT/gen -I$SRC/libwai-core/include -I$S -I$SRC/tests"
fail=0

build_run() { # name cc extra-sources extra-flags runner...
    name=$1; cc=$2; extra=$3; xflags=$4; shift 4
    if ! command -v "$cc" >/dev/null 2>&1; then echo "$name: $cc not installed: SKIPPED"; return; fi
    echo "== $name: $cc"
    # shellcheck disable=SC2086
    if ! $cc $FLAGS $xflags $CORE $extra "$SRC/tests/checkasm.c" -o "$OUT/checkasm-$name" -lm -lpthread; then
        echo "$name: BUILD FAILED"; fail=1; return
    fi
    if ! "$@" "$OUT/checkasm-$name" --seed 1 --iters 40; then echo "$name: checkasm FAILED"; fail=1; fi
}

build_run aarch64 aarch64-linux-gnu-gcc "$S/arm/dsp_neon.c" "-DWAI_HAVE_FAST_NEON=1" \
    qemu-aarch64-static -L /usr/aarch64-linux-gnu
if gcc-12 -m32 -x c -o /dev/null - <<'C' 2>/dev/null
int main(void) { return 0; }
C
then
    # Debian's multilib without gcc-multilib lacks <asm/*.h> for -m32; the x86 asm headers
    # serve both widths (they test __i386__), so point at them
    inc=""
    if [ ! -e /usr/include/asm ] && [ -d /usr/include/x86_64-linux-gnu/asm ]; then
        mkdir -p "$OUT/i386inc"
        ln -sfn /usr/include/x86_64-linux-gnu/asm "$OUT/i386inc/asm"
        inc="-isystem $OUT/i386inc"
    fi
    build_run i386 gcc-12 "" "-m32 $inc" qemu-i386-static
else
    echo "i386: gcc-12 -m32 cannot link (gcc-12-multilib missing): SKIPPED"
fi
exit $fail
