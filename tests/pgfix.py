"""A private PostgreSQL server for the db.* tests (test_db_pg.py, test_scaleout.py).

The Debian `postgresql` package provides the binaries (scripts/test.sh installs it when
missing). The fixture runs `initdb` into a temporary directory and starts `postgres` on
a private Unix-socket directory and a free loopback TCP port, with TLS on (a test CA
made with openssl). Running as root, the server runs as the `postgres` user (through
`runuser`). Tests skip, saying why, when any of this is impossible.

Roles: `postgres` (superuser, trust over the socket), `app` with password `s3cret`
(scram-sha-256 over TCP) owning the database `app`, and a database `other`.
"""
import glob
import os
import pathlib
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

PASSWORD = "s3cret"


def _bin(name):
    hits = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return hits[-1] if hits else shutil.which(name)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Pg:
    def __init__(self, base, port, sock, as_user, certs):
        self.base, self.port, self.sock, self.as_user, self.certs = base, port, sock, as_user, certs
        self.proc = None

    def wrap(self, cmd):
        if self.as_user:
            return ["runuser", "-u", self.as_user, "--", *cmd]
        return cmd

    def psql(self, sql, db="postgres", check=True):
        """Run SQL as the superuser over the socket; stdout as text."""
        r = subprocess.run(
            self.wrap([_bin("psql"), "-X", "-q", "-A", "-t", "-h", str(self.sock), "-p", str(self.port),
                       "-U", "postgres", "-d", db, "-v", "ON_ERROR_STOP=1", "-c", sql]),
            capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError(f"psql failed: {r.stderr}")
        return r.stdout

    def url(self, user="app", db="app", password=PASSWORD, host="127.0.0.1", query=""):
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@{host}:{self.port}/{db}{query}"

    @property
    def scope(self):
        return f"--allow-db=postgresql://127.0.0.1:{self.port}/app"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _make_certs(d):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
             "-subj", "/CN=Leash PG Test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-subj", "/CN=localhost",
             "-out", "server.csr", cwd=d)
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                                  "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "30", "-sha256", "-extfile", "server.ext", "-out", "server.pem", cwd=d)
    # A CA the server's certificate is not signed by.
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.pem",
             "-days", "30", "-subj", "/CN=Other CA", cwd=d)


def start_pg():
    """Start the server (or call pytest.skip saying why)."""
    initdb, postgres = _bin("initdb"), _bin("postgres")
    if not initdb or not postgres or not _bin("psql"):
        pytest.skip("PostgreSQL is not installed (scripts/test.sh installs the Debian postgresql package)")
    if not shutil.which("openssl"):
        pytest.skip("the openssl command line is needed to make test certificates")
    as_user = None
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no `postgres` user to run the server as")
        if not shutil.which("runuser"):
            pytest.skip("running as root and `runuser` is missing")
        as_user = "postgres"
    base = pathlib.Path(tempfile.mkdtemp(prefix="leash-pg-"))
    os.chmod(base, 0o755)
    data, sock, certs = base / "data", base / "sock", base / "certs"
    for d in (sock, certs):
        d.mkdir()
    _make_certs(certs)
    if as_user:
        for p in [base, sock, certs, *certs.iterdir()]:
            os.chown(p, pw.pw_uid, pw.pw_gid)
    os.chmod(certs / "server.key", 0o600)
    (base / "pw").write_text("postgres-pw\n")
    if as_user:
        os.chown(base / "pw", pw.pw_uid, pw.pw_gid)
    r = subprocess.run(
        [*(["runuser", "-u", as_user, "--"] if as_user else []), initdb, "-D", str(data), "-U", "postgres",
         "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={base / 'pw'}", "-E", "UTF8",
         "--locale=C.UTF-8", "--no-sync"],
        capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"initdb failed: {r.stderr[-500:]}")
    port = _free_port()
    pg = Pg(base, port, sock, as_user, certs)
    log = open(base / "log", "wb")
    pg.proc = subprocess.Popen(
        pg.wrap([postgres, "-D", str(data), "-k", str(sock), "-h", "127.0.0.1", "-p", str(port),
                 "-c", "ssl=on", "-c", f"ssl_cert_file={certs / 'server.pem'}",
                 "-c", f"ssl_key_file={certs / 'server.key'}", "-c", "fsync=off", "-c", "max_connections=100",
                 "-c", "shared_buffers=16MB", "-c", "log_min_messages=fatal"]),
        stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            if pg.psql("SELECT 1", check=False).strip() == "1":
                break
        except OSError:
            pass
        if pg.proc.poll() is not None or time.time() > deadline:
            pg.stop()
            text = (base / "log").read_text(errors="replace")[-800:]
            shutil.rmtree(base, ignore_errors=True)
            pytest.skip(f"postgres did not start: {text}")
        time.sleep(0.2)
    pg.psql(f"CREATE ROLE app LOGIN PASSWORD '{PASSWORD}'")
    pg.psql("CREATE DATABASE app OWNER app")
    pg.psql("CREATE DATABASE other OWNER app")
    return pg


def stop_pg(pg):
    pg.stop()
    shutil.rmtree(pg.base, ignore_errors=True)


@pytest.fixture(scope="module")
def pg():
    server = start_pg()
    yield server
    stop_pg(server)
