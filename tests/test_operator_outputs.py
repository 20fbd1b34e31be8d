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
    """Run leash with its address space and CPU capped; also its own peak RSS (wait4)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    with open(cwd / ".out", "w+b") as out, open(cwd / ".err", "w+b") as err:
        p = subprocess.Popen([str(LEASH), *map(str, args)], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             preexec_fn=limit, cwd=cwd)
        try:
            _, status, usage = os.wait4(p.pid, 0)
        except BaseException:
            p.kill()
            raise
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(subprocess.CompletedProcess(p.args, p.returncode, out.read(), err.read()), usage.ru_maxrss)


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
