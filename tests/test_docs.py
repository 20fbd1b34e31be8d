"""The docs stay true to the builtin tables: every builtin the interpreter registers is
documented in UTILITIES.md, and every gated builtin's capability is the one documented."""
import pathlib
import re

import pytest

from conftest import ROOT, run


def builtin_table():
    r = run(["--builtins"])
    assert r.status == 0, r
    rows = [line.split("\t") for line in r.out.splitlines()]
    assert all(len(row) == 6 for row in rows), rows
    return rows


def test_every_builtin_is_documented():
    doc = (ROOT / "UTILITIES.md").read_text()
    missing = [name for name, *_ in builtin_table() if f"`{name}" not in doc]
    assert not missing, f"builtins not in UTILITIES.md: {missing}"


def test_cost_rules_are_known():
    for name, _sig, _arity, _cap, cost, formula in builtin_table():
        assert cost in {"const", "bytes", "items", "bytes+items", "sort", "io", "out", "custom"}, name
        assert formula.startswith(cost + ": "), (name, formula)


def test_every_cost_rule_is_documented():
    """UTILITIES.md's cost table lists each builtin with the formula the table charges."""
    doc = (ROOT / "UTILITIES.md").read_text()
    missing = [(name, formula) for name, *_, formula in builtin_table() if f"| `{name}` | {formula} |" not in doc]
    assert not missing, f"cost rules not in UTILITIES.md: {missing}"


READS = {"file.read", "file.exists", "file.size", "file.stat", "file.open", "file.read_line", "file.close",
         "dir.list", "csv.open", "csv.next", "csv.close"}


def test_gates_match_the_namespaces():
    for name, _sig, _arity, cap, _cost, _formula in builtin_table():
        ns = name.split(".")[0] if "." in name else ""
        if name in READS:
            # SPEC 9: the reading builtins are open to --allow-read (or --allow-files).
            assert cap == "--allow-read", name
        elif name == "json.write":
            # It writes a file, as file.write.
            assert cap == "--allow-files", name
        elif ns in {"file", "dir"}:
            assert cap == "--allow-files", name
        elif name in {"net.listen", "net.accept"}:
            assert cap == "--allow-listen", name
        elif ns in {"http", "net"}:
            assert cap == "--allow-network", name
        elif ns == "db":
            assert cap == "--allow-db", name
        else:
            assert cap == "-", name


def test_help_lists_every_option():
    text = run(["--help"]).out
    for opt in re.findall(r"`(--[a-z-]+)", (ROOT / "docs" / "LANGUAGE.md").read_text()):
        if opt in {"--builtins"}:
            continue
        assert opt in text, opt


def _python_page_examples():
    """Each ```leash block of docs/COMING_FROM_PYTHON.md with the ```output block after it."""
    text = (ROOT / "docs" / "COMING_FROM_PYTHON.md").read_text()
    blocks = re.findall(r"```(\w+)\n(.*?)```", text, re.S)
    pairs = []
    for (kind, code), nxt in zip(blocks, blocks[1:] + [("", "")]):
        if kind == "leash":
            assert nxt[0] == "output", f"a leash example without its output block: {code[:60]!r}"
            pairs.append((code, nxt[1]))
    return pairs


def test_coming_from_python_has_examples():
    # One per idiom: comprehensions, sorted/any/count/reduce, unpacking, the conditional,
    # //, translate and count, code points, bytes and bits, list operators.
    assert len(_python_page_examples()) >= 9


@pytest.mark.parametrize("n", range(9))
def test_coming_from_python_examples_run(n, tmp_path):
    examples = _python_page_examples()
    if n >= len(examples):
        pytest.skip("fewer examples")
    code, want = examples[n]
    f = tmp_path / "ex.lsh"
    f.write_text(code)
    r = run([str(f)])
    assert r.status == 0, (code, r)
    assert r.out == want, (code, r.out, want)
    # Each example is already in the canonical layout.
    assert run(["fmt", "--check", str(f)]).status == 0, code
