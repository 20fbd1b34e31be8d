"""Scoped capabilities (SPEC 9, issue 14): path scopes opened beneath the grant, host
scopes checked after DNS, the audit log, and `leash check --json`.

Every escape attempt is refused as a `permission` error, and the disk is compared
before and after: nothing outside the scope is created, changed or removed."""
import json
import os
import pathlib
import threading

import pytest

from conftest import run
from netfix import *  # noqa: F401,F403


def layout(work):
    """work/data (the grant) and work/out (outside), with links from inside to outside."""
    data, out = work / "data", work / "out"
    (data / "sub").mkdir(parents=True)
    (data / "emptydir").mkdir()
    out.mkdir()
    (out / "emptyd").mkdir()
    (out / "secret").write_text("secret")
    (data / "a.txt").write_text("inside\n")
    (data / "victim").write_text("victim")
    os.symlink("../out/secret", data / "link")
    os.symlink("../out", data / "dlink")
    os.symlink(str(out / "secret"), data / "abslink")
    return data, out


def snapshot(root):
    """Every name under root: its kind and content (links not followed)."""
    seen = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = pathlib.Path(d) / n
            if p.is_symlink():
                seen[str(p)] = ("link", os.readlink(p))
            elif p.is_dir():
                seen[str(p)] = ("dir",)
            else:
                seen[str(p)] = ("file", p.read_bytes())
    return seen


def outside(work):
    return {k: v for k, v in snapshot(work).items() if not k.startswith(str(work / "data") + "/")
            or "/out" in k}


# Builtins that act on a name itself (a link is removed, described or renamed, never
# followed): a symlink's own name inside the scope is not an escape for them.
NAME_LEVEL = {"file.remove", "file.stat", "file.copy dst", "file.rename src", "file.rename dst", "dir.create"}


def escapes(work, kind, links=True):
    """Paths that leave `data`, for a target that exists (`file`), a new name (`new`),
    a directory (`dir`) or an empty directory (`emptydir`)."""
    w = str(work)
    name = {"file": "secret", "new": "new", "dir": "", "emptydir": "emptyd"}[kind]
    tail = f"/{name}" if name else ""
    paths = [
        f"out{tail}" if name else "out",
        f"data/../out{tail}",
        f"data/dlink{tail}",
        f"{w}/out{tail}",
        f"/proc/self/root{w}/out{tail}",
        f"/proc/self/cwd/out{tail}",
        f"/dev/fd/../../../..{w}/out{tail}",
        f"data/sub/../../out{tail}",
    ]
    if links and kind in ("file", "new"):
        paths += ["data/link", "data/abslink"]
    return paths


# (builtin, call template with {P}, kind of target, an inside call that works)
PATH_CALLS = [
    ("file.read", 'file.read("{P}")', "file", 'print(file.read("data/a.txt"))'),
    ("file.write", 'file.write("{P}", "x")', "new", 'file.write("data/new.txt", "x")'),
    ("file.append", 'file.append("{P}", "x")', "new", 'file.append("data/new.txt", "y")'),
    ("file.exists", 'file.exists("{P}")', "file", 'print(file.exists("data/a.txt"))'),
    ("file.remove", 'file.remove("{P}")', "file", 'file.remove("data/victim")'),
    ("file.copy src", 'file.copy("{P}", "data/copy")', "file", 'file.copy("data/a.txt", "data/copy")'),
    ("file.copy dst", 'file.copy("data/a.txt", "{P}")', "new", 'file.copy("data/a.txt", "data/copy2")'),
    ("file.rename src", 'file.rename("{P}", "data/moved")', "file", 'file.rename("data/victim", "data/moved")'),
    ("file.rename dst", 'file.rename("data/a.txt", "{P}")', "new", 'file.rename("data/victim", "data/sub/v")'),
    ("file.size", 'file.size("{P}")', "file", 'print(file.size("data/a.txt"))'),
    ("file.stat", 'file.stat("{P}")', "file", 'print(file.stat("data/a.txt")["size"])'),
    ("file.open", 'file.open("{P}")', "file", 'print(file.read_line(file.open("data/a.txt")))'),
    ("csv.open", 'csv.open("{P}")', "file", 'print(csv.next(csv.open("data/a.txt")))'),
    ("dir.list", 'dir.list("{P}")', "dir", 'print(len(dir.list("data")))'),
    ("dir.create", 'dir.create("{P}")', "new", 'dir.create("data/newdir")'),
    ("dir.remove", 'dir.remove("{P}")', "emptydir", 'dir.remove("data/emptydir")'),
]


def refusals(work, template, kind, flag="--allow-files=data", env=None, links=True):
    paths = escapes(work, kind, links)
    lines = []
    for p in paths:
        call = template.replace("{P}", p)
        lines.append(f'try\n  {call}\n  print("ALLOWED {p}")\ncatch e\n  print(e.kind .. "|" .. e.message)\nend')
    before = snapshot(work / "out")
    (work / "t.lsh").write_text("\n".join(lines) + "\n")
    r = run([flag, "t.lsh"], cwd=work, env=env)
    assert r.status == 0, r
    got = r.out.splitlines()
    assert len(got) == len(paths), r
    for p, line in zip(paths, got):
        assert line.startswith("permission|"), (p, line)
        assert "--allow-" in line, line
    assert snapshot(work / "out") == before
    return got


@pytest.mark.parametrize("name,template,kind,inside", PATH_CALLS, ids=[c[0] for c in PATH_CALLS])
def test_path_builtin_inside_works_escapes_refused(tmp_path, name, template, kind, inside):
    layout(tmp_path)
    r = run(["--allow-files=data", "-e", inside], cwd=tmp_path)
    assert r.status == 0, r
    data_before = snapshot(tmp_path / "data")
    refusals(tmp_path, template, kind, links=name not in NAME_LEVEL)
    # The refused calls changed nothing inside either (a refused rename keeps its source).
    assert snapshot(tmp_path / "data") == data_before


@pytest.mark.parametrize("name,template,kind,inside", PATH_CALLS, ids=[c[0] for c in PATH_CALLS])
def test_path_builtin_escapes_refused_without_openat2(tmp_path, name, template, kind, inside):
    """The per-component O_NOFOLLOW walk (for kernels without openat2) refuses the same."""
    layout(tmp_path)
    env = dict(os.environ, LEASH_TEST_NO_OPENAT2="1")
    r = run(["--allow-files=data", "-e", inside], cwd=tmp_path, env=env)
    assert r.status == 0, r
    refusals(tmp_path, template, kind, env=env, links=name not in NAME_LEVEL)


def test_messages_name_flag_and_resolved_target(tmp_path):
    layout(tmp_path)
    r = run(["--allow-read=data", "-e", 'file.read("out/secret")'], cwd=tmp_path)
    assert r.status == 1 and "[permission]" in r.err, r
    assert f'"{tmp_path}/out/secret" is outside the --allow-read scope' in r.err, r
    r = run(["--allow-read=data", "-e", 'file.read("data/link")'], cwd=tmp_path)
    assert f'"{tmp_path}/data/link" leaves the --allow-read scope' in r.err, r


def test_read_scope_is_read_only(tmp_path):
    layout(tmp_path)
    r = run(["--allow-read=data", "-e", 'print(file.read("data/a.txt"))\nfile.write("data/x", "y")'], cwd=tmp_path)
    assert r.status == 1 and r.out == "inside\n\n", r
    assert "file.write needs --allow-files" in r.err, r
    assert not (tmp_path / "data" / "x").exists()


def test_symlink_inside_the_scope_is_followed(tmp_path):
    data, _ = layout(tmp_path)
    os.symlink("a.txt", data / "inlink")
    os.symlink("sub", data / "insub")
    (data / "sub" / "f").write_text("f")
    r = run(["--allow-read=data", "-e", 'print(file.read("data/inlink"))\nprint(file.read("data/insub/f"))'],
            cwd=tmp_path)
    assert (r.status, r.out) == (0, "inside\n\nf\n"), r


def test_file_grant_covers_only_that_file(tmp_path):
    data, _ = layout(tmp_path)
    r = run(["--allow-read=data/a.txt", "-e", 'print(file.read("data/a.txt"))'], cwd=tmp_path)
    assert (r.status, r.out) == (0, "inside\n\n"), r
    for p in ["data/victim", "data/a.txt/x", "data/sub/../victim"]:
        r = run(["--allow-read=data/a.txt", "-e", f'file.read("{p}")'], cwd=tmp_path)
        assert r.status == 1 and "[permission]" in r.err, (p, r)


def test_several_grants_and_absolute_grant(tmp_path):
    data, out = layout(tmp_path)
    r = run([f"--allow-read={out},data", "-e", 'print(file.read("out/secret"))\nprint(file.read("data/a.txt"))'],
            cwd=tmp_path)
    assert (r.status, r.out) == (0, "secret\ninside\n\n"), r


def test_bad_grants_are_usage_errors(tmp_path):
    for flag in ["--allow-files=", "--allow-read=nope", "--allow-files=nope/x", "--allow-read=a,,b", "--allow-network=a..b",
                 "--allow-network=10.0.0.0/40", "--allow-network=h:99999"]:
        r = run([flag, "-e", "print(1)"], cwd=tmp_path)
        assert r.status == 2, (flag, r)


def test_unscoped_flag_still_grants_everywhere(tmp_path):
    layout(tmp_path)
    r = run(["--allow-files", "--allow-files=data", "-e", 'print(file.read("out/secret"))'], cwd=tmp_path)
    assert (r.status, r.out) == (0, "secret\n"), r


def test_include_from_a_read_grant(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "m.lsh").write_text('fn hi()\n  return "hi"\nend\n')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "m.lsh").write_text('fn hi()\n  return "no"\nend\n')
    main = tmp_path / "app"
    main.mkdir()
    (main / "t.lsh").write_text(f'include "{lib}/m.lsh"\nprint(hi())\n')
    r = run([f"--allow-read={lib}", main / "t.lsh"], cwd=tmp_path)
    assert (r.status, r.out) == (0, "hi\n"), r
    (main / "t.lsh").write_text(f'include "{tmp_path}/other/m.lsh"\nprint(hi())\n')
    r = run([f"--allow-read={lib}", main / "t.lsh"], cwd=tmp_path)
    assert r.status == 3, r


def test_db_scope(tmp_path):
    data, out = layout(tmp_path)
    ok = 'h = db.open("data/app.db")\ndb.exec(h, "create table t(x)")\ndb.close(h)\nprint("ok")'
    r = run(["--allow-db=data", "-e", ok], cwd=tmp_path)
    assert (r.status, r.out) == (0, "ok\n"), r
    assert (data / "app.db").exists()
    os.symlink("../out/x.db", data / "l.db")
    for p in ["out/x.db", "data/../out/x.db", "data/dlink/x.db", "data/l.db", f"/proc/self/root{out}/x.db"]:
        r = run(["--allow-db=data", "-e", f'db.open("{p}")'], cwd=tmp_path)
        assert r.status == 1 and "[permission]" in r.err, (p, r)
    # VACUUM INTO would write a copy anywhere: refused (it attaches its target).
    vac = f'h = db.open("data/app.db")\ndb.exec(h, "VACUUM INTO ?", ["{out}/vac.db"])'
    r = run(["--allow-db=data", "-e", vac], cwd=tmp_path)
    assert r.status == 1 and "ATTACH is refused" in r.err, r
    assert not (out / "x.db").exists()
    assert sorted(os.listdir(out)) == ["emptyd", "secret"]
    r = run(["--allow-db=data/app.db", "-e", 'db.open(":memory:")\ndb.open("data/app.db")\nprint(1)'], cwd=tmp_path)
    assert (r.status, r.out) == (0, "1\n"), r
    r = run(["--allow-db=data/app.db", "-e", 'db.open("data/other.db")'], cwd=tmp_path)
    assert r.status == 1 and "[permission]" in r.err, r


def test_race_swapping_a_directory_for_a_symlink(tmp_path):
    """A thread swaps data/sw between a real directory and a symlink to out/ while the
    script reads and writes through it in a loop: nothing outside is ever read or written."""
    data, out = layout(tmp_path)
    (out / "f").write_text("OUTSIDE")
    real = tmp_path / "data" / "real"
    real.mkdir()
    (real / "f").write_text("in")
    sw = data / "sw"
    stop = threading.Event()

    def swapper():
        tmp_link = data / "sw.tmp"
        while not stop.is_set():
            try:
                os.symlink(str(out), tmp_link)
                os.replace(tmp_link, sw)  # sw -> out (a symlink)
                os.unlink(sw)
                os.symlink("real", tmp_link)  # sw -> real (inside)
                os.replace(tmp_link, sw)
            except OSError:
                pass

    os.symlink("real", sw)
    t = threading.Thread(target=swapper, daemon=True)
    t.start()
    code = '''
seen = {}
for i in range(0, 3000)
  try
    seen[file.read("data/sw/f")] = true
  catch e
    seen[e.kind] = true
  end
  try
    file.write("data/sw/w", "x")
  catch e
    seen["w" .. e.kind] = true
  end
end
print(sort(keys(seen)))
'''
    try:
        r = run(["--allow-files=data", "--max-steps", "10000000", "-e", code], cwd=tmp_path, timeout=120)
    finally:
        stop.set()
        t.join()
    assert r.status == 0, r
    assert "OUTSIDE" not in r.out, r
    assert (out / "f").read_text() == "OUTSIDE"
    assert not (out / "w").exists()


# ---------------------------------------------------------------------------
# Hosts
# ---------------------------------------------------------------------------


def _connect(port, host="127.0.0.1"):
    return f'try\n  s = net.connect("{host}", {port})\n  net.close(s)\n  print("ok")\ncatch e\n  print(e.kind)\nend\n'


def test_host_scope_ports_and_addresses(tmp_path, tcp_server):
    srv = tcp_server(echo_lines)
    other = tcp_server(echo_lines)
    p = srv.port
    cases = [
        (f"127.0.0.1:{p}", _connect(p), "ok"),
        (f"127.0.0.1:{p}", _connect(other.port), "permission"),
        (f"127.0.0.1:{p}", _connect(p, "127.0.0.2"), "permission"),
        ("127.0.0.0/8", _connect(p), "ok"),
        ("10.0.0.0/8", _connect(p), "permission"),
        (f"localhost:{p}", _connect(p, "localhost"), "ok"),
        (f"localhost:{p}", _connect(p), "permission"),
        (f"[::1]:{p}", _connect(p), "permission"),
    ]
    for grant, code, want in cases:
        r = run([f"--allow-network={grant}", "-e", code], cwd=tmp_path)
        assert (r.status, r.out.strip()) == (0, want), (grant, r)
    # Each "ok" run connected to srv exactly once; no refused one reached either server.
    # (`settled`, not `accepted`: the accept loop may not have taken the last
    # connections yet when the run that made them has ended.)
    oks = sum(want == "ok" for _, _, want in cases)
    assert (srv.settled(), other.settled()) == (oks, 0)
    r = run([f"--allow-network=127.0.0.1:{p}", "-e", _connect(p, "127.0.0.2")], cwd=tmp_path)
    assert r.out.strip() == "permission"
    assert (srv.settled(), other.settled()) == (oks, 0)


def test_ipv6_loopback(tmp_path):
    import socket
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    s.listen(4)
    port = s.getsockname()[1]
    try:
        for grant, want in [(f"[::1]:{port}", "ok"), ("::1", "ok"), ("::/0", "ok"), (f"[::1]:{port + 1}", "permission"),
                            ("127.0.0.1", "permission")]:
            r = run([f"--allow-network={grant}", "-e", _connect(port, "::1")], cwd=tmp_path)
            assert (r.status, r.out.strip()) == (0, want), (grant, r)
    finally:
        s.close()


def test_name_resolving_outside_the_grant(tmp_path, tcp_server, dns_server):
    srv = tcp_server(echo_lines)
    dns = dns_server({"good.test": ["127.0.0.1"], "evil.test": ["127.0.0.2"], "sub.ok.test": ["127.0.0.1"]})
    d = ["--dns-server", f"127.0.0.1:{dns.port}"]
    p = srv.port
    cases = [
        (f"good.test:{p}", "good.test", "ok"),
        # The name is granted but a grant of a name reaches only that name.
        (f"good.test:{p}", "evil.test", "permission"),
        # An address grant is checked after resolution: evil.test resolves outside it.
        (f"127.0.0.1:{p}", "evil.test", "permission"),
        (f"127.0.0.1:{p}", "good.test", "ok"),
        (f"*.ok.test:{p}", "sub.ok.test", "ok"),
        (f"*.ok.test:{p}", "good.test", "permission"),
    ]
    for grant, host, want in cases:
        r = run([f"--allow-network={grant}", *d, "-e", _connect(p, host)], cwd=tmp_path)
        assert (r.status, r.out.strip()) == (0, want), (grant, host, r)
    # A name no grant covers is refused before any query is sent.
    n = len(dns.queries)
    r = run([f"--allow-network=good.test:{p}", *d, "-e", _connect(p, "other.test")], cwd=tmp_path)
    assert r.out.strip() == "permission" and len(dns.queries) == n, r


def test_http_host_scope(tmp_path, http_server, dns_server):
    port = http_server.server_address[1]
    dns = dns_server({"web.test": ["127.0.0.1"], "evil.test": ["127.0.0.2"]})
    d = ["--dns-server", f"127.0.0.1:{dns.port}"]
    get = 'try\n  print(http.get("{u}")["status"])\ncatch e\n  print(e.kind .. "|" .. e.message)\nend\n'
    cases = [
        (f"127.0.0.1:{port}", f"http://127.0.0.1:{port}/hello", "200"),
        (f"127.0.0.1:{port + 1}", f"http://127.0.0.1:{port}/hello", "permission"),
        (f"web.test:{port}", f"http://web.test:{port}/hello", "200"),
        (f"127.0.0.1:{port}", f"http://evil.test:{port}/hello", "permission"),
        (f"web.test:{port}", f"http://evil.test:{port}/hello", "permission"),
    ]
    for grant, url, want in cases:
        hits = http_server.hits
        r = run([f"--allow-network={grant}", *d, "-e", get.replace("{u}", url)], cwd=tmp_path)
        assert r.status == 0 and r.out.split("|")[0].strip() == want, (grant, url, r)
        if want == "permission":
            assert "--allow-network" in r.out and http_server.hits == hits, r


def test_listen_scope(tmp_path):
    port = free_port()
    code = 'try\n  l = net.listen("127.0.0.1", {p})\n  print("ok")\ncatch e\n  print(e.kind)\nend\n'
    for grant, p, want in [(f"127.0.0.1:{port}", port, "ok"), (f"127.0.0.1:{port}", 0, "permission"),
                           ("127.0.0.1", 0, "ok"), ("10.0.0.1:80", port, "permission")]:
        r = run(["--allow-network", f"--allow-listen={grant}", "-e", code.replace("{p}", str(p))], cwd=tmp_path)
        assert (r.status, r.out.strip()) == (0, want), (grant, r)


# ---------------------------------------------------------------------------
# Audit
# ---------------------------------------------------------------------------


def test_audit_lines(tmp_path):
    data, out = layout(tmp_path)
    audit = tmp_path / "audit.log"
    code = ('x = file.read("data/a.txt")\nfile.write("data/n.txt", "12345")\ntry\n  file.read("out/secret")\n'
            'catch e\nend\ntry\n  db.open("x.db")\ncatch e\nend\n')
    (tmp_path / "t.lsh").write_text(code)
    r = run(["--allow-files=data", "--audit", audit, "t.lsh"], cwd=tmp_path)
    assert r.status == 0, r
    rows = [json.loads(l) for l in audit.read_text().splitlines()]
    assert [(x["builtin"], x["result"]) for x in rows] == [
        ("file.read", "ok"), ("file.write", "ok"), ("file.read", "permission"), ("db.open", "permission")]
    assert rows[0] == {"step": 1, "file": "t.lsh", "line": 1, "builtin": "file.read", "capability": "read",
                       "target": f"{data}/a.txt", "bytes": 7, "result": "ok"}
    assert rows[1]["target"] == f"{data}/n.txt" and rows[1]["bytes"] == 5 and rows[1]["line"] == 2
    assert rows[1]["capability"] == "files"
    assert rows[2]["target"] == f"{out}/secret" and rows[2]["bytes"] == 0
    assert rows[3]["target"] is None


def test_audit_lines_of_nested_gated_calls(tmp_path):
    # Each gated call's line is its own: one made inside a function its argument
    # calls, one made by a callback of `map`, a refusal after them; the outer call
    # keeps its line after the inner ones ran (a step does not write the line: the
    # call does).
    data, _ = layout(tmp_path)
    audit = tmp_path / "audit.log"
    code = ('fn inner()\n  x = 1\n  return file.read("data/a.txt")\nend\n'
            'fn cb(s)\n  return len(file.read("data/a.txt"))\nend\n'
            'n = file.write("data/n.txt",\n   inner())\n'
            'ys = map(["a", "b"], cb)\n'
            'try\n  z = file.exists(inner())\ncatch e\nend\n'
            'try\n  db.open("x.db")\ncatch e\nend\n')
    (tmp_path / "t.lsh").write_text(code)
    r = run(["--allow-files=data", "--audit", audit, "t.lsh"], cwd=tmp_path)
    assert r.status == 0, r
    rows = [json.loads(l) for l in audit.read_text().splitlines()]
    assert [(x["builtin"], x["line"], x["result"]) for x in rows] == [
        ("file.read", 3, "ok"), ("file.write", 8, "ok"), ("file.read", 6, "ok"), ("file.read", 6, "ok"),
        ("file.read", 3, "ok"), ("file.exists", 12, "permission"), ("db.open", 16, "permission")], rows


def test_audit_file_out_of_reach_inside_a_grant(tmp_path):
    data, _ = layout(tmp_path)
    # An audit file inside a write scope is a usage error (issue 23: the script could
    # rename it and forge one at its path; tests/test_operator_outputs.py); a hard link
    # to it inside the grant is another name of the same inode, refused by inode.
    r = run(["--allow-files=data", "--audit", data / "log", "-e", "1"], cwd=tmp_path)
    assert r.status == 2 and "--audit" in r.err and "--allow-files" in r.err, r
    audit = tmp_path / "audit.log"
    audit.write_text("")
    os.link(audit, data / "audit.log")
    for call in ['file.write("data/audit.log", "x")', 'file.append("data/audit.log", "x")',
                 'file.read("data/audit.log")', 'file.remove("data/audit.log")',
                 'file.rename("data/audit.log", "data/z")', 'file.open("data/audit.log")',
                 'db.open("data/audit.log")']:
        r = run(["--allow-files=data", "--allow-db=data", "--audit", audit, "-e", call], cwd=tmp_path)
        assert r.status == 1 and "[permission]" in r.err and "audit log" in r.err, (call, r)
        text = audit.read_text()
        assert text.endswith('"result":"permission"}\n'), text
    rows = [json.loads(l) for l in audit.read_text().splitlines()]
    assert len(rows) == 7


# ---------------------------------------------------------------------------
# check --json
# ---------------------------------------------------------------------------


def test_check_json_call_sites(tmp_path):
    (tmp_path / "lib.lsh").write_text('fn f(p)\n  return file.read(p)\nend\n')
    (tmp_path / "a.lsh").write_text('include "lib.lsh"\nfile.write("out/x.txt", "y")\n'
                                    'fn never()\n  http.get("https://api.example.com/v1")\nend\n')
    r = run(["check", "--json", "a.lsh"], cwd=tmp_path)
    assert r.status == 0, r
    doc = json.loads(r.out)
    assert doc["script"] == "a.lsh"
    assert doc["capabilities"] == ["files", "network"]
    sites = [(s["file"], s["line"], s["builtin"], s["capability"], s["target"]) for s in doc["calls"]]
    assert ("lib.lsh", 2, "file.read", "read", None) in sites
    assert ("a.lsh", 2, "file.write", "files", "out/x.txt") in sites
    assert ("a.lsh", 4, "http.get", "network", "https://api.example.com/v1") in sites
    r = run(["check", "a.lsh"], cwd=tmp_path)
    assert r.out == "capabilities: files network\n", r
