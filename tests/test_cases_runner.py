"""The case-file runner itself (tests/test_cases.py, tests/cases/README.md): it parses the
directives, fails on each kind of difference, regenerates golden files, and holds each
case to what tests/oracle.json recorded for it (scripts/oracle.py)."""
import stat
import sys

import pytest

import test_cases as tc
from conftest import LEASH


def case_file(tmp_path, text, name="c.lsh"):
    p = tmp_path / name
    p.write_text(text)
    return p


def failure_of(path, **kw):
    with pytest.raises(pytest.fail.Exception) as e:
        tc.run_and_check(path, **kw)
    return str(e.value)


def test_directives_are_parsed(tmp_path):
    p = case_file(
        tmp_path,
        "print(1)  # expect: 1\n"
        "# expect:\n"
        '# expect raw: "a\\tb"\n'
        "# expect stderr: oops\n"
        "# expect error: load syntax line 3 column 7\n"
        "# expect message: unexpected\n"
        "# expect help: use `and`\n"
        '# expect diag: {"limit": "steps"}\n'
        "# expect error: value\n"
        "# expect exit: 5\n"
        "# expect steps: 12\n"
        "# flags: --max-steps 10 --seed 3\n"
        "# args: a 'b c'\n"
        "# stdin: one\n"
        '# stdin raw: "two"\n'
        "# golden\n"
        "# expected: not a directive (no word boundary), nor is `# argsx: 1`\n",
    )
    c = tc.Case(p)
    assert [t for t, _ in c.stdout] == ["1\n", "\n", "a\tb"]
    assert c.stderr == ["oops\n"]
    assert [(e["class"], e["kind"], e["line"], e["column"]) for e in c.errors] == [
        ("load", "syntax", 3, 7),
        ("runtime", "value", None, None),
    ]
    assert c.errors[0]["message"] == ["unexpected"] and c.errors[0]["help"] == ["use `and`"]
    assert c.errors[0]["fields"] == {"limit": "steps"}
    assert (c.exit, c.steps, c.golden) == (5, 12, True)
    assert c.flags == ["--max-steps", "10", "--seed", "3"] and c.args == ["a", "b c"]
    assert "".join(c.stdin) == "one\ntwo"


@pytest.mark.parametrize(
    "text",
    ["# expect nonsense: 1\n", "# expect message: x\n", "# expect error: arith line x\n", '# expect raw: "x\n'],
)
def test_bad_directives_are_reported_with_their_line(tmp_path, text):
    p = case_file(tmp_path, "x = 1\n" + text)
    assert "c.lsh:2:" in failure_of(p)


def test_a_passing_case_passes(tmp_path):
    p = case_file(
        tmp_path,
        'x = 6\nprint(x * 7)  # expect: 42\neprint("e")\n# expect stderr: e\n'
        "print(args())  # expect: [\"a b\"]\nprint(stdin.read_line())  # expect: hi\ny = x / 0\n"
        "# args: 'a b'\n# stdin: hi\n# expect error: arith line 7 column 7\n"
        "# expect message: division by zero\n# expect steps: 6\n",
    )
    tc.run_and_check(p)


@pytest.mark.parametrize(
    "body,needle",
    [
        ("print(1)  # expect: 2\n", "line 1: expected '2\\n', got '1\\n'"),
        ("print(1)\n", "unexpected further output"),
        ('eprint("x")\n', "stderr: expected ''"),
        ("x = 1 / 0\n", "diagnostics: expected 0, got 1"),
        ("x = 1 / 0  # expect error: value\n", "expected runtime value, got runtime arith"),
        ("x = 1 / 0  # expect error: arith line 2\n", "expected line 2, got 1"),
        ("x = 1 / 0  # expect error: arith\n# expect message: zero!\n", "does not contain 'zero!'"),
        ("x = 1 / 0  # expect error: arith\n# expect exit: 0\n", "exit status: expected 0, got 1"),
        ("x = 1  # expect steps: 2\n", "steps: expected 2, got 1"),
        ("x = 1 / 0  # expect error: arith\n# expect help: nothing\n", "no help line contains"),
        ('x = 1 / 0  # expect error: arith\n# expect diag: {"column": 1}\n', "expected column = 1, got 7"),
    ],
)
def test_each_difference_fails(tmp_path, body, needle):
    msg = failure_of(case_file(tmp_path, body))
    assert needle in msg, msg


def test_golden_is_regenerated_then_checked(tmp_path):
    head = "a = 1\nif a && a\n  print(1)\nend\n"
    tail = "# golden\n# expect error: load syntax line 2 column 6\n"
    p = case_file(tmp_path, head + tail, name="g.lsh")
    assert "no golden file" in failure_of(p, regen=False)
    tc.run_and_check(p, regen=True)
    golden = (tmp_path / "g.golden").read_text()
    assert "LEASH_REGEN=1" in golden and "if a && a" in golden and "use `and`" in golden, golden
    tc.run_and_check(p, regen=False)
    # The program changed: the golden file no longer matches until it is regenerated.
    p.write_text(head.replace("print(1)", "print(2)") + tail)
    assert "differs from g.golden" in failure_of(p, regen=False)
    tc.run_and_check(p, regen=True)
    tc.run_and_check(p, regen=False)
    # The expectations of the case are checked besides the golden file.
    p.write_text(head + "# golden\n")
    assert "diagnostics: expected 0, got 1" in failure_of(p, regen=True)


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """The runner with tmp_path as its case tree and an empty record."""
    monkeypatch.setattr(tc, "CASES", tmp_path)
    monkeypatch.setattr(tc, "ORACLE", {})
    return tc.ORACLE


def test_a_case_is_held_to_its_record(tmp_path, recorded):
    p = case_file(tmp_path, "x = 1\nprint(x)  # expect: 1\n")
    assert "not in tests/oracle.json" in failure_of(p)
    recorded["case:c.lsh"] = tc.run_case(tc.Case(p)).observed()
    assert recorded["case:c.lsh"]["steps"] == 2
    tc.run_and_check(p)
    # Each kind of difference from the record fails, naming what changed.
    for field, other in [("steps", 3), ("status", 1), ("stdout", "0"), ("diagnostics", "0")]:
        recorded["case:c.lsh"] = dict(tc.run_case(tc.Case(p)).observed(), **{field: other})
        msg = failure_of(p)
        assert f"{field}: recorded {other!r}" in msg, msg


def test_a_crash_without_report_differs_from_the_record(tmp_path, recorded, monkeypatch):
    p = case_file(tmp_path, "print(1)  # expect: 1\n")
    recorded["case:c.lsh"] = tc.run_case(tc.Case(p)).observed()
    fake = tmp_path / "fake-leash"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import os, subprocess, sys\n"
        f"r = subprocess.run([{str(LEASH)!r}] + sys.argv[1:])\n"
        "os.remove(sys.argv[sys.argv.index('--report') + 1])\n"
        "sys.exit(70)\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(tc, "LEASH", fake)
    msg = failure_of(p)
    assert "no --report document was written" in msg and "exit status: expected 0, got 70" in msg, msg
