#!/usr/bin/env bash
# Servers the tests need that ship as Go source: builds them through the Go module proxy, pinned to the versions
# deploy/compose.yaml runs, and caches the binaries so a rerun is instant.
#
#   bash scripts/build-go-servers.sh          # build what is missing, print the binary paths
#   bash scripts/build-go-servers.sh --path   # only print where the binaries are (or would be)
#
# Binaries: ${XDG_CACHE_HOME:-$HOME/.cache}/kbqa/bin/weaviate-<version> and minio-<version>.
# Needs Go >= 1.24 (GOPROXY as configured).
#
#   bash scripts/build-go-servers.sh --path minio   # where the MinIO binary is (or would be)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/kbqa/bin
# The version is the one the Compose file pins, so the tests meet the server production runs.
WEAVIATE_VERSION=$(sed -nE 's#^\s*image:\s*cr\.weaviate\.io/semitechnologies/weaviate:([0-9.]+)\s*$#\1#p' deploy/compose.yaml | head -n1)
WEAVIATE_VERSION=${WEAVIATE_VERSION:?deploy/compose.yaml names no weaviate image version}
WEAVIATE_BIN=$BIN_DIR/weaviate-$WEAVIATE_VERSION
# MinIO tags its releases RELEASE.<date>, which are not semver, so the module proxy serves only pseudo-versions;
# this is the newest it serves (the source of the community build; deploy/compose.yaml pins the matching image).
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_BIN=$BIN_DIR/minio-$MINIO_VERSION

log() { echo "build-go-servers: $*" >&2; }

if [ "${1:-}" = "--path" ]; then
  case "${2:-weaviate}" in
    minio) echo "$MINIO_BIN" ;;
    *) echo "$WEAVIATE_BIN" ;;
  esac
  exit 0
fi

build_weaviate() {
  if [ -x "$WEAVIATE_BIN" ]; then echo "$WEAVIATE_BIN"; return; fi
  if ! command -v go >/dev/null 2>&1; then
    log "weaviate $WEAVIATE_VERSION is not built and Go is not installed: install Go >= 1.24, or set KBQA_TEST_WEAVIATE_URL"
    return 1
  fi
  mkdir -p "$BIN_DIR"
  local work start
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' RETURN
  start=$(date +%s)
  log "building weaviate $WEAVIATE_VERSION from source (first run only; several minutes)"
  # The module cache copy is read-only; build in a writable copy so go.sum updates and build outputs can land.
  local src
  src=$(go mod download -json "github.com/weaviate/weaviate@v$WEAVIATE_VERSION" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
  cp -r "$src" "$work/src"
  chmod -R u+w "$work/src"
  (cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$work/weaviate-server" ./cmd/weaviate-server)
  mv "$work/weaviate-server" "$WEAVIATE_BIN.tmp" && mv "$WEAVIATE_BIN.tmp" "$WEAVIATE_BIN"
  log "weaviate $WEAVIATE_VERSION built in $(( $(date +%s) - start )) s: $WEAVIATE_BIN"
  echo "$WEAVIATE_BIN"
}

build_minio() {
  if [ -x "$MINIO_BIN" ]; then echo "$MINIO_BIN"; return; fi
  if ! command -v go >/dev/null 2>&1; then
    log "minio $MINIO_VERSION is not built and Go is not installed: install Go >= 1.24, or set KBQA_TEST_S3_URL"
    return 1
  fi
  mkdir -p "$BIN_DIR"
  local work start src
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' RETURN
  start=$(date +%s)
  log "building minio $MINIO_VERSION from source (first run only; several minutes)"
  src=$(go mod download -json "github.com/minio/minio@$MINIO_VERSION" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
  cp -r "$src" "$work/src"
  chmod -R u+w "$work/src"
  (cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$work/minio" .)
  mv "$work/minio" "$MINIO_BIN.tmp" && mv "$MINIO_BIN.tmp" "$MINIO_BIN"
  log "minio $MINIO_VERSION built in $(( $(date +%s) - start )) s: $MINIO_BIN"
  echo "$MINIO_BIN"
}

case "${1:-all}" in
  weaviate) build_weaviate ;;
  minio) build_minio ;;
  *) build_weaviate; build_minio ;;
esac
