"""Tests as programs: every tests/cases/<area>/*.lsh is one test (tests/cases/README.md).

A case file is a Leash program whose comments say what a run of it must give:

    print(1 + 2)            # expect: 3
    x = 1 / 0               # expect error: arith line 2

The runner runs `leash --error-format json --report R [flags] NAME.lsh [args]` from the
case's own directory and compares stdout, the script's own stderr, the exit status, the
diagnostics and (when asked) the step count with the expectations, all exactly.

Each run is also held to what tests/oracle.json recorded for the case (its exit status,
steps, diagnostics and output, recorded from the tree evaluator and the compiled core
when both existed and agreed: scripts/oracle.py).

Modes (environment variables):
  LEASH_REGEN=1     rewrite the golden files (`# golden` cases) from this build's output;
                    review with `git diff tests/cases` before committing.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import LEASH, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import oracle  # noqa: E402  (scripts/oracle.py: the recorded verdicts)

CASES = Path(__file__).resolve().parent / "cases"
TIMEOUT = 60
REGEN = os.environ.get("LEASH_REGEN") == "1"
CLASSES = {"usage": 2, "load": 3, "runtime": 1, "limit": 4, "internal": 70}

# `# expect: TEXT`, `# expect error: ...`, `# args: ...`: a directive is a comment, alone
# on its line or after code, whose first word is one of these.
DIRECTIVE = re.compile(r"(?:^|\s)#\s*(?:(golden)\s*$|(expect|args|flags|stdin)\b([^:#]*):(.*)$)")
ERROR = re.compile(r"^(?:(usage|load|runtime|limit|internal)\s+)?([a-z_]+)(?:\s+line\s+(\d+))?(?:\s+column\s+(\d+))?$")


class CaseError(Exception):
    pass


def rel(path):
    """A case's name: its path under tests/cases (or its file name, for a case elsewhere)."""
    try:
        return path.relative_to(CASES)
    except ValueError:
        return Path(path.name)


class Case:
    """The expectations read from one case file."""

    def __init__(self, path):
        self.path = path
        self.name = rel(path).with_suffix("").as_posix()
        self.stdout = []  # (text, source line): the expected stdout, in order
        self.stderr = []
        self.errors = []  # dicts: class, kind, line, column, message, help, fields, at
        self.exit = None
        self.steps = None
        self.args = []
        self.flags = []
        self.stdin = []
        self.golden = False
        self.parse()

    def fail(self, lineno, msg):
        raise CaseError(f"{rel(self.path)}:{lineno}: {msg}")

    def parse(self):
        text = self.path.read_text(encoding="utf-8")
        for lineno, line in enumerate(text.split("\n"), 1):
            m = DIRECTIVE.search(line)
            if not m:
                continue
            if m.group(1):
                self.golden = True
                continue
            word, sub, value = m.group(2), m.group(3).strip(), m.group(4)
            value = value[1:] if value.startswith(" ") else value
            value = value.rstrip("\r")
            self.directive(lineno, word, sub, value)

    def raw(self, lineno, value):
        try:
            s = json.loads(value)
        except ValueError as e:
            self.fail(lineno, f"a raw value is one JSON string: {e}")
        if not isinstance(s, str):
            self.fail(lineno, "a raw value is one JSON string")
        return s

    def last_error(self, lineno, word):
        if not self.errors:
            self.fail(lineno, f"`# expect {word}:` follows an `# expect error:` line")
        return self.errors[-1]

    def directive(self, lineno, word, sub, value):
        if word != "expect" and sub not in ("", "raw") or word in ("args", "flags") and sub:
            self.fail(lineno, f"unknown directive `# {word} {sub}:`")
        if word == "args":
            self.args += shlex.split(value)
        elif word == "flags":
            self.flags += shlex.split(value)
        elif word == "stdin":
            self.stdin.append(self.raw(lineno, value) if sub == "raw" else value + "\n")
        elif sub == "":
            self.stdout.append((value + "\n", lineno))
        elif sub == "raw":
            self.stdout.append((self.raw(lineno, value), lineno))
        elif sub == "stderr":
            self.stderr.append(value + "\n")
        elif sub == "stderr raw":
            self.stderr.append(self.raw(lineno, value))
        elif sub == "error":
            m = ERROR.match(value.strip())
            if not m:
                self.fail(lineno, f"expected `# expect error: [CLASS] KIND [line N] [column N]`, got {value!r}")
            cls, kind, line, col = m.groups()
            self.errors.append(
                {
                    "class": cls or "runtime",
                    "kind": kind,
                    "line": int(line) if line else None,
                    "column": int(col) if col else None,
                    "message": [],
                    "help": [],
                    "fields": {},
                    "at": lineno,
                }
            )
        elif sub == "message":
            self.last_error(lineno, sub)["message"].append(value)
        elif sub == "help":
            self.last_error(lineno, sub)["help"].append(value)
        elif sub == "diag":
            try:
                fields = json.loads(value)
            except ValueError as e:
                self.fail(lineno, f"`# expect diag:` takes a JSON object: {e}")
            self.last_error(lineno, sub)["fields"].update(fields)
        elif sub == "exit":
            self.exit = int(value)
        elif sub == "steps":
            self.steps = int(value)
        else:
            self.fail(lineno, f"unknown directive `# expect {sub}:`")

    def expected_exit(self):
        if self.exit is not None:
            return self.exit
        return CLASSES[self.errors[0]["class"]] if self.errors else 0


class Run:
    """One finished run of a case."""

    def __init__(self, status, out, err, report, text=False, raw=(b"", b"")):
        self.text = text
        self.status = status
        self.out = out
        self.err = err
        self.raw = raw
        self.report = report
        self.diags = report.get("diagnostics", []) if report else []
        self.steps = (report or {}).get("stats", {}).get("steps")

    def observed(self):
        """What tests/oracle.json keeps of a run (`oracle.observe`)."""
        obs = {"status": self.status, "stdout": oracle.digest(self.raw[0]), "stderr": oracle.digest(self.raw[1])}
        if self.report is None:
            obs["report"] = None
        else:
            obs["diagnostics"] = oracle.digest(json.dumps(self.diags, sort_keys=True))
            obs["steps"] = self.steps
        return obs

    def show(self):
        return (
            f"  exit status: {self.status}{' (no report written)' if self.report is None and not self.text else ''}\n  steps: {self.steps}\n  stdout: {self.out!r}\n"
            f"  stderr: {self.err!r}\n  diagnostics: {json.dumps(self.diags)}"
        )


def run_case(case, text=False):
    """Run the case; `text` runs it as a person would (text diagnostics, no report)."""
    stdin = "".join(case.stdin).encode()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        opts = [] if text else ["--error-format", "json", "--report", str(report)]
        argv = [str(LEASH), *opts, *case.flags, case.path.name, *case.args]
        proc = subprocess.run(
            argv, input=stdin, capture_output=True, timeout=TIMEOUT, cwd=case.path.parent
        )
        data = None
        if not text and report.exists():
            try:
                data = json.loads(report.read_text())
            except ValueError:
                data = None
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    return Run(proc.returncode, out, err, data, text, (proc.stdout, proc.stderr))


def stdout_mismatch(case, got):
    """Line-by-line, naming the case line whose expectation differs."""
    want = "".join(t for t, _ in case.stdout)
    if got == want:
        return None
    rows = [f"stdout differs from the `# expect:` lines of {rel(case.path)}:"]
    got_lines = got.splitlines(keepends=True)
    exp = [(t, n) for t, n in case.stdout]
    # Compare chunk by chunk while both are line-shaped; show the first few differences.
    shown = 0
    pos = 0
    for text, lineno in exp:
        part = got[pos : pos + len(text)]
        if part != text and shown < 8:
            rows.append(f"  line {lineno}: expected {text!r}, got {part!r}")
            shown += 1
        pos += len(text)
    if len(got) > pos:
        rows.append(f"  unexpected further output: {got[pos:pos + 500]!r}")
    rows.append(f"  whole stdout ({len(got_lines)} lines): {got[:3000]!r}")
    return "\n".join(rows)


def check(case, r):
    problems = []
    if r.report is None:
        problems.append("no --report document was written (did leash crash?)")
    m = stdout_mismatch(case, r.out)
    if m:
        problems.append(m)
    want_err = "".join(case.stderr)
    if r.err != want_err:
        problems.append(f"stderr: expected {want_err!r}, got {r.err[:3000]!r}")
    if r.status != case.expected_exit():
        problems.append(f"exit status: expected {case.expected_exit()}, got {r.status}")
    if len(r.diags) != len(case.errors):
        problems.append(f"diagnostics: expected {len(case.errors)}, got {len(r.diags)}: {json.dumps(r.diags)}")
    for want, d in zip(case.errors, r.diags):
        where = f"diagnostic of line {want['at']}"
        if d.get("error") != want["class"] or d.get("kind") != want["kind"]:
            problems.append(f"{where}: expected {want['class']} {want['kind']}, got {d.get('error')} {d.get('kind')}: {d}")
        for field in ("line", "column"):
            if want[field] is not None and d.get(field) != want[field]:
                problems.append(f"{where}: expected {field} {want[field]}, got {d.get(field)}: {d}")
        for text in want["message"]:
            if text not in d.get("message", ""):
                problems.append(f"{where}: message {d.get('message')!r} does not contain {text!r}")
        for text in want["help"]:
            if not any(text in h for h in d.get("help", [])):
                problems.append(f"{where}: no help line contains {text!r}: {d.get('help')}")
        for k, v in want["fields"].items():
            if d.get(k) != v:
                problems.append(f"{where}: expected {k} = {v!r}, got {d.get(k)!r}")
    if case.steps is not None and r.steps != case.steps:
        problems.append(f"steps: expected {case.steps}, got {r.steps}")
    if problems:
        pytest.fail(f"{case.name}:\n" + "\n".join(problems), pytrace=False)


# ---------------------------------------------------------------------------
# Golden files: NAME.golden beside NAME.lsh holds the program and the text run's output.
# ---------------------------------------------------------------------------


def golden_text(case, r):
    program = case.path.read_text(encoding="utf-8")
    try:
        shown = case.path.relative_to(CASES.parent.parent).as_posix()
    except ValueError:
        shown = case.path.name
    parts = [
        "# @generated by tests/test_cases.py: the program below and what `leash` printed",
        f"# running it as `leash {' '.join(case.flags + [case.path.name] + case.args)}` from its directory.",
        "# Regenerate after a deliberate change, then review `git diff tests/cases`:",
        f"#   LEASH_REGEN=1 python3 -m pytest tests/test_cases.py -k '{case.name}'",
        "",
        f"Program ({shown}):",
        "",
        program.rstrip("\n"),
        "",
        f"Exit status: {r.status}",
        "",
        f"Stdout ({len(r.out.encode())} bytes):",
        "",
        r.out.rstrip("\n"),
        "",
        f"Stderr ({len(r.err.encode())} bytes):",
        "",
        r.err.rstrip("\n"),
        "",
    ]
    return "\n".join(parts)


def check_golden(case, regen=None):
    r = run_case(case, text=True)
    got = golden_text(case, r)
    path = case.path.with_suffix(".golden")
    if REGEN if regen is None else regen:
        path.write_text(got)
    if not path.exists():
        pytest.fail(f"no golden file {path}: run with LEASH_REGEN=1 and review it", pytrace=False)
    want = path.read_text()
    if got != want:
        pytest.fail(
            f"{case.name}: the text run differs from {path.name} (or the program changed);\n"
            f"regenerate with LEASH_REGEN=1 if the change is deliberate.\n--- expected\n{want}\n--- got\n{got}",
            pytrace=False,
        )
    return r


def case_files():
    return sorted(CASES.rglob("*.lsh"))


def check_oracle(case, r):
    """The run against what tests/oracle.json recorded for the case."""
    key = "case:" + case.path.relative_to(CASES).as_posix()
    d = oracle.difference(key, r.observed(), ORACLE.get(key))
    if d:
        pytest.fail(f"{d}\n--- now\n{r.show()}", pytrace=False)


ORACLE = oracle.load()


def run_and_check(path, regen=None):
    """The whole test of one case file: parse, run, check the expectations and the oracle."""
    try:
        case = Case(path)
    except CaseError as e:
        pytest.fail(str(e), pytrace=False)
    if case.golden:
        check_golden(case, regen=regen)
    r = run_case(case)
    check(case, r)
    if CASES in path.parents:
        check_oracle(case, r)


@pytest.mark.parametrize("path", case_files(), ids=lambda p: p.relative_to(CASES).with_suffix("").as_posix())
def test_case(path):
    run_and_check(path)


def test_cases_exist():
    """The runner found its case files (a moved tree must not silently test nothing)."""
    assert len(case_files()) >= 100
