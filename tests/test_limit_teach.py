"""Issue 25: limits an operator moves up to their ceilings (`--limit NAME=max`,
`--limit all=max`, `--max-steps` up to 10^12, the gateway's `[limits]` the same), and
limit diagnostics that teach (SPEC 7): JSON fields `limit`, `value`, `option`, a text
`help:` line with the exact option and its ceiling, the gateway's configuration key
under CGI, and load-time limits that say they cannot be moved."""
import re

import pytest

from conftest import run
from test_operator_limits import CASES, MIB, TABLE, leash, limit_of, number, run_case


def text_help(r):
    return [line.split("help: ", 1)[1] for line in r.err.splitlines() if "help: " in line]


# =====================================================================================
# max and all=max
# =====================================================================================


def test_all_max_lifts_every_run_time_limit_to_its_ceiling(tmp_path):
    # a 2 MiB string, a 100,000-item list and a 100,000-entry map: each past its default
    code = (
        's = repeat("a", 2000000)\nxs = range(100000)\nm = {}\nfor i in range(100000)\n  m[str(i)] = i\nend\n'
        "print(len(s), len(xs), len(m))\n"
    )
    p = tmp_path / "t.lsh"
    p.write_text(code)
    big = ["--max-steps", "10000000", "--max-work", "10000000000"]
    assert limit_of(leash([*big, p])) == "string"
    r = leash([*big, "--limit", "all=max", p])
    assert r.status == 0 and r.out == "2000000 100000 100000\n", r
    # NAME=max moves one: the string alone at its ceiling, the list still at its default
    assert limit_of(leash([*big, "--limit", "string=max", p])) == "list"


def test_max_is_the_ceiling_at_n_and_n_plus_one(tmp_path):
    """`json_depth=max` is its ceiling: that deep parses, one more does not."""
    top = number(TABLE["json_depth"][2])
    p = tmp_path / "t.lsh"
    p.write_text('n = int(args()[0])\nx = json.parse(repeat("[", n) .. repeat("]", n))\nprint("ok")\n')
    r = leash(["--limit", "json_depth=max", p, str(top)])
    assert r.status == 0 and r.out == "ok\n", r
    r = leash(["--limit", "json_depth=max", p, str(top + 1)])
    assert limit_of(r) == "json" and r.diag["limit"] == "json_depth", r
    assert r.diag["value"] == top and r.diag["option"] is None, r
    assert any("at its ceiling" in h for h in r.diag["help"]), r


def test_call_depth_max_and_one_more(tmp_path):
    p = tmp_path / "t.lsh"
    p.write_text("fn f(n)\n  if n == 0\n    return 0\n  end\n  return f(n - 1)\nend\nprint(f(int(args()[0])))\n")
    top = number(TABLE["call_depth"][2])
    r = leash(["--limit", "call_depth=max", p, str(top - 2)])
    assert r.status == 0 and r.out == "0\n", r
    r = leash(["--limit", "call_depth=max", p, str(top - 1)])
    assert limit_of(r) == "call_depth"
    assert r.diag["value"] == top and r.diag["option"] is None, r


@pytest.mark.parametrize(
    "args, words",
    [
        (["--limit", "all=5"], ["all takes only max"]),
        (["--limit", "all=MAX"], ["all takes only max"]),
        (["--limit", "nesting=max"], ["load-time limit and cannot be moved"]),
        (["--limit", "steps=max"], ["--max-steps"]),
        (["--max-steps", "1000000000001"], ["--max-steps takes a whole number from 1 to 1000000000000"]),
    ],
)
def test_max_and_all_usage_errors(args, words):
    r = run(["--error-format", "json", *args, "-e", "print(1)"])
    assert r.status == 2 and r.diag["error"] == "usage", r
    for w in words:
        assert w in r.diag["message"], r


def test_max_steps_up_to_ten_to_the_twelfth():
    r = run(["--max-steps", "1000000000000", "--stats", "--error-format", "json", "-e", "print(1)"])
    assert r.status == 0 and r.out == "1\n", r


# =====================================================================================
# Diagnostics that teach: every run-time limit's JSON fields and help line, and the
# option they give raises it.
# =====================================================================================


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_limit_names_itself_its_value_and_the_option(tmp_path, name):
    value, opts, at, past, stdin = CASES[name]
    r = run_case(tmp_path, opts, value, name, past, stdin)
    assert limit_of(r) == TABLE[name][4], r
    d = r.diag
    assert d["limit"] == name, d
    assert d["value"] == number(value), d
    option = d["option"]
    assert re.fullmatch(rf"--limit {name}=\w+", option), d
    assert any(h.startswith(f"raise it with {option} (ceiling") for h in d["help"]), d
    # the option it gives raises the limit enough for this script
    raised = option.split(" ", 1)[1]
    r2 = run_case(tmp_path, opts, None, name, past, stdin)
    assert r2.status == 0, r2
    args = [*opts, "--limit", f"{name}={value}", "--limit", raised]
    n = len(list(tmp_path.iterdir()))
    dd = tmp_path / f"raised{n}"
    dd.mkdir()
    (dd / "t.lsh").write_text(past + "\n")
    r3 = leash([*args, dd / "t.lsh"], input=stdin, cwd=dd, timeout=60)
    assert r3.status == 0, (raised, r3)


def test_text_help_line_as_the_spec_shows_it(tmp_path):
    p = tmp_path / "t.lsh"
    p.write_text('file.write("i.txt", "123456789\\n1\\n")\nr = file.open("i.txt")\nx = file.read_line(r)\nx = file.read_line(r)\n')
    r = run(["--allow-files", "--limit", "file_reads=16M", "--limit", "file_reads=10", p], cwd=tmp_path)
    assert r.status == 4, r
    assert "help: raise it with --limit file_reads=40 (ceiling 1T)" in r.err, r


@pytest.mark.parametrize(
    "args, code, limit, value, option",
    [
        (["--max-steps", "1000"], "while true\nend", "steps", 1000, "--max-steps 4000"),
        (["--max-work", "1000000"], 'while true\n  s = repeat("a", 1000)\nend', "work", 1000000, "--max-work 4000000"),
        (["--max-time", "0.2", "--max-steps", "1000000000000"], "while true\nend", "time", 0.2, "--max-time 0.8"),
        (
            ["--max-memory", "4M", "--limit", "frame_storage=4M", "--limit", "string=8M"],
            's = repeat("a", 3000000)\nt = s .. "b"',
            "memory",
            4 * MIB,
            "--max-memory 16M",
        ),
    ],
)
def test_own_flag_limits_teach(tmp_path, args, code, limit, value, option):
    p = tmp_path / "t.lsh"
    p.write_text(code + "\n")
    r = leash([*args, p])
    assert limit_of(r) == limit, r
    assert (r.diag["limit"], r.diag["value"], r.diag["option"]) == (limit, value, option), r
    t = run([*args, p])
    assert f"help: raise it with {option} (ceiling " in t.err, t


def test_frame_storage_at_the_memory_bound_points_at_max_memory(tmp_path):
    p = tmp_path / "t.lsh"
    p.write_text('s = repeat("a", 1500000)\nt = repeat("b", 1500000)\n')
    r = leash(["--max-memory", "2M", "--limit", "frame_storage=max", "--limit", "string=2M", p])
    assert limit_of(r) in ("frame_storage", "memory"), r
    assert r.diag["option"].startswith("--max-memory "), r


@pytest.mark.parametrize(
    "code, kind, value",
    [
        ("if true\n" * 129 + "end\n" * 129, "nesting", 128),
        ("x = " + "(" * 129 + "1" + ")" * 129 + "\n", "expr_depth", 128),
        ("x" * 129 + " = 1\n", "identifier", 128),
    ],
)
def test_load_time_limits_say_they_cannot_be_moved(tmp_path, code, kind, value):
    p = tmp_path / "t.lsh"
    p.write_text(code)
    r = leash([p])
    assert r.status == 3, r
    d = next(d for d in r.diags if d["kind"] == kind)
    assert (d["error"], d["limit"], d["value"], d["option"]) == ("load", kind, value, None), d
    assert any("load-time limit" in h and "no option moves it" in h for h in d["help"]), d
    t = run([p])
    assert "load-time limit" in t.err, t


def test_other_errors_carry_no_limit_fields():
    r = run(["--error-format", "json", "-e", "x = 1 / 0"])
    assert r.status == 1 and "limit" not in r.diag and "option" not in r.diag, r


# =====================================================================================
# The gateway: [limits] takes max and all = "max"; under CGI the option is its key
# =====================================================================================


def gateway(tmp_path):
    from test_cgi import LEASH_CGI, Gateway

    if not LEASH_CGI.exists():
        pytest.skip(f"{LEASH_CGI} is not built")
    return Gateway(tmp_path)


def test_gateway_limits_all_max_and_its_key_in_diagnostics(tmp_path):
    gw = gateway(tmp_path)
    page = 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\ns = repeat("a", 1500000)\nprint(len(s))\n'
    gw.page("a.lsh", page)
    gw.request("a.lsh")
    assert gw.status == 500, gw.log
    # the worker's diagnostic names the configuration key that raises it
    assert '"option":"[limits] string = \\"4M\\""' in gw.log, gw.log
    gw.extra = '[limits]\nall = "max"\n'
    gw.request("a.lsh")
    assert gw.status == 200 and gw.body == b"1500000\n", (gw.status, gw.log)
    # another entry moves its limit from there, whatever the order it is written in
    gw.extra = '[limits]\nstring = 100\nall = "max"\n'
    gw.request("a.lsh")
    assert gw.status == 500 and "string" in gw.log, gw.log
    gw.extra = '[limits]\nstring = "max"\nframe_storage = "max"\n'
    gw.request("a.lsh")
    assert gw.status == 200 and gw.body == b"1500000\n", (gw.status, gw.log)
    gw.extra = 'max_steps = 1000\n'
    gw.page("b.lsh", 'import cgi\ncgi.headers({"Content-Type": "text/plain"})\nwhile true\nend\n')
    gw.request("b.lsh")
    assert gw.status == 500 and '"option":"max_steps = 4000"' in gw.log, gw.log


def test_gateway_check_config_all_max(tmp_path):
    import subprocess

    from test_cgi import LEASH_CGI

    if not LEASH_CGI.exists():
        pytest.skip(f"{LEASH_CGI} is not built")
    root = tmp_path / "root"
    root.mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'root = "{root}"\nmax_steps = 1000000000000\n[limits]\nall = "max"\nlist = 50000\n')
    p = subprocess.run([str(LEASH_CGI), "--check-config", str(cfg)], capture_output=True, timeout=30)
    assert p.returncode == 0, p
    out = p.stdout.decode()
    assert "string=256M" in out and "list=50000" in out and "stdin=1T" in out, out
    cfg.write_text(f'root = "{root}"\n[limits]\nall = 5\n')
    p = subprocess.run([str(LEASH_CGI), "--check-config", str(cfg)], capture_output=True, timeout=30)
    assert p.returncode == 1 and "all takes only max" in p.stderr.decode(), p


# =====================================================================================
# Arguments shared, never copied or counted again (SPEC 8, round 3): call_args bounds
# calls to user functions only.
# =====================================================================================


def test_builtins_on_a_value_that_fits_in_a_frame_always_work(tmp_path):
    p = tmp_path / "t.lsh"
    p.write_text(
        """m = {}
xs = []
for i in range(100000)
  m[str(i)] = i
  push(xs, i)
end
print(len(m), get(m, "99999"), len(keys(m)), "5" in m, 5 in xs, len(xs))
print(len(json.stringify(m)), len(json.stringify(xs)))
fn f(v)
  return len(v)
end
print(f(m))
"""
    )
    # everything raised but call_args (the default 2 MiB; the map holds about 8 MiB)
    opts = ["--limit", "list=max", "--limit", "map=max", "--limit", "frame_storage=64M", "--limit", "json=max"]
    opts += ["--limit", "json_nodes=max", "--max-steps", "10000000"]
    r = leash([*opts, p])
    assert r.status == 4 and r.diag["kind"] == "call_args" and r.diag["line"] == 12, r
    assert r.out == "100000 99999 100000 true true 100000\n1377781 588891\n", r
    assert r.diag["option"].startswith("--limit call_args="), r
    r = leash([*opts, "--limit", "call_args=max", p])
    assert r.status == 0 and r.out.endswith("\n100000\n"), r


# =====================================================================================
# Growing strings and lists account what they hold (issue 25)
# =====================================================================================


def test_a_string_grown_to_13_mb_is_not_charged_the_whole_limit(tmp_path):
    p = tmp_path / "t.lsh"
    p.write_text('s = ""\nchunk = repeat("x", 100000)\nfor i in range(130)\n  s ..= chunk\nend\nprint(len(s))\n')
    # doubling gave it a 16 MiB capacity (the string limit), past a 15 MiB frame
    r = leash(["--limit", "string=16M", "--limit", "frame_storage=15M", "--stats", p])
    assert r.status == 0 and r.out == "13000000\n", r
    assert r.stats["peak_frame_bytes"] < 13_000_000 * 9 // 8 + 200_000, r.stats


def test_a_list_grown_past_65536_items_grows_by_an_eighth(tmp_path):
    p = tmp_path / "t.lsh"
    p.write_text("xs = []\ni = 0\nwhile i < 1000000\n  push(xs, i)\n  i += 1\nend\nprint(len(xs))\n")
    r = leash(["--limit", "all=max", "--max-steps", "10000000", "--stats", p])
    assert r.status == 0 and r.out == "1000000\n", r
    # 16 bytes a slot: at most an eighth of spare capacity past what it holds
    assert r.stats["peak_frame_bytes"] < 16 * 1_000_000 * 9 // 8 + 100_000, r.stats
