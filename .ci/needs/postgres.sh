#!/usr/bin/env bash
# A private PostgreSQL for the Postgres store's tests: Debian's `postgresql` package (installed when
# missing), a cluster initialised as the `postgres` user in a scratch directory, listening on
# loopback only (and a Unix socket in the same directory), trust authentication because nothing
# but this machine can reach it. Idempotent: a running server is left as it is.
#
# Writes the connection URL to $DOCKHAND_TEST_PG_DIR/url; the tests read it from there (or from
# DOCKHAND_TEST_DATABASE_URL when that is set, to use another server).
set -euo pipefail

DIR="${DOCKHAND_TEST_PG_DIR:-/var/tmp/dockhand-postgres}"
PORT="${DOCKHAND_TEST_PG_PORT:-55432}"

find_bin() {
  local candidate
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$candidate/initdb" ] && [ -x "$candidate/pg_ctl" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

BIN="$(find_bin || true)"
if [ -z "$BIN" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "[needs/postgres] PostgreSQL is not installed; run 'sudo apt-get install postgresql' once" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  BIN="$(find_bin)"
fi

# initdb refuses to run as root: the cluster belongs to the `postgres` user (the package creates it).
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

mkdir -p "$DIR"
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$DIR"; fi
chmod 0755 "$DIR"

if [ ! -s "$DIR/data/PG_VERSION" ]; then
  rm -rf "$DIR/data"
  as_owner "$BIN/initdb" -D "$DIR/data" --username=postgres --auth=trust --encoding=UTF8 --no-locale >"$DIR/initdb.log" 2>&1 \
    || { cat "$DIR/initdb.log" >&2; exit 1; }
fi

if ! as_owner "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
  # fsync off: a scratch cluster for tests; a crash of the machine loses nothing anyone keeps.
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
    -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off" start >/dev/null \
    || { tail -n 30 "$DIR/server.log" >&2; exit 1; }
fi

URL="postgres://postgres@127.0.0.1:$PORT/postgres"
for _ in $(seq 1 50); do
  if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then break; fi
  sleep 0.2
done
"$BIN/pg_isready" -h 127.0.0.1 -p "$PORT" >/dev/null || { echo "[needs/postgres] server on port $PORT is not ready" >&2; exit 1; }
echo "$URL" >"$DIR/url"
echo "[needs/postgres] $("$BIN/postgres" --version) at $URL" >&2
