"""CGI: the `cgi` stdlib module under `leash --cgi`, the `leash-cgi` gateway run directly
as a CGI program with a crafted environment (no web server needed), and both behind a
real Apache, once under prefork with mod_cgi and once under event with mod_cgid (skipped,
saying why, when apache2 is not installed or cannot start).

`leash-cgi` is looked for beside the `leash` under test (LEASH_BIN or target/release).
"""
import concurrent.futures
import hashlib
import os
import pathlib
import re
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import LEASH, ROOT, run

LEASH_CGI = LEASH.parent / "leash-cgi"
TIMEOUT = 30

needs_gateway = pytest.mark.skipif(not LEASH_CGI.exists(), reason=f"{LEASH_CGI} is not built")


def parse_cgi(out):
    """A CGI response (bytes) -> (status, {lowercased name: [values]}, body bytes)."""
    i = out.find(b"\n\n")
    j = out.find(b"\r\n\r\n")
    if j >= 0 and (i < 0 or j < i):
        head, body = out[:j], out[j + 4 :]
    else:
        assert i >= 0, f"no blank line after the headers: {out[:300]!r}"
        head, body = out[:i], out[i + 2 :]
    headers = {}
    for line in head.decode().replace("\r\n", "\n").split("\n"):
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    status = int(headers["status"][0][:3]) if "status" in headers else 200
    return status, headers, body


# ---------------------------------------------------------------------------
# The cgi module under `leash --cgi`, with a crafted environment
# ---------------------------------------------------------------------------

# As the gateway runs its workers: with the marker only it sets (SPEC 12, round 3; without
# it, `leash` under GATEWAY_INTERFACE runs only a page's own interpreter line:
# tests/test_cgi_attack.py).
BASE_ENV = {
    "GATEWAY_INTERFACE": "CGI/1.1",
    "REQUEST_METHOD": "GET",
    "SERVER_PROTOCOL": "HTTP/1.1",
    "LEASH_CGI_WORKER": "1",
}


def cgi_run(tmp_path, code, env=None, input=b""):
    p = tmp_path / "page.lsh"
    p.write_text(code)
    return run(["--cgi", "--error-format", "json", p], env={**BASE_ENV, **(env or {})}, input=input, cwd=tmp_path)


def test_module_lsh_tests_pass_under_cgi(tmp_path):
    r = run(["--cgi", "--error-format", "json", ROOT / "tests/lsh/stdlib/cgi_test.lsh"], env=BASE_ENV, cwd=tmp_path)
    assert r.status == 0, r
    assert r.out.splitlines()[-1] == "ok", r


def test_fail_is_only_for_stdlib_modules(script):
    # `fail(kind, message)` lets a module raise a `value` error; scripts cannot call it
    # and may name their own function so.
    r = script('fail("value", "x")\n')
    assert r.status == 3 and r.diag["kind"] == "name" and "fail" in r.diag["message"], r
    r = script('fn fail(a, b)\n  return a .. b\nend\nprint(fail("x", "y"))\n')
    assert r.status == 0 and r.out == "xy\n", r


def test_module_function_may_share_a_namespace_name(script):
    # `cgi.env` is a module function although `env` is a builtin namespace; the
    # namespace stays reserved for scripts.
    r = script('import cgi\nprint(cgi.env("NO_SUCH_VAR_X") == "", env.get("NO_SUCH_VAR_X", 1))\n')
    assert r.status == 0 and r.out == "true 1\n", r
    r = script("fn env()\nend\n")
    assert r.status == 3 and r.diag["kind"] == "name", r
    r = script("import cgi\ncgi = 1\n")
    assert r.status == 3 and r.diag["kind"] == "name", r


def test_check_says_the_module_needs_no_capability(tmp_path):
    p = tmp_path / "page.lsh"
    p.write_text("import cgi\ncgi.headers({})\n")
    r = run(["check", p])
    assert r.status == 0 and r.out == "capabilities: none\n", r


def test_hello_page_exact_bytes(tmp_path):
    r = cgi_run(
        tmp_path,
        'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint("hello " .. cgi.method())\n',
    )
    assert r.status == 0, r
    assert r.out_bytes == b"Content-Type: text/plain\r\n\r\nhello GET\n"


def test_headers_status_lists_and_default_type(tmp_path):
    code = (
        "import cgi\n"
        'c = cgi.make_cookie("sid", "a b", {"http_only": true})\n'
        'cgi.headers({"X-One": 1, "Status": 404, "Set-Cookie": [c, "b=2"]})\n'
        'write("gone")\n'
    )
    r = cgi_run(tmp_path, code)
    assert r.status == 0, r
    assert r.out_bytes == (
        b"Status: 404 Not Found\r\nX-One: 1\r\nSet-Cookie: sid=a%20b; HttpOnly\r\nSet-Cookie: b=2\r\n"
        b"Content-Type: text/html; charset=utf-8\r\n\r\ngone"
    )
    r = cgi_run(tmp_path, 'import cgi\ncgi.headers({"Status": "418 I am a teapot", "Content-Type": "text/plain"})\n')
    assert r.out_bytes == b"Status: 418 I am a teapot\r\nContent-Type: text/plain\r\n\r\n"
    r = cgi_run(tmp_path, 'import cgi\ncgi.headers({"Status": "201"})\n')
    assert r.out_bytes.startswith(b"Status: 201 Created\r\n")


def test_redirect(tmp_path):
    r = cgi_run(tmp_path, 'import cgi\ncgi.redirect("/next?a=1")\n')
    assert r.status == 0, r
    assert r.out_bytes == b"Status: 302 Found\r\nLocation: /next?a=1\r\n\r\n"
    r = cgi_run(tmp_path, 'import cgi\ncgi.headers({"Location": "http://example.org/"})\n')
    assert r.out_bytes == b"Status: 302 Found\r\nLocation: http://example.org/\r\n\r\n"


def test_header_injection_is_a_500_and_nothing_leaks(tmp_path):
    code = 'import cgi\nprint("early output")\ncgi.redirect("/x\\r\\nSet-Cookie: admin=1")\n'
    r = cgi_run(tmp_path, code)
    assert r.status == 1, r
    assert r.diag["kind"] == "value"
    assert "header injection" in r.diag["message"]
    status, headers, body = parse_cgi(r.out_bytes)
    assert status == 500
    assert b"early output" not in r.out_bytes and b"admin" not in r.out_bytes


def test_query_form_and_body(tmp_path):
    code = "import cgi\nprint(cgi.query())\nprint(cgi.form())\n"
    body = b"name=Ada+L&tag=%3Cx%3E&empty="
    env = {
        "QUERY_STRING": "q=a+b&n=1",
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "application/x-www-form-urlencoded; charset=UTF-8",
        "CONTENT_LENGTH": str(len(body)),
    }
    r = cgi_run(tmp_path, code, env, input=body + b"&after=not-read")
    assert r.status == 0, r
    assert r.out.splitlines() == ['{"q":"a b","n":"1"}', '{"name":"Ada L","tag":"<x>","empty":""}']
    # Another type: form() is {} and the body stays for cgi.body().
    code = "import cgi\nprint(cgi.form())\nprint(json.parse(cgi.body()).k)\n"
    js = b'{"k": [1, 2]}'
    env.update({"CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(js))})
    r = cgi_run(tmp_path, code, env, input=js)
    assert r.status == 0, r
    assert r.out.splitlines() == ["{}", "[1,2]"]


def test_truncated_or_malformed_body_is_a_500(tmp_path):
    env = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": "application/x-www-form-urlencoded", "CONTENT_LENGTH": "100"}
    r = cgi_run(tmp_path, "import cgi\nf = cgi.form()\n", env, input=b"a=1")
    assert r.status == 1 and r.diag["kind"] == "value", r
    assert "ended after 3 of 100 bytes" in r.diag["message"]
    assert parse_cgi(r.out_bytes)[0] == 500
    env["CONTENT_LENGTH"] = "ten"
    r = cgi_run(tmp_path, "import cgi\nf = cgi.form()\n", env, input=b"a=1")
    assert r.status == 1 and r.diag["kind"] == "value", r
    # A script can catch it and answer 400 itself.
    code = (
        "import cgi\ntry\n  f = cgi.form()\ncatch e\n"
        '  cgi.headers({"Status": 400, "Content-Type": "text/plain"})\n  print(e.kind)\n  exit()\nend\n'
    )
    r = cgi_run(tmp_path, code, env, input=b"a=1")
    assert r.status == 0, r
    assert r.out_bytes == b"Status: 400 Bad Request\r\nContent-Type: text/plain\r\n\r\nvalue\n"


@pytest.mark.parametrize("n", [(1 << 20) - 1, 1 << 20])
def test_body_and_form_up_to_one_mib(tmp_path, n):
    # The largest bodies cgi.body() and cgi.form() take (the default max_body_bytes of the
    # gateway): read in one piece, held once (joining pieces held it twice: frame_storage).
    data = (bytes(range(256)) * 4097)[:n]
    env = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": "application/octet-stream", "CONTENT_LENGTH": str(n)}
    r = cgi_run(tmp_path, "import cgi\nb = cgi.body()\ncgi.headers({})\nprint(len(b), hash.sha256(b))\n", env, data)
    assert r.status == 0, r
    assert parse_cgi(r.out_bytes)[2] == f"{n} {hashlib.sha256(data).hexdigest()}\n".encode()
    env["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
    r = cgi_run(tmp_path, "import cgi\nf = cgi.form()\ncgi.headers({})\nprint(len(f.a))\n", env, b"a=" + b"x" * (n - 2))
    assert r.status == 0, r
    assert parse_cgi(r.out_bytes)[2] == f"{n - 2}\n".encode()
    env["CONTENT_LENGTH"] = str((1 << 20) + 1)
    r = cgi_run(tmp_path, "import cgi\nb = cgi.body()\n", env, data + b"x")
    assert r.status == 1 and "over the 1 MiB" in r.diag["message"], r


@pytest.mark.parametrize("c", [b"\x0b", b"\x0c", b"\x7f", b"\x01", b"\x1f"])
def test_header_values_refuse_control_characters(tmp_path, c):
    code = 'import cgi\ncgi.headers({"X-Note": "a' + "\\x%02x" % c[0] + 'b"})\n'
    r = cgi_run(tmp_path, code)
    assert r.status == 1 and r.diag["kind"] == "value" and "control character" in r.diag["message"], r
    assert parse_cgi(r.out_bytes)[0] == 500 and b"X-Note" not in r.out_bytes
    r = cgi_run(tmp_path, 'import cgi\ncgi.headers({"X-Note": "a\\tb"})\n')
    assert r.status == 0 and b"X-Note: a\tb\r\n" in r.out_bytes, r


def test_cookies(tmp_path):
    r = cgi_run(tmp_path, "import cgi\nprint(cgi.cookies())\n", {"HTTP_COOKIE": 'a=1; b="x%20y"; a=2'})
    assert r.out.strip() == '{"a":"1","b":"x y"}', r


def test_failing_script_sends_a_generic_500(tmp_path):
    r = cgi_run(tmp_path, 'import cgi\ncgi.headers({})\nprint("SECRET-PAGE")\nx = 1 / 0\n')
    assert r.status == 1, r
    assert r.out_bytes == (
        b"Status: 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
        b"Internal Server Error\n"
    )
    assert r.diag["kind"] == "arith"


# ---------------------------------------------------------------------------
# leash-cgi run directly, as a web server would, with a crafted environment
# ---------------------------------------------------------------------------

FAKE_INTERPRETER = r"""#!/bin/sh
# A stand-in worker: behaves as $FAKE says (passed through env_pass).
case "$FAKE" in
  sleep) exec sleep 20 ;;
  orphan) sleep 20 & echo $! > "$FAKE_PIDFILE"; exec sleep 20 ;;
  segv) kill -SEGV $$ ;;
  abort) kill -ABRT $$ ;;
  vt) printf 'Content-Type: text/plain\r\nX-Note: a\013b\r\n\r\nbody' ;;
  show)
    # The gateway pins the hard limits (prlimit) just after the spawn: wait for the
    # CPU limit's, up to 2 s, so that a loaded machine does not race the reading.
    i=0
    while [ $i -lt 200 ] && grep -q '^Max cpu time .* unlimited ' /proc/$$/limits; do sleep 0.01; i=$((i+1)); done
    printf 'Content-Type: text/plain\r\n\r\n'
    echo "argv: $*"
    echo "cwd: $(pwd)"
    cat /proc/$$/limits
    env | grep -v '^PWD=\|^SHLVL=\|^_=' | sort
    ;;
esac
"""


class Gateway:
    """A document root, a configuration and a way to send leash-cgi one request."""

    def __init__(self, base):
        self.base = base
        self.root = base / "root"
        self.root.mkdir()
        self.config = base / "leash-cgi.toml"
        self.settings = {"max_time_ms": 5000}
        self.extra = ""

    def page(self, rel, code):
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(code)
        return p

    def write_config(self):
        lines = [f'root = "{self.root}"']
        for k, v in self.settings.items():
            if isinstance(v, str):
                lines.append(f'{k} = "{v}"')
            elif isinstance(v, list):
                lines.append(f"{k} = [" + ", ".join(f'"{x}"' for x in v) + "]")
            else:
                lines.append(f"{k} = {v}")
        self.config.write_text("\n".join(lines) + "\n" + self.extra)

    def request(self, path=None, env=None, input=b"", config=True, args=(), timeout=TIMEOUT):
        if config:
            self.write_config()
        e = {
            "GATEWAY_INTERFACE": "CGI/1.1",
            "REQUEST_METHOD": "GET",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "LEASH_CGI_CONFIG": str(self.config),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        }
        if path is not None:
            e["PATH_TRANSLATED"] = str(path if os.path.isabs(str(path)) else self.root / path)
            e["PATH_INFO"] = "/" + str(path)
        e.update(env or {})
        e = {k: v for k, v in e.items() if v is not None}
        t0 = time.monotonic()
        proc = subprocess.run(
            [str(LEASH_CGI), *args], env=e, input=input, capture_output=True, timeout=timeout, cwd=self.base
        )
        self.elapsed = time.monotonic() - t0
        self.proc = proc
        self.log = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 0, proc
        self.status, self.headers, self.body = parse_cgi(proc.stdout)
        summary = [line for line in self.log.splitlines() if line.startswith("leash-cgi: time=")]
        assert len(summary) == 1, self.log
        self.summary = summary[0]
        assert f"status={self.status} " in self.summary, self.summary
        return self

    def fake(self):
        p = self.base / "fake-leash"
        p.write_text(FAKE_INTERPRETER)
        p.chmod(0o755)
        self.settings["interpreter"] = str(p)
        self.settings["env_pass"] = ["FAKE", "FAKE_PIDFILE", "PATH"]
        return p


@pytest.fixture
def gw(tmp_path):
    if not LEASH_CGI.exists():
        pytest.skip(f"{LEASH_CGI} is not built")
    return Gateway(tmp_path)


HELLO = 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint("hello " .. get(cgi.query(), "who", "world"))\n'


def test_gateway_hello_and_log_line(gw):
    gw.page("hello.lsh", HELLO)
    r = gw.request("hello.lsh", {"QUERY_STRING": "who=Ada"})
    assert r.status == 200 and r.body == b"hello Ada\n", r.proc
    assert r.headers["content-type"] == ["text/plain"]
    assert f'script="{gw.root / "hello.lsh"}"' in r.summary
    assert "duration_ms=" in r.summary and "steps=" in r.summary and "steps=-" not in r.summary
    assert r.summary.startswith("leash-cgi: time=20")


def test_gateway_environment_is_the_cgi_one(gw):
    gw.page("env.lsh", 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint(keys(env.all()))\nprint(cgi.env("SCRIPT_NAME"))\n')
    gw.settings["env_pass"] = ["LEASH_TEST_PASS"]
    env = {
        "LEASH_TEST_PASS": "passed",
        "LEASH_TEST_SECRET": "s3cret",
        "HTTP_USER_AGENT": "ua",
        "HTTP_PROXY": "http://evil/",
        "QUERY_STRING": "",
        "REMOTE_ADDR": "127.0.0.1",
    }
    r = gw.request("env.lsh", env)
    assert r.status == 200, r.log
    names, script_name = r.body.decode().splitlines()
    for want in ["LEASH_TEST_PASS", "HTTP_USER_AGENT", "REMOTE_ADDR", "SCRIPT_FILENAME", "GATEWAY_INTERFACE"]:
        assert want in names, names
    for banned in ["LEASH_TEST_SECRET", "HTTP_PROXY", "LEASH_CGI_CONFIG", "PATH", "PATH_INFO", "PATH_TRANSLATED"]:
        assert f'"{banned}"' not in names, names
    assert script_name == "/env.lsh"


def test_gateway_worker_argv_limits_and_cwd(gw):
    gw.fake()
    gw.page("sub/x.lsh", "")
    gw.settings.update(
        {"max_steps": 1234, "max_work": 5678, "max_time_ms": 2500, "max_memory": "64M", "allow": ["files"]}
    )
    gw.settings["max_file_size"] = 1048576
    r = gw.request("sub/x.lsh", {"FAKE": "show", "SECRET": "x"})
    assert r.status == 200, r.log
    text = r.body.decode()
    script = gw.root / "sub" / "x.lsh"
    assert (
        f"argv: --cgi --error-format json --stats --max-steps 1234 --max-work 5678 --max-time 2.5 --max-memory 67108864 "
        f"--allow-files --include-path {gw.root} -- {script}" in text
    )
    assert f"cwd: {gw.root / 'sub'}" in text
    limits = {}
    for line in text.splitlines():
        for name in ["Max cpu time", "Max file size", "Max open files", "Max data size", "Max core file size"]:
            if line.startswith(name):
                soft, hard = line[len(name) :].split()[:2]
                limits[name] = (soft, hard)
    assert limits["Max cpu time"] == ("4", "4"), limits  # ceil(2.5 s) + 1 s
    assert limits["Max file size"] == ("1048576", "1048576")
    assert limits["Max open files"] == ("256", "256")
    assert limits["Max core file size"] == ("0", "0")
    # RLIMIT_DATA: the interpreter's 256 MiB stack, 16 MiB of other stacks and start-up
    # data, SQLite's 64 MiB heap, then max_memory and the documented 64 MiB overhead.
    assert limits["Max data size"] == (str((256 + 16 + 64 + 64 + 64) << 20),) * 2
    assert "SECRET" not in text


@pytest.mark.parametrize(
    "setup, path, status, note",
    [
        ("", "missing.lsh", 404, "no such script"),
        ("", "dir/missing.lsh", 404, "no such script"),
        ("", "hello.lsh/extra.lsh", 404, "no such script"),
        ("outside", "../outside.lsh", 403, "outside root"),
        ("outside", "../nothing-here.lsh", 403, "outside root"),
        ("symlink", "link.lsh", 403, "outside root"),
        ("symlink", "uplink/outside.lsh", 403, "outside root"),
        ("", "notes.txt", 403, "not a .lsh script"),
        ("", "folder.lsh", 403, "not a regular file"),
        ("symlink", "notes.lsh", 403, "not a .lsh script"),
    ],
)
def test_gateway_404_and_403(gw, setup, path, status, note):
    gw.page("hello.lsh", HELLO)
    gw.page("notes.txt", "text")
    (gw.root / "folder.lsh").mkdir()
    outside = gw.base / "outside.lsh"
    outside.write_text(HELLO)
    if setup == "symlink":
        (gw.root / "link.lsh").symlink_to(outside)
        (gw.root / "uplink").symlink_to(gw.base)
        (gw.root / "notes.lsh").symlink_to(gw.root / "notes.txt")
    r = gw.request(path)
    assert r.status == status, r.log
    assert note in r.summary, r.summary
    assert b"hello" not in r.body


def test_gateway_symlink_inside_root_is_fine(gw):
    gw.page("real.lsh", HELLO)
    (gw.root / "alias.lsh").symlink_to(gw.root / "real.lsh")
    r = gw.request("alias.lsh")
    assert r.status == 200 and r.body == b"hello world\n", r.log


def test_gateway_without_a_script_path_is_404(gw):
    r = gw.request(None)
    assert r.status == 404 and "PATH_TRANSLATED" in r.summary


@pytest.mark.parametrize(
    "config, why",
    [
        (None, "LEASH_CGI_CONFIG is not set"),
        ("missing", "cannot read"),
        ("max_steps = 0", "max_steps"),
        ("max_steps = [", "configuration"),
        ("colour = 1", "unknown key `colour`"),
        ('allow = ["shell"]', "unknown capability"),
        ('root = "/no/such/root"', "root"),
    ],
)
def test_gateway_bad_config_is_a_500_with_a_log_line(gw, config, why):
    gw.page("hello.lsh", HELLO)
    env = {}
    if config is None:
        env["LEASH_CGI_CONFIG"] = None
    elif config == "missing":
        env["LEASH_CGI_CONFIG"] = str(gw.base / "nope.toml")
    elif config.startswith("root"):
        gw.config.write_text(config + "\n")
    else:
        gw.config.write_text(f'root = "{gw.root}"\n{config}\n')
    r = gw.request("hello.lsh", env, config=False)
    assert r.status == 500, r.log
    assert "configuration" in r.summary and why in r.summary, r.summary
    assert r.body == b"Internal Server Error\n"


def test_gateway_failing_script_is_a_500_without_leaks(gw):
    gw.page("fail.lsh", 'import cgi\ncgi.headers({})\nprint("SECRET-PAGE")\nx = nope + 1\nif false\nnope = 1\nend\n')
    r = gw.request("fail.lsh")
    assert r.status == 500 and r.body == b"Internal Server Error\n", r.log
    assert b"SECRET" not in r.proc.stdout
    assert '"kind":"name"' in r.log and "leash-cgi: worker: " in r.log
    assert "runtime error [name]" in r.summary


def test_gateway_load_error_is_a_500(gw):
    gw.page("broken.lsh", 'print("Content-Type: text/plain\\n")\nif true\n')
    r = gw.request("broken.lsh")
    assert r.status == 500 and "load error" in r.summary, r.log


def test_gateway_step_limit_is_a_500(gw):
    gw.page("loop.lsh", "while true\nend\n")
    gw.settings.update({"max_steps": 1000})
    r = gw.request("loop.lsh")
    assert r.status == 500 and "limit error [steps]" in r.summary and "steps=1000 " in r.summary, r.log


def test_gateway_work_limit_is_a_500(gw):
    # max_work reaches the worker: a loop of builtin work ends with the work limit.
    gw.page("work.lsh", 'x = repeat("x", 200000)\nwhile true\n  h = hash.sha256(x)\nend\n')
    gw.settings.update({"max_steps": 100000000, "max_work": 5000000})
    r = gw.request("work.lsh")
    assert r.status == 500 and "limit error [work]" in r.summary, r.log


def test_gateway_time_limit_is_a_504(gw):
    gw.page("loop.lsh", "while true\nend\n")
    gw.settings.update({"max_steps": 100000000, "max_time_ms": 300})
    r = gw.request("loop.lsh")
    assert r.status == 504 and "time limit" in r.summary, r.log
    assert r.body == b"Gateway Timeout\n"
    assert r.elapsed < 5


def test_gateway_kills_a_stuck_worker_at_the_deadline(gw):
    gw.fake()
    gw.page("x.lsh", "")
    pidfile = gw.base / "orphan.pid"
    gw.settings["max_time_ms"] = 300
    r = gw.request("x.lsh", {"FAKE": "orphan", "FAKE_PIDFILE": str(pidfile)})
    assert r.status == 504 and "killed at the deadline" in r.summary, r.log
    assert r.elapsed < 5
    # The worker's whole process group went with it.
    pid = int(pidfile.read_text())
    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}") or "Z" in _proc_state(pid):
            break
        time.sleep(0.02)
    assert not os.path.exists(f"/proc/{pid}") or "Z" in _proc_state(pid)


def _proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@pytest.mark.parametrize("how, sig", [("segv", "SIGSEGV"), ("abort", "SIGABRT")])
def test_gateway_worker_death_is_a_502(gw, how, sig):
    gw.fake()
    gw.page("x.lsh", "")
    r = gw.request("x.lsh", {"FAKE": how})
    assert r.status == 502 and sig in r.summary, r.log
    assert r.body == b"Bad Gateway\n"


def test_gateway_output_over_the_limit_is_a_500(gw):
    gw.page("big.lsh", 'import cgi\ncgi.headers({})\nfor i = 1 to 200\n  print(repeat("x", 999))\nend\n')
    gw.settings["max_output_bytes"] = 100000
    r = gw.request("big.lsh")
    assert r.status == 500 and "max_output_bytes" in r.summary, r.log
    assert b"xxx" not in r.proc.stdout
    gw.settings["max_output_bytes"] = 300000
    r = gw.request("big.lsh")
    assert r.status == 200 and len(r.body) == 200000


def test_gateway_request_body(gw):
    gw.page("form.lsh", 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint(cgi.form())\n')
    gw.settings["max_body_bytes"] = 1000
    body = b"a=1&b=two+words"
    env = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": "application/x-www-form-urlencoded"}
    r = gw.request("form.lsh", {**env, "CONTENT_LENGTH": str(len(body))}, input=body + b"&extra=1")
    assert r.status == 200 and r.body == b'{"a":"1","b":"two words"}\n', r.log
    r = gw.request("form.lsh", {**env, "CONTENT_LENGTH": "1001"}, input=b"a" * 1001)
    assert r.status == 413 and "max_body_bytes" in r.summary, r.log
    r = gw.request("form.lsh", {**env, "CONTENT_LENGTH": "12x"}, input=body)
    assert r.status == 400, r.log


def test_gateway_body_of_exactly_max_body_bytes(gw):
    # The default max_body_bytes (1 MiB) works to its last byte; one more is the 413.
    gw.page("body.lsh", 'import cgi\nb = cgi.body()\ncgi.headers({"Content-Type": "text/plain"})\nprint(len(b))\n')
    env = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": "application/octet-stream"}
    n = 1 << 20
    r = gw.request("body.lsh", {**env, "CONTENT_LENGTH": str(n)}, input=b"b" * n)
    assert r.status == 200 and r.body == b"1048576\n", r.log
    r = gw.request("body.lsh", {**env, "CONTENT_LENGTH": str(n + 1)}, input=b"b" * (n + 1))
    assert r.status == 413 and "max_body_bytes (1048576)" in r.summary, r.log


def test_gateway_refuses_a_control_character_in_a_response_header(gw):
    gw.fake()
    gw.page("x.lsh", "")
    r = gw.request("x.lsh", {"FAKE": "vt"})
    assert r.status == 500 and "control character (0x0b)" in r.summary, r.log
    assert b"X-Note" not in r.proc.stdout


def _gateway_env(gw, path, env):
    gw.write_config()
    e = {
        "GATEWAY_INTERFACE": "CGI/1.1",
        "REQUEST_METHOD": "GET",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "LEASH_CGI_CONFIG": str(gw.config),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PATH_TRANSLATED": str(gw.root / path),
        "PATH_INFO": "/" + path,
    }
    e.update(env)
    return e


def _like_apache(gw, path, env, body, stdio):
    """Run leash-cgi as Apache does: the whole body written before the response is read
    (mod_cgi: pipes; mod_cgid: one Unix socket for stdin and stdout), its first 60 kB
    already there when the gateway starts -> (the writer finished in time, the response
    bytes or None when the socket was reset, stderr text)."""
    e = _gateway_env(gw, path, env)
    first, rest = body[:60000], body[60000:]
    if stdio == "socket":
        ours, theirs = socket.socketpair()
        ours.settimeout(10)
        ours.sendall(first)
        proc = subprocess.Popen([str(LEASH_CGI)], env=e, stdin=theirs, stdout=theirs, stderr=subprocess.PIPE)
        theirs.close()

        def write():
            try:
                ours.sendall(rest)
            except OSError:
                pass  # the gateway refused the rest: mod_cgid then drops it and reads on
            ours.shutdown(socket.SHUT_WR)

        def read():
            out = b""
            try:
                while d := ours.recv(65536):
                    out += d
            except ConnectionResetError:
                return None
            return out
    else:
        r, w = os.pipe()
        os.write(w, first)
        proc = subprocess.Popen([str(LEASH_CGI)], env=e, stdin=r, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(r)
        sink = os.fdopen(w, "wb")

        def write():
            try:
                sink.write(rest)
                sink.close()
            except OSError:
                pass  # EPIPE: mod_cgi then drops the rest and reads on

        def read():
            return proc.stdout.read()

    try:
        t = threading.Thread(target=write, daemon=True)
        t.start()
        t.join(10)
        written = not t.is_alive()
        if not written:
            proc.kill()  # stuck: Apache would wait for its Timeout
        out = read()
        err = proc.stderr.read().decode(errors="replace")
    finally:
        proc.kill()
        proc.wait(10)
        if stdio == "socket":
            ours.close()
    return written, out, err


@pytest.mark.parametrize("stdio", ["pipes", "socket"])
def test_gateway_reads_an_unread_body_while_it_answers(gw, stdio):
    # The script ignores a 400 kB body and writes 300 kB: the gateway reads (and drops)
    # the body while it answers, so a server that writes the whole body first gets it all
    # written, then the whole response (neither fits in a pipe or a socket buffer).
    gw.page("unread.lsh", 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nfor i = 1 to 300\n  print(repeat("z", 999))\nend\n')
    env = {"REQUEST_METHOD": "POST", "CONTENT_LENGTH": "400000", "CONTENT_TYPE": "application/octet-stream"}
    written, out, err = _like_apache(gw, "unread.lsh", env, b"u" * 400_000, stdio)
    assert written, f"the gateway stopped reading the body: {err}"
    assert out is not None, f"the socket was reset: {err}"
    status, _, body = parse_cgi(out)
    assert status == 200 and len(body) == 300_000, err


@pytest.mark.parametrize("stdio", ["pipes", "socket"])
@pytest.mark.parametrize("size", [20_000, 40 << 20])
def test_gateway_413_with_the_body_drained_or_refused(gw, stdio, size):
    # Over max_body_bytes: the 413 comes whole, the body drained (20 kB) or, past the
    # 32 MiB the gateway reads, refused (the socket's reading side shut, the pipe closed).
    gw.page("x.lsh", HELLO)
    gw.settings["max_body_bytes"] = 10000
    env = {"REQUEST_METHOD": "POST", "CONTENT_LENGTH": str(size), "CONTENT_TYPE": "application/octet-stream"}
    t0 = time.monotonic()
    written, out, err = _like_apache(gw, "x.lsh", env, b"v" * size, stdio)
    assert written and out is not None, err
    assert parse_cgi(out)[0] == 413 and out.endswith(b"Content Too Large\n"), (out[:200], err)
    assert time.monotonic() - t0 < 5


def test_gateway_drops_a_body_without_content_length(gw):
    # A chunked request reaches a CGI as a body without CONTENT_LENGTH: read and dropped.
    gw.page("unread.lsh", 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nfor i = 1 to 300\n  print(repeat("z", 999))\nend\n')
    env = {"REQUEST_METHOD": "POST", "HTTP_TRANSFER_ENCODING": "chunked"}
    written, out, err = _like_apache(gw, "unread.lsh", env, b"c" * 400_000, "pipes")
    assert written and parse_cgi(out)[0] == 200, err
    assert "(chunked) is read and dropped" in err


def test_gateway_log_lines_are_one_write_each_and_come_first(gw, tmp_path):
    # Each log line is one write(2) with its newline; the summary goes out before the
    # response (a client that leaves mid-response can take the log's pipe with it).
    if not shutil.which("strace"):
        pytest.skip("strace not installed")
    gw.page("fail.lsh", 'import cgi\neprint("one")\neprint("two")\nx = 1 / 0\n')
    log = tmp_path / "strace.log"
    e = _gateway_env(gw, "fail.lsh", {})
    p = subprocess.run(
        ["strace", "-qq", "-e", "trace=write", "-s", "100000", "-o", str(log), str(LEASH_CGI)],
        env=e, input=b"", capture_output=True, timeout=TIMEOUT,
    )
    if p.returncode != 0 or not log.exists():
        pytest.skip(f"strace not usable here: {p.stderr[:200]!r}")
    calls = re.findall(r'^write\((\d+), "(.*)", \d+\) += \d+$', log.read_text(), re.M)
    to_log = [text for fd, text in calls if fd == "2"]
    assert len(to_log) == 4, calls  # the worker's diagnostic, its two lines, the summary
    for text in to_log:
        assert text.endswith("\\n") and text.count("\\n") == 1 and text.startswith("leash-cgi: "), text
    fds = [fd for fd, _ in calls]
    assert fds.index("1") > max(i for i, fd in enumerate(fds) if fd == "2"), calls
    assert 'status=500' in to_log[-1]


def test_gateway_per_directory_allow(gw):
    reader = 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nwrite(file.read("data.txt"))\n'
    gw.page("files/read.lsh", reader)
    gw.page("files/data.txt", "from the files dir\n")
    gw.page("read.lsh", reader)
    gw.page("data.txt", "top\n")
    gw.extra = '[[dir]]\npath = "files"\nallow = ["files"]\n'
    r = gw.request("files/read.lsh")
    assert r.status == 200 and r.body == b"from the files dir\n", r.log
    r = gw.request("read.lsh")
    assert r.status == 500 and "[permission]" in r.summary and "--allow-files" in r.log, r.log
    # The default `allow` applies elsewhere; a [[dir]] replaces it (here with nothing).
    gw.settings["allow"] = ["files"]
    gw.extra = '[[dir]]\npath = "files"\nallow = []\n'
    assert gw.request("read.lsh").status == 200
    assert gw.request("files/read.lsh").status == 500


def test_gateway_scoped_allow(gw):
    gw.page("scoped/page.lsh", SCOPED_PAGE)
    gw.page("scoped/data/x.txt", "scoped data\n")
    gw.page("secret.txt", "top secret\n")
    gw.extra = '[[dir]]\npath = "scoped"\nallow = ["files=scoped/data"]\n'
    r = gw.request("scoped/page.lsh")
    assert r.status == 200 and r.body == b"scoped data\n", r.log
    for f in ["../secret.txt", "data/../../secret.txt", str(gw.root / "secret.txt"), "page.lsh"]:
        r = gw.request("scoped/page.lsh", env={"QUERY_STRING": "f=" + urllib.parse.quote(f)})
        assert r.status == 200 and r.body == b"permission\n", (f, r.log)
    gw.extra = '[[dir]]\npath = "scoped"\nallow = ["files=../outside"]\n'
    r = gw.request("scoped/page.lsh")
    assert r.status == 500 and "outside root" in r.log, r.log


def test_gateway_db_capability(gw):
    gw.page(
        "db.lsh",
        'import cgi\nh = db.open(":memory:")\ndb.exec(h, "CREATE TABLE t (x)")\ndb.exec(h, "INSERT INTO t VALUES (?)", [42])\n'
        'cgi.headers({"Content-Type": "text/plain"})\nprint(db.query(h, "SELECT x FROM t"))\n',
    )
    gw.settings["allow"] = ["db"]
    r = gw.request("db.lsh")
    assert r.status == 200 and r.body == b'[{"x":42}]\n', r.log
    gw.settings["allow"] = []
    r = gw.request("db.lsh")
    assert r.status == 500 and "--allow-db" in r.log, r.log


def test_gateway_malformed_response_is_a_500(gw):
    gw.page("raw.lsh", 'print("no headers here")\n')
    r = gw.request("raw.lsh")
    assert r.status == 500 and "malformed response" in r.summary, r.log
    gw.page("empty.lsh", "x = 1\n")
    assert gw.request("empty.lsh").status == 500


def test_gateway_exit_status_with_a_response_passes(gw):
    gw.page("ex.lsh", 'import cgi\ncgi.headers({"Status": 403, "Content-Type": "text/plain"})\nprint("no")\nexit(3)\n')
    r = gw.request("ex.lsh")
    assert r.status == 403 and r.body == b"no\n", r.log


def test_gateway_ignores_arguments_under_a_server(gw):
    gw.page("hello.lsh", HELLO)
    r = gw.request("hello.lsh", args=["--help"])
    assert r.status == 200 and r.body == b"hello world\n"


def test_gateway_check_config(gw):
    gw.settings["allow"] = ["files"]
    gw.write_config()
    p = subprocess.run([str(LEASH_CGI), "--check-config", str(gw.config)], capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 0, p
    assert f"root = {gw.root}" in p.stdout.decode() and "allow = files" in p.stdout.decode()
    gw.config.write_text("nope = 1\n")
    p = subprocess.run([str(LEASH_CGI), "--check-config", str(gw.config)], capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 1 and b"unknown key" in p.stderr


# ---------------------------------------------------------------------------
# Behind a real Apache (mod_actions, with mod_cgi under prefork and with mod_cgid under
# event: the two set-ups the README describes; every Apache test runs under both)
# ---------------------------------------------------------------------------

APACHE_MODULES = pathlib.Path("/usr/lib/apache2/modules")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_user(kind="apache"):
    """The configuration line that makes a web server started as root run as an
    unprivileged user (Apache's `User`/`Group`, or nginx's `user`); "" when not root."""
    if os.geteuid() != 0:
        return ""
    import grp
    import pwd

    for user, group in [("www-data", "www-data"), ("nobody", "nogroup")]:
        try:
            pwd.getpwnam(user)
            grp.getgrnam(group)
            return f"User {user}\nGroup {group}\n" if kind == "apache" else f"user {user} {group};"
        except KeyError:
            continue
    return None


# The start of every Apache configuration the tests write (test_cgi_attack and
# test_fastcgi use it too).
APACHE_HEAD = """ServerRoot "{base}"
Listen 127.0.0.1:{port}
PidFile "{base}/run/httpd.pid"
DefaultRuntimeDir "{base}/run"
ErrorLog "{base}/logs/error.log"
LogLevel warn
ServerName 127.0.0.1
{user}
"""

APACHE_CONF = APACHE_HEAD + """{setup}
LoadModule authz_core_module {mods}/mod_authz_core.so
LoadModule mime_module {mods}/mod_mime.so
LoadModule alias_module {mods}/mod_alias.so
LoadModule env_module {mods}/mod_env.so
LoadModule actions_module {mods}/mod_actions.so
LoadModule reqtimeout_module {mods}/mod_reqtimeout.so
Timeout 30
RequestReadTimeout header=10 body=3
TypesConfig /dev/null
DocumentRoot "{base}/www"
# The documented layout (SPEC 12, round 3): only the gateway is mapped to CGI, as one
# file; `leash` sits beside it in a directory no URL reaches.
ScriptAlias /cgi-bin/leash-cgi "{base}/lib/leash-cgi"
SetEnv LEASH_CGI_CONFIG "{base}/leash-cgi.toml"
SetEnv LEASH_TEST_PASS "hello-from-apache"
SetEnv LEASH_TEST_SECRET "s3cret"
Action leash-script /cgi-bin/leash-cgi
AddHandler leash-script .lsh
<Directory />
  Require all granted
</Directory>
# Scripts under /roomy/ run with the gateway's default budgets (1 MiB bodies, 16 MiB pages).
<Location "/cgi-bin/leash-cgi/roomy/">
  SetEnv LEASH_CGI_CONFIG "{base}/roomy.toml"
</Location>
"""

# The MPM and CGI module of each set-up (Debian pairs mod_cgi with prefork and mod_cgid
# with the threaded MPMs).
APACHE_SETUPS = {
    "mod_cgi": (
        "mod_cgi.so",
        "LoadModule mpm_prefork_module {mods}/mod_mpm_prefork.so\n"
        "LoadModule cgi_module {mods}/mod_cgi.so\n"
        "StartServers 2\nMinSpareServers 1\nMaxSpareServers 4\n",
    ),
    "mod_cgid": (
        "mod_cgid.so",
        "LoadModule mpm_event_module {mods}/mod_mpm_event.so\n"
        "LoadModule cgid_module {mods}/mod_cgid.so\n"
        'ScriptSock "{base}/run/cgid.sock"\n'
        "StartServers 1\n",
    ),
}

GATEWAY_CONF = """root = "{base}/www/app"
max_steps = 100000000
max_work = 10000000000000
max_time_ms = 1500
max_output_bytes = 100000
max_body_bytes = 10000
env_pass = ["LEASH_TEST_PASS"]

[[dir]]
path = "files"
allow = ["files"]

[[dir]]
path = "scoped"
allow = ["files=scoped/data"]
"""

# The defaults but for the time (max_body_bytes 1 MiB, max_output_bytes 16 MiB).
ROOMY_CONF = """root = "{base}/www/roomy"
max_time_ms = 5000

[[dir]]
path = "db"
allow = ["db"]
"""

# One request of the concurrent-writer test: `n` rows to MODE.db, each in a transaction
# that reads then writes (BEGIN IMMEDIATE, as UTILITIES.md advises), or in autocommit.
DB_WRITER = """import cgi
q = cgi.query()
h = db.open(q.mode .. ".db")
for i = 1 to num(q.n)
  if q.mode == "immediate"
    db.exec(h, "BEGIN IMMEDIATE")
    seen = db.query(h, "SELECT count(*) AS c FROM t")[0].c
    db.exec(h, "INSERT INTO t (who, i, seen) VALUES (?, ?, ?)", [q.who, i, seen])
    db.exec(h, "COMMIT")
  else
    db.exec(h, "INSERT INTO t (who, i, seen) VALUES (?, ?, 0)", [q.who, i])
  end
end
cgi.headers({"Content-Type": "text/plain"})
print("wrote", q.n)
"""

# Reads the file named by ?f= (beneath the directory's `files=scoped/data` scope).
SCOPED_PAGE = (
    'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nf = get(cgi.query(), "f", "data/x.txt")\n'
    'try\n  write(file.read(f))\ncatch e\n  print(e.kind)\nend\n'
)

PAGES = {
    "app/hello.lsh": HELLO,
    "app/form.lsh": 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint(cgi.method(), cgi.query(), cgi.form())\n',
    "app/cookies.lsh": (
        "import cgi\n"
        'c = cgi.make_cookie("seen", "yes please", {"path": "/", "http_only": true})\n'
        'cgi.headers({"Content-Type": "application/json", "Set-Cookie": c, "X-Leash": "1"})\n'
        "print(cgi.cookies())\n"
    ),
    "app/status.lsh": 'import cgi\ncgi.headers({"Status": 404, "Content-Type": "text/plain"})\nprint("custom not found")\n',
    "app/redirect.lsh": 'import cgi\ncgi.redirect("http://127.0.0.1/elsewhere")\n',
    "app/fail.lsh": 'import cgi\ncgi.headers({})\nprint("SECRET-PAGE-TEXT")\nx = 1 / 0\n',
    "app/loop.lsh": 'x = repeat("x", 200000)\nwhile true\n  h = hash.sha256(x)\nend\n',
    "app/big.lsh": 'import cgi\ncgi.headers({})\nfor i = 1 to 200\n  print(repeat("y", 999))\nend\n',
    "app/env.lsh": (
        'import cgi\ncgi.headers({"Content-Type": "text/plain"})\n'
        'print(cgi.env("LEASH_TEST_PASS") .. "|" .. cgi.env("LEASH_TEST_SECRET") .. "|" .. cgi.env("SCRIPT_NAME"))\n'
    ),
    "app/read.lsh": 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nwrite(file.read("data.txt"))\n',
    "app/data.txt": "top-level data\n",
    "app/files/read.lsh": 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nwrite(file.read("data.txt"))\n',
    "app/files/data.txt": "files-dir data\n",
    "app/scoped/page.lsh": SCOPED_PAGE,
    "app/scoped/data/x.txt": "scoped data\n",
    "other/outside.lsh": HELLO,
    # Valid Leash, but not a .lsh file: reached through the symlink notes.lsh.
    "app/notes.txt": HELLO,
    "app/vt.lsh": 'import cgi\ncgi.headers({"Content-Type": "text/plain", "X-Note": "a\\x0bb"})\nprint("no")\n',
    "roomy/db/write.lsh": DB_WRITER,
    "roomy/body.lsh": (
        'import cgi\nb = cgi.body()\ncgi.headers({"Content-Type": "text/plain"})\nprint(len(b), hash.sha256(b))\n'
    ),
    # 300,000 bytes, more than a pipe holds, and the request body left unread.
    "roomy/unread.lsh": 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nfor i = 1 to 300\n  print(repeat("z", 999))\nend\n',
    # 4 MiB: more than the pipes and socket buffers between the gateway and the client hold.
    "roomy/huge.lsh": 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nfor i = 1 to 4096\n  print(repeat("h", 1023))\nend\n',
}


class Apache:
    def __init__(self, base, port, proc, setup):
        self.base, self.port, self.proc, self.setup = base, port, proc, setup
        self.log_path = base / "logs" / "error.log"

    def url(self, path):
        return f"http://127.0.0.1:{self.port}/{path}"

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def wait_log(self, text, timeout=5):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.log():
                return True
            time.sleep(0.05)
        return False


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


OPENER = urllib.request.build_opener(_NoRedirect)


def fetch(url, data=None, headers=None, timeout=TIMEOUT):
    """-> (status, headers, body); HTTP errors are answers too."""
    req = urllib.request.Request(url, data=data, headers=headers or {})
    t0 = time.monotonic()
    try:
        with OPENER.open(req, timeout=timeout) as resp:
            out = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        out = e.code, e.headers, e.read()
    fetch.elapsed = time.monotonic() - t0
    return out


@pytest.fixture(scope="module", params=sorted(APACHE_SETUPS))
def apache(request):
    setup = request.param
    module, setup_conf = APACHE_SETUPS[setup]
    exe = shutil.which("apache2") or ("/usr/sbin/apache2" if os.path.exists("/usr/sbin/apache2") else None)
    if not exe:
        pytest.skip("apache2 is not installed (scripts/test.sh installs it with apt-get when it can)")
    for m in [module, "mod_actions.so", "mod_reqtimeout.so"]:
        if not (APACHE_MODULES / m).exists():
            pytest.skip(f"{m} not found in {APACHE_MODULES}")
    if not LEASH_CGI.exists():
        pytest.skip(f"{LEASH_CGI} is not built")
    user = _run_user()
    if user is None:
        pytest.skip("running as root but neither www-data nor nobody exists for Apache's children")
    # Not under pytest's tmp_path: Apache's children (www-data) must be able to reach it.
    base = pathlib.Path(tempfile.mkdtemp(prefix=f"leash-apache-{setup}-"))
    try:
        for d in ["run", "logs", "lib", "www/app", "www/other", "www/roomy/db"]:
            (base / d).mkdir(parents=True, exist_ok=True)
        shutil.copy2(LEASH_CGI, base / "lib" / "leash-cgi")
        shutil.copy2(LEASH, base / "lib" / "leash")  # the default interpreter: beside leash-cgi, unmapped
        for rel, text in PAGES.items():
            (base / "www" / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / "www" / rel).write_text(text)
        (base / "www/app/escape.lsh").symlink_to(base / "www/other/outside.lsh")
        # Inside the root, but what it names is no .lsh script.
        (base / "www/app/notes.lsh").symlink_to(base / "www/app/notes.txt")
        (base / "leash-cgi.toml").write_text(GATEWAY_CONF.format(base=base))
        (base / "roomy.toml").write_text(ROOMY_CONF.format(base=base))
        port = _free_port()
        conf = base / "httpd.conf"
        setup_text = setup_conf.format(base=base, mods=APACHE_MODULES)
        conf.write_text(APACHE_CONF.format(base=base, port=port, user=user, mods=APACHE_MODULES, setup=setup_text))
        for dirpath, dirnames, filenames in os.walk(base):
            os.chmod(dirpath, 0o755)
            for f in filenames:
                p = os.path.join(dirpath, f)
                if not os.path.islink(p):
                    os.chmod(p, 0o755)
        # SQLite writes its journal beside the database: the scripts (www-data) need the folder.
        os.chmod(base / "www/roomy/db", 0o777)
        proc = subprocess.Popen(
            [exe, "-f", str(conf), "-D", "FOREGROUND"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        server = Apache(base, port, proc, setup)
        deadline = time.monotonic() + 15
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace")
                pytest.skip(f"apache2 could not start: {err.strip()[-500:]} {server.log()[-500:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    proc.kill()
                    pytest.skip(f"apache2 did not listen on port {port} within 15 s: {server.log()[-500:]}")
                time.sleep(0.05)
        yield server
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_apache_hello(apache):
    status, headers, body = fetch(apache.url("app/hello.lsh?who=Apache"))
    assert status == 200, apache.log()
    assert body == b"hello Apache\n"
    assert headers["Content-Type"] == "text/plain"
    assert apache.wait_log("status=200"), apache.log()


def test_apache_query_and_form(apache):
    data = urllib.parse.urlencode({"name": "Ada Lovelace", "x": "<&>"}).encode()
    status, _, body = fetch(apache.url("app/form.lsh?q=1&r=a+b"), data=data)
    assert status == 200, apache.log()
    assert body == b'POST {"q":"1","r":"a b"} {"name":"Ada Lovelace","x":"<&>"}\n'


def test_apache_cookies_and_headers(apache):
    status, headers, body = fetch(apache.url("app/cookies.lsh"), headers={"Cookie": "a=1; b=two%20words"})
    assert status == 200
    assert body == b'{"a":"1","b":"two words"}\n'
    assert headers["Set-Cookie"] == "seen=yes%20please; Path=/; HttpOnly"
    assert headers["X-Leash"] == "1"
    assert headers["Content-Type"] == "application/json"


def test_apache_status_and_redirect(apache):
    status, _, body = fetch(apache.url("app/status.lsh"))
    assert status == 404 and body == b"custom not found\n"
    status, headers, _ = fetch(apache.url("app/redirect.lsh"))
    assert status == 302 and headers["Location"] == "http://127.0.0.1/elsewhere"


def test_apache_failing_script(apache):
    status, _, body = fetch(apache.url("app/fail.lsh"))
    assert status == 500
    assert b"SECRET-PAGE-TEXT" not in body and b"division" not in body
    assert apache.wait_log('"kind":"arith"'), apache.log()
    assert "SECRET-PAGE-TEXT" not in apache.log()


def test_apache_looping_script_hits_the_deadline(apache):
    status, _, body = fetch(apache.url("app/loop.lsh"))
    assert status == 504, apache.log()
    assert b"Gateway Timeout" in body
    assert 1.4 < fetch.elapsed < 5, fetch.elapsed


def test_apache_404_and_403(apache):
    # Apache answers 404 itself for a missing file (the Action is not `virtual`); the
    # gateway's own 404 is tested directly above.
    assert fetch(apache.url("app/nope.lsh"))[0] == 404
    status, _, body = fetch(apache.url("other/outside.lsh"))
    assert status == 403 and b"hello" not in body
    status, _, body = fetch(apache.url("app/escape.lsh"))
    assert status == 403 and b"hello" not in body
    assert apache.wait_log("outside root"), apache.log()


def test_apache_output_and_body_limits(apache):
    status, _, body = fetch(apache.url("app/big.lsh"))
    assert status == 500 and b"yyy" not in body
    assert apache.wait_log("max_output_bytes"), apache.log()
    status, _, _ = fetch(apache.url("app/form.lsh"), data=b"a=" + b"b" * 20000)
    assert status == 413


def test_apache_per_directory_allow(apache):
    status, _, body = fetch(apache.url("app/files/read.lsh"))
    assert status == 200 and body == b"files-dir data\n", apache.log()
    status, _, body = fetch(apache.url("app/read.lsh"))
    assert status == 500 and b"data" not in body
    assert apache.wait_log("[permission]"), apache.log()


def test_apache_scoped_files_dir(apache):
    """A page under `files=scoped/data` reads data/ and is refused ../ and other dirs."""
    status, _, body = fetch(apache.url("app/scoped/page.lsh"))
    assert (status, body) == (200, b"scoped data\n"), apache.log()
    for f in ["../../data.txt", "../../files/data.txt", "data/../../../data.txt", "page.lsh",
              "/proc/self/root" + str(apache.base) + "/www/app/data.txt"]:
        status, _, body = fetch(apache.url("app/scoped/page.lsh?f=" + urllib.parse.quote(f)))
        assert (status, body) == (200, b"permission\n"), (f, body, apache.log())


def test_apache_env_pass(apache):
    status, _, body = fetch(apache.url("app/env.lsh"))
    assert status == 200
    assert body == b"hello-from-apache||/app/env.lsh\n"


# ---------------------------------------------------------------------------
# Behind Apache: bodies, the log, clients that leave, concurrent writers (issue 10)
# ---------------------------------------------------------------------------


def raw_http(port, request, timeout=10):
    """Send `request` (bytes, from a thread, so that a server that stops reading cannot
    block the test) and read the reply until the server closes -> (status, or None when
    the reply is empty; the body, de-chunked)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)

    def send():
        try:
            s.sendall(request)
        except OSError:
            pass

    t = threading.Thread(target=send, daemon=True)
    t.start()
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except ConnectionResetError:
        pass
    finally:
        t.join(timeout)
        s.close()
    if not out:
        return None, out
    head, _, body = out.partition(b"\r\n\r\n")
    if b"\r\ntransfer-encoding: chunked" in head.lower():
        plain = b""
        while True:
            size, _, rest = body.partition(b"\r\n")
            n = int(size.split(b";")[0], 16)
            if n == 0:
                break
            plain, body = plain + rest[:n], rest[n + 2 :]
        body = plain
    return int(out.split(b" ", 2)[1]), body


def test_apache_symlink_to_a_file_that_is_no_script_is_403(apache):
    # notes.lsh -> notes.txt: the name asked for ends in .lsh, the file it names does not.
    status, _, body = fetch(apache.url("app/notes.lsh"))
    assert status == 403 and b"hello" not in body, apache.log()
    assert apache.wait_log("not a .lsh script"), apache.log()


def test_apache_header_value_with_a_control_character_is_a_500(apache):
    status, headers, body = fetch(apache.url("app/vt.lsh"))
    assert status == 500 and "X-Note" not in headers and b"no" not in body, apache.log()
    assert apache.wait_log("control character"), apache.log()


@pytest.mark.parametrize("n, want", [((1 << 20) - 1, 200), (1 << 20, 200), ((1 << 20) + 1, 413)])
def test_apache_body_up_to_exactly_max_body_bytes(apache, n, want):
    data = (bytes(range(256)) * 4097)[:n]
    status, _, body = fetch(apache.url("roomy/body.lsh"), data=data, headers={"Content-Type": "application/octet-stream"})
    assert status == want, apache.log()[-2000:]
    if want == 200:
        assert body == f"{n} {hashlib.sha256(data).hexdigest()}\n".encode()


def test_apache_unread_body_and_a_page_bigger_than_a_pipe(apache):
    # 400 kB of body that the script never reads, 300 kB of page: neither fits in a pipe.
    t0 = time.monotonic()
    status, _, body = fetch(apache.url("roomy/unread.lsh"), data=b"u" * 400_000, timeout=10)
    assert status == 200 and len(body) == 300_000, apache.log()[-2000:]
    assert time.monotonic() - t0 < 5


def test_apache_chunked_body_is_drained(apache):
    # No Content-Length: Apache passes the decoded body on stdin without CONTENT_LENGTH;
    # the gateway does not hand it to the script, and must not stall on it either.
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in [b"c" * 65536] * 6) + b"0\r\n\r\n"
    head = b"POST /roomy/unread.lsh HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    t0 = time.monotonic()
    status, body = raw_http(apache.port, head + chunks)
    assert status == 200 and body == (b"z" * 999 + b"\n") * 300, (body[:300], apache.log()[-2000:])
    assert time.monotonic() - t0 < 5
    assert apache.wait_log("(chunked) is read and dropped"), apache.log()[-2000:]


@pytest.mark.parametrize("size", [20_000, 40 << 20])
def test_apache_413_reaches_the_client(apache, size):
    # Over max_body_bytes (10000 here): the gateway answers at once without running the
    # script; the body is drained (the 20 kB one) or refused (40 MiB, past what the
    # gateway reads), and either way the 413 arrives whole, every time.
    head = (
        f"POST /app/form.lsh HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {size}\r\nConnection: close\r\n\r\n"
    ).encode()
    body = b"a=" + b"b" * (size - 2)
    for _ in range(5 if size < 1 << 20 else 1):
        status, reply = raw_http(apache.port, head + body)
        assert status == 413 and reply == b"Content Too Large\n", (status, reply[:300], apache.log()[-2000:])


def gateway_log(apache):
    """The lines the gateway wrote to stderr, as they reached the error log: mod_cgi
    logs each line read from the script's stderr as "AH01215: stderr from PATH: LINE";
    under mod_cgid the script's stderr is the error log itself."""
    out = []
    for line in apache.log().splitlines():
        if "AH01215: " in line:
            out.append(re.sub(r"^stderr from \S+: ", "", line.split("AH01215: ", 1)[1]))
        elif not line.startswith("["):
            out.append(line)
    return out


def test_apache_log_lines_are_whole(apache):
    # One write per line: no empty entries, no line split or glued to another.
    def summaries():
        return [e for e in gateway_log(apache) if 'hello.lsh" status=' in e]

    before = len(summaries())
    n = 48
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        statuses = list(ex.map(lambda i: fetch(apache.url(f"app/hello.lsh?who=n{i}"))[0], range(n)))
    assert statuses == [200] * n
    end = time.monotonic() + 10
    while len(summaries()) < before + n and time.monotonic() < end:
        time.sleep(0.05)
    whole = re.compile(r'^leash-cgi: time=\S+Z script="[^"]*/hello\.lsh" status=200 duration_ms=\d+ steps=\d+$')
    got = summaries()
    assert len(got) == before + n, apache.log()[-3000:]
    bad = [e for e in got if not whole.search(e)]
    assert not bad, bad[:5]
    bad = [e for e in gateway_log(apache) if not re.search(r"^leash-cgi: \S", e) or e.count("leash-cgi: ") != 1]
    assert not bad, bad[:5]


def test_apache_summary_is_logged_when_the_client_leaves(apache):
    # A 4 MiB page to a client that reads the status line and resets the connection:
    # the request's summary line is in the log all the same.
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect(("127.0.0.1", apache.port))
    s.sendall(b"GET /roomy/huge.lsh HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert s.recv(64).startswith(b"HTTP/1.1 200")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    assert apache.wait_log('huge.lsh" status=200 ', timeout=10), apache.log()[-3000:]


def test_apache_sixteen_concurrent_writers(apache):
    # 16 requests at once, each writing 5 rows to one SQLite file: every row is written,
    # with the default (rollback) journal and with WAL. With BEGIN IMMEDIATE the
    # read-then-write transactions are serialized: each saw a different count.
    for mode in ["immediate", "auto", "wal"]:
        path = apache.base / f"www/roomy/db/{mode}.db"
        con = sqlite3.connect(path)
        if mode == "wal":
            con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE t (who TEXT, i INTEGER, seen INTEGER)")
        con.commit()
        con.close()
        os.chmod(path, 0o666)
        urls = [apache.url(f"roomy/db/write.lsh?mode={mode}&who={mode}{k}&n=5") for k in range(16)]
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            replies = list(ex.map(lambda u: fetch(u, timeout=20), urls))
        assert [r[0] for r in replies] == [200] * 16, apache.log()[-3000:]
        con = sqlite3.connect(path)
        rows = con.execute("SELECT who, i, seen FROM t").fetchall()
        con.close()
        assert sorted((w, i) for w, i, _ in rows) == sorted((f"{mode}{k}", i) for k in range(16) for i in range(1, 6))
        if mode == "immediate":
            assert sorted(s for _, _, s in rows) == list(range(80))


def test_apache_slow_body_meets_mod_reqtimeout(apache):
    # A client that promises 1000 bytes and sends 10: Apache reads the body itself before
    # the script's answer, so the gateway's 504 never reaches it; mod_reqtimeout (body=3
    # here, as the README advises) ends it with Apache's 408 instead of after Timeout (30 s).
    head = (
        b"POST /roomy/body.lsh HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n"
        + b"0123456789"
    )
    t0 = time.monotonic()
    status, reply = raw_http(apache.port, head, timeout=20)
    assert status == 408, reply[:300]
    assert time.monotonic() - t0 < 10
