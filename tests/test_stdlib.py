"""The stdlib: `import NAME` of modules written in Leash (stdlib/*.lsh), embedded in the
binary, callable as NAME.fn(...), validated and counted like any other source.

The behaviour of the modules themselves is tested by Leash scripts in tests/lsh/stdlib/
(run here with the real binary: exit 0 and "ok" last); what needs a process boundary
(args.parse printing help / usage errors and exiting) is tested here directly.
"""
import pathlib
import re

import pytest

from conftest import ROOT, run

LSH_DIR = pathlib.Path(__file__).resolve().parent / "lsh" / "stdlib"
LSH_TESTS = sorted(LSH_DIR.glob("*_test.lsh"))
TIMEOUT = 30


@pytest.mark.parametrize("path", LSH_TESTS, ids=[p.name for p in LSH_TESTS])
def test_lsh_stdlib_script(path, tmp_path):
    # No --allow-files: the stdlib modules tested here need no capability.
    r = run(["--error-format", "json", path], cwd=tmp_path, timeout=TIMEOUT)
    assert r.status == 0, r
    assert r.out.splitlines()[-1:] == ["ok"], r


def test_lsh_stdlib_scripts_exist():
    names = {p.name for p in LSH_TESTS}
    assert {"args_test.lsh", "path_test.lsh"} <= names


def module_source(name):
    return (ROOT / "stdlib" / f"{name}.lsh").read_text()


def module_fn_count(name):
    return len(re.findall(r"^fn ", module_source(name), re.M))


def module_lines(name):
    text = module_source(name)
    lines = text.split("\n")
    if text.endswith("\n") or text == "":
        lines.pop()
    return len(lines)


def module_bytes(name):
    return len((ROOT / "stdlib" / f"{name}.lsh").read_bytes())


# ---------------------------------------------------------------------------
# args.parse: help and usage errors end the process
# ---------------------------------------------------------------------------

GREET = """import args
opts = []
push(opts, {"name": "verbose", "short": "v", "flag": true, "help": "say more"})
push(opts, {"name": "count", "short": "c", "type": "number", "default": 1, "help": "how many times"})
push(opts, {"name": "out", "required": true, "help": "where to write"})
spec = {"name": "greet", "about": "Say hello.", "options": opts, "positionals": ["who"]}
o = args.parse(spec, args())
print("parsed", o.who, o.count, o.verbose, o.out)
"""

GREET_HELP = (
    "usage: greet [options] WHO\n"
    "\n"
    "Say hello.\n"
    "\n"
    "arguments:\n"
    "  WHO\n"
    "\n"
    "options:\n"
    "  -v, --verbose      say more\n"
    "  -c, --count COUNT  how many times (default: 1)\n"
    "      --out OUT      where to write (required)\n"
    "  -h, --help         show this help\n"
)


def test_parse_returns_the_options(script):
    r = script(GREET, "-v", "--out", "f", "--count=3", "bob")
    assert (r.status, r.out, r.err) == (0, "parsed bob 3 true f\n", ""), r


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_parse_help_prints_help_and_exits_0(script, flag):
    # help is honoured even though the required --out and WHO are missing
    r = script(GREET, flag)
    assert (r.status, r.out, r.err) == (0, GREET_HELP, ""), r


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--nope", "--out", "f", "bob"], "unknown option --nope"),
        (["-x", "--out", "f", "bob"], "unknown option -x"),
        (["bob"], "missing required option --out"),
        (["--out", "f"], "missing argument WHO"),
        (["--out", "f", "bob", "extra"], 'unexpected argument "extra"'),
        (["--count", "lots", "--out", "f", "bob"], 'option --count needs a number, got "lots"'),
        (["bob", "--out"], "option --out needs a value"),
    ],
)
def test_parse_usage_error_exits_2_with_message_and_usage(script, argv, message):
    r = script(GREET, *argv)
    assert r.status == 2, r
    assert r.out == ""
    assert r.err == f"greet: error: {message}\nusage: greet [options] WHO\n"
    assert r.diags == []  # a usage error of the script, not a leash diagnostic


def test_parse_without_name_says_script(script):
    r = script('import args\nargs.parse({"options": []}, args())\nprint("no")', "--what")
    assert (r.status, r.out) == (2, ""), r
    assert r.err == "script: error: unknown option --what\nusage: script\n"


def test_try_parse_error_uncaught_is_a_user_error(script):
    r = script('import args\nargs.try_parse({}, ["--x"])\n')
    assert r.status == 1, r
    d = r.diag
    assert (d["error"], d["kind"], d["message"]) == ("runtime", "user", "unknown option --x")


# ---------------------------------------------------------------------------
# import: qualified calls, validation, reserved names
# ---------------------------------------------------------------------------


def test_import_makes_module_functions_callable_qualified(script):
    r = script('import path\nimport args\nprint(path.join("a", "b"), args.usage({"name": "n"}))')
    assert (r.status, r.out) == (0, "a/b usage: n\n"), r


def test_import_needs_no_capability(script):
    r = script('import path\nprint(path.normalize("a/../b"))')
    assert (r.status, r.out) == (0, "b\n"), r


def test_import_twice_is_a_no_op(script):
    r = script('import path\nimport path\nprint(path.basename("a/b"))')
    assert (r.status, r.out) == (0, "b\n"), r


def test_module_function_without_import_is_load_error(script):
    r = script('print("before")\nprint(path.join("a", "b"))\n')
    assert (r.status, r.out) == (3, ""), r
    d = r.diag
    assert (d["error"], d["kind"], d["line"]) == ("load", "name", 2)


def test_unknown_module_function_is_load_error(script):
    r = script('import path\nfn never()\n  path.nope("a")\nend\n')
    assert r.status == 3, r
    assert (r.diag["kind"], r.diag["line"]) == ("name", 3)
    assert "path.nope" in r.diag["message"]


def test_module_call_arity_is_checked_at_load(script):
    r = script('import path\nfn never()\n  print(path.join("a"))\nend\n')
    assert r.status == 3, r
    assert (r.diag["error"], r.diag["kind"], r.diag["line"]) == ("load", "arity", 3)


def test_imported_module_name_is_reserved(script):
    r = script('import path\npath = "x"\n')
    assert r.status == 3 and (r.diag["kind"], r.diag["line"]) == ("name", 2), r
    r = script('import path\nfn path(x)\nend\n')
    assert r.status == 3 and r.diag["kind"] == "name", r
    r = script('import args\nfn f(args)\nend\n')
    assert r.status == 3 and r.diag["kind"] == "name", r


def test_user_function_with_same_name_as_module_function(script):
    # Module functions live in the module's namespace: a user `normalize` is another function.
    r = script('import path\nfn normalize(p)\n  return "mine"\nend\nprint(normalize("a/./b"), path.normalize("a/./b"))')
    assert (r.status, r.out) == (0, "mine a/b\n"), r


def test_import_inside_function_is_structure_error(script):
    r = script('fn f()\n  import path\nend\n')
    assert r.status == 3, r
    assert (r.diag["error"], r.diag["kind"], r.diag["line"]) == ("load", "structure", 2)


def test_runtime_error_inside_module_names_the_module_file(script):
    r = script('import path\nx = path.join(1, "b")\n')
    assert r.status == 1, r
    d = r.diag
    assert (d["error"], d["kind"]) == ("runtime", "type")
    assert d["file"] == "stdlib/path.lsh"
    src = module_source("path").split("\n")
    assert "ends_with(a" in src[d["line"] - 1]


def test_check_on_stdlib_user_reports_no_capability(tmp_path):
    (tmp_path / "a.lsh").write_text('import args\nimport path\nprint(path.join("a", args.usage({})))\n')
    r = run(["check", tmp_path / "a.lsh"], cwd=tmp_path, timeout=TIMEOUT)
    assert (r.status, r.out) == (0, "capabilities: none\n"), r


# ---------------------------------------------------------------------------
# Modules count toward the function and source limits
# ---------------------------------------------------------------------------

MAX_FUNCTIONS = 4096
MAX_SOURCE_LINES = 100_000
MAX_SOURCE_BYTES = 4 * 1024 * 1024


def _fns(n):
    return "".join(f"fn f{i}()\nend\n" for i in range(n))


@pytest.mark.parametrize("module", ["path", "args"])
def test_module_functions_count_toward_function_limit_at_n(script, module):
    n = MAX_FUNCTIONS - module_fn_count(module)
    r = script(f"import {module}\n" + _fns(n) + 'print("ok")\n', timeout=TIMEOUT)
    assert (r.status, r.out) == (0, "ok\n"), r


@pytest.mark.parametrize("module", ["path", "args"])
def test_module_functions_count_toward_function_limit_at_n_plus_1(script, module):
    n = MAX_FUNCTIONS - module_fn_count(module) + 1
    r = script(f"import {module}\n" + _fns(n) + 'print("ok")\n', timeout=TIMEOUT)
    assert r.status == 3 and r.out == "", r
    assert any(d["kind"] == "functions" and d["error"] == "load" for d in r.diags), r
    # the same functions without the import load fine
    r = script(_fns(n) + 'print("ok")\n', timeout=TIMEOUT)
    assert (r.status, r.out) == (0, "ok\n"), r


def _lines_script(total_lines):
    head = "import path\n"
    tail = 'print(path.basename("a/b"))\n'
    return head + "#\n" * (total_lines - 2) + tail


def test_module_lines_count_toward_source_lines_at_n(script):
    n = MAX_SOURCE_LINES - module_lines("path")
    r = script(_lines_script(n), timeout=TIMEOUT)
    assert (r.status, r.out) == (0, "b\n"), r


def test_module_lines_count_toward_source_lines_at_n_plus_1(script):
    n = MAX_SOURCE_LINES - module_lines("path") + 1
    r = script(_lines_script(n), timeout=TIMEOUT)
    assert r.status == 3, r
    assert (r.diag["error"], r.diag["kind"]) == ("load", "source_lines")


def _bytes_script(total_bytes):
    head = "import path\n"
    tail = 'print(path.basename("a/b"))\n'
    body = total_bytes - len(head) - len(tail)
    lines = []
    while body > 0:
        n = min(1000, body)  # n bytes including the LF
        lines.append("#" * (n - 1) + "\n")
        body -= n
    text = head + "".join(lines) + tail
    assert len(text) == total_bytes
    return text


def test_module_bytes_count_toward_source_bytes_at_n(script):
    n = MAX_SOURCE_BYTES - module_bytes("path")
    r = script(_bytes_script(n), timeout=TIMEOUT)
    assert (r.status, r.out) == (0, "b\n"), r


def test_module_bytes_count_toward_source_bytes_at_n_plus_1(script):
    n = MAX_SOURCE_BYTES - module_bytes("path") + 1
    r = script(_bytes_script(n), timeout=TIMEOUT)
    assert r.status == 3, r
    assert (r.diag["error"], r.diag["kind"]) == ("load", "source_bytes")


# ---------------------------------------------------------------------------
# Round 3 (SPEC 5, issue 27): dashed options under underscore keys, suggestions
# ---------------------------------------------------------------------------

GREP = """import args
o = args.parse({
  "name": "grep-lite",
  "options": [
    {"name": "ignore-case", "short": "i", "flag": true, "help": "match without case"},
    {"name": "max-count", "short": "m", "type": "number", "help": "stop after N lines"},
    {"name": "tag-name", "multiple": true},
  ],
  "positionals": ["pattern"],
}, args())
"""


def test_dashed_options_are_underscore_keys(script):
    r = script(GREP + "print(o)\nprint(o.ignore_case, o.max_count)\n", "-i", "--max-count", "3",
               "--tag-name", "a", "--tag-name=b", "pat")
    assert r.status == 0, r
    assert r.out.splitlines() == [
        '{"ignore_case":true,"max_count":3,"tag_name":["a","b"],"pattern":"pat"}',
        "true 3",
    ]
    # The help names the value after the key, as argparse does (MAX_COUNT).
    r = script(GREP, "--help")
    assert "--max-count MAX_COUNT" in r.out and "--ignore-case " in r.out, r


def test_unknown_key_suggests_the_nearest_option(script):
    r = script(GREP + "print(o.ignore_cas)\n", "pat")
    assert (r.status, r.diag["kind"]) == (1, "key"), r
    assert r.diag["help"] == ['did you mean "ignore_case"?'], r.diag
    # The dashed spelling is not a key (o["..."] is not searched for a suggestion).
    r = script(GREP + 'x = o["ignore-case"]\n', "pat")
    assert r.diag["kind"] == "key", r
    # Case and "-" for "_" are near.
    r = script(GREP + "y = o.Ignore_Case\n", "pat")
    assert r.diag["help"] == ['did you mean "ignore_case"?'], r.diag


def test_key_suggestions_are_bounded(script):
    # A map of 64 keys is searched, of 65 not; a name over 64 bytes is not searched.
    mk = 'm = {}\nfor i = 1 to N\n  m["key_" .. i] = i\nend\n'
    r = script(mk.replace("N", "64") + "x = m.key_6x\n")
    assert r.diag["kind"] == "key" and "help" in r.diag, r.diag
    r = script(mk.replace("N", "65") + "x = m.key_6x\n")
    assert r.diag["kind"] == "key" and "help" not in r.diag, r.diag
    r = script(mk.replace("N", "64") + "x = m." + "k" * 65 + "\n")
    assert r.diag["kind"] == "key" and "help" not in r.diag, r.diag
    # Short keys: one edit at most.
    r = script('m = {"ab": 1}\nx = m.zz\n')
    assert "help" not in r.diag, r.diag
