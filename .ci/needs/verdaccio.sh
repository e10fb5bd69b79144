#!/usr/bin/env bash
# A real authenticating npm registry for the private-registry tests (issue 25): Verdaccio 6 (runs
# on Node 20) from a cached tool folder, on loopback only, htpasswd users with self-registration
# off, `access: $authenticated` on everything and no uplink (it proxies nothing: a package it does
# not hold is a 404, never a fetch from npmjs). The set-up publishes @acme/private-utils once.
# Idempotent: a running registry that answers is left as it is.
#
# Writes $DIR/url (the registry URL) and $DIR/token (0600: the test user's bearer token, what a
# company's NPM_ACME secret would hold). The tests read both (private-registry.test-support.ts).
set -euo pipefail

VERDACCIO_VERSION=6.8.0
TOOLS_DIR="${DOCKHAND_TOOLS_DIR:-/var/cache/dockhand-tools}"
TARGET="$TOOLS_DIR/verdaccio-$VERDACCIO_VERSION"
DIR="${DOCKHAND_TEST_VERDACCIO_DIR:-/var/tmp/dockhand-verdaccio}"
PORT="${DOCKHAND_TEST_VERDACCIO_PORT:-8951}"
URL="http://127.0.0.1:$PORT/"
USER_NAME=dockhand-ci
PACKAGE=@acme/private-utils

if [[ ! -f "$TARGET/.installed" || ! -f "$TARGET/node_modules/verdaccio/bin/verdaccio" ]]; then
  rm -rf "$TARGET"
  mkdir -p "$TARGET"
  cd "$TARGET"
  echo '{"name":"dockhand-verdaccio-tool","private":true}' > package.json
  npm install --no-audit --no-fund --ignore-scripts "verdaccio@$VERDACCIO_VERSION" >/dev/null
  test -f node_modules/verdaccio/bin/verdaccio
  touch .installed
  cd - >/dev/null
fi

mkdir -p "$DIR/storage"
chmod 0700 "$DIR"
PASSWORD_FILE="$DIR/password"
if [[ ! -s "$PASSWORD_FILE" ]]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$PASSWORD_FILE")
fi
PASSWORD="$(cat "$PASSWORD_FILE")"
# {SHA} entries are what `htpasswd -s` writes; Verdaccio's htpasswd plugin reads them.
if ! grep -q "^$USER_NAME:" "$DIR/htpasswd" 2>/dev/null; then
  sha="$(node -e 'process.stdout.write(require("crypto").createHash("sha1").update(process.argv[1]).digest("base64"))' "$PASSWORD")"
  printf '%s:{SHA}%s\n' "$USER_NAME" "$sha" >> "$DIR/htpasswd"
fi

cat > "$DIR/config.yaml" <<YAML
storage: $DIR/storage
auth:
  htpasswd:
    file: $DIR/htpasswd
    max_users: -1
uplinks: {}
packages:
  '@acme/*':
    access: \$authenticated
    publish: \$authenticated
    unpublish: \$authenticated
  '**':
    access: \$authenticated
    publish: \$authenticated
    unpublish: \$authenticated
listen: 127.0.0.1:$PORT
log: { type: file, path: $DIR/verdaccio.log, level: warn }
YAML

# HTTP through Node (no curl on a fresh machine): exit 0 when GET $1 (with bearer $2) answers 2xx.
http_ok() { node -e 'fetch(process.argv[1], { headers: process.argv[2] ? { authorization: "Bearer " + process.argv[2] } : {}, signal: AbortSignal.timeout(5000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$1" "${2:-}"; }
answers() { http_ok "${URL}-/ping"; }
if ! answers; then
  setsid nohup node "$TARGET/node_modules/verdaccio/bin/verdaccio" --config "$DIR/config.yaml" >"$DIR/stdout.log" 2>&1 < /dev/null &
  echo $! > "$DIR/pid"
  for _ in $(seq 1 100); do answers && break; sleep 0.2; done
  answers || { tail -n 30 "$DIR/stdout.log" "$DIR/verdaccio.log" >&2 2>/dev/null; echo "[needs/verdaccio] Verdaccio did not answer on $URL" >&2; exit 1; }
fi

# The test user's token: logging in (a PUT of the CouchDB user document, as the user: with
# self-registration off an anonymous PUT is refused) answers one.
token="$(node -e '
const [url, user, password] = process.argv.slice(1);
fetch(url + "-/user/org.couchdb.user:" + user, {
  method: "PUT",
  headers: { "content-type": "application/json", authorization: "Basic " + Buffer.from(user + ":" + password).toString("base64") },
  body: JSON.stringify({ name: user, password }),
  signal: AbortSignal.timeout(10000),
}).then(async (r) => {
  const body = await r.json();
  if (!r.ok || !body.token) { console.error("[needs/verdaccio] login refused:", r.status, JSON.stringify(body)); process.exit(1); }
  process.stdout.write(body.token);
}, (error) => { console.error("[needs/verdaccio] login failed:", error.message); process.exit(1); });
' "$URL" "$USER_NAME" "$PASSWORD")"
(umask 077; printf '%s' "$token" > "$DIR/token")
printf '%s' "$URL" > "$DIR/url"

# The private package, published once (a registry that has it answers its document).
if ! http_ok "${URL}@acme%2fprivate-utils" "$token"; then
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/pkg"
  cat > "$scratch/pkg/package.json" <<'JSON'
{"name":"@acme/private-utils","version":"1.0.0","description":"Dockhand's private-registry test package","main":"index.js","license":"UNLICENSED"}
JSON
  echo "exports.shout = (text) => String(text).toUpperCase() + '!';" > "$scratch/pkg/index.js"
  (umask 077; printf '//127.0.0.1:%s/:_authToken=%s\n' "$PORT" "$token" > "$scratch/npmrc")
  (cd "$scratch/pkg" && npm publish --registry "$URL" --userconfig "$scratch/npmrc" --no-audit >/dev/null)
fi
echo "Verdaccio $VERDACCIO_VERSION on $URL with $PACKAGE (data $DIR)"
