"""Issue 23, finding 1: a web server must never run `leash` with arguments of a client's
choosing (SPEC 12, round 3: only the gateway starts workers).

Apache passes a query string without `=` to a CGI program as argv, so with `leash` in a
CGI directory `POST /cgi-bin/leash?--allow-files+-` ran the request body as a script with
any flags. Driven here through a real Apache (prefork + mod_cgi and event + mod_cgid)
with every layout the docs have shown:
- the old layout (`leash` beside `leash-cgi` in a ScriptAlias directory): the attack is a
  403 and runs nothing; the gateway there still serves pages (its workers carry the marker);
- the documented layout (only `leash-cgi` mapped, as one file): `leash` has no URL;
- a page with its own interpreter line (`#!.../leash --cgi`) in a CGI directory: the
  query's words arrive after SCRIPT, as script arguments, never as flags.
And directly, without a server: every shape of argv under GATEWAY_INTERFACE.
"""
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import LEASH
from test_cgi import APACHE_HEAD, APACHE_MODULES, APACHE_SETUPS, LEASH_CGI, _free_port, _run_user, fetch

CONF = APACHE_HEAD + """{setup}
LoadModule authz_core_module {mods}/mod_authz_core.so
LoadModule mime_module {mods}/mod_mime.so
LoadModule alias_module {mods}/mod_alias.so
LoadModule env_module {mods}/mod_env.so
LoadModule actions_module {mods}/mod_actions.so
Timeout 30
TypesConfig /dev/null
DocumentRoot "{base}/www"
SetEnv LEASH_CGI_CONFIG "{base}/leash-cgi.toml"
SetEnv LEASH_TEST_SECRET "s3cret-from-setenv"
# The old layout: interpreter and gateway together in one CGI directory.
ScriptAlias /cgi-bin/ "{base}/cgi-bin/"
# The documented layout: only the gateway, mapped as one file.
ScriptAlias /gw "{base}/lib/leash-cgi"
# Pages that carry their own interpreter line.
ScriptAlias /pages/ "{base}/pages/"
Action leash-old /cgi-bin/leash-cgi
Action leash-new /gw
<Directory "{base}/www/old">
  AddHandler leash-old .lsh
</Directory>
<Directory "{base}/www/new">
  AddHandler leash-new .lsh
</Directory>
<Directory />
  Require all granted
</Directory>
"""

GATEWAY = """root = "{base}/www"
max_time_ms = 5000
"""

# What an attacker posts: read a file, write one, print the server's environment.
ATTACK_BODY = b"""print("Content-Type: text/plain")
print("")
print("PWNED")
print(env.all())
file.write("{marker}", "owned")
"""

HELLO = 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint("hello", cgi.query())\n'
ECHO_ARGS = 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nprint("args", args())\n'


@pytest.fixture(scope="module", params=sorted(APACHE_SETUPS))
def server(request):
    setup = request.param
    module, setup_conf = APACHE_SETUPS[setup]
    exe = shutil.which("apache2") or ("/usr/sbin/apache2" if os.path.exists("/usr/sbin/apache2") else None)
    if not exe:
        pytest.skip("apache2 is not installed (scripts/test.sh installs it with apt-get when it can)")
    for m in [module, "mod_actions.so"]:
        if not (APACHE_MODULES / m).exists():
            pytest.skip(f"{m} not found in {APACHE_MODULES}")
    if not LEASH_CGI.exists():
        pytest.skip(f"{LEASH_CGI} is not built")
    user = _run_user()
    if user is None:
        pytest.skip("running as root but neither www-data nor nobody exists for Apache's children")
    base = pathlib.Path(tempfile.mkdtemp(prefix=f"leash-attack-{setup}-"))
    try:
        for d in ["run", "logs", "cgi-bin", "lib", "pages", "www/old", "www/new", "loot"]:
            (base / d).mkdir(parents=True, exist_ok=True)
        for d in ["cgi-bin", "lib"]:
            shutil.copy2(LEASH_CGI, base / d / "leash-cgi")
            shutil.copy2(LEASH, base / d / "leash")
        (base / "www/old/hello.lsh").write_text(HELLO)
        (base / "www/new/hello.lsh").write_text(HELLO)
        (base / "pages/echo.lsh").write_text(f"#!{base}/lib/leash --cgi\n" + ECHO_ARGS)
        # A page whose interpreter line lacks --cgi: refused, whatever the request.
        (base / "pages/plain.lsh").write_text(f"#!{base}/lib/leash\n" + ECHO_ARGS)
        # The interpreter itself, reached under another name inside a CGI directory.
        (base / "pages/alias.lsh").symlink_to(base / "lib/leash")
        (base / "leash-cgi.toml").write_text(GATEWAY.format(base=base))
        port = _free_port()
        conf = base / "httpd.conf"
        conf.write_text(
            CONF.format(
                base=base, port=port, user=user, mods=APACHE_MODULES, setup=setup_conf.format(base=base, mods=APACHE_MODULES)
            )
        )
        for dirpath, _, filenames in os.walk(base):
            os.chmod(dirpath, 0o755)
            for f in filenames:
                p = os.path.join(dirpath, f)
                if not os.path.islink(p):
                    os.chmod(p, 0o755)
        # Where the attack would write: writable by Apache's children, so that only the
        # leash can stop it.
        os.chmod(base / "loot", 0o777)
        proc = subprocess.Popen(
            [exe, "-f", str(conf), "-D", "FOREGROUND"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        deadline = time.monotonic() + 15
        while True:
            if proc.poll() is not None:
                pytest.skip(f"apache2 could not start: {proc.stderr.read().decode(errors='replace')[-500:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    proc.kill()
                    pytest.skip("apache2 did not listen within 15 s")
                time.sleep(0.05)

        class S:
            pass

        s = S()
        s.base, s.port = base, port
        s.url = lambda path: f"http://127.0.0.1:{port}/{path}"
        s.log = lambda: (base / "logs/error.log").read_text(errors="replace")
        yield s
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _attack(server, path, name):
    marker = server.base / "loot" / name
    body = ATTACK_BODY.replace(b"{marker}", str(marker).encode())
    status, _, out = fetch(server.url(path), data=body, headers={"Content-Type": "text/plain"})
    return status, out, marker


@pytest.mark.parametrize(
    "query",
    [
        "--allow-files+-",
        "--allow-files+--allow-network+--allow-db+-",
        "-e+print(1)",
        # SCRIPT named as the interpreter itself: the request's own file, yet nothing runs.
        "--cgi+--profile+{base}/loot/profile+{base}/cgi-bin/leash",
        "--cgi+--audit+{base}/loot/audit+{base}/cgi-bin/leash",
        "fmt+{base}/www/old/hello.lsh",
        "repl",
        "--allow-files+--cgi+-",
    ],
)
def test_old_layout_interpreter_in_a_cgi_directory_runs_nothing(server, query):
    q = query.replace("{base}", str(server.base))
    status, out, marker = _attack(server, f"cgi-bin/leash?{q}", "old")
    assert status == 403, (status, out, server.log()[-2000:])
    assert b"PWNED" not in out and b"s3cret" not in out
    assert not marker.exists()
    assert sorted(os.listdir(server.base / "loot")) == []
    assert (server.base / "www/old/hello.lsh").read_text() == HELLO
    assert "refused to run under a web server" in server.log()


def test_old_layout_gateway_still_serves_pages(server):
    # Its workers carry the marker that only the gateway sets.
    status, _, body = fetch(server.url("old/hello.lsh?who=x"))
    assert status == 200, server.log()[-2000:]
    assert body == b'hello {"who":"x"}\n'


def test_documented_layout_has_no_interpreter_url(server):
    status, _, body = fetch(server.url("new/hello.lsh?who=y"))
    assert status == 200, server.log()[-2000:]
    assert body == b'hello {"who":"y"}\n'
    # The interpreter has no URL at all.
    status, out, marker = _attack(server, "leash?--allow-files+-", "new1")
    assert status == 404 and not marker.exists()
    # The gateway ignores its argv under a server: no script path, so 404.
    status, out, marker = _attack(server, "gw?--allow-files+-", "new2")
    assert status == 404 and b"PWNED" not in out and not marker.exists()


def test_interpreter_line_page_gets_query_words_as_arguments(server):
    # (A GET: the page does not read a body, and mod_cgid cuts the response of a CGI
    # program that leaves a request body unread; the refusals above drain theirs.)
    status, _, out = fetch(server.url("pages/echo.lsh?--allow-files+-+--max-steps+1"))
    assert status == 200, (out, server.log()[-2000:])
    assert out == b'args ["--allow-files","-","--max-steps","1"]\n'
    assert sorted(os.listdir(server.base / "loot")) == []


@pytest.mark.parametrize("path", ["pages/plain.lsh?x", "pages/alias.lsh?--allow-files+-", "pages/alias.lsh"])
def test_interpreter_line_without_cgi_or_the_interpreter_itself_is_refused(server, path):
    status, out, marker = _attack(server, path, "plain")
    assert status == 403, (status, out, server.log()[-2000:])
    assert b"PWNED" not in out and b"args" not in out and not marker.exists()


# ---------------------------------------------------------------------------
# Without a server: the same rule, every argv shape
# ---------------------------------------------------------------------------


def _as_cgi(args, tmp_path, script_filename, extra=None, input=b""):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GATEWAY_INTERFACE": "CGI/1.1",
        "REQUEST_METHOD": "POST",
        "QUERY_STRING": "",
        "SCRIPT_FILENAME": str(script_filename),
    }
    env.update(extra or {})
    return subprocess.run([str(LEASH), *args], input=input, capture_output=True, env=env, cwd=tmp_path, timeout=30)


def test_direct_argv_shapes(tmp_path):
    page = tmp_path / "page.lsh"
    page.write_text(ECHO_ARGS)
    other = tmp_path / "other.lsh"
    other.write_text(ECHO_ARGS)
    body = b'print("Content-Type: text/plain")\nprint("")\nprint("RAN")\n'
    refused = [
        (["--allow-files", "-"], page),
        (["-e", 'print("RAN")'], page),
        (["--cgi", "-"], page),
        (["--cgi", str(other)], page),  # not the page the server was asked for
        ([str(page)], page),  # no --cgi
        (["--cgi", str(LEASH)], LEASH),  # the interpreter itself
        (["check", str(page)], page),
        (["test", str(tmp_path)], page),
        (["fmt", str(page)], page),
        (["repl"], page),
        ([], page),
        (["--cgi", str(page)], tmp_path / "missing.lsh"),
    ]
    for args, target in refused:
        r = _as_cgi(args, tmp_path, target, input=body)
        assert r.stdout.startswith(b"Status: 403"), (args, r.stdout, r.stderr)
        assert b"RAN" not in r.stdout and b"args" not in r.stdout, args
        assert r.stderr.count(b"\n") == 1 and b"refused to run under a web server" in r.stderr, (args, r.stderr)
    assert page.read_text() == ECHO_ARGS
    # No SCRIPT_FILENAME at all.
    env = {"GATEWAY_INTERFACE": "CGI/1.1", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([str(LEASH), "--cgi", str(page)], capture_output=True, env=env, timeout=30)
    assert r.stdout.startswith(b"Status: 403")
    # The page's own interpreter line: flags-looking words after SCRIPT are arguments.
    r = _as_cgi(["--cgi", str(page), "--allow-files", "-"], tmp_path, page)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith(b'args ["--allow-files","-"]\n'), r.stdout
    # Through a symlink to the page: the same file.
    (tmp_path / "link.lsh").symlink_to(page)
    r = _as_cgi(["--cgi", str(tmp_path / "link.lsh")], tmp_path, page)
    assert r.returncode == 0 and r.stdout.endswith(b"args []\n"), r.stdout
    # The gateway's workers carry the marker: anything runs, as the gateway asked.
    r = _as_cgi(["-e", 'print("RAN")'], tmp_path, page, extra={"LEASH_CGI_WORKER": "1"})
    assert r.returncode == 0 and r.stdout == b"RAN\n"
    # A marker with another value is no marker.
    r = _as_cgi(["-e", 'print("RAN")'], tmp_path, page, extra={"LEASH_CGI_WORKER": "yes"})
    assert r.stdout.startswith(b"Status: 403")
