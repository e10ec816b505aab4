#!/usr/bin/env bash
# Servers the tests need that ship as Go source: builds them through the Go module proxy, pinned to the versions
# deploy/compose.yaml runs, and caches the binaries so a rerun is instant.
#
#   bash scripts/build-go-servers.sh              # build what is missing, print the binary paths
#   bash scripts/build-go-servers.sh --path       # only print where the Weaviate binary is (or would be)
#   bash scripts/build-go-servers.sh --path dex   # only print where the Dex binary is (or would be)
#   bash scripts/build-go-servers.sh --path minio # only print where the MinIO binary is (or would be)
#   bash scripts/build-go-servers.sh weaviate     # build only one of them (weaviate, dex or minio)
#
# Binaries: ${XDG_CACHE_HOME:-$HOME/.cache}/kbqa/bin/weaviate-<version>, minio-<version> and dex-<version> (with
# dex-<version>-web/, the login page templates Dex reads at run time). Needs Go >= 1.26 (GOPROXY as configured).
#
# Dex (the OpenID Connect provider the single-sign-on tests sign in through): the module proxy serves no Dex release
# after v2.13.0 (later tags are not valid versions of the module path github.com/dexidp/dex, which never became /v2),
# and v2.13.0 predates Go modules (it pinned its dependencies with glide). scripts/dex/go.mod and go.sum pin a set of
# dependency versions that builds with today's Go (grpc 1.26 for etcd's client), and scripts/dex/current-deps.patch
# adapts two calls to the newer cockroach-go and Prometheus client APIs.
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

DEX_VERSION=v2.13.0
DEX_BIN=$BIN_DIR/dex-$DEX_VERSION

log() { echo "build-go-servers: $*" >&2; }

if [ "${1:-}" = "--path" ]; then
  case "${2:-weaviate}" in
    dex) echo "$DEX_BIN" ;;
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

build_dex() {
  if [ -x "$DEX_BIN" ] && [ -d "$DEX_BIN-web/templates" ]; then echo "$DEX_BIN"; return; fi
  if ! command -v go >/dev/null 2>&1; then
    log "dex $DEX_VERSION is not built and Go is not installed: install Go >= 1.26"
    return 1
  fi
  mkdir -p "$BIN_DIR"
  local work start src
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' RETURN
  start=$(date +%s)
  log "building dex $DEX_VERSION from source (first run only; a few minutes)"
  src=$(go mod download -json "github.com/dexidp/dex@$DEX_VERSION+incompatible" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
  cp -r "$src" "$work/src"
  chmod -R u+w "$work/src"
  cp scripts/dex/go.mod scripts/dex/go.sum "$work/src/"
  patch -s -p1 -d "$work/src" < scripts/dex/current-deps.patch
  (cd "$work/src" && CGO_ENABLED=1 go build -trimpath -ldflags "-s -w" -o "$work/dex" ./cmd/dex)
  rm -rf "$DEX_BIN-web" && cp -r "$work/src/web" "$DEX_BIN-web"
  mv "$work/dex" "$DEX_BIN.tmp" && mv "$DEX_BIN.tmp" "$DEX_BIN"
  log "dex $DEX_VERSION built in $(( $(date +%s) - start )) s: $DEX_BIN"
  echo "$DEX_BIN"
}

case "${1:-all}" in
  weaviate) build_weaviate ;;
  minio) build_minio ;;
  dex) build_dex ;;
  *) build_weaviate; build_minio; build_dex ;;
esac
