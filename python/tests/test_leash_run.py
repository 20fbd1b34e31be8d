"""The `leash` package against the real binary: leash.run, Result, LeashError,
Diagnostic, options, timeouts, big outputs, leash.cgi.

The binary is $LEASH_BIN, else target/release/leash of this checkout."""
import os
import pathlib
import signal
import subprocess
import sys
import time
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "src"))

import leash  # noqa: E402

BIN = os.environ.get("LEASH_BIN") or str(ROOT / "target" / "release" / "leash")
if not os.path.exists(BIN):
    pytest.skip(f"no leash binary at {BIN} (build it, or set LEASH_BIN)", allow_module_level=True)


def run(**kw):
    kw.setdefault("leash_bin", BIN)
    return leash.run(**kw)


def test_success_bytes_and_text():
    r = run(code='print("héllo")\neprint("to stderr")')
    assert r.status == 0 and r.ok
    assert r.stdout == "héllo\n".encode() and r.text == "héllo\n"
    assert r.stderr == b"to stderr\n"
    assert r.diagnostics == [] and r.diagnostic is None
    assert r.stats["steps"] == 2 and r.stats["stdout_bytes"] == len("héllo\n".encode())
    assert r.check() is r


def test_script_file_args_and_stdin(tmp_path):
    s = tmp_path / "echo.lsh"
    s.write_text('print(args())\nline = stdin.read_line()\nprint(upper(line))\n')
    r = run(script=s, args=["a", b"b", tmp_path / "c"], stdin="some input\nmore\n")
    assert r.status == 0, r
    lines = r.text.splitlines()
    assert lines[0] == f'["a","b","{tmp_path / "c"}"]', lines
    assert lines[1] == "SOME INPUT"
    # str and bytes stdin are the same thing.
    assert run(script=s, stdin=b"x\n").text.splitlines()[1] == "X"


def test_bytes_out_are_bytes():
    r = run(code='print("caf\u00e9")')
    assert isinstance(r.stdout, bytes) and r.stdout == "caf\u00e9\n".encode() and r.text == "caf\u00e9\n"


def test_script_and_code_exclusive():
    with pytest.raises(TypeError):
        leash.run(leash_bin=BIN)
    with pytest.raises(TypeError):
        leash.run(script="x.lsh", code="print(1)", leash_bin=BIN)


def test_runtime_error():
    r = run(code='x = 1\ny = x / 0')
    assert r.status == 1
    d = r.diagnostic
    assert isinstance(d, leash.Diagnostic)
    assert (d.error, d.kind, d.file, d.line) == ("runtime", "arith", "-e", 2)
    assert d.column is not None and d.limit is None and d.value is None and d.option is None
    assert "-e:2:" in str(d) and "division by zero" in str(d)
    with pytest.raises(leash.LeashError) as e:
        r.check()
    assert e.value.result is r and e.value.status == 1
    assert "status 1" in str(e.value) and "division by zero" in str(e.value)
    with pytest.raises(leash.LeashError):
        run(code="x = 1 / 0", check=True)


def test_usage_error():
    r = run(code="print(1)", max_steps=0)
    assert r.status == 2
    assert r.diagnostic.error == "usage" and "--max-steps" in r.diagnostic.message
    assert r.stderr == b""


def test_usage_error_unknown_option():
    r = run(code="print(1)", extra_args=["--no-such-option"])
    assert r.status == 2 and "--no-such-option" in r.diagnostic.message


def test_load_errors():
    r = run(code='print("a")\nif true\nprint("b")\n')
    assert r.status == 3 and r.stdout == b""
    assert r.diagnostics and all(d.error == "load" for d in r.diagnostics)
    assert r.diagnostic.line is not None
    r = run(script="/nonexistent/nothing.lsh")
    assert r.status == 3 and r.diagnostic.kind == "include"


def test_limit():
    r = run(code="while true\nend", max_steps=1000)
    assert r.status == 4
    d = r.diagnostic
    assert d.error == "limit" and d.kind == "steps"
    # Issue 25 adds limit/value/option; they are None when the binary has none.
    if d.limit is not None:
        assert d.limit == "steps" and d.value == 1000 and "--max-steps" in d.option
    assert r.stats["steps"] == 1000


def test_limits_mapping_moves_a_limit():
    code = 's = "x"\nwhile len(s) < 2000000\ns = s .. s\nend\nprint(len(s))'
    r = run(code=code)
    assert r.status == 4 and r.diagnostic.kind == "string", r
    r = run(code=code, limits={"string": "4M", "frame_storage": "16M", "call_args": "16M"})
    assert r.status == 0 and r.text == "2097152\n", r


def test_limits_max():
    # `--limit all=max` (SPEC 8.2); an older binary refuses the name: a usage error.
    r = run(code="print(1)", limits="max")
    if r.status == 2:
        assert "all" in r.diagnostic.message
        pytest.skip("this leash has no --limit all=max yet")
    assert r.status == 0


def test_exit_n():
    for n in (0, 3, 42, 255):
        r = run(code=f'print("x")\nexit({n})')
        assert r.status == n and r.text == "x\n" and r.diagnostics == []


def test_options_map_one_to_one():
    assert leash.options(allow={"files": ["data"]}) == ["--allow-files=data"]
    assert leash.options(allow={"files": True, "network": ["127.0.0.1:80", "example.com"]}) == [
        "--allow-files",
        "--allow-network=127.0.0.1:80,example.com",
    ]
    assert leash.options(allow=["read", "db"]) == ["--allow-read", "--allow-db"]
    assert leash.options(allow={"files": pathlib.Path("out")}) == ["--allow-files=out"]
    assert leash.options(allow={"db": False}) == []
    assert leash.options(limits={"string": "4M", "list": 100000}) == [
        "--limit",
        "string=4M",
        "--limit",
        "list=100000",
    ]
    assert leash.options(limits="max") == ["--limit", "all=max"]
    assert leash.options(max_steps=5, max_work=6, max_time=1.5, max_memory="64M") == [
        "--max-steps",
        "5",
        "--max-work",
        "6",
        "--max-time",
        "1.5",
        "--max-memory",
        "64M",
    ]
    assert leash.options(seed=7, include_path=["lib"], cgi=True) == ["--include-path", "lib", "--seed", "7", "--cgi"]
    with pytest.raises(ValueError):
        leash.options(allow={"everything": True})
    with pytest.raises(ValueError):
        leash.options(limits="all")
    with pytest.raises(ValueError):
        leash.options(allow={"files": []})


def test_allow_files_scoped(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    code = 'print(file.read("data/in.txt"))\nprint(file.read("secret.txt"))'
    r = run(code=code, cwd=tmp_path)
    assert r.status == 1 and r.diagnostic.kind == "permission" and "--allow-files" in r.diagnostic.message
    r = run(code=code, cwd=tmp_path, allow={"files": ["data"]})
    assert r.status == 1 and r.text == "inside\n"
    assert r.diagnostic.kind == "permission"
    r = run(code=code, cwd=tmp_path, allow={"files": True})
    assert r.status == 0 and r.text == "inside\noutside\n"


def test_env_and_cwd(tmp_path):
    r = run(code='print(env.get("LEASH_PY_TEST", "unset"))', env={"LEASH_PY_TEST": "yes"}, cwd=tmp_path)
    assert r.text == "yes\n"


def _leash_pids(marker):
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def test_timeout_kills_the_child_and_its_group():
    marker = "timeout-" + uuid.uuid4().hex
    code = 'print("started")\nwhile true\nsleep(0.01)\nend'
    with pytest.raises(leash.LeashTimeout) as e:
        run(code=code, args=[marker], timeout=1, limits={"sleep": "1000000"}, max_steps=10**8)
    assert isinstance(e.value, leash.LeashError) and isinstance(e.value, TimeoutError)
    assert e.value.result.status is None
    assert "timed out" in str(e.value)
    # Killed and reaped: no process of that run is left.
    assert _leash_pids(marker) == []


def test_big_output_and_input_without_deadlock():
    """10 MB in and 10 MB out through pipes at once."""
    line = b"x" * 99 + b"\n"
    data = line * 100_000  # 10,000,000 bytes
    code = "while true\nl = stdin.read_line()\nif l == nil\nbreak\nend\nprint(l)\nend"
    r = run(code=code, stdin=data, max_steps=10**7, timeout=120)
    assert r.status == 0, r.diagnostics
    assert len(r.stdout) == len(data) and r.stdout == data
    # 10 MB on stderr as well.
    r = run(code='s = repeat("y", 1000000)\nfor i in range(10)\neprint(s)\nend', timeout=120)
    assert r.status == 0 and len(r.stderr) == 10 * 1_000_001


def test_no_leash_binary(monkeypatch):
    monkeypatch.delenv("LEASH_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(leash.LeashNotFound):
        leash.run(code="print(1)")


def test_killed_by_a_signal(tmp_path):
    """A child killed by a signal (here its own memory rlimit is not used: SIGKILL
    from outside) has a negative status and no report."""
    marker = "sig-" + uuid.uuid4().hex
    import threading

    def killer():
        for _ in range(500):
            pids = _leash_pids(marker)
            if pids:
                for p in pids:
                    os.kill(p, signal.SIGKILL)
                return
            time.sleep(0.01)

    t = threading.Thread(target=killer)
    t.start()
    r = run(code="while true\nsleep(0.01)\nend", args=[marker], limits={"sleep": "1000000"}, max_steps=10**8, timeout=60)
    t.join()
    assert r.status == -signal.SIGKILL and r.diagnostics == []
    assert "SIGKILL" in str(leash.LeashError(r))


PAGE = """import cgi
q = cgi.query()
f = cgi.form()
if cgi.method() == "POST" and get(f, "name", "") == ""
  cgi.headers({"Status": "400 Bad Request", "Content-Type": "text/plain"})
  print("name is required")
  exit(0)
end
cgi.headers({"Content-Type": "text/html; charset=utf-8", "X-Page": get(q, "page", "none")})
print("<p>Hello, ${cgi.escape(get(f, "name", get(q, "name", "world")))}!</p>")
"""


def test_cgi_page_query_and_form(tmp_path):
    page = tmp_path / "hello.lsh"
    page.write_text(PAGE)
    resp = leash.cgi(page, query={"name": "<Ada>", "page": "2"}, leash_bin=BIN)
    assert resp.status == 200, resp.result
    assert resp.header("content-type") == "text/html; charset=utf-8"
    assert resp.header("X-Page") == "2"
    assert resp.text == "<p>Hello, &lt;Ada&gt;!</p>\n"
    resp = leash.cgi(page, form={"name": "Grace Hopper"}, leash_bin=BIN)
    assert resp.status == 200 and "Hello, Grace Hopper!" in resp.text
    resp = leash.cgi(page, form={"other": "x"}, leash_bin=BIN)
    assert resp.status == 400 and resp.text == "name is required\n"
    # A failing page: a generic 500; the diagnostic is in the result, not the body.
    bad = tmp_path / "bad.lsh"
    bad.write_text('import cgi\ncgi.headers({})\nx = 1 / 0\n')
    resp = leash.cgi(bad, leash_bin=BIN)
    assert resp.status == 500 and "division" not in resp.text
    assert resp.result.status == 1 and resp.result.diagnostic.kind == "arith"


def test_parse_response():
    assert leash.parse_response(b"Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\nnope") == (
        404,
        [("Status", "404 Not Found"), ("Content-Type", "text/plain")],
        b"nope",
    )
    assert leash.parse_response(b"Location: /x\n\n")[0] == 302
    assert leash.parse_response(b"Content-Type: a\n\nbody\n\nmore")[2] == b"body\n\nmore"


def test_report_is_never_in_the_working_directory(tmp_path):
    """The report lives in a private temporary directory, not beside the script."""
    r = run(code='print(len(dir.list(".")))', cwd=tmp_path, allow={"files": True})
    assert r.status == 0 and r.text == "0\n", r
    assert list(tmp_path.iterdir()) == []


def test_python_versions_and_typing():
    src = ROOT / "python" / "src" / "leash"
    assert (src / "py.typed").exists()
    # The package imports nothing outside the standard library (pytest only in the plugin).
    for f in src.glob("*.py"):
        text = f.read_text()
        for line in text.splitlines():
            if line.startswith(("import ", "from ")) and not line.startswith("from ."):
                mod = line.split()[1].split(".")[0]
                names = getattr(sys, "stdlib_module_names", None)  # Python 3.10+
                assert names is None or mod in names or mod in ("__future__", "pytest"), (f.name, line)
    assert subprocess.run([sys.executable, "-m", "py_compile", *map(str, src.glob("*.py"))]).returncode == 0


def test_diagnostic_carries_limit_fields():
    d = leash.Diagnostic.from_json(
        {
            "error": "limit",
            "kind": "stdin",
            "message": "stdin over 16777216 bytes",
            "file": "job.lsh",
            "line": 4,
            "limit": "stdin",
            "value": 16777216,
            "option": "--limit stdin=N",
            "help": ["raise it with --limit stdin=64M (ceiling 1T)"],
        }
    )
    assert (d.limit, d.value, d.option) == ("stdin", 16777216, "--limit stdin=N")
    assert d.help == ("raise it with --limit stdin=64M (ceiling 1T)",)
    assert str(d).startswith("job.lsh:4: limit error [stdin]: stdin over")
    assert "help: raise it" in str(d)
    bare = leash.Diagnostic.from_json({"error": "usage", "kind": "usage", "message": "m"})
    assert (bare.file, bare.line, bare.column, bare.limit, bare.value, bare.option) == (None,) * 6
    assert str(bare) == "leash: usage error [usage]: m"


def test_result_json():
    r = run(code='print(json.stringify({"a": [1, 2]}))')
    assert r.json() == {"a": [1, 2]}
