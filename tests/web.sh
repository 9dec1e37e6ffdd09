#!/bin/bash
# The browser decoder (issue 26), end to end:
#   1. tools/build-web.sh builds the module with Debian's emscripten and writes the site;
#   2. the kernel tests under Node (meson test: checkasm, every set against the reference;
#      the operator, rANS, stream tests);
#   3. every conformance vector under every kernel set of the wasm build (reference, c,
#      simd128, auto) and the samples, under Node, to their pinned hashes;
#   4. the page in headless Chromium, read with nothing but `chromium --headless --dump-dom`:
#      every vector, the real-content corpus and the samples to their pinned hashes, frame
#      counts and sizes; the damaged set (tests/damaged-set.py), a missing model and a missing
#      file each to {"error": ...} within a time limit (no hang);
#   5. a screenshot of the page (test-logs/web-viewer.png; docs/web-viewer.png is one).
# Ends with "web: N passed, M failed".
#
#   tests/web.sh                  the stage (tools/run-tests.sh)
#   tests/web.sh --planted NAME   a wasm build with the planted fault NAME: checkasm under
#                                 Node must fail (tools/planted-faults.sh)
#   tests/web.sh --screenshot F   only build, serve and write the screenshot to F
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
logs=$ROOT/test-logs
mkdir -p "$logs"
NODE="node --no-experimental-fetch"

if [ "${1:-}" = --planted ]; then
    name=${2:?usage: tests/web.sh --planted NAME}
    dir=$ROOT/build-web-planted
    # a build directory of its own, set up (sources, options) by tools/build-web.sh, then the fault
    WAI_WEB_BUILD=$dir tools/build-web.sh "$dir-site" > "$logs/web-planted-$name.log" 2>&1 ||
        { tail -5 "$logs/web-planted-$name.log"; echo "FAIL $name: the wasm build fails"; exit 2; }
    meson configure "$dir" -Dplanted_fault="$name" > /dev/null || exit 2
    NODE_PATH=/usr/share/nodejs ninja -C "$dir" web/checkasm.js >> "$logs/web-planted-$name.log" 2>&1 ||
        { echo "FAIL $name: does not build"; exit 2; }
    if (cd "$dir/web" && $NODE checkasm.js --set simd128 --iters 4) >> "$logs/web-planted-$name.log" 2>&1; then
        echo "FAIL $name: NOT caught by checkasm (simd128, Node)"; exit 1
    fi
    grep -E '^ *simd128 .*FAILED' "$logs/web-planted-$name.log" | head -5
    echo "PASS $name: caught by checkasm (simd128, Node)"
    exit 0
fi

passed=0; failed=0
ok() { echo "PASS $*"; passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }
tmp=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# --- 1. build ----------------------------------------------------------------------------------
site=$tmp/site
t0=$SECONDS
if ! tools/build-web.sh "$site" > "$logs/web-build.log" 2>&1; then
    tail -20 "$logs/web-build.log"
    bad "build: tools/build-web.sh failed"
    echo "web: $passed passed, $failed failed"; exit 1
fi
ok "build: tools/build-web.sh in $((SECONDS - t0)) s ($(tail -1 "$logs/web-build.log" | sed 's/^build-web: //'))"
BUILD=${WAI_WEB_BUILD:-$ROOT/build-web}

if [ "${1:-}" != --screenshot ]; then
# --- 2. kernel tests under Node -----------------------------------------------------------------
meson test -C "$BUILD" --no-rebuild --print-errorlogs > "$logs/web-meson-test.log" 2>&1
while read -r line; do
    case "$line" in
    *" OK "*) ok "node: $(echo "$line" | awk '{print $2}')" ;;
    *" FAIL "*|*" TIMEOUT "*) bad "node: $line" ;;
    esac
done < <(grep -E '^ *[0-9]+/[0-9]+ ' "$logs/web-meson-test.log")
grep -E '^ *simd128 ' "$BUILD/meson-logs/testlog.txt" | head -3

# --- 3. vectors and samples under Node ----------------------------------------------------------
node_decode() { # MANIFEST KERNELS MODEL_DIR...
    local m=$1 k=$2; shift 2
    local args=() d
    for d in "$@"; do args+=(--models "$d"); done
    $NODE tests/web-decode.js "$BUILD/web/wai-core.js" "$m" --kernels "$k" "${args[@]}" > "$tmp/node.log" 2>&1
    while read -r line; do
        case "$line" in
        "ok "*) ok "node ${line#ok }" ;;
        FAIL*) bad "node ${line#FAIL }" ;;
        esac
    done < "$tmp/node.log"
    grep -q "^web-decode: [1-9]" "$tmp/node.log" || { tail -5 "$tmp/node.log"; bad "node $m: no result"; }
}
node_decode vectors/manifest.txt reference,c,simd128,auto build/tools "$ROOT/build-test/tools" models
node_decode samples/manifest.txt simd128,c models
fi

# --- 4. the page in headless Chromium -----------------------------------------------------------
# the streams beside the page; the models they name under their SHA-256 names (the tiny model
# of the vectors is made by the native build: build-test/ in the suite, else build/)
mkdir -p "$site/t/vectors" "$site/t/corpus" "$site/t/samples" "$site/t/damaged"
cp vectors/*.wai "$site/t/vectors/"
cp vectors/corpus/*.wai "$site/t/corpus/"
cp samples/*.wai samples/eval/coffee.png "$site/t/samples/"
tiny=
for d in "$ROOT/build-test/tools" "$ROOT/build/tools"; do
    [ -f "$d/wai-tiny-n64m96.whm" ] && { tiny=$d/wai-tiny-n64m96.whm; break; }
done
for m in $tiny vectors/corpus/wai-conformance-1.whm; do
    cp "$m" "$site/models/$(sha256sum "$m" | cut -d' ' -f1).whm"
done
# a second page with no models at all: the model-not-found error
mkdir -p "$site/nomodels/models"
for f in index.html viewer.css viewer.js wai.mjs wai-worker.js wai-core.js wai-core.wasm; do
    ln -s "../$f" "$site/nomodels/$f"
done
/usr/bin/python3 tests/damaged-set.py vectors/v01-64x64.wai "$site/t/damaged" > "$tmp/damaged.txt"

python3 -u -m http.server --bind 127.0.0.1 --directory "$site" 0 > "$tmp/http.log" 2>&1 &
server=$!
port=
for _ in $(seq 50); do
    port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$tmp/http.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { bad "http.server did not start"; echo "web: $passed passed, $failed failed"; exit 1; }
base=http://127.0.0.1:$port
CHROMIUM=${CHROMIUM:-chromium}
# one page load: the JSON of #wai-result (empty if none), its seconds in $tmp/NAME.s
page() { # NAME QUERY [TIMEOUT]
    local name=$1 q=$2 lim=${3:-120} s=$SECONDS
    timeout "$lim" "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$tmp/profile-$name" --dump-dom "$base/$q" > "$tmp/$name.html" 2>/dev/null
    echo "$? $((SECONDS - s))" > "$tmp/$name.rc"
    rm -rf "$tmp/profile-$name"
    /usr/bin/python3 -c '
import html, re, sys
m = re.search(r"<pre id=\"wai-result\"[^>]*>(.*?)</pre>", open(sys.argv[1], errors="replace").read(), re.S)
print(html.unescape(m.group(1)) if m else "")' "$tmp/$name.html" > "$tmp/$name.json"
}
# two pages at a time (each decode is one thread)
jobs_list=()
queue() { jobs_list+=("$1|$2|${3:-120}"); }
run_queue() { # (a plain `wait` would wait for the server too)
    local j pids=()
    for j in "${jobs_list[@]}"; do
        IFS='|' read -r name q lim <<< "$j"
        page "$name" "$q" "$lim" &
        pids+=($!)
        [ ${#pids[@]} = 2 ] && { wait "${pids[@]}"; pids=(); }
    done
    [ ${#pids[@]} = 0 ] || wait "${pids[@]}"
}
check_decode() { # NAME FILE SHA FRAMES WxH
    local name=$1 r
    r=$(/usr/bin/python3 -c '
import json, sys
try:
    j = json.loads(open(sys.argv[1]).read())
except ValueError:
    print("no result in the page (%s)" % open(sys.argv[1]).read().strip()[:200]); sys.exit()
w, h = sys.argv[4].split("x")
want = {"sha256": sys.argv[2], "frames": int(sys.argv[3]), "width": int(w), "height": int(h)}
got = {k: j.get(k) for k in want}
print("ok %s ms" % j.get("ms") if got == want and "error" not in j else "got %s, want %s" % (j, want))' \
        "$tmp/$name.json" "$3" "$4" "$5")
    case "$r" in
    "ok "*) ok "chromium $2: ${r#ok } (page $(cut -d' ' -f2 "$tmp/$name.rc") s)" ;;
    *) bad "chromium $2: $r (rc $(cut -d' ' -f1 "$tmp/$name.rc"))" ;;
    esac
}
check_error() { # NAME WHAT [PATTERN]
    local name=$1 r
    r=$(/usr/bin/python3 -c '
import json, re, sys
try:
    j = json.loads(open(sys.argv[1]).read())
except ValueError:
    print("no result in the page"); sys.exit()
e = j.get("error")
print("ok " + e if isinstance(e, str) and e and re.search(sys.argv[2], e) else "got %s" % j)' \
        "$tmp/$name.json" "${3:-.}")
    case "$r" in
    "ok "*) ok "chromium $2: error \"${r#ok }\"" ;;
    *) bad "chromium $2: $r, want an error (rc $(cut -d' ' -f1 "$tmp/$name.rc"))" ;;
    esac
}

# the viewer with a picture beside its source: the evaluation crop of the coffee sample (a PNG),
# coded at quality 5 here by the native CLI (the float encoder: this machine's bytes)
shot_page() {
    local cli
    for cli in "$ROOT/build-test/tools/wai" "$ROOT/build/tools/wai"; do [ -x "$cli" ] && break; done
    "$cli" encode samples/eval/coffee.png -o "$site/t/samples/coffee-eval-q5.wai" --quality 5 \
        --model-dir models > /dev/null 2>&1
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
        --user-data-dir="$tmp/profile-shot" --window-size=1280,800 --screenshot="$shot" \
        "$base/index.html?src=t/samples/coffee-eval-q5.wai&compare=t/samples/coffee.png" > /dev/null 2>&1
}
if [ "${1:-}" = --screenshot ]; then
    shot=${2:?usage: tests/web.sh --screenshot FILE}
    shot_page
    [ -s "$shot" ] && echo "wrote $shot" || { echo "no screenshot"; exit 1; }
    exit 0
fi

t0=$SECONDS
manifest_jobs() { # PREFIX MANIFEST DIR
    local f sha n wh
    while read -r f sha n wh; do
        case "$f" in ''|'#'*) continue ;; esac
        queue "$1-${f%.wai}" "index.html?src=t/$3/$f" 300
    done < "$2"
}
manifest_jobs vec vectors/manifest.txt vectors
manifest_jobs cor vectors/corpus/manifest.txt corpus
manifest_jobs smp samples/manifest.txt samples
while read -r f; do queue "dmg-${f%.wai}" "index.html?src=t/damaged/$f" 60; done < "$tmp/damaged.txt"
queue nomodel "nomodels/index.html?src=../t/corpus/c05-fig-33x17.wai" 60
queue missing "index.html?src=t/nothing-here.wai" 60
queue kernels-ref "index.html?src=t/vectors/v09-video-3x64x48.wai&kernels=reference" 60
run_queue
echo "   (pages: $((SECONDS - t0)) s)"

check_manifest() { # PREFIX MANIFEST DIR
    local f sha n wh
    while read -r f sha n wh; do
        case "$f" in ''|'#'*) continue ;; esac
        check_decode "$1-${f%.wai}" "$3/$f" "$sha" "$n" "$wh"
    done < "$2"
}
check_manifest vec vectors/manifest.txt vectors
check_manifest cor vectors/corpus/manifest.txt corpus
check_manifest smp samples/manifest.txt samples
while read -r f; do check_error "dmg-${f%.wai}" "damaged/$f"; done < "$tmp/damaged.txt"
check_error nomodel "a model the server lacks (c05)" "not found"
check_error missing "a missing file" "HTTP 404"
check_decode kernels-ref "vectors/v09-video-3x64x48.wai (kernels=reference)" \
    "$(awk '$1 == "v09-video-3x64x48.wai" { print $2 }' vectors/manifest.txt)" 3 64x48

# --- 5. screenshot ----------------------------------------------------------------------------
shot=$logs/web-viewer.png
rm -f "$shot"
shot_page
r=$(/usr/bin/python3 -c '
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
colours = len(set(im.getdata()))
print("ok" if im.size == (1280, 800) and colours > 5000 else "bad", im.size, colours)' "$shot" 2>&1)
case "$r" in
ok*) ok "screenshot $shot: ${r#ok } colours (the decoded photo is on it)" ;;
*) bad "screenshot $shot: $r" ;;
esac

echo "web: $passed passed, $failed failed"
[ "$failed" = 0 ]
