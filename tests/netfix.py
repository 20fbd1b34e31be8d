"""Servers on loopback for the network tests: HTTP, HTTPS (with a test CA made by the
`openssl` command line), TCP (silent, line, TLS echo), and a small UDP DNS server.

Every server runs in a daemon thread of the pytest process, listens on 127.0.0.1 on a
port the kernel picks, and stops when its fixture ends. Nothing here reaches beyond this
machine.
"""
import http.server
import json
import pathlib
import shutil
import socket
import socketserver
import ssl
import struct
import subprocess
import threading
import time

import pytest

from conftest import run

NET = ["--allow-network"]
LISTEN = ["--allow-network", "--allow-listen"]


def leash_net(script, code, *args, opts=(), timeout=30, **kw):
    """Run `code` with --allow-network (plus `opts`)."""
    return script(code, *args, opts=NET + list(opts), timeout=timeout, **kw)


# ---------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------


class Handler(http.server.BaseHTTPRequestHandler):
    """Routes: /hello, /echo, /redirect, /status/N, /big?n=N, /bigheader?n=N, /repeat."""

    server_version = "TestServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):  # quiet
        pass

    def _send(self, status, body=b"", headers=()):
        if status in (204, 304):
            body = b""
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _route(self):
        self.server.hits += 1
        path, _, query = self.path.partition("?")
        q = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        n = int(q.get("n", "0"))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if path == "/hello":
            return self._send(200, b"hello", [("X-Test", "yes")])
        if path == "/repeat":
            return self._send(200, b"r", [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("X-Mixed-Case", "v")])
        if path == "/echo":
            info = {"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body.decode("latin-1")}
            return self._send(200, json.dumps(info).encode(), [("Content-Type", "application/json")])
        if path == "/redirect":
            return self._send(302, b"moved", [("Location", "/hello")])
        if path.startswith("/status/"):
            return self._send(int(path.split("/")[2]), b"status body")
        if path == "/big":
            return self._send(200, b"x" * n)
        if path == "/bigheader":
            return self._send(200, b"ok", [("X-Big", "h" * n)])
        return self._send(404, b"not found")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _route


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):  # a client that gave up: not news
        pass


def _serve(srv):
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    return t


@pytest.fixture(scope="module")
def http_server():
    srv = Server(("127.0.0.1", 0), Handler)
    srv.hits = 0
    _serve(srv)
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()


# ---------------------------------------------------------------------------
# Certificates (openssl command line) and HTTPS
# ---------------------------------------------------------------------------


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _leaf(d, name, san):
    """A key and certificate for `san`, signed by the CA in `d`."""
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-subj", f"/CN={name}",
             "-out", f"{name}.csr", cwd=d)
    (d / f"{name}.ext").write_text(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n"
                                   "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "30", "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=d)


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    """A test CA, a certificate for localhost and 127.0.0.1, and one for another name."""
    if not shutil.which("openssl"):
        pytest.skip("the openssl command line is needed to make test certificates")
    d = tmp_path_factory.mktemp("certs")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
             "-subj", "/CN=Leash Test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    _leaf(d, "localhost", "DNS:localhost,IP:127.0.0.1")
    _leaf(d, "wrong", "DNS:wrong.example")
    (d / "empty.pem").write_text("no certificates here\n")
    return d


def _tls_ctx(certs, name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs / f"{name}.pem", certs / f"{name}.key")
    return ctx


def _https(certs, name):
    srv = Server(("127.0.0.1", 0), Handler)
    srv.hits = 0
    srv.socket = _tls_ctx(certs, name).wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    srv.port = srv.server_address[1]

    orig = srv.get_request

    def get_request():
        conn, addr = orig()
        conn.settimeout(5)
        try:
            conn.do_handshake()
        except (ssl.SSLError, OSError):
            conn.close()
            raise OSError("handshake failed")
        conn.settimeout(None)
        return conn, addr

    srv.get_request = get_request
    _serve(srv)
    return srv


@pytest.fixture(scope="module")
def https_server(certs):
    srv = _https(certs, "localhost")
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def https_wrong(certs):
    srv = _https(certs, "wrong")
    yield srv
    srv.shutdown()
    srv.server_close()


# ---------------------------------------------------------------------------
# Raw TCP servers
# ---------------------------------------------------------------------------


class TcpServer:
    """Accepts connections and runs `fn(conn)` for each in a thread. `accepted` counts the
    connections the accept loop has taken so far; the loop runs in its own thread, so a
    client that connected and went away may not be counted yet (under load it often is
    not): `settled()` gives the exact count of every connection made before it."""

    def __init__(self, fn, tls=None):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.fn = fn
        self.tls = tls
        self.conns = []
        self.accepted = 0
        # settled()'s own connections (their local addresses), not counted.
        self._probes = set()
        self._cond = threading.Condition()
        self.stop = False
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while not self.stop:
            try:
                c, peer = self.sock.accept()
            except OSError:
                return
            with self._cond:
                if peer in self._probes:
                    self._probes.discard(peer)
                    self._cond.notify_all()
                    c.close()
                    continue
                self.accepted += 1
            self.conns.append(c)
            threading.Thread(target=self._one, args=(c,), daemon=True).start()

    def _one(self, c):
        try:
            if self.tls is not None:
                c.settimeout(5)
                c = self.tls.wrap_socket(c, server_side=True)
                c.settimeout(None)
                self.conns.append(c)
            self.fn(c)
        except (OSError, ssl.SSLError):
            pass

    def settled(self):
        """The number of connections accepted, once every connection made before this call
        has been accepted: a probe connection of its own joins the listen queue behind
        them (the kernel hands completed connections to accept() in the order they
        completed) and is waited for; the probe itself is not counted."""
        probe = socket.socket()
        try:
            probe.bind(("127.0.0.1", 0))
            me = probe.getsockname()
            with self._cond:
                self._probes.add(me)
            probe.connect(("127.0.0.1", self.port))
            with self._cond:
                # A guard against a dead accept loop, not a timing assertion.
                if not self._cond.wait_for(lambda: me not in self._probes, timeout=120):
                    raise RuntimeError("the test server never accepted its probe connection")
                return self.accepted
        finally:
            probe.close()

    def close(self):
        self.stop = True
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


def silent(conn):
    """Never says anything; holds the connection until the test ends."""
    time.sleep(60)


def echo_lines(conn):
    """Echoes every line back as `echo: LINE`."""
    f = conn.makefile("rwb")
    for line in f:
        f.write(b"echo: " + line)
        f.flush()


@pytest.fixture
def tcp_server():
    """tcp_server(fn, tls=None) -> TcpServer; all are closed at the end of the test."""
    made = []

    def make(fn, tls=None):
        s = TcpServer(fn, tls)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


# ---------------------------------------------------------------------------
# DNS over UDP
# ---------------------------------------------------------------------------


def _qname(msg, off):
    labels = []
    while True:
        n = msg[off]
        off += 1
        if n == 0:
            return ".".join(labels).lower(), off
        labels.append(msg[off:off + n].decode())
        off += n


class DnsServer:
    """Answers A and AAAA queries from `records` ({name: [addresses]}); an unknown name
    is NXDOMAIN; a name in `silent` is never answered."""

    def __init__(self, records, silent=()):
        self.records = {k.lower().rstrip("."): v for k, v in records.items()}
        self.silent = {s.lower() for s in silent}
        self.queries = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                msg, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            try:
                reply = self._answer(msg)
            except Exception:  # a query we do not understand: no answer
                continue
            if reply is not None:
                self.sock.sendto(reply, peer)

    def _answer(self, msg):
        qid, flags, qd = struct.unpack(">HHH", msg[:6])
        name, off = _qname(msg, 12)
        qtype, qclass = struct.unpack(">HH", msg[off:off + 4])
        self.queries.append((name, qtype))
        if name in self.silent:
            return None
        question = msg[12:off + 4]
        rd = flags & 0x0100
        if name not in self.records:
            return struct.pack(">HHHHHH", qid, 0x8000 | rd | 0x0080 | 3, 1, 0, 0, 0) + question
        answers = []
        for a in self.records[name]:
            fam = socket.AF_INET6 if ":" in a else socket.AF_INET
            t = 28 if fam == socket.AF_INET6 else 1
            if t != qtype:
                continue
            data = socket.inet_pton(fam, a)
            answers.append(struct.pack(">HHHIH", 0xC00C, t, 1, 60, len(data)) + data)
        head = struct.pack(">HHHHHH", qid, 0x8000 | rd | 0x0080, 1, len(answers), 0, 0)
        return head + question + b"".join(answers)

    def close(self):
        self.sock.close()


@pytest.fixture
def dns_server():
    made = []

    def make(records, silent=()):
        s = DnsServer(records, silent)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


__all__ = [
    "NET", "LISTEN", "leash_net", "http_server", "https_server", "https_wrong", "certs", "tcp_server",
    "dns_server", "silent", "echo_lines", "free_port", "run", "_tls_ctx",
]
