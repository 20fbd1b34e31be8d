"""Shared fixtures: the real `leash` binary, driven through subprocess with timeouts.

The binary is `$LEASH_BIN` if set, else `target/release/leash` of this checkout, built
with `cargo build --release` on first use when missing.
"""
import json
import os
import pathlib
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
    """Run leash with `args` (a list of str/bytes/paths); `input` is str or bytes."""
    if isinstance(input, str):
        input = input.encode()
    argv = [str(LEASH)] + [a if isinstance(a, bytes) else str(a) for a in args]
    return Result(
        subprocess.run(
            argv, input=input if input is not None else b"", capture_output=True, timeout=timeout, cwd=cwd, env=env
        )
    )


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
