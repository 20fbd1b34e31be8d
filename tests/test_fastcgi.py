"""FastCGI: `leash-cgi --fastcgi ADDR` driven by a FastCGI client written here
(tests/fcgi_client.py: the records of the specification), then behind real web servers
(Apache 2.4 mod_proxy_fcgi with the event MPM, nginx fastcgi_pass; each skipped, saying
why, when it is not installed or cannot start).

A fresh worker per request: the tests look for what one request could leave to the next
(environment, TMPDIR files, descriptors, processes), for the statuses (404, 403, 413, 500,
502, 503, 504), the protocol's corners (GET_VALUES, multiplexing refused, ABORT_REQUEST,
unknown roles and types, keep-alive), SIGHUP and SIGTERM.
"""
import concurrent.futures
import hashlib
import os
import pathlib
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

import pytest

import fcgi_client as fc
from conftest import LEASH
from test_cgi import APACHE_HEAD, _free_port, _run_user

LEASH_CGI = LEASH.parent / "leash-cgi"

pytestmark = pytest.mark.skipif(not LEASH_CGI.exists(), reason=f"{LEASH_CGI} is not built")

PAGES = {
    "hello.lsh": 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint("hello", cgi.escape(get(cgi.query(), "who", "world")))\n',
    "form.lsh": 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint(cgi.method(), cgi.form())\n',
    "body.lsh": 'import cgi\nb = cgi.body()\ncgi.headers({"Content-Type": "text/plain"})\nprint(len(b), hash.sha256(b))\n',
    "big.lsh": 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nfor i = 1 to 4096\n  print(repeat("h", 1023))\nend\n',
    # Slow steps (a hash of 200 KB each): the deadline comes long before the step limit.
    "loop.lsh": 'x = repeat("x", 200000)\nwhile true\n  h = hash.sha256(x)\nend\n',
    "sleep.lsh": 'import cgi\nsleep(num(get(cgi.query(), "s", "1")))\ncgi.headers({"Content-Type": "text/plain"})\nprint("slept")\n',
    "fail.lsh": 'import cgi\ncgi.headers({})\nprint("SECRET-PAGE-TEXT")\nx = 1 / 0\n',
    "status.lsh": 'import cgi\ncgi.headers({"Status": 404, "Content-Type": "text/plain"})\nprint("custom not found")\n',
    "env.lsh": (
        'import cgi\ncgi.headers({"Content-Type": "text/plain"})\n'
        'for k in sort(keys(env.all()))\n  print(k)\nend\n'
    ),
    # What one request might leave to the next: a file in its TMPDIR, an environment
    # variable, a global; and which descriptors it sees open.
    "files/probe.lsh": (
        "import cgi\n"
        "q = cgi.query()\n"
        'cgi.headers({"Content-Type": "text/plain"})\n'
        't = env.get("TMPDIR")\n'
        'print("tmp-left:", file.exists(t .. "/left.txt"))\n'
        'file.write(t .. "/left.txt", "from an earlier request")\n'
        'print("env-left:", env.get("PROBE_LEFT") != nil)\n'
        'env.set("PROBE_LEFT", "1")\n'
        "fds = []\n"
        "for fd = 0 to 40\n"
        '  if file.exists("/proc/self/fd/" .. str(fd))\n'
        "    push(fds, fd)\n"
        "  end\n"
        "end\n"
        'print("fds:", fds)\n'
        'print("secret:", get(env.all(), "HTTP_X_SECRET", "-"))\n'
    ),
    # Which process served: its pid, parent and session (from /proc/self/stat), and the
    # probe's view of what an earlier request could have left.
    "files/self.lsh": (
        "import cgi\n"
        'cgi.headers({"Content-Type": "text/plain"})\n'
        'f = split(file.read("/proc/self/stat"), ") ")[1]\n'
        "w = split(f, \" \")\n"
        'print("ppid:", w[1], "session:", w[3])\n'
        't = env.get("TMPDIR")\n'
        'print("tmp-left:", file.exists(t .. "/left.txt"))\n'
        'file.write(t .. "/left.txt", "x")\n'
        'print("env-left:", env.get("PROBE_LEFT") != nil)\n'
        'env.set("PROBE_LEFT", "1")\n'
        'print("secret:", get(env.all(), "HTTP_X_SECRET", "-"))\n'
    ),
    "other.txt": "not a script\n",
}

CONF = """root = "{root}"
max_time_ms = {time_ms}
max_steps = 100000000
max_work = 10000000000000
max_body_bytes = 2000000
max_workers = {workers}
queue = {queue}
program_cache_min_age_ms = 0
{extra}
[[dir]]
path = "files"
allow = ["files"]
"""


class Server:
    def __init__(self, base, workers=4, queue=8, time_ms=1500, extra="", addr=None):
        self.base = base
        self.root = base / "www"
        for rel, text in PAGES.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_text(text)
        (self.base / "outside.lsh").write_text(PAGES["hello.lsh"])
        (self.root / "escape.lsh").symlink_to(self.base / "outside.lsh")
        self.config = base / "leash-cgi.toml"
        self.write_config(workers, queue, time_ms, extra)
        self.sock = str(base / "fcgi.sock")
        self.addr_arg = addr or f"unix:{self.sock}"
        self.addr = self.sock if addr is None else (addr.rsplit(":", 1)[0], int(addr.rsplit(":", 1)[1]))
        self.log_path = base / "server.log"
        env = {"LEASH_CGI_CONFIG": str(self.config), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        self.proc = subprocess.Popen(
            [str(LEASH_CGI), "--fastcgi", self.addr_arg],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.log_path, "wb"),
            start_new_session=True,
        )
        deadline = time.monotonic() + 15
        while True:
            try:
                fc.connect(self.addr, 1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"leash-cgi --fastcgi did not start: {self.log()}")
                time.sleep(0.02)

    def write_config(self, workers=4, queue=8, time_ms=1500, extra=""):
        # Spare workers on in every test (the default is 0), so that the isolation tests
        # go through them; a test that sets `spare_workers` itself keeps its own.
        if "spare_workers" not in extra:
            extra = "spare_workers = 2\n" + extra
        self.config.write_text(CONF.format(root=self.root, workers=workers, queue=queue, time_ms=time_ms, extra=extra))

    def log(self):
        return self.log_path.read_text(errors="replace")

    def wait_log(self, text, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.log():
                return True
            time.sleep(0.05)
        return False

    def params(self, page, query="", method="GET", **extra):
        p = {
            "GATEWAY_INTERFACE": "CGI/1.1",
            "REQUEST_METHOD": method,
            "SCRIPT_FILENAME": str(self.root / page),
            "SCRIPT_NAME": "/" + page,
            "QUERY_STRING": query,
            "SERVER_PROTOCOL": "HTTP/1.1",
        }
        p.update(extra)
        return p

    def get(self, page, query="", body=b"", **extra):
        out, app, proto, _ = fc.request(self.addr, self.params(page, query, **extra), body)
        assert proto == fc.REQUEST_COMPLETE
        return fc.split_http(out)

    def children(self):
        """Processes below the server (the warm process and its workers)."""
        out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,args="], capture_output=True, text=True).stdout
        rows = [line.split(None, 2) for line in out.splitlines()]
        kids, frontier = [], {str(self.proc.pid)}
        while frontier:
            new = {r[0] for r in rows if len(r) >= 2 and r[1] in frontier}
            kids += [r for r in rows if r[0] in new]
            frontier = new
        return kids

    def zygote(self):
        z = [r for r in self.children() if r[1] == str(self.proc.pid) and "--fastcgi-zygote" in r[-1]]
        return int(z[0][0]) if z else None

    def workers(self):
        """The warm process's children that serve a request: a worker leads a session of
        its own (it calls setsid once it has its request); a spare worker, forked ahead
        and still waiting for its request, does not (`spares`)."""
        z = self.zygote()
        return [p for p in (int(r[0]) for r in self.children() if z and r[1] == str(z)) if (_session(p) or [0])[0] == p]

    def spares(self):
        """The warm process's idle spare workers (forked ahead, no request yet; not one
        retired a moment ago, killed and not yet reaped)."""
        z = self.zygote()
        kids = [(p, _session(p)) for p in (int(r[0]) for r in self.children() if z and r[1] == str(z))]
        return [p for p, st in kids if st and st[0] != p and st[1] != "Z"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _session(pid):
    """The session id and state of `pid` (None when it is gone)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    f = stat.rsplit(")", 1)[1].split()
    return int(f[3]), f[0]


@pytest.fixture
def srv(tmp_path):
    s = Server(tmp_path)
    yield s
    s.stop()
    # Nothing stays behind: no worker, no warm process, no socket, no TMPDIR.
    assert s.proc.returncode == 0, s.log()
    assert not os.path.exists(s.sock)
    assert not os.path.exists(f"{tempfile.gettempdir()}/leash-cgi-{s.proc.pid}")
    assert not os.path.exists(f"{tempfile.gettempdir()}/leash-cgi-{s.proc.pid}.spare")


def summary_lines(log):
    return [line for line in log.splitlines() if line.startswith("leash-cgi: time=")]


def test_hello_and_one_log_line(srv):
    status, headers, body = srv.get("hello.lsh", "who=<Ada>")
    assert status == 200 and headers["content-type"] == "text/plain", body
    assert body == b"hello &lt;Ada&gt;\n"
    assert srv.wait_log("status=200")
    lines = summary_lines(srv.log())
    assert len(lines) == 1 and f'script="{srv.root}/hello.lsh" status=200 ' in lines[0], srv.log()


def test_statuses(srv):
    assert srv.get("nope.lsh")[0] == 404
    assert srv.get("escape.lsh")[0] == 403
    assert srv.get("other.txt")[0] == 403
    assert srv.get("status.lsh")[:1] == (404,)
    status, _, body = srv.get("fail.lsh")
    assert status == 500 and b"SECRET" not in body
    assert srv.get("body.lsh", CONTENT_LENGTH="3000000", body=b"")[0] == 413
    assert srv.get("body.lsh", CONTENT_LENGTH="x")[0] == 400
    assert srv.wait_log('"kind":"arith"')
    assert "SECRET-PAGE-TEXT" not in srv.log()
    # Apache's form of SCRIPT_FILENAME (ProxyPassMatch): the prefix is taken off.
    p = srv.params("hello.lsh", SCRIPT_FILENAME=f"proxy:fcgi://127.0.0.1:9000{srv.root}/hello.lsh")
    out, _, _, _ = fc.request(srv.addr, p)
    assert fc.split_http(out)[0] == 200


def test_deadline_is_504_and_the_server_goes_on(srv):
    status, _, _ = srv.get("loop.lsh")
    assert status == 504, srv.log()
    assert srv.get("hello.lsh")[0] == 200
    assert srv.wait_log("status=504")


def test_bodies_form_upload_and_no_content_length(srv):
    data = b"a=1&b=two+words"
    status, _, body = srv.get(
        "form.lsh", method="POST", body=data, CONTENT_LENGTH=str(len(data)),
        CONTENT_TYPE="application/x-www-form-urlencoded",
    )
    assert status == 200 and body == b'POST {"a":"1","b":"two words"}\n', body
    up = os.urandom(1 << 20)
    status, _, body = srv.get("body.lsh", method="POST", body=up, CONTENT_LENGTH=str(len(up)))
    assert status == 200 and body.split() == [str(len(up)).encode(), hashlib.sha256(up).hexdigest().encode()]
    # No CONTENT_LENGTH (a chunked request): gathered, then passed with its length.
    status, _, body = srv.get("body.lsh", method="POST", body=b"chunked body")
    assert status == 200 and body.split()[0] == b"12", body
    # A body bigger than CONTENT_LENGTH: only CONTENT_LENGTH bytes reach the script.
    status, _, body = srv.get("body.lsh", method="POST", body=b"x" * 100, CONTENT_LENGTH="10")
    assert status == 200 and body.split()[0] == b"10", body


def test_large_response(srv):
    status, _, body = srv.get("big.lsh")
    assert status == 200 and len(body) == 4096 * 1024


def test_output_past_a_pipe_while_its_reading_waits_and_stdin_without_a_body(srv):
    """The server leaves a worker's stdout and stderr to fill for a moment after the job
    goes out (read all at once when its end is reported): a worker that writes more than
    a pipe holds (64 KiB) to both, before and after a pause, still gets all of it through,
    the status its output says, and its stderr in the log. A request without a body has
    no stdin pipe: the worker's stdin is the warm process's /dev/null (an empty body, and
    no other descriptor); with a body, a pipe as before."""
    (srv.root / "pipes.lsh").write_text(
        "import cgi\n"
        "b = cgi.body()\n"
        'cgi.headers({"Content-Type": "text/plain", "Status": 201})\n'
        'print("body:", len(b))\n'
        'eprint("first stderr line")\n'
        "for i = 1 to 300\n"
        '  print(repeat("o", 1023))\n'
        '  eprint(repeat("e", 499))\n'
        "  if i == 150\n"
        "    sleep(0.05)\n"
        "  end\n"
        "end\n"
        'print("end")\n'
    )
    for body in [b"", b"abc"]:
        extra = {"CONTENT_LENGTH": str(len(body))} if body else {}
        status, _, out = srv.get("pipes.lsh", method="POST" if body else "GET", body=body, **extra)
        assert status == 201, (status, out[:200], srv.log()[-2000:])
        lines = out.split(b"\n")
        assert lines[0] == b"body: %d" % len(body)
        assert lines[1:301] == [b"o" * 1023] * 300 and lines[301] == b"end", len(lines)
    assert srv.wait_log("leash-cgi: worker: first stderr line")
    assert srv.wait_log("more bytes of stderr not logged")
    # Without a body, fd 0 of the worker is /dev/null (read only): no pipe was made.
    (srv.root / "files" / "stdin.lsh").write_text(
        "import cgi\n"
        'cgi.headers({"Content-Type": "text/plain"})\n'
        'print(len(cgi.body()))\n'
        'print(file.read("/proc/self/fdinfo/0"))\n'
    )
    status, _, out = srv.get("files/stdin.lsh")
    assert status == 200 and out.startswith(b"0\n"), out
    ino = re.search(rb"^ino:\s+(\d+)", out, re.M)
    if ino:  # (`ino:` is in fdinfo since Linux 5.14)
        assert int(ino.group(1)) == os.stat("/dev/null").st_ino, out
    status, _, out = srv.get("files/probe.lsh")
    assert status == 200 and b"fds: [0,1,2]" in out, out


def test_get_values_unknown_types_and_roles(srv):
    s = fc.connect(srv.addr)
    q = fc.pairs({"FCGI_MAX_CONNS": "", "FCGI_MPXS_CONNS": "", "FCGI_MAX_REQS": ""})
    s.sendall(fc.record(fc.GET_VALUES, 0, q))
    kind, rid, content = fc.read_record(s)
    assert (kind, rid) == (fc.GET_VALUES_RESULT, 0)
    v = fc.parse_pairs(content)
    assert v["FCGI_MPXS_CONNS"] == "0" and int(v["FCGI_MAX_CONNS"]) > 0, v
    s.sendall(fc.record(42, 0, b""))
    kind, rid, content = fc.read_record(s)
    assert (kind, rid, content[0]) == (fc.UNKNOWN_TYPE, 0, 42)
    # The authorizer role is not served.
    s.sendall(fc.record(fc.BEGIN_REQUEST, 5, struct.pack(">HB5x", 2, fc.KEEP_CONN)))
    kind, rid, content = fc.read_record(s)
    assert (kind, rid) == (fc.END_REQUEST, 5) and content[4] == 3  # FCGI_UNKNOWN_ROLE
    # The connection still serves a request.
    fc.begin(s, 1, False, srv.params("hello.lsh"))
    out, _, _, _ = fc.response(s, 1)
    assert fc.split_http(out)[0] == 200
    s.close()


def test_keep_alive_and_multiplexing_refused(srv):
    s = fc.connect(srv.addr)
    for i in range(3):
        fc.begin(s, 1, True, srv.params("hello.lsh", f"who={i}"))
        out, _, proto, _ = fc.response(s, 1)
        assert proto == fc.REQUEST_COMPLETE and fc.split_http(out)[2] == f"hello {i}\n".encode()
    # A second request on the connection while the first waits for its body: refused.
    fc.begin(s, 1, True, srv.params("body.lsh", method="POST", CONTENT_LENGTH="4"), send_body=False)
    s.sendall(fc.record(fc.BEGIN_REQUEST, 2, struct.pack(">HB5x", fc.RESPONDER, fc.KEEP_CONN)))
    kind, rid, content = fc.read_record(s)
    assert (kind, rid) == (fc.END_REQUEST, 2) and content[4] == fc.CANT_MPX_CONN
    s.sendall(fc.stream(fc.STDIN, 1, b"abcd"))
    out, _, _, _ = fc.response(s, 1)
    assert fc.split_http(out)[2].split()[0] == b"4"
    # Without KEEP_CONN the server closes the connection after the request.
    fc.begin(s, 1, False, srv.params("hello.lsh"))
    fc.response(s, 1)
    assert fc.read_record(s) is None
    s.close()


def test_abort_request_and_disconnect_stop_the_worker(srv):
    s = fc.connect(srv.addr)
    fc.begin(s, 1, True, srv.params("sleep.lsh", "s=20"))
    time.sleep(0.5)
    s.sendall(fc.record(fc.ABORT_REQUEST, 1))
    out, _, _, _ = fc.response(s, 1)
    assert out == b""
    assert srv.wait_log("status=499")
    s.close()
    s = fc.connect(srv.addr)
    fc.begin(s, 1, False, srv.params("sleep.lsh", "s=20"))
    time.sleep(0.5)
    s.close()
    assert srv.wait_log("the web server closed the connection")
    end = time.monotonic() + 10
    while srv.workers() and time.monotonic() < end:
        time.sleep(0.05)
    assert srv.workers() == []
    assert srv.get("hello.lsh")[0] == 200


def test_killed_worker_is_502_and_the_server_goes_on(srv):
    s = fc.connect(srv.addr)
    fc.begin(s, 1, False, srv.params("sleep.lsh", "s=20"))
    end = time.monotonic() + 10
    while not srv.workers() and time.monotonic() < end:
        time.sleep(0.02)
    (pid,) = srv.workers()
    os.kill(pid, signal.SIGKILL)
    out, _, _, _ = fc.response(s, 1)
    assert fc.split_http(out)[0] == 502
    assert srv.wait_log("signal 9")
    # The warm process killed: a new one comes, requests go on.
    z = srv.zygote()
    os.kill(z, signal.SIGKILL)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if srv.zygote() not in (None, z):
            break
        time.sleep(0.05)
    assert srv.get("hello.lsh")[0] == 200


def test_nothing_of_one_request_reaches_the_next(srv):
    seen = []
    for i in range(3):
        extra = {"HTTP_X_SECRET": "abc"} if i == 0 else {}
        status, _, body = srv.get("files/probe.lsh", **extra)
        assert status == 200, (body, srv.log())
        seen.append(body.decode())
    for i, text in enumerate(seen):
        assert "tmp-left: false" in text, text
        assert "env-left: false" in text, text
        assert "fds: [0,1,2]" in text, text
        assert ("secret: abc" if i == 0 else "secret: -") in text, text
    # The environment: the request's CGI variables, the marker, the private TMPDIR.
    _, _, body = srv.get("env.lsh")
    names = body.decode().split()
    assert "LEASH_CGI_WORKER" in names and "TMPDIR" in names and "LEASH_CGI_CONFIG" not in names, names
    assert "PATH" not in names, names
    # Every request ran in a process of its own, forked from the warm process.
    pids = set()
    for _ in range(3):
        s = fc.connect(srv.addr)
        fc.begin(s, 1, False, srv.params("sleep.lsh", "s=1"))
        end = time.monotonic() + 10
        found = []
        while not found and time.monotonic() < end:
            found = srv.workers()
        pids.update(found)
        fc.response(s, 1)
        s.close()
    assert len(pids) == 3 and srv.zygote() not in pids


def test_queue_full_is_503_and_sighup_reloads(tmp_path):
    srv = Server(tmp_path, workers=1, queue=1)
    try:
        conns = []
        for _ in range(2):
            s = fc.connect(srv.addr)
            fc.begin(s, 1, False, srv.params("sleep.lsh", "s=1"))
            conns.append(s)
            time.sleep(0.2)
        assert srv.get("hello.lsh")[0] == 503
        assert [fc.split_http(fc.response(s, 1)[0])[0] for s in conns] == [200, 200]
        assert srv.wait_log("queue (1) full")
        # SIGHUP: a new configuration (3 workers) is read; a broken one is refused.
        srv.write_config(workers=3, queue=0)
        srv.proc.send_signal(signal.SIGHUP)
        assert srv.wait_log("configuration reloaded (max_workers 3, queue 0)")
        with concurrent.futures.ThreadPoolExecutor(3) as ex:
            got = list(ex.map(lambda _: srv.get("sleep.lsh", "s=0.5")[0], range(3)))
        assert got == [200, 200, 200]
        srv.config.write_text("root = 5\n")
        srv.proc.send_signal(signal.SIGHUP)
        assert srv.wait_log("configuration not reloaded")
        assert srv.get("hello.lsh")[0] == 200
    finally:
        srv.stop()
    assert srv.proc.returncode == 0


def test_sigterm_finishes_running_requests(tmp_path):
    srv = Server(tmp_path)
    s = fc.connect(srv.addr)
    fc.begin(s, 1, False, srv.params("sleep.lsh", "s=1"))
    time.sleep(0.3)
    srv.proc.send_signal(signal.SIGTERM)
    out, _, _, _ = fc.response(s, 1)
    assert fc.split_http(out)[2] == b"slept\n"
    assert srv.proc.wait(timeout=20) == 0
    assert "stopped" in srv.log()
    assert not os.path.exists(srv.sock)
    assert srv.children() == []


def test_tcp_on_loopback_only(tmp_path):
    port = None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = Server(tmp_path, addr=f"127.0.0.1:{port}")
    try:
        assert srv.get("hello.lsh")[0] == 200
    finally:
        srv.stop()
    r = subprocess.run([str(LEASH_CGI), "--fastcgi", "0.0.0.0:9"], capture_output=True, text=True,
                       env={"LEASH_CGI_CONFIG": str(srv.config)}, timeout=20)
    assert r.returncode == 1 and "loopback" in r.stderr


DEEP = (
    "import cgi\n"
    "fn f(n)\n"
    "  if n == 0\n"
    "    return 0\n"
    "  end\n"
    "  return (((((f(n - 1) + 1) + 1) + 1) + 1) + 1)\n"
    "end\n"
    'cgi.headers({"Content-Type": "text/plain"})\n'
    'print(f(num(get(cgi.query(), "n", "1"))))\n'
)


@pytest.mark.parametrize("mode", ["fork", "exec"])
def test_deep_recursion_at_the_call_depth_ceiling(tmp_path, mode):
    """A worker runs the interpreter on its main thread (the warm process made room for the
    interpreter's stack): recursion up to the call depth's ceiling works, one more call is
    the call_depth limit (500), never a crash (502)."""
    extra = ('worker_start = "exec"\n' if mode == "exec" else "") + '[limits]\ncall_depth = "max"\n'
    srv = Server(tmp_path, time_ms=20000, extra=extra)
    try:
        (srv.root / "deep.lsh").write_text(DEEP)
        status, _, body = srv.get("deep.lsh", "n=510")
        assert status == 200 and body == b"2550\n", (status, body, srv.log())
        status, _, body = srv.get("deep.lsh", "n=2000")
        assert status == 500, (status, body, srv.log())
        assert srv.wait_log("call_depth"), srv.log()
        assert "signal" not in srv.log(), srv.log()
    finally:
        srv.stop()
    assert srv.proc.returncode == 0


def test_tmpdirs_come_empty_and_private(srv):
    """TMPDIRs a worker left untouched are given again to later requests: each request
    finds an empty directory of mode 0700; one a request wrote in is not given again."""
    (srv.root / "files" / "tmp.lsh").write_text(
        "import cgi\n"
        'cgi.headers({"Content-Type": "text/plain"})\n'
        't = env.get("TMPDIR")\n'
        'print("entries:", len(dir.list(t)))\n'
        'if get(cgi.query(), "write", "") != ""\n'
        '  file.write(t .. "/x.txt", "x")\n'
        "end\n"
    )
    for i in range(12):
        q = "write=1" if i % 3 == 0 else ""
        status, _, body = srv.get("files/tmp.lsh", q)
        assert status == 200 and body == b"entries: 0\n", (i, body, srv.log())
    spare = pathlib.Path(f"{tempfile.gettempdir()}/leash-cgi-{srv.proc.pid}.spare")
    kept = list(spare.iterdir())
    assert kept, "untouched TMPDIRs are kept for reuse"
    for d in kept:
        assert d.is_dir() and not d.is_symlink() and (d.stat().st_mode & 0o7777) == 0o700
        assert list(d.iterdir()) == []


@pytest.mark.parametrize("mode", ["fork", "exec"])
def test_many_requests_and_runaways(tmp_path, mode):
    """Many concurrent requests, and runaway scripts all killed at the deadline, while the
    server keeps answering; then no process, descriptor or TMPDIR is left."""
    extra = 'worker_start = "exec"\n' if mode == "exec" else ""
    if mode == "exec":
        extra += f'interpreter = "{LEASH}"\n'
    srv = Server(tmp_path, workers=8, queue=400, time_ms=1000, extra=extra)
    try:
        fds_before = len(os.listdir(f"/proc/{srv.proc.pid}/fd"))
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            got = list(ex.map(lambda i: srv.get("hello.lsh", f"who={i}")[0], range(300)))
        assert got == [200] * 300
        with concurrent.futures.ThreadPoolExecutor(24) as ex:
            runaway = [ex.submit(lambda: srv.get("loop.lsh")[0]) for _ in range(24)]
            time.sleep(0.2)
            assert srv.get("hello.lsh")[0] in (200, 503)
            assert [f.result() for f in runaway] == [504] * 24
        assert srv.get("hello.lsh")[0] == 200
        end = time.monotonic() + 10
        while srv.workers() and time.monotonic() < end:
            time.sleep(0.05)
        assert srv.workers() == []
        assert len(os.listdir(f"/proc/{srv.proc.pid}/fd")) <= fds_before + 2
        assert os.listdir(f"{tempfile.gettempdir()}/leash-cgi-{srv.proc.pid}") == []
        assert len(summary_lines(srv.log())) == 300 + 24 + 2
    finally:
        srv.stop()
    assert srv.proc.returncode == 0


# ---------------------------------------------------------------------------
# Behind real web servers: Apache 2.4 (event MPM, mod_proxy_fcgi, over TCP) and nginx
# (fastcgi_pass over the unix socket, keep-alive connections)
# ---------------------------------------------------------------------------

APACHE_MODULES = pathlib.Path("/usr/lib/apache2/modules")

APACHE_FCGI_CONF = APACHE_HEAD + """LoadModule mpm_event_module {mods}/mod_mpm_event.so
LoadModule authz_core_module {mods}/mod_authz_core.so
LoadModule proxy_module {mods}/mod_proxy.so
LoadModule proxy_fcgi_module {mods}/mod_proxy_fcgi.so
StartServers 1
Timeout 30
ProxyTimeout 30
DocumentRoot "{base}/www"
<Directory />
  Require all granted
</Directory>
<FilesMatch "\\.lsh$">
  SetHandler "proxy:fcgi://127.0.0.1:{fport}"
</FilesMatch>
"""

NGINX_CONF = """daemon off;
master_process on;
worker_processes 1;
pid {base}/run/nginx.pid;
error_log {base}/logs/error.log warn;
{user}
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {base}/tmp/body;
  fastcgi_temp_path {base}/tmp/fastcgi;
  proxy_temp_path {base}/tmp/proxy;
  uwsgi_temp_path {base}/tmp/uwsgi;
  scgi_temp_path {base}/tmp/scgi;
  client_max_body_size 4m;
  upstream leash {{
    server unix:{sock};
    keepalive 8;
  }}
  server {{
    listen 127.0.0.1:{port};
    root {base}/www;
    location ~ \\.lsh$ {{
      fastcgi_pass leash;
      fastcgi_keep_conn on;
      fastcgi_read_timeout 30s;
      fastcgi_param GATEWAY_INTERFACE CGI/1.1;
      fastcgi_param SERVER_SOFTWARE nginx;
      fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
      fastcgi_param SCRIPT_NAME $fastcgi_script_name;
      fastcgi_param QUERY_STRING $query_string;
      fastcgi_param REQUEST_METHOD $request_method;
      fastcgi_param CONTENT_TYPE $content_type;
      fastcgi_param CONTENT_LENGTH $content_length;
      fastcgi_param REQUEST_URI $request_uri;
      fastcgi_param SERVER_PROTOCOL $server_protocol;
      fastcgi_param REMOTE_ADDR $remote_addr;
      fastcgi_param SERVER_NAME $server_name;
      fastcgi_param SERVER_PORT $server_port;
      fastcgi_param HTTP_PROXY "";
    }}
  }}
}}
"""


class Web:
    def __init__(self, kind, base, port, proc, srv):
        self.kind, self.base, self.port, self.proc, self.srv = kind, base, port, proc, srv

    def url(self, path):
        return f"http://127.0.0.1:{self.port}/{path}"

    def log(self):
        try:
            return (self.base / "logs" / "error.log").read_text(errors="replace")
        except OSError:
            return ""


def _start_web(kind, base, srv):
    port = _free_port()
    user = _run_user(kind)
    if user is None:
        pytest.skip("running as root but neither www-data nor nobody exists for the web server's workers")
    for d in ["run", "logs", "tmp"]:
        (base / d).mkdir(exist_ok=True)
    os.chmod(base / "tmp", 0o777)
    for dirpath, _dirs, files in os.walk(base):
        os.chmod(dirpath, 0o755 if not dirpath.endswith("/tmp") else 0o777)
    if kind == "apache":
        exe = shutil.which("apache2") or ("/usr/sbin/apache2" if os.path.exists("/usr/sbin/apache2") else None)
        if not exe:
            pytest.skip("apache2 is not installed (scripts/test.sh installs it with apt-get when it can)")
        for m in ["mod_mpm_event.so", "mod_proxy.so", "mod_proxy_fcgi.so"]:
            if not (APACHE_MODULES / m).exists():
                pytest.skip(f"{m} not found in {APACHE_MODULES}")
        conf = base / "httpd.conf"
        conf.write_text(APACHE_FCGI_CONF.format(base=base, port=port, user=user, mods=APACHE_MODULES,
                                                fport=srv.addr[1]))
        cmd = [exe, "-f", str(conf), "-D", "FOREGROUND"]
    else:
        exe = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
        if not exe:
            pytest.skip("nginx is not installed (scripts/test.sh installs it with apt-get when it can)")
        os.chmod(srv.sock, 0o777)
        conf = base / "nginx.conf"
        conf.write_text(NGINX_CONF.format(base=base, port=port, user=user, sock=srv.sock))
        cmd = [exe, "-c", str(conf), "-p", str(base), "-e", str(base / "logs" / "error.log")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    web = Web(kind, base, port, proc, srv)
    deadline = time.monotonic() + 15
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace")
            pytest.skip(f"{kind} could not start: {err.strip()[-500:]} {web.log()[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return web
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.skip(f"{kind} did not listen on port {port} within 15 s: {web.log()[-500:]}")
            time.sleep(0.05)


@pytest.fixture(scope="module", params=["apache", "nginx"])
def web(request):
    kind = request.param
    # Not under pytest's tmp_path: the web server's workers (www-data) must reach it.
    base = pathlib.Path(tempfile.mkdtemp(prefix=f"leash-fcgi-{kind}-"))
    srv = None
    proc = None
    try:
        addr = f"127.0.0.1:{_free_port()}" if kind == "apache" else None
        srv = Server(base, workers=4, queue=64, time_ms=1500, addr=addr)
        w = _start_web(kind, base, srv)
        proc = w.proc
        yield w
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM if kind == "apache" else signal.SIGQUIT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if srv is not None:
            srv.stop()
            assert srv.proc.returncode == 0, srv.log()
        shutil.rmtree(base, ignore_errors=True)


def http(web, path, body=None, headers=None, chunked=False, timeout=30):
    """One HTTP/1.1 request on a raw socket -> (status, headers, body)."""
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", web.port, timeout=timeout)
    h = dict(headers or {})
    if body is not None and chunked:
        c.request("POST", "/" + path, body=iter([body[i:i + 1000] for i in range(0, len(body), 1000)]),
                  headers=h, encode_chunked=True)
    elif body is not None:
        c.request("POST", "/" + path, body=body, headers=h)
    else:
        c.request("GET", "/" + path, headers=h)
    r = c.getresponse()
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    c.close()
    return out


def test_web_pages_and_statuses(web):
    status, headers, body = http(web, "hello.lsh?who=%3Cweb%3E")
    assert status == 200 and body == b"hello &lt;web&gt;\n", (body, web.log(), web.srv.log())
    assert headers["content-type"] == "text/plain"
    assert http(web, "status.lsh")[0] == 404
    status, _, body = http(web, "fail.lsh")
    assert status == 500 and b"SECRET" not in body
    assert http(web, "loop.lsh")[0] == 504
    assert http(web, "nope.lsh")[0] == 404
    assert http(web, "hello.lsh")[0] == 200


def test_web_bodies(web):
    data = b"a=1&b=two+words"
    status, _, body = http(web, "form.lsh", data, {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200 and body == b'POST {"a":"1","b":"two words"}\n', (body, web.srv.log())
    up = os.urandom(1 << 20)
    status, _, body = http(web, "body.lsh", up, {"Content-Type": "application/octet-stream"})
    assert status == 200 and body.split() == [str(len(up)).encode(), hashlib.sha256(up).hexdigest().encode()], body
    status, _, body = http(web, "body.lsh", b"c" * 5000, {"Content-Type": "application/octet-stream"}, chunked=True)
    assert status == 200 and body.split() == [b"5000", hashlib.sha256(b"c" * 5000).hexdigest().encode()], (
        body, web.log(), web.srv.log()[-2000:])


def test_web_large_response_and_slow_client(web):
    status, _, body = http(web, "big.lsh")
    assert status == 200 and len(body) == 4096 * 1024
    # A slow client: the request trickles in, the response is read late and slowly.
    s = socket.create_connection(("127.0.0.1", web.port), timeout=30)
    req = b"GET /big.lsh HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    for i in range(0, len(req), 10):
        s.sendall(req[i:i + 10])
        time.sleep(0.02)
    time.sleep(1)
    got = b""
    while True:
        c = s.recv(65536)
        if not c:
            break
        got += c
        if len(got) < 1 << 20:
            time.sleep(0.01)
    s.close()
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    if b"transfer-encoding: chunked" in head.lower():
        plain = b""
        while True:
            size, _, rest = body.partition(b"\r\n")
            n = int(size, 16)
            if n == 0:
                break
            plain += rest[:n]
            body = rest[n + 2:]
        body = plain
    assert body == (b"h" * 1023 + b"\n") * 4096


def test_web_client_disconnects_and_concurrency(web):
    before = len(summary_lines(web.srv.log()))
    for page in ["big.lsh", "sleep.lsh?s=1"]:
        s = socket.create_connection(("127.0.0.1", web.port), timeout=30)
        s.sendall(f"GET /{page} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        if page == "big.lsh":
            s.recv(1000)
        else:
            time.sleep(0.3)
        s.close()
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        got = list(ex.map(lambda i: http(web, f"hello.lsh?who={i}")[:3:2], range(200)))
    assert got == [(200, f"hello {i}\n".encode()) for i in range(200)]
    end = time.monotonic() + 10
    while (web.srv.workers() or len(summary_lines(web.srv.log())) < before + 202) and time.monotonic() < end:
        time.sleep(0.05)
    assert web.srv.workers() == []
    assert len(summary_lines(web.srv.log())) == before + 202, web.srv.log()[-3000:]


def test_the_warm_process_refuses_anyone_but_the_server(tmp_path):
    """`leash --fastcgi-zygote` runs only with a SOCK_SEQPACKET socket as stdin and no
    GATEWAY_INTERFACE: a web server running `leash` as a CGI program (a query string
    `?--fastcgi-zygote` becomes its argument; its stdin is the request body on a pipe or a
    stream socket) cannot make it fork workers from the body."""
    job = b"\x02\x00\x00\x0042"  # the start of a job message, as a request body would carry it
    for env in [{"GATEWAY_INTERFACE": "CGI/1.1"}, {}]:
        r = subprocess.run([str(LEASH), "--fastcgi-zygote"], input=job, capture_output=True, env=env, timeout=20)
        assert r.returncode == 2 and b"started by leash-cgi --fastcgi only" in r.stderr, r
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        r = subprocess.run([str(LEASH), "--fastcgi-zygote"], stdin=b, capture_output=True, env={}, timeout=20)
    assert r.returncode == 2, r
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with a, b:
        r = subprocess.run([str(LEASH), "--fastcgi-zygote", "x"], stdin=b, capture_output=True, env={}, timeout=20)
    assert r.returncode == 2, r


# ---------------------------------------------------------------------------
# The program cache (src/program_cache.rs): the warm process keeps each script's loaded
# program; a worker forked for it starts from that program. The log line says what the
# cache did: cache=new (loaded now), cache=hit (kept, still fresh), cache=none (the
# worker loaded the script itself).
# ---------------------------------------------------------------------------


# Each page of these tests starts with this header line.
H = 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\n'


def cache_log(srv, n):
    """The `cache=` words of the first `n` summary lines, once there are `n`."""
    end = time.monotonic() + 10
    while len(summary_lines(srv.log())) < n and time.monotonic() < end:
        time.sleep(0.02)
    lines = summary_lines(srv.log())
    assert len(lines) >= n, srv.log()
    return [line.split(" cache=")[1].split()[0] if " cache=" in line else "-" for line in lines[:n]]


def write_old(path, text, mtime):
    """Write `text` and set its modification time to `mtime` (seconds, in the past)."""
    path.write_text(text)
    os.utime(path, ns=(mtime * 10**9, mtime * 10**9))


def test_cache_serves_an_edited_script_and_include_anew(srv):
    page, part = srv.root / "edit.lsh", srv.root / "part.lsh"
    write_old(part, 'greeting = "hi"\n', 1_000_000_000)
    write_old(page, H + 'include "part.lsh"\nprint(greeting, "v1")\n', 1_000_000_000)
    got = [srv.get("edit.lsh")[2] for _ in range(2)]
    # The same size and a different content: only the stamp's time tells (and the inode
    # or change time, which a write also moves).
    write_old(page, H + 'include "part.lsh"\nprint(greeting, "v2")\n', 1_000_000_001)
    got += [srv.get("edit.lsh")[2] for _ in range(2)]
    # An included file changed, the including one not.
    write_old(part, 'greeting = "yo"\n', 1_000_000_002)
    got += [srv.get("edit.lsh")[2] for _ in range(2)]
    assert got == [b"hi v1\n"] * 2 + [b"hi v2\n"] * 2 + [b"yo v2\n"] * 2, srv.log()
    assert cache_log(srv, 6) == ["new", "hit"] * 3
    # A file removed is no longer served from the cache: 404 as before.
    page.unlink()
    assert srv.get("edit.lsh")[0] == 404


def test_cache_load_errors_are_the_workers_own(tmp_path):
    """A script that does not load is never cached: each request's worker loads it and
    reports it exactly as with the cache off (the same diagnostic, the same status)."""
    bad = 'import cgi\nx = (1 +\nprint("a")\n'
    huge = "# " + "x" * 1000 + "\n"
    logs = {}
    for extra in ["", "program_cache = 0"]:
        srv = Server(tmp_path / (extra and "off" or "on"), extra=extra)
        try:
            write_old(srv.root / "bad.lsh", bad, 1_000_000_000)
            # Over the 4 MiB source limit: refused by the same limit, in the worker.
            write_old(srv.root / "huge.lsh", huge * (4 * 1024 + 200), 1_000_000_000)
            for page in ["bad.lsh", "bad.lsh", "huge.lsh", "huge.lsh"]:
                status, _, body = srv.get(page)
                assert status == 500 and body == b"Internal Server Error\n", (status, body)
            assert srv.wait_log("huge.lsh")
            time.sleep(0.2)
            log = srv.log().replace(str(srv.root), "ROOT")
            logs[extra] = [l for l in log.splitlines() if l.startswith("leash-cgi: worker:")]
            words = cache_log(srv, 4)
            assert words == (["none"] * 4 if not extra else ["-"] * 4), srv.log()
        finally:
            srv.stop()
    on, off = logs[""], logs["program_cache = 0"]
    assert len(on) == 4 and on == off, (on, off)
    assert '"kind":"syntax"' in on[0] and on[0] == on[1], on
    assert '"kind":"source_bytes"' in on[2] or "source exceeds" in on[2], on


def test_cache_big_script_is_loaded_by_its_worker(srv):
    """The warm process loads a script of at most 256 KiB itself; a bigger one (under the
    4 MiB source limit) is loaded by each worker, as without the cache."""
    lines = "".join(f"v = {i}\n" for i in range(40000))
    assert len(lines) > 256 * 1024
    write_old(srv.root / "bigsrc.lsh", H + lines + 'print("big", v)\n', 1_000_000_000)
    write_old(srv.root / "small.lsh", H + 'print("small")\n', 1_000_000_000)
    got = [srv.get(p)[2] for p in ["bigsrc.lsh", "bigsrc.lsh", "small.lsh", "small.lsh"]]
    assert got == [b"big 39999\n"] * 2 + [b"small\n"] * 2
    assert cache_log(srv, 4) == ["none", "none", "new", "hit"]


def test_cache_scripts_never_see_each_others_globals(srv):
    a = H + 'secret = "A-" .. str(len(env.all()))\nprint("a", secret)\n'
    b = H + 'if false\n  secret = 1\nend\ntry\n  print("b", secret)\ncatch e\n  print("b unset")\nend\n'
    write_old(srv.root / "ga.lsh", a, 1_000_000_000)
    write_old(srv.root / "gb.lsh", b, 1_000_000_000)
    seen = [(p, srv.get(p)[2]) for p in ["ga.lsh", "gb.lsh"] * 4]
    for p, out in seen:
        assert out.startswith(b"a A-") if p == "ga.lsh" else out == b"b unset\n", seen
    assert cache_log(srv, 8) == ["new", "new"] + ["hit"] * 6


@pytest.mark.parametrize("n", [3, 4])
def test_cache_bound_in_entries(tmp_path, n):
    """`program_cache = 3`: three scripts stay; a fourth evicts the least recently used."""
    srv = Server(tmp_path, extra="program_cache = 3")
    try:
        names = [f"s{i}.lsh" for i in range(n)]
        for i, p in enumerate(names):
            write_old(srv.root / p, H + f'print("s{i}")\n', 1_000_000_000)
        order = names + names
        got = [srv.get(p)[2] for p in order]
        assert got == [f"s{i}\n".encode() for i in range(n)] * 2
        words = cache_log(srv, len(order))
        if n == 3:
            assert words == ["new"] * 3 + ["hit"] * 3, words
        else:
            # s3 evicted s0; s0 then evicts s1, s1 evicts s2, ...: least recently used first.
            assert words == ["new"] * 8, words
    finally:
        srv.stop()
    assert srv.proc.returncode == 0


def test_cache_bound_in_bytes_and_off(tmp_path):
    """A program bigger than `program_cache_bytes` is not cached; `program_cache = 0` is
    no cache at all (no `cache=` in the log)."""
    for extra, want in [("program_cache_bytes = 1000", "none"), ("program_cache_bytes = 10000000", "hit")]:
        srv = Server(tmp_path / want, extra=extra)
        try:
            write_old(srv.root / "p.lsh", H + 'print(cgi.escape("<b>"))\n', 1_000_000_000)
            assert [srv.get("p.lsh")[2] for _ in range(2)] == [b"&lt;b&gt;\n"] * 2
            assert cache_log(srv, 2)[1] == want, srv.log()
        finally:
            srv.stop()


def test_cache_waits_for_a_fresh_file_to_settle(tmp_path):
    """By default a file changed less than 2 s before it would be read is left to its
    workers (a change in the same timestamp tick could not be told by its stamp)."""
    srv = Server(tmp_path)
    srv.config.write_text(srv.config.read_text().replace("min_age_ms = 0", "min_age_ms = 2000"))
    srv.proc.send_signal(signal.SIGHUP)
    assert srv.wait_log("configuration reloaded")
    try:
        page = srv.root / "fresh.lsh"
        page.write_text(H + 'print("fresh")\n')
        assert srv.get("fresh.lsh")[2] == b"fresh\n"
        time.sleep(2.5)
        assert [srv.get("fresh.lsh")[2] for _ in range(2)] == [b"fresh\n"] * 2
        assert cache_log(srv, 3) == ["none", "new", "hit"], srv.log()
    finally:
        srv.stop()


def test_cache_charges_the_program_to_max_memory_as_before(tmp_path):
    """--max-memory counts a worker's own program whether it was loaded in the worker or
    in the warm process: a script that grows until the memory limit stops after the same
    number of steps with the cache (loaded now, then kept) and without it."""
    page = H + 'xs = []\nwhile true\n  push(xs, repeat("x", 1000) .. str(len(xs)))\nend\n'
    steps = {}
    lim = '\n[limits]\nframe_storage = "max"\nlist = "max"\n'
    for extra in ["max_memory = 8000000" + lim, "max_memory = 8000000\nprogram_cache = 0" + lim]:
        srv = Server(tmp_path / str(len(steps)), extra=extra)
        try:
            write_old(srv.root / "grow.lsh", page, 1_000_000_000)
            for _ in range(2):
                assert srv.get("grow.lsh")[0] == 500
            lines = []
            end = time.monotonic() + 10
            while len(lines) < 2 and time.monotonic() < end:
                lines = summary_lines(srv.log())
                time.sleep(0.02)
            assert len(lines) == 2 and all("memory" in l for l in lines), srv.log()
            steps[extra] = [l.split(" steps=")[1].split()[0] for l in lines]
            assert ("program_cache = 0" in extra) or cache_log(srv, 2) == ["new", "hit"]
        finally:
            srv.stop()
    on, off = steps.values()
    assert on[0] == on[1] == off[0] == off[1], steps


def test_cache_turned_off_by_sighup(srv):
    """`program_cache = 0` in a reloaded configuration: the kept programs are dropped and
    workers load their scripts (no `cache=` word in the log); 1 again: cached anew."""
    write_old(srv.root / "h.lsh", H + 'print("h")\n', 1_000_000_000)
    got = [srv.get("h.lsh")[2]]
    base = srv.config.read_text()
    for n, value in enumerate(["0", "1"], 1):
        srv.config.write_text(base.replace("min_age_ms = 0", f"min_age_ms = 0\nprogram_cache = {value}"))
        srv.proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + 10
        while srv.log().count("configuration reloaded") < n and time.monotonic() < end:
            time.sleep(0.05)
        assert srv.log().count("configuration reloaded") == n, srv.log()
        got += [srv.get("h.lsh")[2] for _ in range(2)]
    assert got == [b"h\n"] * 5
    assert cache_log(srv, 5) == ["new", "-", "-", "new", "hit"], srv.log()


# ---------------------------------------------------------------------------
# Spare workers (`spare_workers`): forked ahead of requests, one request each
# ---------------------------------------------------------------------------


def _wait(cond, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return False


def _served(srv, **extra):
    """One request of files/self.lsh: its fields by name (session = the worker's pid)."""
    status, _, body = srv.get("files/self.lsh", **extra)
    assert status == 200, (body, srv.log())
    out = {}
    for line in body.decode().splitlines():
        words = line.split()
        for k, v in zip(words[::2], words[1::2]):
            out[k.rstrip(":")] = v
    return out


def test_spares_serve_one_request_each_and_inherit_nothing(tmp_path):
    """Each spare worker waits for one request and ends with it; none serves two, and none
    sees anything of an earlier request (TMPDIR file, environment, header)."""
    srv = Server(tmp_path, workers=4, extra="spare_workers = 3\n")
    try:
        assert _served(srv)["tmp-left"] == "false"
        assert _wait(lambda: len(srv.spares()) == 3), srv.spares()
        z = srv.zygote()
        served = []
        for i in range(12):
            # Wait for the spares to be back (3), so that a spare serves this request.
            assert _wait(lambda: len(srv.spares()) == 3), srv.spares()
            waiting = set(srv.spares())
            extra = {"HTTP_X_SECRET": "abc"} if i == 0 else {}
            got = _served(srv, **extra)
            pid = int(got["session"])
            assert int(got["ppid"]) == z
            assert pid in waiting, (pid, waiting)
            assert got["tmp-left"] == "false" and got["env-left"] == "false", got
            assert got["secret"] == ("abc" if i == 0 else "-"), got
            # Its request done, it ends: never a spare again, never a second request.
            assert _wait(lambda: not os.path.exists(f"/proc/{pid}")), pid
            assert pid not in srv.spares()
            served.append(pid)
        assert len(set(served)) == 12 and z not in served
        assert srv.wait_log("worker=spare")
        words = [line.split(" worker=")[1].split()[0] for line in summary_lines(srv.log())]
        assert words[0] == "forked" and words[1:] == ["spare"] * 12, words
    finally:
        srv.stop()
    assert srv.proc.returncode == 0
    assert srv.children() == []


def test_spares_forked_before_a_reload_are_retired(tmp_path):
    srv = Server(tmp_path, workers=4, extra="spare_workers = 2\n")
    try:
        srv.get("hello.lsh")
        assert _wait(lambda: len(srv.spares()) == 2)
        before = set(srv.spares())
        srv.write_config(workers=5, extra="spare_workers = 2\n")
        srv.proc.send_signal(signal.SIGHUP)
        assert srv.wait_log("configuration reloaded (max_workers 5")
        got = _served(srv)
        assert int(got["session"]) not in before
        # The old spares are gone (reaped: not even zombies), new ones wait.
        assert _wait(lambda: not any(os.path.exists(f"/proc/{p}") for p in before)), before
        assert _wait(lambda: len(srv.spares()) == 2)
        assert not (set(srv.spares()) & before)
    finally:
        srv.stop()
    assert srv.proc.returncode == 0


def test_spares_are_bounded_replaced_and_can_be_off(tmp_path):
    srv = Server(tmp_path, workers=2, time_ms=5000, extra="spare_workers = 3\n")
    try:
        srv.get("hello.lsh")
        assert _wait(lambda: len(srv.spares()) == 3)
        # Idle spares beside the running workers: at most spare_workers (3) of them, and
        # at most max_workers (2) running.
        conns = []
        for _ in range(2):
            s = fc.connect(srv.addr)
            fc.begin(s, 1, False, srv.params("sleep.lsh", "s=2"))
            conns.append(s)
        assert _wait(lambda: len(srv.workers()) == 2)
        end = time.monotonic() + 1
        while time.monotonic() < end:
            # One look at the warm process's children (a process that ends between the
            # listing and the look at its /proc entry is left out).
            z = srv.zygote()
            kids = [(p, _session(p)) for p in (int(r[0]) for r in srv.children() if r[1] == str(z))]
            running = [p for p, st in kids if st and st[0] == p]
            waiting = [p for p, st in kids if st and st[0] != p and st[1] != "Z"]
            assert len(running) <= 2 and len(waiting) <= 3, kids
            time.sleep(0.05)
        assert [fc.split_http(fc.response(s, 1)[0])[0] for s in conns] == [200, 200]
        for s in conns:
            s.close()
        # A spare killed while it waits is reaped and replaced; requests go on.
        assert _wait(lambda: len(srv.spares()) == 3)
        victim = srv.spares()[0]
        os.kill(victim, signal.SIGKILL)
        assert _wait(lambda: not os.path.exists(f"/proc/{victim}"))
        assert _wait(lambda: len(srv.spares()) == 3)
        assert srv.get("hello.lsh")[0] == 200
        # spare_workers = 0: none kept, each request's worker forked for it.
        srv.write_config(workers=2, time_ms=5000, extra="spare_workers = 0\n")
        srv.proc.send_signal(signal.SIGHUP)
        assert srv.wait_log("configuration reloaded")
        assert srv.get("hello.lsh")[0] == 200
        assert _wait(lambda: srv.spares() == [])
        assert srv.get("hello.lsh")[0] == 200
        assert summary_lines(srv.log())[-1].split(" worker=")[1].split()[0] == "forked"
    finally:
        srv.stop()
    assert srv.proc.returncode == 0
    assert srv.children() == []


# One thread per request, end to end (WORKLOG 2026-12-04, sixth session): the connection
# is read without blocking into a record buffer, the body written to a non-blocking stdin
# (at most 256 KiB held), the warm process's reports on a socket of each job's own, and
# connections accepted by the threads that serve them.


def test_a_body_the_script_does_not_read_and_the_connection_goes_on(srv):
    """A 1.9 MB body that the script never reads: the worker ends, its stdin is closed,
    the rest of the body is read and dropped, and the same connection serves the next
    request; a body that is read (900 KB, over the 256 KiB held at once) arrives whole."""
    big = os.urandom(1_900_000)
    s = fc.connect(srv.addr)
    try:
        fc.begin(s, 1, True, srv.params("hello.lsh", "who=x", method="POST", CONTENT_LENGTH=str(len(big))), big)
        out, _, proto, _ = fc.response(s, 1)
        assert proto == fc.REQUEST_COMPLETE and fc.split_http(out)[0] == 200, srv.log()
        read = big[:900_000]  # (a string holds at most 1 MiB)
        fc.begin(s, 2, True, srv.params("body.lsh", method="POST", CONTENT_LENGTH=str(len(read))), read)
        out, _, _, _ = fc.response(s, 2)
        status, _, body = fc.split_http(out)
        assert status == 200 and body.split() == [str(len(read)).encode(), hashlib.sha256(read).hexdigest().encode()]
        fc.begin(s, 3, False, srv.params("hello.lsh", "who=y"))
        out, _, _, _ = fc.response(s, 3)
        assert fc.split_http(out)[2] == b"hello y\n"
    finally:
        s.close()


def test_records_trickled_and_idle_connections(srv):
    """A request whose records arrive a few bytes at a time is served whole; 40 idle
    connections (accepted, never sending) do not stop others from being accepted; a
    GET_VALUES cut in two is answered."""
    idle = [fc.connect(srv.addr) for _ in range(40)]
    try:
        assert srv.get("hello.lsh", "who=a")[0] == 200
        s = fc.connect(srv.addr)
        try:
            raw = (fc.record(fc.BEGIN_REQUEST, 1, struct.pack(">HB5x", fc.RESPONDER, 0))
                   + fc.stream(fc.PARAMS, 1, fc.pairs(srv.params("hello.lsh", "who=trickle")))
                   + fc.stream(fc.STDIN, 1, b""))
            for i in range(0, len(raw), 7):
                s.sendall(raw[i:i + 7])
                time.sleep(0.002)
            out, _, proto, _ = fc.response(s, 1)
            assert proto == fc.REQUEST_COMPLETE and fc.split_http(out)[2] == b"hello trickle\n"
        finally:
            s.close()
        s = fc.connect(srv.addr)
        try:
            q = fc.record(fc.GET_VALUES, 0, fc.pairs({"FCGI_MPXS_CONNS": ""}))
            s.sendall(q[:5])
            time.sleep(0.1)
            s.sendall(q[5:])
            kind, rid, content = fc.read_record(s)
            assert (kind, rid) == (fc.GET_VALUES_RESULT, 0) and fc.parse_pairs(content) == {"FCGI_MPXS_CONNS": "0"}
        finally:
            s.close()
    finally:
        for c in idle:
            c.close()
    assert srv.get("hello.lsh", "who=b")[0] == 200


def test_warm_process_killed_under_a_running_request(srv):
    """The warm process dies while a request's worker runs: the request ends 502 (its
    report socket closed without an exit status, and the worker's pipes closed), the
    worker does not run on (it would sleep 20 s; it ends at its own deadline, which the
    interpreter keeps, 1.5 s here: the warm process that would have killed it is gone),
    the server starts another warm process and goes on."""
    s = fc.connect(srv.addr)
    try:
        fc.begin(s, 1, False, srv.params("sleep.lsh", "s=20"))
        end = time.monotonic() + 10
        while not srv.workers() and time.monotonic() < end:
            time.sleep(0.02)
        (w,) = srv.workers()
        z = srv.zygote()
        os.kill(z, signal.SIGKILL)
        out, _, _, _ = fc.response(s, 1)
        assert fc.split_http(out)[0] == 502
        end = time.monotonic() + 10
        while _session(w) is not None and _session(w)[1] != "Z" and time.monotonic() < end:
            time.sleep(0.05)
        assert _session(w) is None or _session(w)[1] == "Z", "the worker outlived its warm process"
    finally:
        s.close()
    assert srv.wait_log("the warm process died")
    end = time.monotonic() + 10
    while time.monotonic() < end and srv.zygote() in (None, z):
        time.sleep(0.05)
    assert srv.get("hello.lsh")[0] == 200


def test_a_worker_ends_without_freeing_and_loses_nothing(tmp_path):
    """A worker does not free its run's memory before it ends (`set_last_run`): what the
    script wrote still arrives whole (3,000 lines held, then sent), the summary line is
    complete (status and steps, equal to those of the same page run by an exec'd `leash`,
    which frees everything), a file the script appended to has every append, a reader
    left open is harmless, and the TMPDIR it wrote in is removed after the request."""
    out = tmp_path / "appended.txt"
    page = (
        H + 't = env.get("TMPDIR")\n'
        'file.write(t .. "/scratch.txt", repeat("y", 100000))\n'
        'r = file.open(t .. "/scratch.txt")\n'
        'print(t)\n'
        'for i = 1 to 3000\n'
        '  print(str(i) .. " " .. repeat("x", 100))\n'
        f'  file.append("{out}", "a")\n'
        'end\n'
    )
    steps = {}
    for mode in ["fork", "exec"]:
        srv = Server(tmp_path / mode, extra=f'worker_start = "{mode}"\n')
        try:
            (srv.root / "files" / "big.lsh").write_text(page)
            for n in range(2):
                status, _, body = srv.get("files/big.lsh")
                lines = body.decode().splitlines()
                assert status == 200 and len(lines) == 3001, (mode, n, body[-200:], srv.log())
                assert lines[1:] == [f"{i} " + "x" * 100 for i in range(1, 3001)]
                tmp = pathlib.Path(lines[0])
                end = time.monotonic() + 10
                while tmp.exists() and time.monotonic() < end:
                    time.sleep(0.02)
                assert not tmp.exists(), (mode, tmp)
            end = time.monotonic() + 10
            while len(summary_lines(srv.log())) < 2 and time.monotonic() < end:
                time.sleep(0.02)
            got = summary_lines(srv.log())
            assert len(got) == 2 and all("status=200 " in l for l in got), srv.log()
            steps[mode] = [l.split(" steps=")[1].split()[0] for l in got]
        finally:
            srv.stop()
    assert steps["fork"] == steps["exec"] and steps["fork"][0] != "-", steps
    assert out.read_text() == "a" * 12000


def test_warm_patterns_are_charged_as_a_compile(tmp_path):
    """The constant patterns of the stdlib's modules are compiled once by the warm process
    and taken by each forked worker instead of compiled there; a run is charged the same
    work as when it compiles them itself (an exec'd `leash` compiles everything): a script
    that uses them until the work limit stops after the same number of steps, and they
    match as compiled ones do (ASCII, non-ASCII and invalid header names)."""
    page = H + (
        'print(re.test("^[A-Z0-9_]+$", "ABC_1"), re.test("^[A-Z0-9_]+$", "\u00c9T\u00c9"), '
        're.test("^[1-5][0-9][0-9]( .*)?$", "404 Not Found"))\n'
        'print(cgi.header("X-Probe"))\n'
        'if get(cgi.query(), "bad", "") != ""\n'
        '  cgi.headers({"Bad Name": "x"})\n'
        'end\n'
        'n = 0\n'
        'if get(cgi.query(), "loop", "") != ""\n'
        '  while true\n'
        '    if re.test("^[A-Z0-9_]+$", "ABC_" .. str(n)) and re.test("^[0-9]{1,15}$", str(n))\n'
        '      n += 1\n'
        '    end\n'
        '  end\n'
        'end\n'
    )
    seen = {}
    for mode in ["fork", "exec"]:
        srv = Server(tmp_path / mode, extra=f'worker_start = "{mode}"\n')
        try:
            srv.config.write_text(srv.config.read_text().replace("max_work = 10000000000000", "max_work = 3000000"))
            srv.proc.send_signal(signal.SIGHUP)
            assert srv.wait_log("configuration reloaded")
            (srv.root / "pats.lsh").write_text(page)
            status, _, body = srv.get("pats.lsh", HTTP_X_PROBE="yes")
            assert status == 200 and body == b"true false true\nyes\n", (mode, body, srv.log())
            assert srv.get("pats.lsh", "bad=1")[0] == 500
            assert srv.wait_log("invalid header name")
            assert srv.get("pats.lsh", "loop=1")[0] == 500
            end = time.monotonic() + 10
            while len(summary_lines(srv.log())) < 3 and time.monotonic() < end:
                time.sleep(0.02)
            got = summary_lines(srv.log())
            assert len(got) == 3 and '"kind":"work"' in srv.log(), srv.log()
            seen[mode] = [l.split(" steps=")[1].split()[0] for l in got]
        finally:
            srv.stop()
    assert seen["fork"] == seen["exec"], seen


STRESS = """import cgi
cgi.headers({"Content-Type": "text/plain"})
# Blocks of every size class and past the arena's largest, grown, shrunk, freed, reused.
words = []
m = {}
acc = ""
for i = 1 to 3000
  w = repeat(chr(97 + i % 26), i % 200) .. str(i)
  push(words, w)
  m[str(i % 777)] = w
  if i % 7 == 0
    acc ..= w
  end
  if i % 500 == 0
    acc = slice(acc, 0, len(acc) // 3)
  end
end
big = repeat("z", 70000) .. repeat("y", 140000)
doc = json.parse(json.stringify({"w": slice(words, 0, 300), "m": m}))
s = sort(keys(doc["m"]))
total = 0
for w in words
  total += len(w)
end
parts = split(join(words, ","), ",")
print(len(words), len(m), len(acc), len(big), len(doc["w"]), len(s), s[0], s[len(s) - 1], total, len(parts))
print(re.test("^[A-Z0-9_]+$", "OK_1"), replace(acc, "a", "b") == replace(acc, "a", "b"), len(upper(acc)))
"""


def test_a_worker_allocates_as_any_run(tmp_path):
    """A forked worker takes its small blocks from an arena of its own
    (`leash_alloc::arena`): blocks of every size, grown, shrunk, freed and reused, strings
    past the arena's largest block, a JSON round trip, a regex; the page's output is the
    same from a forked worker, an exec'd one and `leash --cgi` run directly."""
    outs = {}
    for mode in ["fork", "exec"]:
        srv = Server(tmp_path / mode, extra=f'worker_start = "{mode}"\n')
        try:
            (srv.root / "stress.lsh").write_text(STRESS)
            for n in range(3):
                status, _, body = srv.get("stress.lsh")
                assert status == 200, (mode, body, srv.log())
                outs.setdefault(mode, set()).add(body)
        finally:
            srv.stop()
    (tmp_path / "stress.lsh").write_text(STRESS)
    r = subprocess.run([str(LEASH), "--cgi", str(tmp_path / "stress.lsh")], capture_output=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    direct = fc.split_http(r.stdout)[2]
    assert outs["fork"] == outs["exec"] == {direct}, (outs, direct)
    assert direct.startswith(b"3000 777 3840 210000 300 777 0 99 309393 3000\n")


def _smaps(pid):
    """[(start, end, perms, path, {field: kB})] of /proc/PID/smaps."""
    out = []
    for line in pathlib.Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split(None, 1)[0] if line.strip() else ""
        if "-" in first and all(c in "0123456789abcdef-" for c in first):
            f = line.split()
            a, b = (int(x, 16) for x in f[0].split("-"))
            out.append((a, b, f[1], f[5] if len(f) > 5 else "", {}))
        elif out and ":" in line:
            k, v = line.split(":", 1)
            if v.strip().endswith("kB"):
                out[-1][4][k] = int(v.split()[0])
    return out


def _elf_loads(path):
    """[(vaddr, file offset, file size)] of the PT_LOAD segments of a 64-bit ELF file."""
    data = pathlib.Path(path).read_bytes()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads = []
    for i in range(phnum):
        typ, _flags, off, vaddr, _paddr, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if typ == 1:
            loads.append((vaddr, off, filesz))
    return data, loads


def test_the_code_in_huge_pages_is_the_binarys_own(srv):
    """The warm process moves whole 2 MiB pages of its code to anonymous huge pages
    (`leash_alloc::text_in_huge_pages`), so that a fork copies an entry per 2 MiB and a
    worker takes no fault in them: where the kernel gives huge pages, the moved range is
    read-only and executable, in huge pages, and holds the executable file's own bytes at
    the same addresses; no mapping of the warm process is both writable and executable;
    workers serve pages as before."""
    for _ in range(3):
        status, _, body = srv.get("hello.lsh", "who=huge")
        assert status == 200 and body == b"hello huge\n", (body, srv.log())
    z = srv.zygote()
    maps = _smaps(z)
    assert not [m for m in maps if "w" in m[2] and "x" in m[2]], maps
    exe = os.path.realpath(f"/proc/{z}/exe")
    thp = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled")
    has_thp = thp.exists() and ("[always]" in thp.read_text() or "[madvise]" in thp.read_text())
    own = [m for m in maps if m[3] == exe]
    code = [m for m in own if m[2] == "r-xp"]
    assert code, maps
    moved = [m for m in maps if m[2] == "r-xp" and m[3] == "" and own[0][0] < m[0] < own[-1][1]]
    if not has_thp:
        assert not moved, maps
        pytest.skip("transparent huge pages are off here: the code stays in the file's pages")
    huge = 2 << 20
    whole = any(m[1] // huge * huge > (m[0] + huge - 1) // huge * huge for m in code) or moved
    if not whole:
        pytest.skip("the binary's code has no whole 2 MiB page")
    assert len(moved) == 1, maps
    a, b, _perms, _path, fields = moved[0]
    assert a % huge == 0 and b % huge == 0 and fields.get("AnonHugePages") == (b - a) // 1024, moved
    assert "the code stays in small pages" not in srv.log()
    # The same bytes as the file's at those addresses (the load address: the mapping at
    # file offset 0, the executable's first).
    base = own[0][0]
    data, loads = _elf_loads(exe)
    try:
        with open(f"/proc/{z}/mem", "rb") as mem:
            mem.seek(a)
            got = mem.read(b - a)
    except OSError as e:
        pytest.skip(f"/proc/{z}/mem cannot be read here: {e}")
    checked = 0
    for vaddr, off, size in loads:
        lo, hi = max(a - base, vaddr), min(b - base, vaddr + size)
        if lo < hi:
            assert got[lo - (a - base):hi - (a - base)] == data[off + lo - vaddr:off + hi - vaddr]
            checked += hi - lo
    assert checked >= (b - a) // 2, (checked, b - a)
