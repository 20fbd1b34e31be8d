"""Command line (SPEC 1): options and their ranges, usage errors, -e, '-', script args."""
import json
import subprocess

import pytest

from conftest import LEASH, run

ZERO_STATS_KEYS = [
    "steps",
    "max_call_depth",
    "peak_frame_bytes",
    "peak_memory_bytes",
    "stdout_bytes",
    "stderr_bytes",
    "stdin_bytes",
    "file_write_bytes",
    "file_read_bytes",
]


def usage(r):
    """Assert a usage error (exit 2) with a JSON usage diagnostic; return it."""
    assert r.status == 2, r
    d = r.diag
    assert d["error"] == "usage" and d["kind"] == "usage", d
    assert d["message"], d
    return d


# --- help and version ------------------------------------------------------


def test_version():
    r = run(["--version"])
    assert r.status == 0
    assert r.out.startswith("leash ")
    assert r.out.strip().split()[1][0].isdigit()


def test_help_lists_every_option():
    r = run(["--help"])
    assert r.status == 0
    for opt in [
        "--max-steps",
        "--max-time",
        "--max-memory",
        "--allow-files",
        "--allow-network",
        "--allow-listen",
        "--allow-db",
        "--tls-ca-file",
        "--dns-server",
        "--seed",
        "--error-format",
        "--stats",
        "--cgi",
        "-e",
        "check",
    ]:
        assert opt in r.out, opt


def test_no_arguments_is_usage_error():
    usage(run(["--error-format", "json"]))


def test_unknown_option_is_usage_error_naming_it():
    d = usage(run(["--error-format", "json", "--bogus-flag", "-e", "print(1)"]))
    assert "--bogus-flag" in d["message"]


def test_usage_error_text_format():
    r = run(["--frobnicate"])
    assert r.status == 2
    assert r.out == ""
    assert r.err.startswith("leash: usage error [usage]: "), r.err
    assert "--frobnicate" in r.err


def test_usage_error_runs_nothing():
    r = run(["--error-format", "json", "--max-steps", "0", "-e", 'print("ran")'])
    usage(r)
    assert r.out == ""


# --- option ranges -----------------------------------------------------------


@pytest.mark.parametrize(
    "opts",
    [
        ["--max-steps", "1"],
        ["--max-steps", "100000000"],
        ["--max-steps", "1000000000000"],
        ["--max-steps", "1000"],
        ["--max-time", "0.5"],
        ["--max-time", "10"],
        ["--max-memory", "1M"],
        ["--max-memory", "1048576"],
        ["--max-memory", "1024K"],
        ["--max-memory", "64G"],
        ["--max-memory", str(64 * 1024**3)],
        ["--max-memory", "256M"],
        ["--seed", "0"],
        ["--seed", "4294967295"],
        ["--error-format", "text"],
        ["--error-format", "json"],
        ["--stats"],
        ["--allow-files"],
        ["--allow-network"],
        ["--allow-network", "--allow-listen"],
        ["--allow-db"],
    ],
)
def test_option_in_range_accepted(opts):
    r = run([*opts, "-e", 'print("ok")'])
    assert r.status == 0, r
    assert r.out == "ok\n"


@pytest.mark.parametrize(
    "opts",
    [
        ["--max-steps", "0"],
        ["--max-steps", "1000000000001"],
        ["--max-steps", "-5"],
        ["--max-steps", "abc"],
        ["--max-steps", "1.5"],
        ["--max-time", "-1"],
        ["--max-time", "abc"],
        ["--max-memory", "1048575"],
        ["--max-memory", "1023K"],
        ["--max-memory", "65G"],
        ["--max-memory", str(64 * 1024**3 + 1)],
        ["--max-memory", "lots"],
        ["--max-memory", "0"],
        ["--seed", "4294967296"],
        ["--seed", "-1"],
        ["--seed", "x"],
    ],
)
def test_option_out_of_range_is_usage_error(opts):
    r = run(["--error-format", "json", *opts, "-e", 'print("ran")'])
    d = usage(r)
    assert opts[0] in d["message"], d
    assert r.out == ""


def test_bad_error_format_is_usage_error():
    r = run(["--error-format", "xml", "-e", 'print("ran")'])
    assert r.status == 2 and r.out == ""
    assert r.err.startswith("leash: usage error [usage]: ") and "--error-format" in r.err


@pytest.mark.parametrize("opt", ["--max-steps", "--max-time", "--max-memory", "--seed", "--error-format"])
def test_option_missing_value_is_usage_error(opt):
    r = run([opt])
    assert r.status == 2, r


def test_listen_without_network_is_usage_error():
    d = usage(run(["--error-format", "json", "--allow-listen", "-e", "print(1)"]))
    assert "--allow-network" in d["message"]


def test_dns_server_without_network_is_usage_error():
    d = usage(run(["--error-format", "json", "--dns-server", "127.0.0.1:53", "-e", "print(1)"]))
    assert "--allow-network" in d["message"]


def test_tls_ca_file_without_network_is_usage_error(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("not really a certificate\n")
    d = usage(run(["--error-format", "json", "--tls-ca-file", ca, "-e", "print(1)"]))
    assert "--allow-network" in d["message"]


def test_max_steps_is_applied():
    r = run(["--error-format", "json", "--max-steps", "3", "-e", "while true\nend"])
    assert r.status == 4
    assert r.diag["kind"] == "steps"


# --- inline code and program from stdin --------------------------------------


def test_inline_code_runs_with_args():
    r = run(["-e", 'print(len(args()), args())', "a", "b c"])
    assert (r.status, r.out) == (0, '2 ["a","b c"]\n')


def test_inline_code_diagnostic_file_is_dash_e():
    r = run(["--error-format", "json", "-e", "x = 1\nprint(1 / 0)"])
    assert r.status == 1
    assert r.diag == {
        "error": "runtime",
        "kind": "arith",
        "message": r.diag["message"],
        "file": "-e",
        "line": 2,
        "column": 9,
    }


def test_inline_code_text_diagnostic():
    r = run(["-e", "print(1 % 0)"])
    assert r.status == 1
    assert r.err.startswith("-e:1:9: runtime error [arith]: "), r.err


def test_program_from_stdin():
    r = run(["-", "x", "y"], input='print("from stdin", args())\n')
    assert (r.status, r.out) == (0, 'from stdin ["x","y"]\n')


def test_program_from_stdin_diagnostic_file():
    r = run(["--error-format", "json", "-"], input="y = 2\nprint(nope)\nif false\nnope = 1\nend\n")
    assert r.status == 1
    assert r.diag["file"] == "<stdin>" and r.diag["line"] == 2 and r.diag["kind"] == "name"


def test_program_from_stdin_load_error_file():
    r = run(["--error-format", "json", "-"], input="if true\n")
    assert r.status == 3
    assert r.diag["file"] == "<stdin>"


def test_script_file_diagnostic_names_file(tmp_path):
    p = tmp_path / "calc.lsh"
    p.write_text("x = 1\n\n\nprint(x / 0)\n")
    r = run([p], cwd=tmp_path)
    assert r.status == 1
    first = r.err.splitlines()[0]
    assert first.endswith("calc.lsh:4:9: runtime error [arith]: division by zero"), first
    r = run(["--error-format", "json", p], cwd=tmp_path)
    d = r.diag
    assert d["error"] == "runtime" and d["kind"] == "arith" and d["line"] == 4
    assert d["file"].endswith("calc.lsh")
    assert d["message"] == "division by zero"


def test_json_diagnostic_is_one_object_per_line(tmp_path):
    p = tmp_path / "bad.lsh"
    p.write_text("if true\nx = (1\n")
    r = run(["--error-format", "json", p])
    assert r.status == 3
    for line in r.err.splitlines():
        obj = json.loads(line)
        assert set(obj) >= {"error", "kind", "message"}


def test_missing_script_is_load_error_include(tmp_path):
    r = run(["--error-format", "json", tmp_path / "absent.lsh"])
    assert r.status == 3
    assert r.diag["error"] == "load" and r.diag["kind"] == "include"


def test_options_after_script_are_script_args(tmp_path):
    p = tmp_path / "a.lsh"
    p.write_text("print(args())\n")
    r = run([p, "--max-steps", "1", "--bogus", "-e"])
    assert (r.status, r.out) == (0, '["--max-steps","1","--bogus","-e"]\n')


def test_shebang_script_runs(tmp_path):
    p = tmp_path / "s.lsh"
    p.write_text("#!/usr/bin/env leash\nprint(\"shebang\")\n")
    r = run([p])
    assert (r.status, r.out) == (0, "shebang\n")


# --- script argument limits ---------------------------------------------------


def test_1024_script_args_pass():
    args = [str(i) for i in range(1024)]
    r = run(["-e", "print(len(args()))", *args])
    assert (r.status, r.out) == (0, "1024\n")


def test_1025_script_args_is_usage_error():
    args = [str(i) for i in range(1025)]
    r = run(["--error-format", "json", "-e", "print(len(args()))", *args])
    usage(r)
    assert r.out == ""


def test_script_args_1mib_total_pass():
    args = ["a" * 65536] * 16  # exactly 1 MiB together
    r = run(["-e", "t = 0\nfor a in args()\nt += len(a)\nend\nprint(t)", *args])
    assert (r.status, r.out) == (0, "1048576\n")


def test_script_args_over_1mib_is_usage_error():
    args = ["a" * 65536] * 16 + ["b"]
    r = run(["--error-format", "json", "-e", "print(1)", *args])
    usage(r)
    assert r.out == ""


def test_script_args_of_file_script_counted(tmp_path):
    p = tmp_path / "a.lsh"
    p.write_text("print(1)\n")
    r = run(["--error-format", "json", p, *[str(i) for i in range(1025)]])
    usage(r)


# --- stats line -------------------------------------------------------------


def test_stats_after_usage_error_are_zero():
    r = run(["--stats", "--max-steps", "0", "-e", "print(1)"])
    assert r.status == 2
    s = r.stats
    for k in ZERO_STATS_KEYS:
        assert s[k] == 0, (k, s)
    assert "wall_ms" in s


def test_stats_after_load_error_are_zero():
    r = run(["--stats", "-e", 'print("x")\nif true'])
    assert r.status == 3
    s = r.stats
    for k in ZERO_STATS_KEYS:
        assert s[k] == 0, (k, s)


def test_stats_has_every_field():
    r = run(["--stats", "-e", 'print("hi")'])
    assert r.status == 0
    s = r.stats
    for k in ZERO_STATS_KEYS + ["wall_ms"]:
        assert isinstance(s[k], int), (k, s)
    assert s["steps"] == 1
    assert s["max_call_depth"] == 1
    assert s["stdout_bytes"] == 3


def test_stats_is_last_stderr_line_and_json():
    r = run(["--stats", "-e", 'eprint("to stderr")\nprint(1/0)'])
    assert r.status == 1
    last = r.err.splitlines()[-1]
    obj = json.loads(last)
    assert set(obj) == {"stats"}
    assert obj["stats"]["stderr_bytes"] == len("to stderr\n")
    assert obj["stats"]["steps"] == 2


def test_stats_written_on_exit_call():
    r = run(["--stats", "-e", "exit(7)"])
    assert r.status == 7
    assert r.stats["steps"] == 1


def test_stats_written_on_limit():
    r = run(["--stats", "--max-steps", "10", "-e", "while true\nend"])
    assert r.status == 4
    assert r.stats["steps"] == 10


def test_stats_stdin_bytes():
    r = run(["--stats", "-e", "x = stdin.read_line()\ny = stdin.read_line()"], input="abc\r\nde\n")
    assert r.status == 0
    assert r.stats["stdin_bytes"] == 8


def test_no_stats_without_flag():
    r = run(["-e", "print(1)"])
    assert "stats" not in r.err


def test_broken_stdout_pipe_does_not_crash():
    # A closed stdout must not turn into an internal error (exit 70).
    p = subprocess.Popen(
        [str(LEASH), "-e", 'for i = 1 to 100000\nprint("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")\nend'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    p.stdout.read(10)
    p.stdout.close()
    p.wait(timeout=30)
    assert p.returncode not in (70, 0 - 11), p.returncode
    p.stderr.close()


def test_arguments_after_inline_code_are_script_args():
    r = run(["-e", "print(args())", "--stats", "-e", "x"])
    assert (r.status, r.out) == (0, '["--stats","-e","x"]\n')
    assert "stats" not in r.err


def test_non_utf8_script_argument_is_bytes():
    r = run(["-e", "a = args()[0]\nprint(len(a), type(a))", b"\xff\xfe"])
    assert (r.status, r.out) == (0, "2 string\n")


def test_empty_inline_program_runs_nothing():
    r = run(["--stats", "-e", ""])
    assert r.status == 0 and r.out == "" and r.stats["steps"] == 0


def test_attached_option_value_and_double_dash(tmp_path):
    # docs/LANGUAGE.md: `--opt=value` is accepted and `--` ends the options.
    r = run(["--error-format=json", "--max-steps=3", "-e", "while true\nend"])
    assert r.status == 4 and r.diag["kind"] == "steps"
    p = tmp_path / "-odd.lsh"
    p.write_text("print(args())\n")
    r = run(["--", "-odd.lsh", "x"], cwd=tmp_path)
    assert (r.status, r.out) == (0, '["x"]\n'), r
