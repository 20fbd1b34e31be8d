"""Issue 23, finding 4: the operator's outputs are on the leash too.

`--profile FILE` keeps at most 65,536 distinct stacks (the rest in `[other]`), writes at
most 32 MiB of stack text a file, streams what it writes, and stops 100 ms past the
`--max-time` deadline (the rest in `[truncated]`). `--audit FILE` quotes at most 4,096
bytes of a target (`target_cut` says how many more there were), each line is charged
work, and an audit file a script could rename or replace (beneath a write scope) is a
usage error."""
import json
import os
import pathlib
import resource
import subprocess

import pytest

from conftest import LEASH

MIB = 1 << 20
MAX_STACKS = 65_536
MAX_STACK_TEXT = 32 * MIB
AUDIT_TARGET_MAX = 4096


class Run:
    def __init__(self, proc, rss_kb):
        self.status = proc.returncode
        self.out = proc.stdout.decode("utf-8", "replace")
        self.err = proc.stderr.decode("utf-8", "replace")
        self.rss_kb = rss_kb
        self.stats = None
        for line in self.err.splitlines():
            if line.startswith('{"stats"'):
                self.stats = json.loads(line)["stats"]

    @property
    def diag(self):
        for line in self.err.splitlines():
            if line.startswith("{") and '"error"' in line:
                return json.loads(line)
        raise AssertionError(f"no JSON diagnostic: {self.err!r}")

    def __repr__(self):
        return f"Run({self.status}, rss={self.rss_kb} KiB, err={self.err[:600]!r})"


def capped(args, cwd, mem=1 << 30, cpu=60, timeout=120):
    """Run leash with its address space and CPU capped; also its own peak RSS.

    The RSS is `/usr/bin/time -f %M`'s: a child forked straight from this (large) pytest
    process would have the pages it shares at the fork counted in its `ru_maxrss`, so
    its figure would follow the test worker's size, not leash's. Without /usr/bin/time,
    wait4's figure (an upper bound)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    rss_file = cwd / ".rss"
    timer = ["/usr/bin/time", "-f", "%M", "-o", str(rss_file)] if os.path.exists("/usr/bin/time") else []
    with open(cwd / ".out", "w+b") as out, open(cwd / ".err", "w+b") as err:
        p = subprocess.Popen([*timer, str(LEASH), *map(str, args)], stdin=subprocess.DEVNULL, stdout=out,
                             stderr=err, preexec_fn=limit, cwd=cwd)
        try:
            _, status, usage = os.wait4(p.pid, 0)
        except BaseException:
            p.kill()
            raise
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        rss = usage.ru_maxrss
        if timer:
            # GNU time puts "Command exited with non-zero status N" before the figure.
            rss = int(rss_file.read_text().split()[-1])
        return Run(subprocess.CompletedProcess(p.args, p.returncode, out.read(), err.read()), rss)


def folded(path):
    rows = []
    for line in pathlib.Path(path).read_text().splitlines():
        stack, n = line.rsplit(" ", 1)
        rows.append((stack, int(n)))
    return rows


# ---------------------------------------------------------------------------
# --profile
# ---------------------------------------------------------------------------

def tree(depth, name_len=100):
    """Deep recursion with branching: every call is a new stack (a binary tree of calls
    whose children are distinct functions), `depth` deep, with long function names."""
    a, b = "a" * name_len, "b" * name_len
    return (f"fn {a}(d)\n  if d > 0\n    {a}(d - 1)\n    {b}(d - 1)\n  end\nend\n"
            f"fn {b}(d)\n  if d > 0\n    {b}(d - 1)\n    {a}(d - 1)\n  end\nend\n{a}({depth})\n")


def check_profile(prof, r):
    steps = folded(prof)
    assert sum(n for _, n in steps) == r.stats["steps"], r
    text = sum(len(s) + 1 for s, _ in steps if s not in ("[other]", "[truncated]"))
    assert text <= MAX_STACK_TEXT
    lines = pathlib.Path(str(prof) + ".lines").read_text().splitlines()
    assert lines[0] == "line\tsteps\twork\tcalls"
    assert sum(int(l.split("\t")[1]) for l in lines[1:]) == r.stats["steps"]
    return dict(steps)


@pytest.mark.parametrize("extra", [[], ["--max-time", "1"]])
def test_profile_of_many_deep_stacks_is_bounded(tmp_path, extra):
    (tmp_path / "t.lsh").write_text(tree(60))
    prof = tmp_path / "p.folded"
    r = capped(["--stats", "--error-format", "json", "--max-memory", "32M", "--max-steps", "20000000", *extra,
                "--profile", prof, "t.lsh"], tmp_path)
    assert r.status == 4, r
    assert r.diag["kind"] == ("time" if extra else "steps"), r
    # The run and the profile stay within --max-memory plus the fixed overhead (64 MiB).
    assert r.rss_kb < (32 + 64) * 1024, r
    stacks = check_profile(prof, r)
    assert "[other]" in stacks or "[truncated]" in stacks
    assert os.path.getsize(prof) < MAX_STACK_TEXT + 4 * MIB


def test_profile_of_many_stacks_default_flags(tmp_path):
    (tmp_path / "t.lsh").write_text(tree(60))
    prof = tmp_path / "p.folded"
    r = capped(["--stats", "--error-format", "json", "--profile", prof, "t.lsh"], tmp_path)
    assert r.status == 4 and r.diag["kind"] == "steps", r
    stacks = check_profile(prof, r)
    assert stacks["[other]"] > 0


@pytest.mark.parametrize("more", [False, True])
def test_profile_stack_bound_n_and_n_plus_1(tmp_path, more):
    # tree(15) makes 2**16 - 1 calls, each its own stack: with main, exactly MAX_STACKS.
    code = tree(15, name_len=1) + ("fn c()\n  x = 1\nend\nc()\n" if more else "")
    (tmp_path / "t.lsh").write_text(code)
    prof = tmp_path / "p.folded"
    r = capped(["--stats", "--error-format", "json", "--profile", prof, "t.lsh"], tmp_path)
    assert r.status == 0, r
    stacks = check_profile(prof, r)
    named = [s for s in stacks if s not in ("[other]", "[truncated]")]
    assert len(named) == MAX_STACKS
    if more:
        assert stacks["[other]"] == 1 and "main;c" not in stacks  # the one step of c's body
    else:
        assert "[other]" not in stacks


# ---------------------------------------------------------------------------
# --audit
# ---------------------------------------------------------------------------

def audit_rows(path):
    return [json.loads(l) for l in pathlib.Path(path).read_text().splitlines()]


@pytest.mark.parametrize("extra", [[], ["--max-time", "1"]])
def test_audit_of_a_huge_path_is_bounded(tmp_path, extra):
    # A 1 MiB path of control bytes (each escaped as \u0001 in JSON: six bytes) 100 times:
    # 600 MB of log before; now each line quotes 4,096 bytes of it.
    (tmp_path / "t.lsh").write_text('p = repeat("\\x01", 1048576)\nfor i = 1 to 100\n  file.exists(p)\nend\n')
    log = tmp_path / "audit.log"
    r = capped(["--stats", "--error-format", "json", "--max-memory", "32M", "--allow-read", "--audit", log,
                *extra, "t.lsh"], tmp_path)
    rows = audit_rows(log)
    if r.status == 4:  # a slow machine may meet the deadline first
        assert extra and r.diag["kind"] == "time", r
    else:
        assert r.status == 0, r
        assert len(rows) == 100
    assert rows, r
    for row in rows:
        assert row["target"] == "\x01" * AUDIT_TARGET_MAX and row["target_cut"] == MIB - AUDIT_TARGET_MAX
    assert os.path.getsize(log) <= len(rows) * (6 * AUDIT_TARGET_MAX + 300)
    assert r.rss_kb < (32 + 64) * 1024, r


@pytest.mark.parametrize("target, quoted, cut", [
    ("a" * AUDIT_TARGET_MAX, "a" * AUDIT_TARGET_MAX, None),
    ("a" * (AUDIT_TARGET_MAX + 1), "a" * AUDIT_TARGET_MAX, 1),
    # A character across the bound is left out whole.
    ("a" * (AUDIT_TARGET_MAX - 1) + "é", "a" * (AUDIT_TARGET_MAX - 1), 2),
])
def test_audit_target_bound_n_and_n_plus_1(tmp_path, target, quoted, cut):
    (tmp_path / "t.lsh").write_text(f'file.exists("{target}")\n')
    log = tmp_path / "audit.log"
    r = capped(["--allow-read", "--audit", log, "t.lsh"], tmp_path)
    assert r.status == 0, r
    [row] = audit_rows(log)
    assert row["target"] == quoted
    assert row.get("target_cut") == cut
    assert ("target_cut" in row) == (cut is not None)


def test_audit_lines_are_charged_work(tmp_path):
    (tmp_path / "t.lsh").write_text('p = repeat("\\x01", 100000)\nfor i = 1 to 10\n  file.exists(p)\n'
                                    '  file.exists("x")\nend\n')
    log = tmp_path / "audit.log"
    plain = capped(["--stats", "--allow-read", "t.lsh"], tmp_path)
    audited = capped(["--stats", "--allow-read", "--audit", log, "t.lsh"], tmp_path)
    assert plain.status == 0 and audited.status == 0, (plain, audited)
    lines = log.read_bytes().splitlines(keepends=True)
    assert len(lines) == 20
    # 2,000 units a line (its write) and one a byte of it.
    assert audited.stats["work"] - plain.stats["work"] == sum(2000 + len(l) for l in lines)
    # The charge counts against --max-work like any other.
    r = capped(["--error-format", "json", "--allow-read", "--audit", log, "--max-work",
                str(plain.stats["work"] + 2000), "t.lsh"], tmp_path)
    assert r.status == 4 and r.diag["kind"] == "work", r


FORGE = ('file.rename("data/audit.log", "data/old.log")\n'
         'file.write("data/audit.log", "{\\"forged\\":true}\\n")\n')


def layout(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "t.lsh").write_text(FORGE)
    return data


@pytest.mark.parametrize("grant", ["--allow-files=data", "--allow-files", "--allow-files=.", "--allow-db=data",
                                   "--allow-db"])
def test_audit_in_a_write_scope_is_a_usage_error(tmp_path, grant):
    data = layout(tmp_path)
    log = data / "audit.log"
    r = capped(["--error-format", "json", grant, "--audit", log, "t.lsh"], tmp_path)
    assert r.status == 2 and r.diag["kind"] == "usage", r
    msg = r.diag["message"]
    assert str(log) in msg and grant.split("=")[0] in msg, msg
    # Nothing ran: no rename, no forged log.
    assert not (data / "old.log").exists()
    assert not log.exists() or "forged" not in log.read_text()


def test_audit_forging_before_and_now(tmp_path):
    data = layout(tmp_path)
    # The forging attempt itself, from a configuration still allowed: the log outside the
    # write scope cannot be renamed nor written by the script.
    log = tmp_path / "audit.log"
    (tmp_path / "t2.lsh").write_text('file.rename("audit.log", "data/old.log")\n')
    r = capped(["--error-format", "json", "--allow-files=data", "--audit", log, "t2.lsh"], tmp_path)
    assert r.status == 1 and r.diag["kind"] == "permission", r
    (tmp_path / "t3.lsh").write_text('file.write("audit.log", "{\\"forged\\":true}\\n")\n')
    r = capped(["--error-format", "json", "--allow-files=data", "--audit", log, "t3.lsh"], tmp_path)
    assert r.status == 1 and r.diag["kind"] == "permission", r
    rows = audit_rows(log)
    assert [(x["builtin"], x["result"]) for x in rows] == [("file.rename", "permission"),
                                                            ("file.write", "permission")]
    assert not (data / "old.log").exists()


def test_audit_through_a_symlink_into_a_write_scope_is_a_usage_error(tmp_path):
    data = layout(tmp_path)
    (data / "real.log").write_text("")
    os.symlink(data / "real.log", tmp_path / "audit.log")
    r = capped(["--error-format", "json", "--allow-files=data", "--audit", tmp_path / "audit.log", "t.lsh"],
               tmp_path)
    assert r.status == 2 and r.diag["kind"] == "usage" and "--allow-files" in r.diag["message"], r


@pytest.mark.parametrize("name, refused", [("app.db", True), ("app.db-wal", True), ("app.db-journal", True),
                                           ("app.dbx", False), ("audit.log", False)])
def test_audit_next_to_a_granted_database_file(tmp_path, name, refused):
    data = layout(tmp_path)
    (tmp_path / "t.lsh").write_text("print(1)\n")
    r = capped(["--error-format", "json", f"--allow-db={data}/app.db", "--audit", data / name, "t.lsh"], tmp_path)
    if refused:
        assert r.status == 2 and "--allow-db" in r.diag["message"], r
    else:
        assert r.status == 0 and r.out == "1\n", r


def test_audit_beside_a_write_scope_is_fine(tmp_path):
    data = layout(tmp_path)
    (data / "sub").mkdir()
    (tmp_path / "t.lsh").write_text('file.write("data/sub/x", "1")\n')
    # A read scope over the log, and a write scope beneath the log's directory: the
    # script can neither rename nor replace it.
    r = capped(["--allow-read", "--allow-files=data/sub", "--audit", data / "audit.log", "t.lsh"], tmp_path)
    assert r.status == 0, r
    [row] = audit_rows(data / "audit.log")
    assert row["result"] == "ok" and row["target"] == str(data / "sub" / "x")
