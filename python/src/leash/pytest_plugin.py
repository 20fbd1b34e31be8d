"""The pytest plugin (entry point `pytest11`, name `leash`).

- Collects `*_test.lsh` files: one item per `test_` function, named as pytest names
  Python tests (`path/util_test.lsh::test_parse`), so `-k`, `-x`, `--lf`, `--ff`,
  `--deselect` and xdist work as for Python tests. A file that does not load (checked
  with `leash check` at collection) is a collection error, as a Python module with a
  syntax error is.
- Runs them with `leash test --format json --report FILE`: one `leash test` process per
  file when every test of the file is selected, else one per test (`--filter`).
- A failure shows `FILE:LINE: error [kind]: message`, the source line, the diff Leash
  gives (assert_eq, snapshots), and the test's own stdout and stderr as captured
  sections.
- Markers: a comment `# mark: NAME[, NAME...]` on the lines just above `fn test_...`
  adds those markers (`slow`, `skip`, `xfail`, ...); conftest hooks can add more.
- Options: `--leash-bin PATH` (else ini `leash_bin`, `$LEASH_BIN`, `leash` on PATH),
  `--leash-args "ARGS"` (ini `leash_args`: options for every `leash test`, such as
  `--allow-files=data --max-steps 10000000`), `--leash-timeout SECONDS` (ini
  `leash_timeout`, default 300), `-p no:leash` turns the plugin off.
- Fixture `leash`: `leash.run` bound to the session's binary, run in a fresh temporary
  directory (`leash.tmp_path`), plus `leash.cgi(...)` and `leash.write(name, text)`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import pytest

from ._cgi import CgiResponse, cgi
from ._run import Diagnostic, Result, StrPath, find_leash, group_kwargs, run

FN_RE = re.compile(r"^\s*fn\s+(test_[A-Za-z0-9_]*)\s*\(")
MARK_RE = re.compile(r"^\s*#\s*mark:\s*(.+?)\s*$")
DEFAULT_TIMEOUT = 300.0


# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("leash", "Leash test files (*_test.lsh)")
    group.addoption(
        "--leash-bin",
        dest="leash_bin",
        default=None,
        metavar="PATH",
        help="the leash binary (default: ini leash_bin, $LEASH_BIN, leash on PATH)",
    )
    group.addoption(
        "--leash-args",
        dest="leash_args",
        default=None,
        metavar="ARGS",
        help='options for every `leash test` run, one shell-quoted string: "--allow-files=data --max-steps 1000000"',
    )
    group.addoption(
        "--leash-timeout",
        dest="leash_timeout",
        default=None,
        type=float,
        metavar="SECONDS",
        help=f"wall-clock bound of one `leash test` process (default: ini leash_timeout, {DEFAULT_TIMEOUT:g})",
    )
    parser.addini("leash_bin", "the leash binary", default=None)
    parser.addini("leash_args", "options for every `leash test` run (shell-quoted)", default="")
    parser.addini("leash_timeout", "wall-clock bound of one `leash test` process, seconds", default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "leash: a test function of a Leash *_test.lsh file (added to every one)")


def _bin(config: pytest.Config) -> str:
    given = config.getoption("leash_bin") or config.getini("leash_bin") or None
    if given:
        p = Path(os.path.expanduser(str(given)))
        if not p.is_absolute() and os.sep in str(given):
            p = Path(config.invocation_params.dir) / p
        return str(p)
    return find_leash()


def _args(config: pytest.Config) -> List[str]:
    given = config.getoption("leash_args")
    if given is None:
        given = config.getini("leash_args") or ""
    return shlex.split(str(given))


def _timeout(config: pytest.Config) -> float:
    t = config.getoption("leash_timeout")
    if t is None:
        ini = config.getini("leash_timeout")
        t = float(ini) if ini else DEFAULT_TIMEOUT
    return float(t)


# ---------------------------------------------------------------------------
# Collection
# ---------------------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Optional["LeashFile"]:
    if file_path.name.endswith("_test.lsh"):
        return LeashFile.from_parent(parent, path=file_path)
    return None


class LeashLoadError(Exception):
    """A `*_test.lsh` file that does not load."""


class LeashTestFailed(Exception):
    """A Leash test that failed; `text` is its report."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _functions(text: str) -> List[Tuple[str, int, List[str]]]:
    """(name, 1-based line, markers) of each `fn test_...` in the file's text."""
    out = []
    lines = text.splitlines()
    seen = set()
    for i, line in enumerate(lines):
        m = FN_RE.match(line)
        if not m or m.group(1) in seen:
            continue
        seen.add(m.group(1))
        marks: List[str] = []
        j = i - 1
        while j >= 0:
            mm = MARK_RE.match(lines[j])
            if mm:
                marks += [x.strip() for x in mm.group(1).split(",") if x.strip()]
            elif not lines[j].lstrip().startswith("#"):
                break
            j -= 1
        out.append((m.group(1), i + 1, marks))
    return out


class _Run:
    """What one `leash test` process reported."""

    def __init__(self) -> None:
        self.outcomes: Dict[Optional[str], Dict[str, Any]] = {}
        self.output: Dict[Optional[str], str] = {}
        self.diag: Dict[Optional[str], Diagnostic] = {}
        self.stderr = ""
        self.status: Optional[int] = None
        self.problem: Optional[str] = None


class LeashFile(pytest.File):
    """A `*_test.lsh` file: its `test_` functions are the items."""

    def collect(self) -> Iterator["LeashItem"]:
        text = self.path.read_text(encoding="utf-8", errors="replace")
        self._check()
        self._names: List[str] = []
        self._runs: Dict[Optional[str], _Run] = {}
        for name, line, marks in _functions(text):
            self._names.append(name)
            item = LeashItem.from_parent(self, name=name)
            item.lineno = line
            item.add_marker("leash")
            for m in marks:
                item.add_marker(m)
            yield item

    def _shown(self) -> str:
        try:
            return os.path.relpath(self.path, self.config.invocation_params.dir)
        except ValueError:
            return str(self.path)

    def _check(self) -> None:
        """A file that does not load is a collection error (as a Python module with a
        syntax error is)."""
        argv = [_bin(self.config), "check", "--error-format", "json", *_args(self.config), self._shown()]
        try:
            p = subprocess.run(
                argv,
                cwd=self.config.invocation_params.dir,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_timeout(self.config),
            )
        except subprocess.TimeoutExpired:
            raise LeashLoadError(f"{self._shown()}: leash check did not finish") from None
        if p.returncode == 0:
            return
        lines = []
        for raw in p.stderr.decode("utf-8", "replace").splitlines():
            try:
                d = Diagnostic.from_json(json.loads(raw))
            except ValueError:
                lines.append(raw)
                continue
            lines.append(str(d))
        raise LeashLoadError("\n".join(lines) or f"leash check exited with status {p.returncode}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, LeashLoadError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    # -- running ---------------------------------------------------------------

    def run_for(self, item: "LeashItem") -> Tuple[_Run, Optional[str]]:
        """The run that holds `item`'s result: the whole file at once when all its
        tests are selected, else the test alone. Returns (run, key)."""
        if None in self._runs:
            return self._runs[None], None
        if item.name in self._runs:
            return self._runs[item.name], item.name
        selected = {i.name for i in self.session.items if isinstance(i, LeashItem) and i.parent is self}
        if len(self._names) > 1 and selected >= set(self._names):
            self._runs[None] = self._run(None)
            return self._runs[None], None
        self._runs[item.name] = self._run(item.name)
        return self._runs[item.name], item.name

    def _run(self, name: Optional[str]) -> _Run:
        r = _Run()
        tmp = tempfile.mkdtemp(prefix="leash-pytest-")
        report = os.path.join(tmp, "report.json")
        argv = [_bin(self.config), "test", "--format", "json", "--error-format", "json", "--report", report]
        argv += _args(self.config)
        if name is not None:
            argv += ["--filter", name]
        argv.append(self._shown())
        try:
            proc = subprocess.Popen(
                argv,
                cwd=self.config.invocation_params.dir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                **group_kwargs(),
            )
            try:
                out, err = proc.communicate(timeout=_timeout(self.config))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                out, err = proc.communicate()
                r.problem = f"leash test did not finish within {_timeout(self.config):g} s (killed)"
            except BaseException:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
                raise
            r.status = proc.returncode
            r.stderr = err.decode("utf-8", "replace")
            diags: List[Diagnostic] = []
            try:
                with open(report, "rb") as f:
                    doc = json.load(f)
                diags = [Diagnostic.from_json(d) for d in doc.get("diagnostics", [])]
            except (OSError, ValueError):
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        pending: List[str] = []
        for line in out.decode("utf-8", "replace").splitlines(keepends=True):
            row = None
            if line.startswith("{"):
                try:
                    row = json.loads(line)
                except ValueError:
                    row = None
            if isinstance(row, dict) and "outcome" in row and "name" in row:
                key = row.get("name")
                r.outcomes[key] = row
                r.output[key] = "".join(pending)
                pending = []
                if row.get("outcome") != "ok":
                    # Its diagnostic: the first unused one with the same message.
                    for i, d in enumerate(diags):
                        if d.message == row.get("message") or (
                            row.get("message") or ""
                        ).endswith(d.message):
                            r.diag[key] = diags.pop(i)
                            break
            elif isinstance(row, dict) and set(row) == {"passed", "failed"}:
                continue
            else:
                pending.append(line)
        if pending:
            r.output[""] = "".join(pending)
        if r.problem is None and not r.outcomes:
            said = "\n".join(u for u in ([str(d) for d in diags] or [r.stderr.strip()]) if u)
            r.problem = f"leash test reported no result (status {r.status})" + (":\n" + said if said else "")
        return r


class LeashItem(pytest.Item):
    """One `test_` function of a `*_test.lsh` file."""

    lineno: int = 1

    def runtest(self) -> None:
        parent = self.parent
        assert isinstance(parent, LeashFile)
        run_, key = parent.run_for(self)
        row = run_.outcomes.get(self.name)
        out = run_.output.get(self.name, "")
        if out:
            self.add_report_section("call", "stdout", out)
        if run_.stderr and (key is not None or row is None or row.get("outcome") != "ok"):
            self.add_report_section("call", "stderr" if key is not None else "stderr (whole file)", run_.stderr)
        if row is None:
            top = run_.outcomes.get(None)
            if top is not None:
                d = run_.diag.get(None)
                raise LeashTestFailed(self._text(top, d, f"{parent._shown()}: the file's top level failed"))
            if run_.problem:
                raise LeashTestFailed(run_.problem)
            raise LeashTestFailed(f"{self.name}: leash test reported no result for it")
        if row.get("outcome") != "ok":
            raise LeashTestFailed(self._text(row, run_.diag.get(self.name), None))

    def _text(self, row: Dict[str, Any], d: Optional[Diagnostic], head: Optional[str]) -> str:
        # Where it failed: `failure_file`/`line` of the result (leash test, round 3), else
        # its diagnostic's, else the test file.
        file = (
            row.get("failure_file") or (d.file if d else None) or row.get("file") or self.parent._shown()  # type: ignore[union-attr]
        )
        line = row.get("line") or (d.line if d else None)
        message = str(row.get("message") or "failed")
        kind = f"{d.error} error [{d.kind}]" if d else "failed"
        first, _, rest = message.partition("\n")
        where = f"{file}:{line}" if line else str(file)
        parts = []
        if head:
            parts.append(head)
        parts.append(f"{where}: {kind}: {first}")
        src = self._source_line(file, line)
        if src is not None:
            parts.append(f"{line:>5} | {src}")
        if rest:
            parts.append(rest)
        if d:
            parts += [f"help: {h}" for h in d.help]
        return "\n".join(parts)

    def _source_line(self, file: Any, line: Any) -> Optional[str]:
        if not isinstance(line, int) or line < 1:
            return None
        p = Path(str(file))
        if not p.is_absolute():
            p = Path(self.config.invocation_params.dir) / p
        try:
            lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None
        return lines[line - 1] if line <= len(lines) else None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, LeashTestFailed):
            return excinfo.value.text
        return super().repr_failure(excinfo)

    def reportinfo(self) -> Tuple[Union[str, "os.PathLike[str]"], Optional[int], str]:
        return self.path, self.lineno - 1, f"{self.name} (leash)"


# ---------------------------------------------------------------------------
# The fixture
# ---------------------------------------------------------------------------


class LeashRunner:
    """`leash.run` bound to the session's binary, run by default in `tmp_path` (a fresh
    directory per test). Call it as `leash.run`: `leash(code="print(1)")`,
    `leash(script=path, stdin=b"...", allow={"files": ["data"]})`."""

    def __init__(self, leash_bin: str, tmp_path: Path) -> None:
        self.bin = leash_bin
        self.tmp_path = tmp_path

    def __call__(self, script: Optional[StrPath] = None, code: Optional[str] = None, **kwargs: Any) -> Result:
        kwargs.setdefault("leash_bin", self.bin)
        kwargs.setdefault("cwd", self.tmp_path)
        return run(script=script, code=code, **kwargs)

    run = __call__

    def cgi(self, script: StrPath, **kwargs: Any) -> CgiResponse:
        """`leash.cgi` with this binary, in `tmp_path`."""
        kwargs.setdefault("leash_bin", self.bin)
        kwargs.setdefault("cwd", self.tmp_path)
        return cgi(script, **kwargs)

    def write(self, name: str, text: Union[str, bytes]) -> Path:
        """Write a file under `tmp_path` (folders made as needed); its path."""
        p = self.tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8")
        return p


@pytest.fixture
def leash(request: pytest.FixtureRequest, tmp_path: Path) -> LeashRunner:
    """`leash.run` bound to the session's binary (`--leash-bin`, ini `leash_bin`,
    `$LEASH_BIN`, PATH) and a fresh temporary directory."""
    return LeashRunner(_bin(request.config), tmp_path)
