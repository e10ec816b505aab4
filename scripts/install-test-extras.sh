#!/usr/bin/env bash
# What the integration and browser tests need beyond the Python package: Debian's headless Chromium, and the
# parsers' Tesseract and LibreOffice (scripts/install-parsers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-parsers.sh || echo "could not install the parser tools: OCR and LibreOffice tests will fail" >&2
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "could not install chromium: browser tests will be skipped" >&2
  else
    echo "chromium not installed and not root: browser tests will be skipped" >&2
  fi
fi
# nginx (for `nginx -t` on the proxy config) — optional.
if ! command -v nginx >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 \
    || echo "could not install nginx-light: the nginx -t check will be skipped" >&2
fi
# KEDA schemas for the Kubernetes manifest checks.
if command -v npm >/dev/null 2>&1 && [ -f deploy/tools/package-lock.json ]; then
  stamp=deploy/tools/node_modules/.kbqa-$(sha256sum deploy/tools/package-lock.json | cut -c1-16)
  [ -f "$stamp" ] || { npm ci --prefix deploy/tools --no-audit --no-fund --loglevel=error && touch "$stamp"; }
fi
