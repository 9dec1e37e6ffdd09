# Sourced by the loader's tests (pixbuf-tests.sh, eog-test.sh): a scratch data directory with
# the image/x-wai MIME definition and a loaders cache holding the build's loader. Needs $tmp,
# $src, $PIXBUF_QUERY_LOADERS and $PIXBUF_MODULE; exports XDG_DATA_HOME, XDG_DATA_DIRS and
# GDK_PIXBUF_MODULE_FILE. GdkPixbuf picks a loader by the content type shared-mime-info
# guesses (GIO), so the MIME definition must be installed for the loader to be used at all.
command -v update-mime-database > /dev/null || { echo "FAIL update-mime-database not installed (shared-mime-info)"; exit 1; }
mkdir -p "$tmp/xdg/mime/packages" "$tmp/home"
cp "$src/gdk-pixbuf-wai/wai-mime.xml" "$tmp/xdg/mime/packages/wai.xml"
update-mime-database "$tmp/xdg/mime" > /dev/null 2>&1 || { echo "FAIL update-mime-database"; exit 1; }
export XDG_DATA_HOME="$tmp/home" XDG_DATA_DIRS="$tmp/xdg:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}"
"$PIXBUF_QUERY_LOADERS" "$PIXBUF_MODULE" > "$tmp/loaders.cache" || { echo "FAIL query-loaders"; exit 1; }
grep -q '"wai"' "$tmp/loaders.cache" || { echo "FAIL the loader is not in the cache"; exit 1; }
export GDK_PIXBUF_MODULE_FILE="$tmp/loaders.cache"
