#!/usr/bin/env bash
# PostgreSQL and Redis for the tests, on loopback. Installs them from Debian's packages when missing (as root), starts
# a private throw-away instance of each (trust auth, no persistence) unless one already answers, and writes the URLs
# the tests read to .cache/test-services.env. Idempotent: a second run reuses what the first one started.
#
#   bash scripts/test-services.sh          # ensure both are up, print the env file
#   bash scripts/test-services.sh stop     # stop the instances this script started
#
# Set KBQA_TEST_PG_URL / KBQA_TEST_REDIS_URL to use servers of your own; this script then leaves that one alone.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=${KBQA_TEST_SERVICES_DIR:-/var/tmp/kbqa-test-services-$(id -u)}
ENV_FILE=.cache/test-services.env
mkdir -p "$STATE" .cache

log() { echo "test-services: $*" >&2; }

apt_install() {
  if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    log "$1 is missing and cannot be installed here (not root or no apt-get): install it, or set the URL variable"
    return 1
  fi
  if [ ! -f "$STATE/.apt-updated" ]; then
    apt-get update -qq && touch "$STATE/.apt-updated"
  fi
  # policy-rc.d 101: the packages' own init scripts must not start system-wide servers on the default ports.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  rm -f /usr/sbin/policy-rc.d
}

free_port() {  # the preferred port if nothing listens there, else any free loopback port
  python3 - "$1" <<'EOF'
import socket, sys
def free(p):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p)); return s.getsockname()[1]
        except OSError:
            return None
print(free(int(sys.argv[1])) or free(0))
EOF
}

# --- PostgreSQL ---------------------------------------------------------------------------------------------------
pg_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

as_pg() {  # PostgreSQL refuses to run as root: run its tools as the postgres user then
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

ensure_pg() {
  if [ -n "${KBQA_TEST_PG_URL:-}" ]; then echo "$KBQA_TEST_PG_URL"; return; fi
  local bin data port
  bin=$(pg_bindir) || { apt_install postgresql >&2; bin=$(pg_bindir); }
  data="$STATE/pg"
  if [ "$(id -u)" = "0" ] && ! id postgres >/dev/null 2>&1; then
    useradd --system --home-dir "$STATE" --shell /usr/sbin/nologin postgres
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    rm -rf "$data" && mkdir -p "$data"
    [ "$(id -u)" = "0" ] && chown postgres "$data"
    as_pg "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$STATE/pg-initdb.log" 2>&1 \
      || { cat "$STATE/pg-initdb.log" >&2; exit 1; }
  fi
  if as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    port=$(cat "$STATE/pg.port")
  else
    port=$(free_port 5432)
    echo "$port" >"$STATE/pg.port"
    # Test settings: no durability (a crash only loses throw-away test databases), room for many connections.
    as_pg "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 start -o \
      "-h 127.0.0.1 -p $port -k $data -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
      >&2 || { tail -20 "$data/server.log" >&2; exit 1; }
  fi
  as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='test'" \
    | grep -q 1 || as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres test
  echo "postgresql+psycopg://postgres@127.0.0.1:$port/test"
}

# --- Redis --------------------------------------------------------------------------------------------------------
redis_answers() { [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = "PONG" ]; }

ensure_redis() {
  if [ -n "${KBQA_TEST_REDIS_URL:-}" ]; then echo "$KBQA_TEST_REDIS_URL"; return; fi
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server >&2
  local port
  if [ -f "$STATE/redis.port" ] && redis_answers "$(cat "$STATE/redis.port")"; then
    port=$(cat "$STATE/redis.port")
  else
    port=$(free_port 6379)
    mkdir -p "$STATE/redis"
    redis-server --bind 127.0.0.1 --port "$port" --daemonize yes --dir "$STATE/redis" --save "" --appendonly no \
      --pidfile "$STATE/redis.pid" --logfile "$STATE/redis.log" >&2
    for _ in $(seq 50); do redis_answers "$port" && break; sleep 0.1; done
    redis_answers "$port" || { tail -20 "$STATE/redis.log" >&2; exit 1; }
    echo "$port" >"$STATE/redis.port"
  fi
  echo "redis://127.0.0.1:$port/15"
}

stop_all() {
  local bin
  if bin=$(pg_bindir) && [ -f "$STATE/pg/PG_VERSION" ]; then as_pg "$bin/pg_ctl" -D "$STATE/pg" -m fast stop >&2 || true; fi
  if [ -f "$STATE/redis.port" ]; then redis-cli -h 127.0.0.1 -p "$(cat "$STATE/redis.port")" shutdown nosave >&2 || true; fi
  rm -f "$STATE/redis.port" "$ENV_FILE"
}

case "${1:-start}" in
  stop) stop_all ;;
  start)
    pg=$(ensure_pg)
    redis=$(ensure_redis)
    printf 'export KBQA_TEST_PG_URL=%q\nexport KBQA_TEST_REDIS_URL=%q\n' "$pg" "$redis" >"$ENV_FILE"
    cat "$ENV_FILE"
    ;;
  *) echo "usage: $0 [start|stop]" >&2; exit 2 ;;
esac
