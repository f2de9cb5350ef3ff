#!/bin/sh
# Refresh static/vendor/ from the exact versions pinned in package.json and package-lock.json.
#
#   tools/vendor_js/refresh.sh            (needs node and npm; `make run` and `make test` do not)
#
# To upgrade a library: change its exact version in package.json, run
# `npm install --package-lock-only --ignore-scripts` here, then this script, read the diff of
# static/vendor/ and run the browser tests (docs/DECISIONS.md D28). The copied files are committed,
# so the repository serves them itself: no CDN, and no npm for anyone who only runs GroupX.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
vendor=$(cd "$here/../.." && pwd)/static/vendor
modules="$here/node_modules"

cd "$here"
# npm ci installs exactly the lockfile (integrity-checked) and runs no install scripts.
npm ci --ignore-scripts --no-audit --no-fund

version() {
    node -p "require('$modules/$1/package.json').version"
}

rm -rf "$vendor"
mkdir -p "$vendor/marked" "$vendor/dompurify" "$vendor/highlight"

# marked: the ES module build and its licence.
cp "$modules/marked/lib/marked.esm.js" "$modules/marked/lib/marked.esm.js.map" "$modules/marked/LICENSE" \
    "$vendor/marked/"

# DOMPurify: the ES module build, renamed .mjs → .js so every static server sends a JavaScript MIME
# type (a module script with any other type is refused). Dual-licensed: both licence texts.
cp "$modules/dompurify/dist/purify.es.mjs" "$vendor/dompurify/purify.es.js"
cp "$modules/dompurify/dist/purify.es.mjs.map" "$modules/dompurify/LICENSE" "$vendor/dompurify/"
if [ -f "$modules/dompurify/LICENSE-MPL" ]; then cp "$modules/dompurify/LICENSE-MPL" "$vendor/dompurify/"; fi

# highlight.js: the prebuilt ES module with the "common" languages (about forty), and its licence.
cp "$modules/@highlightjs/cdn-assets/es/highlight.min.js" "$modules/@highlightjs/cdn-assets/LICENSE" \
    "$vendor/highlight/"

cat > "$vendor/README.md" <<NOTE
# Vendored browser libraries

Written by \`tools/vendor_js/refresh.sh\`; do not edit by hand. Why these libraries:
docs/DECISIONS.md, D28.

| Library | Version | Files | Licence |
| --- | --- | --- | --- |
| [marked](https://github.com/markedjs/marked) | $(version marked) | marked/marked.esm.js | MIT (marked/LICENSE) |
| [DOMPurify](https://github.com/cure53/DOMPurify) | $(version dompurify) | dompurify/purify.es.js (from dist/purify.es.mjs) | MPL-2.0 or Apache-2.0 (dompurify/LICENSE) |
| [highlight.js](https://github.com/highlightjs/highlight.js) | $(version @highlightjs/cdn-assets) | highlight/highlight.min.js (npm @highlightjs/cdn-assets, es/) | BSD-3-Clause (highlight/LICENSE) |
NOTE

echo "static/vendor/ refreshed:"
ls -R "$vendor"
