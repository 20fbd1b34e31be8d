"""Shared fixtures: the real `leash` binary, driven through subprocess with timeouts.

The binary is `$LEASH_BIN` if set, else `target/release/leash` of this checkout, built
with `cargo build --release` on first use when missing.
"""
import json
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_TIMEOUT = 60


def _binary():
    env = os.environ.get("LEASH_BIN")
    if env:
        return pathlib.Path(env)
    path = ROOT / "target" / "release" / "leash"
    if not path.exists():
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True, timeout=1800)
    return path


LEASH = _binary()



def capped(limit_as):
    """preexec_fn: cap the child's address space (tests that allocate a lot)."""

    def pre():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    return pre


def run_capped(args, input=b"", cap=1024 * 1024 * 1024, cwd=None, timeout=300):
    """leash --error-format json ARGS, its address space capped at `cap` bytes."""
    proc = subprocess.run(
        [str(LEASH), "--error-format", "json", *[str(a) for a in args]],
        input=input,
        capture_output=True,
        timeout=timeout,
        preexec_fn=capped(cap),
        cwd=cwd,
    )
    return Result(proc)

class Result:
    """A finished run: status, stdout/stderr as text, and helpers for diagnostics."""

    def __init__(self, proc):
        self.proc = proc
        self.status = proc.returncode
        self.out_bytes = proc.stdout
        self.err_bytes = proc.stderr
        self.out = proc.stdout.decode("utf-8", "replace")
        self.err = proc.stderr.decode("utf-8", "replace")

    def json_lines(self):
        rows = []
        for line in self.err.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
        return rows

    @property
    def diags(self):
        """Diagnostics written with --error-format json."""
        return [r for r in self.json_lines() if "error" in r]

    @property
    def diag(self):
        d = self.diags
        assert d, f"no JSON diagnostic in stderr: {self.err!r}"
        return d[0]

    @property
    def stats(self):
        s = [r["stats"] for r in self.json_lines() if "stats" in r]
        assert s, f"no stats line in stderr: {self.err!r}"
        return s[-1]

    def __repr__(self):
        return f"Result(status={self.status}, out={self.out[:500]!r}, err={self.err[:500]!r})"


def run(args, input=None, timeout=DEFAULT_TIMEOUT, cwd=None, env=None):
    """Run leash with `args` (a list of str/bytes/paths); `input` is str or bytes.

    With LEASH_DIFF=1 (tests/cases/README.md) a run without side effects is made under
    LEASH_CORE=tree and LEASH_CORE=vm and must give the same status, stdout and stderr;
    other runs use the vm core only, and runs given an `env` the default core."""
    if isinstance(input, str):
        input = input.encode()
    argv = [str(LEASH)] + [a if isinstance(a, bytes) else str(a) for a in args]

    def once(core=None):
        e = env
        if core is not None:
            e = dict(os.environ if env is None else env, LEASH_CORE=core)
        return subprocess.run(
            argv, input=input if input is not None else b"", capture_output=True, timeout=timeout, cwd=cwd, env=e
        )

    cores = _diff_cores()
    if cores is None or env is not None:
        # (a test that gives an exact environment gets exactly it, on the default core)
        return Result(once())
    if not _pure(argv[1:]):
        return Result(once(cores[1]))
    a, b = once(cores[0]), once(cores[1])
    if _seen(a) != _seen(b) and _seen(a) == _seen(once(cores[0])):
        # (a program whose two runs on one core differ, such as one printing the clock,
        # is not compared)
        raise AssertionError(
            f"LEASH_CORE={cores[0]} and LEASH_CORE={cores[1]} differ for {argv[1:]}:\n"
            f"--- {cores[0]}: status {a.returncode}\nstdout {a.stdout[:2000]!r}\nstderr {a.stderr[:2000]!r}\n"
            f"--- {cores[1]}: status {b.returncode}\nstdout {b.stdout[:2000]!r}\nstderr {b.stderr[:2000]!r}"
        )
    return Result(b)


def _diff_cores():
    diff = os.environ.get("LEASH_DIFF", "")
    if diff in ("", "0"):
        return None
    return ["tree", "vm"] if diff == "1" else [c.strip() for c in diff.split(",")][:2]


# Runs that change files or the world, or that depend on the clock, run once (on the
# second core) in the differential mode.
_IMPURE = (b"--allow-", b"--audit", b"--profile", b"--report", b"--cgi", b"--max-time", b"--update-snapshots")


def _pure(args):
    raw = [a.encode() if isinstance(a, str) else a for a in args]
    if raw and raw[0] in (b"fmt", b"test", b"repl", b"completions"):
        return False
    return not any(a.startswith(p) for a in raw for p in _IMPURE)


def _seen(proc):
    """What the differential mode compares: status, stdout, stderr without wall times,
    work and memory figures (and without the core's name where a script prints its
    environment)."""
    core = rb'(LEASH_CORE\W{1,4})(tree|vm)\b'
    out = re.sub(core, rb"\1CORE", proc.stdout)
    # --stats: the steps and the I/O figures are compared; wall time, work and memory
    # peaks are not (they vary between runs, and the new core may do less).
    err = re.sub(rb'"(wall_ms|work|peak_memory_bytes|peak_frame_bytes)":\d+', rb'"\1":0', proc.stderr)
    err = re.sub(core, rb"\1CORE", err)
    return proc.returncode, out, err


if _diff_cores():
    # The result a test sees is the second core's run: its environment is this one's.
    os.environ["LEASH_CORE"] = _diff_cores()[1]


@pytest.fixture
def leash():
    return run


@pytest.fixture
def script(tmp_path):
    """script(code, *args, opts=[...], **run_kw): write code to a file and run it."""

    def _script(code, *args, opts=(), name="t.lsh", **kw):
        p = tmp_path / name
        p.write_bytes(code.encode() if isinstance(code, str) else code)
        return run(["--error-format", "json", *opts, p, *args], cwd=kw.pop("cwd", tmp_path), **kw)

    return _script


# ---------------------------------------------------------------------------
# Helpers for the core suite: run a snippet and check its output or its error.
# ---------------------------------------------------------------------------


@pytest.fixture
def ok(script):
    """ok(code, *args, **kw) -> stdout text; asserts the run succeeded (exit 0)."""

    def _ok(code, *args, **kw):
        r = script(code, *args, **kw)
        assert r.status == 0, r
        return r.out

    return _ok


@pytest.fixture
def fails(script):
    """fails(code, kind, status=1, error=None, line=None, **kw) -> Result.

    Asserts the run ended with `status` and its first JSON diagnostic has `kind`
    (and `error` class; by default runtime for 1, limit for 4, load for 3)."""

    def _fails(code, kind, *args, status=1, error=None, line=None, **kw):
        r = script(code, *args, **kw)
        assert r.status == status, r
        d = r.diag
        want_error = error or {1: "runtime", 2: "usage", 3: "load", 4: "limit"}.get(status)
        assert d.get("kind") == kind, (d, r)
        if want_error:
            assert d.get("error") == want_error, (d, r)
        if line is not None:
            assert d.get("line") == line, (d, r)
        return r

    return _fails


def lines_of(*rows):
    """Join rows into program text, one statement per line."""
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------------------
# Helpers for the file-system tests (test_files, test_dirs, test_readers).
# ---------------------------------------------------------------------------

FILES = ["--allow-files"]
HANG_TIMEOUT = 20


def files(script, code, *args, timeout=HANG_TIMEOUT, **kw):
    """Run `code` with --allow-files; a hang is reported as a test failure."""
    try:
        return script(code, *args, opts=FILES + list(kw.pop("opts", [])), timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        pytest.fail(f"leash did not finish within {timeout}s (blocked on a FIFO or device?)")


def caught(code):
    """Wrap one statement so that its error is printed as `KIND|MESSAGE`."""
    return f'try\n  {code}\n  print("no error")\ncatch e\n  print(e.kind .. "|" .. e.message)\nend\n'


def err_of(r):
    """The (kind, message) that `caught` printed."""
    assert r.status == 0, r
    line = r.out.strip().splitlines()[-1]
    assert line != "no error", f"expected an error, got none: {r!r}"
    kind, _, msg = line.partition("|")
    return kind, msg
