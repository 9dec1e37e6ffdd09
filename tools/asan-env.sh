# The ASan+UBSan setup shared by tools/run-tests.sh (its sanitizer stage) and
# tools/planted-faults.sh (the asan: faults), sourced by both (bash), so that a planted leak is
# looked for exactly as the suite looks for leaks:
#   asan_meson_opts   the meson options of the clang build (besides -Db_lundef=false)
#   asan_env CMD...   runs CMD with the sanitizer options and the Vulkan drivers preloaded:
#                     the loader then cannot unload them before LeakSanitizer looks, which
#                     would make blocks reachable from a driver's globals look leaked
#                     (tests/vk-driver-preload.py says why; nothing is suppressed)
# Nothing is exported: the options apply to the one command, not to later stages (the fuzz
# stage sets its own).
asan_meson_opts=(-Db_sanitize=address,undefined -Dgstreamer=disabled -Dc_args=-fno-sanitize-recover=all)
asan_env() {
    env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1 \
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        LD_PRELOAD="$("$(dirname "${BASH_SOURCE[0]}")/../tests/vk-driver-preload.py")" "$@"
}
