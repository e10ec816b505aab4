#!/usr/bin/env bash
# Builds the web app (and with --test runs its unit tests). Without npm the API still runs, without the web UI.
set -euo pipefail
cd "$(dirname "$0")/../frontend"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: skipping the web app build (the API works without it)" >&2
  [ "${1:-}" = "--test" ] && exit 1
  exit 0
fi
stamp=node_modules/.kbqa-$(sha256sum package-lock.json | cut -c1-16)
if [ ! -f "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
if [ "${1:-}" = "--test" ]; then
  npm test --silent
fi
if [ ! -f dist/index.html ] || [ -n "$(find src index.html package.json -newer dist/index.html 2>/dev/null | head -1)" ]; then
  npm run build --silent
fi
