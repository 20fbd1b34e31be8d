#!/usr/bin/env bash
# Run the whole test suite from a clean checkout: install what it needs, build, test.
#   scripts/test.sh            everything (Rust unit tests, then the pytest suite)
#   scripts/test.sh -k json    extra arguments go to pytest (and skip the fuzz smoke run)
# FUZZ_SMOKE_SECS (default 20) is how long each fuzz target runs at the end; 0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
# setuptools and wheel: python/tests pip-installs the `leash` package offline into a
# fresh virtualenv (no build isolation, no index).
if ! "$PY" -c "import pytest, xdist, setuptools, wheel" 2>/dev/null; then
  echo "== installing Python test requirements"
  "$PY" -m pip install --quiet -r tests/requirements.txt
fi

# strace lets the file tests observe that copies and renames refuse existing
# destinations atomically (they are skipped, saying so, when it cannot be installed).
if ! command -v strace >/dev/null 2>&1; then
  echo "== installing strace"
  SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
  ($SUDO apt-get install -y -qq strace >/dev/null 2>&1 || { $SUDO apt-get update -qq >/dev/null 2>&1 && $SUDO apt-get install -y -qq strace >/dev/null 2>&1; }) \
    || echo "   (strace could not be installed; the strace-based checks will be skipped)"
fi

# apache2 lets tests/test_cgi.py run leash-cgi behind a real web server (mod_cgi with
# prefork, mod_cgid with event, mod_actions, mod_reqtimeout: all in Debian's apache2);
# without it those tests are skipped, saying so.
if ! command -v apache2 >/dev/null 2>&1 && [ ! -x /usr/sbin/apache2 ]; then
  echo "== installing apache2"
  SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
  APT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get"
  ($APT install -y -qq --no-install-recommends apache2 >/dev/null 2>&1 || { $APT update -qq >/dev/null 2>&1 && $APT install -y -qq --no-install-recommends apache2 >/dev/null 2>&1; }) \
    || echo "   (apache2 could not be installed; the Apache CGI tests will be skipped)"
fi

# postgresql (initdb, postgres, psql) and openssl let tests/test_db_pg.py and
# tests/test_scaleout.py start a private PostgreSQL server (with a test CA for TLS);
# without them those tests are skipped, saying so. Debian's package starts no cluster
# the tests need: they run their own in a temporary directory.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1; then
  echo "== installing postgresql"
  SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
  APT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get"
  ($APT install -y -qq --no-install-recommends postgresql openssl >/dev/null 2>&1 || { $APT update -qq >/dev/null 2>&1 && $APT install -y -qq --no-install-recommends postgresql openssl >/dev/null 2>&1; }) \
    || echo "   (postgresql could not be installed; the PostgreSQL tests will be skipped)"
fi

# nginx lets tests/test_fastcgi.py run `leash-cgi --fastcgi` behind fastcgi_pass (Apache's
# mod_proxy_fcgi, the other web server there, is in apache2); skipped, saying so, without.
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  echo "== installing nginx"
  SUDO=""; [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
  APT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get"
  ($APT install -y -qq --no-install-recommends nginx >/dev/null 2>&1 || { $APT update -qq >/dev/null 2>&1 && $APT install -y -qq --no-install-recommends nginx >/dev/null 2>&1; }) \
    || echo "   (nginx could not be installed; the nginx FastCGI tests will be skipped)"
fi

echo "== module cycles (scripts/module-cycles.py; fails only on a cycle not listed as allowed)"
"$PY" scripts/module-cycles.py --check
echo "== cargo fmt --check (the crate and the fuzz crate)"
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --check
  (cd fuzz && cargo fmt --check)
else
  echo "   (rustfmt is not installed; the format check is skipped)"
fi
echo "== cargo build --release"
cargo build --release --locked
echo "== cargo test (unit tests)"
cargo test --release --locked --quiet --workspace
echo "== pytest (integration tests and the Python package's tests, real binary)"
export LEASH_BIN="$PWD/target/release/leash"
"$PY" -m pytest -q -n "${PYTEST_WORKERS:-2}" tests python/tests "$@"
if [ $# -eq 0 ] && [ "${FUZZ_SMOKE_SECS:-20}" != 0 ]; then
  echo "== fuzz smoke runs (${FUZZ_SMOKE_SECS:-20} s per target; fuzz/README.md)"
  scripts/fuzz.sh smoke "${FUZZ_SMOKE_SECS:-20}"
fi
