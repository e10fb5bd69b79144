#!/usr/bin/env bash
# A real authenticating Python package index for the pip-through-the-front tests (issue 25): Debian's
# nginx (nginx-light, from scripts/setup-host.sh) on loopback serving a PEP 503 "simple" tree behind
# `auth_basic` (one htpasswd user; every path needs it, a request without it is a real 401). It holds
# acme-private-utils 1.0.0, a pure-Python wheel and sdist built here by Debian's python3 with
# setuptools' own build backend: nothing is downloaded. The project page links the wheel by an
# absolute URL at the index (as PyPI and Artifactory do) and the sdist by a relative one (as devpi
# and pypiserver do), so a front has to handle both.
# Idempotent: an index that answers 401 on its simple page is left as it is.
#
# Writes $DIR/url (the index's simple URL), $DIR/username and $DIR/token (0600: the password, what
# a company's PYPI_ACME secret would hold). The tests read them (pip-index.test-support.ts).
set -euo pipefail

DIR="${DOCKHAND_TEST_PYINDEX_DIR:-/var/tmp/pyindex}"
PORT="${DOCKHAND_TEST_PYINDEX_PORT:-8741}"
ORIGIN="http://127.0.0.1:$PORT"
URL="$ORIGIN/simple/"
USER_NAME=dockhand-ci
PROJECT=acme-private-utils
PYTHON=/usr/bin/python3
NGINX=/usr/sbin/nginx

[[ -x "$NGINX" ]] || { echo "[needs/pyindex] $NGINX is missing: run 'sudo bash scripts/setup-host.sh' (it installs nginx-light)" >&2; exit 1; }
"$PYTHON" -c 'import setuptools.build_meta, wheel' 2>/dev/null || { echo "[needs/pyindex] Debian's python3 lacks setuptools or wheel: run 'sudo bash scripts/setup-host.sh' (python3-setuptools, python3-wheel)" >&2; exit 1; }

# nginx's workers read the tree and the htpasswd file (hashed) as an unprivileged user: those are
# world-readable; the token file is not.
mkdir -p "$DIR/www/simple/$PROJECT" "$DIR/www/packages" "$DIR/tmp"
chmod 0755 "$DIR" "$DIR/www" "$DIR/www/simple" "$DIR/www/simple/$PROJECT" "$DIR/www/packages"
if [[ ! -s "$DIR/token" ]]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$DIR/token")
fi
TOKEN="$(cat "$DIR/token")"
# {SHA} is one of the schemes nginx's auth_basic reads (base64 of the SHA-1 of the password).
printf '%s:{SHA}%s\n' "$USER_NAME" "$(printf '%s' "$TOKEN" | "$PYTHON" -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha1(sys.stdin.buffer.read()).digest()).decode())')" > "$DIR/htpasswd"
chmod 0644 "$DIR/htpasswd"

# The private package, built once with setuptools' backend (no pip, no index, no isolation).
if ! ls "$DIR/www/packages/"acme_private_utils-1.0.0-py3-none-any.whl >/dev/null 2>&1; then
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/acme_private_utils"
  cat > "$scratch/pyproject.toml" <<'TOML'
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "acme-private-utils"
version = "1.0.0"
description = "Dockhand's private-index test package"
requires-python = ">=3.8"

[tool.setuptools]
packages = ["acme_private_utils"]
TOML
  cat > "$scratch/acme_private_utils/__init__.py" <<'PY'
def shout(text):
    return str(text).upper() + "!"
PY
  (cd "$scratch" && "$PYTHON" -c 'import setuptools.build_meta as b; b.build_wheel("dist"); b.build_sdist("dist")' >/dev/null 2>&1)
  cp "$scratch/dist/"* "$DIR/www/packages/"
fi
WHEEL="$(cd "$DIR/www/packages" && ls acme_private_utils-1.0.0-py3-none-any.whl)"
SDIST="$(cd "$DIR/www/packages" && ls acme[-_]private[-_]utils-1.0.0.tar.gz)"
sha() { sha256sum "$DIR/www/packages/$1" | cut -d' ' -f1; }
cat > "$DIR/www/simple/index.html" <<HTML
<!DOCTYPE html>
<html><body><a href="$PROJECT/">$PROJECT</a></body></html>
HTML
cat > "$DIR/www/simple/$PROJECT/index.html" <<HTML
<!DOCTYPE html>
<html><body>
<a href="$ORIGIN/packages/$WHEEL#sha256=$(sha "$WHEEL")" data-requires-python="&gt;=3.8">$WHEEL</a>
<a href="../../packages/$SDIST#sha256=$(sha "$SDIST")" data-requires-python="&gt;=3.8">$SDIST</a>
</body></html>
HTML
chmod 0644 "$DIR/www/simple/index.html" "$DIR/www/simple/$PROJECT/index.html" "$DIR/www/packages/"*

cat > "$DIR/nginx.conf" <<CONF
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/error.log warn;
events { worker_connections 64; }
http {
  access_log $DIR/access.log;
  client_body_temp_path $DIR/tmp/body;
  proxy_temp_path $DIR/tmp/proxy;
  fastcgi_temp_path $DIR/tmp/fastcgi;
  uwsgi_temp_path $DIR/tmp/uwsgi;
  scgi_temp_path $DIR/tmp/scgi;
  types { text/html html; application/octet-stream whl gz; }
  server {
    listen 127.0.0.1:$PORT;
    root $DIR/www;
    index index.html;
    auth_basic "acme python index";
    auth_basic_user_file $DIR/htpasswd;
  }
}
CONF

status() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" "$URL" || true; }
if [[ "$(status)" != 401 ]]; then
  [[ -s "$DIR/nginx.pid" ]] && kill "$(cat "$DIR/nginx.pid")" 2>/dev/null || true
  "$NGINX" -c "$DIR/nginx.conf" -e "$DIR/error.log" 2>>"$DIR/error.log"
  for _ in $(seq 1 50); do [[ "$(status)" == 401 ]] && break; sleep 0.1; done
fi
[[ "$(status)" == 401 ]] || { tail -n 20 "$DIR/error.log" >&2; echo "[needs/pyindex] nginx did not answer 401 on $URL" >&2; exit 1; }
[[ "$(status -u "$USER_NAME:$TOKEN")" == 200 ]] || { echo "[needs/pyindex] $URL refused the test user" >&2; exit 1; }
# The htpasswd file is read per request: a token rotated above needs no reload.
printf '%s' "$URL" > "$DIR/url"
printf '%s' "$USER_NAME" > "$DIR/username"
echo "Python index (nginx, auth_basic) on $URL with $PROJECT 1.0.0 (data $DIR)"
