"""leash.run: one script in a subprocess, its report read back (SPEC 14)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

StrPath = Union[str, "os.PathLike[str]"]
Arg = Union[str, bytes, "os.PathLike[str]"]
#: `allow=`: capability names (`"files"`, `"read"`, `"network"`, `"listen"`, `"db"`), each
#: True (the whole capability) or a list of scopes (`["data", "out/log.txt"]`).
Allow = Union[Mapping[str, Union[bool, str, Sequence[StrPath]]], Iterable[str]]
#: `limits=`: `{"string": "4M", "list": 100000}` or `"max"` (every run-time limit at its
#: ceiling: `--limit all=max`).
Limits = Union[Mapping[str, Union[int, str]], str]

ALLOW_NAMES = ("read", "files", "network", "listen", "db")


class LeashError(Exception):
    """A run that did not succeed: `result` holds everything it left behind."""

    def __init__(self, result: "Result", message: Optional[str] = None) -> None:
        self.result = result
        super().__init__(message if message is not None else _failure_text(result))

    @property
    def status(self) -> Optional[int]:
        return self.result.status

    @property
    def diagnostics(self) -> List["Diagnostic"]:
        return self.result.diagnostics


class LeashTimeout(LeashError, TimeoutError):
    """The run outlived `timeout=`: the child and its process group were killed.
    `result.status` is None; `result.stdout`/`stderr` hold what came before."""


class LeashNotFound(FileNotFoundError):
    """No `leash` binary: not passed, not in `LEASH_BIN`, not on `PATH`."""


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic, as `--error-format json` writes it (SPEC 7). Fields the
    diagnostic does not carry are None."""

    error: str
    kind: str
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    limit: Optional[str] = None
    value: Optional[Any] = None
    option: Optional[str] = None
    help: Tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Diagnostic":
        help_ = d.get("help") or ()
        if isinstance(help_, str):
            help_ = (help_,)
        return cls(
            error=str(d.get("error", "")),
            kind=str(d.get("kind", "")),
            message=str(d.get("message", "")),
            file=d.get("file"),
            line=d.get("line"),
            column=d.get("column"),
            limit=d.get("limit"),
            value=d.get("value"),
            option=d.get("option"),
            help=tuple(str(h) for h in help_),
            raw=dict(d),
        )

    @property
    def location(self) -> str:
        """`file:line:column` (as much of it as is known; "" when none)."""
        parts = [str(p) for p in (self.file, self.line, self.column) if p is not None]
        return ":".join(parts) if self.file is not None else ""

    def __str__(self) -> str:
        where = self.location or "leash"
        text = f"{where}: {self.error} error [{self.kind}]: {self.message}"
        for h in self.help:
            text += f"\n  help: {h}"
        return text


@dataclass(frozen=True)
class Result:
    """A finished run. `status` is the exit status (negative: killed by that signal;
    None: timed out); stdout and stderr are bytes (stderr holds only what the script
    wrote); `diagnostics` and `stats` come from the run's report."""

    status: Optional[int]
    stdout: bytes
    stderr: bytes
    diagnostics: List[Diagnostic]
    stats: Dict[str, Any]
    args: List[str] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def text(self) -> str:
        """stdout decoded as UTF-8 (undecodable bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    @property
    def diagnostic(self) -> Optional[Diagnostic]:
        """The first diagnostic, or None."""
        return self.diagnostics[0] if self.diagnostics else None

    def json(self) -> Any:
        """stdout parsed as JSON."""
        return json.loads(self.stdout)

    def check(self) -> "Result":
        """Raise `LeashError` (its message lists the diagnostics) unless the status is
        0; return self, so that `leash.run(...).check().text` reads well."""
        if self.status != 0:
            raise LeashError(self)
        return self


def _failure_text(r: Result) -> str:
    if r.status is None:
        head = "leash run timed out"
    elif r.status < 0:
        try:
            name = signal.Signals(-r.status).name
        except ValueError:
            name = f"signal {-r.status}"
        head = f"leash was killed by {name}"
    else:
        head = f"leash exited with status {r.status}"
    lines = [head + (":" if r.diagnostics else "")]
    lines += ["  " + str(d).replace("\n", "\n  ") for d in r.diagnostics]
    err = r.stderr_text.strip()
    if err:
        lines.append("  stderr: " + (err if len(err) <= 2000 else err[:2000] + "..."))
    return "\n".join(lines)


def find_leash(leash_bin: Optional[StrPath] = None) -> str:
    """The binary: `leash_bin`, else `$LEASH_BIN`, else `leash` on `PATH`."""
    if leash_bin is not None:
        return os.fspath(leash_bin)
    env = os.environ.get("LEASH_BIN")
    if env:
        return env
    found = shutil.which("leash")
    if found:
        return found
    raise LeashNotFound("no leash binary: pass leash_bin=, set LEASH_BIN, or put leash on PATH")


def _arg(a: Arg) -> Union[str, bytes]:
    if isinstance(a, (str, bytes)):
        return a
    return os.fspath(a)


def options(
    *,
    allow: Optional[Allow] = None,
    limits: Optional[Limits] = None,
    max_steps: Optional[int] = None,
    max_time: Optional[float] = None,
    max_memory: Optional[Union[int, str]] = None,
    max_work: Optional[int] = None,
    seed: Optional[int] = None,
    include_path: Sequence[StrPath] = (),
    audit: Optional[StrPath] = None,
    tls_ca_file: Optional[StrPath] = None,
    dns_server: Optional[str] = None,
    profile: Optional[StrPath] = None,
    cgi: bool = False,
) -> List[str]:
    """The command-line options for these keyword arguments, one flag each:
    `allow={"files": ["data"]}` is `--allow-files=data`, `{"network": True}` is
    `--allow-network`, `limits={"string": "4M"}` is `--limit string=4M`, `limits="max"`
    is `--limit all=max`, `max_steps=N` is `--max-steps N`, and so on."""
    out: List[str] = []
    if max_steps is not None:
        out += ["--max-steps", str(int(max_steps))]
    if max_work is not None:
        out += ["--max-work", str(int(max_work))]
    if max_time is not None:
        out += ["--max-time", _seconds(max_time)]
    if max_memory is not None:
        out += ["--max-memory", str(max_memory)]
    if limits is not None:
        if isinstance(limits, str):
            if limits != "max":
                raise ValueError(f'limits= takes a mapping or "max", got {limits!r}')
            out += ["--limit", "all=max"]
        else:
            for name, value in limits.items():
                out += ["--limit", f"{name}={value}"]
    if allow is not None:
        items = allow.items() if isinstance(allow, Mapping) else ((n, True) for n in allow)
        for name, scope in items:
            if name not in ALLOW_NAMES:
                raise ValueError(f"allow= takes {', '.join(ALLOW_NAMES)}; got {name!r}")
            flag = f"--allow-{name}"
            if scope is True:
                out.append(flag)
            elif scope is False or scope is None:
                continue
            else:
                scopes = [scope] if isinstance(scope, (str, os.PathLike)) else list(scope)
                if not scopes:
                    raise ValueError(f"allow[{name!r}]: an empty scope list grants nothing; use True or omit it")
                out.append(flag + "=" + ",".join(os.fspath(s) for s in scopes))
    for d in include_path:
        out += ["--include-path", os.fspath(d)]
    if seed is not None:
        out += ["--seed", str(int(seed))]
    if audit is not None:
        out += ["--audit", os.fspath(audit)]
    if tls_ca_file is not None:
        out += ["--tls-ca-file", os.fspath(tls_ca_file)]
    if dns_server is not None:
        out += ["--dns-server", dns_server]
    if profile is not None:
        out += ["--profile", os.fspath(profile)]
    if cgi:
        out.append("--cgi")
    return out


def _seconds(t: float) -> str:
    if t <= 0:
        raise ValueError(f"max_time= takes seconds above 0, got {t!r}")
    text = f"{float(t):.6f}".rstrip("0").rstrip(".")
    return text or "0"


def group_kwargs() -> Dict[str, Any]:
    """Popen arguments that make the child lead a process group of its own, so that a
    timeout can kill it and everything it started. Python 3.11+: `process_group=0`
    (setpgid). Before: `start_new_session` (setsid), which is slower on a loaded Linux
    machine: a new session is a new scheduler autogroup, and its first slice can wait
    about 10 ms (measured: median 13 ms a run against 2.5 ms with process_group)."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"start_new_session": True}


def _kill_group(proc: "subprocess.Popen[bytes]") -> None:
    """Kill the child's process group (it leads its own: `group_kwargs`)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


def _stderr_diagnostics(stderr: bytes) -> List[Diagnostic]:
    out = []
    for line in stderr.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line.startswith("{") and '"error"' in line:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict) and "error" in d:
                out.append(Diagnostic.from_json(d))
    return out


def run(
    script: Optional[StrPath] = None,
    code: Optional[str] = None,
    args: Sequence[Arg] = (),
    stdin: Union[bytes, str, None] = b"",
    allow: Optional[Allow] = None,
    limits: Optional[Limits] = None,
    max_steps: Optional[int] = None,
    max_time: Optional[float] = None,
    max_memory: Optional[Union[int, str]] = None,
    max_work: Optional[int] = None,
    cwd: Optional[StrPath] = None,
    env: Optional[Mapping[str, str]] = None,
    timeout: Optional[float] = None,
    *,
    seed: Optional[int] = None,
    include_path: Sequence[StrPath] = (),
    audit: Optional[StrPath] = None,
    tls_ca_file: Optional[StrPath] = None,
    dns_server: Optional[str] = None,
    profile: Optional[StrPath] = None,
    cgi: bool = False,
    extra_args: Sequence[str] = (),
    leash_bin: Optional[StrPath] = None,
    check: bool = False,
) -> Result:
    """Run one Leash script (`script`, a path, or `code`, its text) in a subprocess and
    return its `Result`. Options map one to one onto the command line's (see `options`);
    `extra_args` are further options as written. `stdin` is bytes (str is encoded as
    UTF-8; None: no stdin at all). `env` replaces the environment (None: inherited).
    `timeout` (seconds) kills the child and its process group and raises `LeashTimeout`.
    With `check=True`, a status other than 0 raises `LeashError`."""
    if (script is None) == (code is None):
        raise TypeError("leash.run takes script= or code=, exactly one")
    exe = find_leash(leash_bin)
    argv: List[Union[str, bytes]] = [exe]
    argv += options(
        allow=allow,
        limits=limits,
        max_steps=max_steps,
        max_time=max_time,
        max_memory=max_memory,
        max_work=max_work,
        seed=seed,
        include_path=include_path,
        audit=audit,
        tls_ca_file=tls_ca_file,
        dns_server=dns_server,
        profile=profile,
        cgi=cgi,
    )
    argv += list(extra_args)
    # The report lives in a private directory of its own, outside the working directory
    # (never where a script's file grant is likely to reach).
    report_dir = tempfile.mkdtemp(prefix="leash-report-")
    report = os.path.join(report_dir, "report.json")
    argv += ["--error-format", "json", "--report", report]
    if code is not None:
        argv += ["-e", code]
    else:
        argv.append(os.fspath(script))  # type: ignore[arg-type]
    argv += [_arg(a) for a in args]
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=os.fspath(cwd) if cwd is not None else None,
            env=dict(env) if env is not None else None,
            **group_kwargs(),
        )
        try:
            # communicate() feeds stdin and drains both pipes at once: no deadlock
            # whatever their sizes.
            out, err = proc.communicate(input=data, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            r = Result(None, out or b"", err or b"", [], {}, [_show(a) for a in argv])
            raise LeashTimeout(r, f"leash run timed out after {timeout} s (killed)") from None
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        diags: List[Diagnostic]
        stats: Dict[str, Any]
        try:
            with open(report, "rb") as f:
                doc = json.load(f)
            diags = [Diagnostic.from_json(d) for d in doc.get("diagnostics", [])]
            stats = dict(doc.get("stats", {}))
        except (OSError, ValueError):
            # No report: the report path itself was refused (a usage error on stderr)
            # or the process was killed before it could write one.
            diags, stats = _stderr_diagnostics(err), {}
            if diags:
                err = b"".join(
                    line for line in err.splitlines(keepends=True) if not line.lstrip().startswith(b'{"error"')
                )
    finally:
        shutil.rmtree(report_dir, ignore_errors=True)
    result = Result(proc.returncode, out, err, diags, stats, [_show(a) for a in argv])
    if check:
        result.check()
    return result


def _show(a: Union[str, bytes]) -> str:
    return a if isinstance(a, str) else a.decode("utf-8", "replace")
