"""Every load and run limit of SPEC 8 that the core reaches: N passes, N + 1 fails."""
import subprocess
import time

import pytest

from conftest import LEASH, run

MIB = 1024 * 1024


def load_limit(r, kind):
    assert r.status == 3, r
    d = r.diag
    assert d["error"] == "load" and d["kind"] == kind, r
    assert r.out == ""
    return d


def run_limit(r, kind):
    assert r.status == 4, r
    d = r.diag
    assert d["error"] == "limit" and d["kind"] == kind, r
    return d


def passes(r):
    assert r.status == 0, r
    return r


# =====================================================================================
# Load-time limits
# =====================================================================================


# --- source bytes (4 MiB over all loads) -------------------------------------------


def _write_bytes_file(path, total):
    """A comment-only file of exactly `total` bytes, lines of at most 65,536 bytes."""
    full = b"#" + b"x" * 65534 + b"\n"  # 65,536 bytes with its LF
    n, rest = divmod(total, len(full))
    data = full * n
    if rest:
        data += b"#" + b"y" * (rest - 2) + b"\n" if rest >= 2 else b"\n"
    assert len(data) == total
    path.write_bytes(data)


@pytest.mark.parametrize("extra,ok_", [(0, True), (1, False)])
def test_source_bytes_over_includes(tmp_path, script, extra, ok_):
    main = b'include "a.lsh"\ninclude "b.lsh"\nprint("ran")\n'
    _write_bytes_file(tmp_path / "a.lsh", 2 * MIB)
    _write_bytes_file(tmp_path / "b.lsh", 2 * MIB - len(main) + extra)
    r = script(main)
    if ok_:
        assert passes(r).out == "ran\n"
    else:
        load_limit(r, "source_bytes")


def test_source_bytes_single_file(tmp_path, script):
    head = b'print("ran")\n'
    body = tmp_path / "body"
    _write_bytes_file(body, 4 * MIB - len(head))
    r = script(head + body.read_bytes())
    assert passes(r).out == "ran\n"
    r = script(head + body.read_bytes() + b"\n")
    load_limit(r, "source_bytes")


# --- source lines (100,000 over all loads, blank and comment lines included) -------


@pytest.mark.parametrize("extra,ok_", [(0, True), (1, False)])
def test_source_lines_over_includes(tmp_path, script, extra, ok_):
    main = 'include "lines.lsh"\nprint("ran")\n'  # 2 lines
    (tmp_path / "lines.lsh").write_text("\n# c\n" * 49_999 + "\n" * extra)  # 99,998 (+1) lines
    r = script(main)
    if ok_:
        assert passes(r).out == "ran\n"
    else:
        load_limit(r, "source_lines")


@pytest.mark.parametrize("final_lf", [True, False])
def test_source_lines_final_line(script, final_lf):
    src = "x = 1\n" * 99_999 + 'print("ran")' + ("\n" if final_lf else "")
    assert passes(script(src)).out == "ran\n"
    src = "x = 1\n" * 100_000 + 'print("ran")' + ("\n" if final_lf else "")
    load_limit(script(src), "source_lines")


# --- line bytes (65,536, LF excluded, CR included) -----------------------------------


@pytest.mark.parametrize(
    "line,ok_",
    [
        (b"#" + b"x" * 65535 + b"\n", True),
        (b"#" + b"x" * 65536 + b"\n", False),
        (b"#" + b"x" * 65534 + b"\r\n", True),
        (b"#" + b"x" * 65535 + b"\r\n", False),
        (b"x = 1 #" + b"c" * 65529 + b"\n", True),
        (b"x = 1 #" + b"c" * 65530 + b"\n", False),
    ],
)
def test_line_bytes(script, line, ok_):
    r = script(b'print("ran")\n' + line + b'print("end")\n')
    if ok_:
        assert passes(r).out == "ran\nend\n"
    else:
        d = load_limit(r, "line_bytes")
        assert d["line"] == 2


@pytest.mark.parametrize("n,ok_", [(65536, True), (65537, False)])
def test_line_bytes_last_line_without_lf(script, n, ok_):
    r = script(b'print("ran")\n#' + b"z" * (n - 1))
    if ok_:
        passes(r)
    else:
        load_limit(r, "line_bytes")


# --- tokens per line (1,024, comments excluded) --------------------------------------


def _tokens_line(n):
    """An assignment line of exactly n tokens (n odd >= 3 or even >= 4)."""
    # x = 1 + 1 + ... : 2 + k + (k - 1) = 2k + 1 tokens; a leading unary minus adds one.
    if n % 2 == 1:
        k = (n - 1) // 2
        return "x = " + " + ".join(["1"] * k)
    k = (n - 2) // 2
    return "x = -" + " + ".join(["1"] * k)


def test_tokens_comment_excluded(script):
    line = _tokens_line(1024) + " # " + " ".join(["a", "+", "("] * 500)
    r = script(line + "\nprint(x)\n")
    assert passes(r).out == "509\n"


def test_tokens_string_literal_is_one_token(script):
    items = ", ".join(['"a, b, c, d"'] * 510)  # 510 items: x = [ ... ] is 1,023 tokens
    r = script(f"x = [{items}]\nprint(len(x))\n")
    assert passes(r).out == "510\n"


# --- functions (4,096) -------------------------------------------------------------


@pytest.mark.parametrize("n,ok_", [(4096, True), (4097, False)])
def test_functions_limit(script, n, ok_):
    src = "".join(f"fn f{i}()\nreturn {i}\nend\n" for i in range(n)) + "print(f0() + f4095())\n"
    r = script(src)
    if ok_:
        assert passes(r).out == "4095\n"
    else:
        load_limit(r, "functions")


def test_functions_limit_counts_included(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("".join(f"fn g{i}()\nend\n" for i in range(2048)))
    src = 'include "lib.lsh"\n' + "".join(f"fn h{i}()\nend\n" for i in range(2048)) + 'print("ran")\n'
    assert passes(script(src)).out == "ran\n"
    src = 'include "lib.lsh"\n' + "".join(f"fn h{i}()\nend\n" for i in range(2049))
    load_limit(script(src), "functions")


# --- parameters (1,024) ------------------------------------------------------------


def test_params_over_limit(script):
    # 1,025 parameters can only be written on one line of more than 1,024 tokens, so
    # either the params or the tokens limit reports it; either way a load limit.
    params = ", ".join(f"p{i}" for i in range(1025))
    r = script(f"fn f({params})\nend\n")
    assert r.status == 3 and r.diag["error"] == "load" and r.diag["kind"] in ("params", "tokens"), r


# --- active include files (32) --------------------------------------------------------


def _include_chain(tmp_path, n):
    """main includes f1, f1 includes f2, ... fn: n include files below main."""
    for i in range(1, n + 1):
        nxt = f'include "f{i + 1}.lsh"\n' if i < n else ""
        (tmp_path / f"f{i}.lsh").write_text(nxt + f"depth = {i}\n")
    return 'include "f1.lsh"\nprint(depth)\n'


def test_includes_32_active_files(tmp_path, script):
    # 32 include files active at once: a chain of 32 included files below the main
    # script (which is not an include file).
    r = script(_include_chain(tmp_path, 32))
    assert passes(r).out == "1\n"


def test_includes_33_active_files_fail(tmp_path, script):
    r = script(_include_chain(tmp_path, 33))
    load_limit(r, "includes")


def test_includes_many_siblings_are_not_active_at_once(tmp_path, script):
    for i in range(60):
        (tmp_path / f"s{i}.lsh").write_text(f"v{i} = {i}\n")
    src = "".join(f'include "s{i}.lsh"\n' for i in range(60)) + "print(v59)\n"
    assert passes(script(src)).out == "59\n"


# --- block nesting (128; fn does not count) ---------------------------------------------


# --- expression bytes (16,384, tokens joined by single spaces) -----------------------


def _s(k):
    return '"' + "a" * k + '"'


@pytest.mark.parametrize(
    "template,overhead",
    [
        ("x = {e}\nprint(len(x))", 0),  # right-hand side: the literal itself
        ("x = {e}..1\nprint(len(x))", 5),  # `{e} .. 1` joined with single spaces
        ("x = {e}     ..      1\nprint(len(x))", 5),  # extra spaces do not count
        ("x = 0\nx ..= {e}\nprint(len(x))", 0),  # compound assignment right-hand side
        ("if {e}\nprint(1)\nend", 0),  # condition
        ("if false\nelif {e}\nprint(1)\nend", 0),  # elif condition
        ("while {e}\nprint(1)\nbreak\nend", 0),  # while condition
        ("fn f()\nreturn {e}\nend\nprint(len(f()))", 0),  # returned value
        ("try\nthrow {e}\ncatch e\nprint(1)\nend", 0),  # thrown value
        ("for i = 1 to len({e})\nend\nprint(1)", 8),  # a for bound: len ( {e} )
        ("print({e})", 10),  # a call statement as a whole: print ( {e} )
        ("for c in [{e}]\nprint(1)\nend", 4),  # for ... in collection: [ {e} ]
    ],
)
def test_expr_bytes(script, template, overhead):
    k = 16384 - 2 - overhead
    r = script(template.format(e=_s(k)) + "\n")
    assert passes(r).status == 0
    r = script(template.format(e=_s(k + 1)) + "\n")
    load_limit(r, "expr_bytes")


def test_expr_bytes_each_expression_separately(script):
    # Two expressions of 16,000 bytes on one line (index and value) are each within limits.
    k = 16000
    r = script(f"m = {{}}\nm[{_s(k)}] = {_s(k)}\nprint(len(m))\n")
    assert passes(r).out == "1\n"


# --- expression depth (128) ------------------------------------------------------------


DEPTH_FORMS = {
    "parens": lambda n: "(" * n + "1" + ")" * n,
    "brackets": lambda n: "[" * n + "]" * n,
    "braces": lambda n: '{"a": ' * n + "1" + "}" * n,
    "calls": lambda n: "abs(" * n + "1" + ")" * n,
    "unary_minus": lambda n: "- " * n + "1",
    "not": lambda n: "not " * n + "true",
    "mixed": lambda n: "".join("([{"[i % 3] if i % 3 != 2 else '{"k": ' for i in range(n)) + "1"
    + "".join(")]}"[i % 3] for i in reversed(range(n))),
}


def _interp(n):
    s = "1"
    for _ in range(n):
        s = '"${' + s + '}"'
    return s


DEPTH_FORMS["interpolation"] = _interp


# --- identifiers (128 bytes) --------------------------------------------------------------


# --- locals per frame (4,096) ------------------------------------------------------------


@pytest.mark.parametrize("n,ok_", [(4096, True), (4097, False)])
def test_locals_limit(script, n, ok_):
    body = "".join(f"v{i} = {i}\n" for i in range(n))
    r = script(f"fn f()\n{body}return v0 + v4095\nend\nprint(f())\n")
    if ok_:
        assert passes(r).out == "4095\n"
    else:
        load_limit(r, "locals")


def test_locals_count_params_loop_and_catch_names(script):
    # 2 params + 1 for name + 1 catch name + 4,092 assigned names = 4,096.
    def src(extra):
        body = "".join(f"v{i} = {i}\n" for i in range(4092 + extra))
        return f"fn f(a, b)\nfor i in [1]\nend\ntry\nx = 1\ncatch err\nend\n{body}return a + b\nend\nprint(f(1, 2))\n"

    r = script(src(0))
    # x is a local too: that makes 4,097 names.
    load_limit(r, "locals")
    r = script(src(0).replace("x = 1", "y = len([])").replace("v4091 = 4091\n", ""))
    # y replaces x, v4091 removed: back to 4,096.
    assert passes(r).out == "3\n"


# =====================================================================================
# Run-time limits
# =====================================================================================


# --- time ---------------------------------------------------------------------------------


def test_time_limit_stops_loop(script):
    t0 = time.monotonic()
    # (The step limit at its ceiling: the compiled core runs 100,000,000 steps of this
    # loop in less than half a second.)
    r = script("while true\nend\n", opts=["--max-time", "0.5", "--max-steps", "1000000000000", "--stats"])
    elapsed = time.monotonic() - t0
    run_limit(r, "time")
    assert elapsed < 5
    assert r.stats["wall_ms"] >= 450


def test_time_limit_not_hit_passes(script):
    passes(script("for i = 1 to 1000\nend\n", opts=["--max-time", "5"]))


def test_time_limit_not_catchable(script):
    r = script("try\nwhile true\nend\ncatch e\nprint(\"caught\")\nend\n", opts=["--max-time", "0.3", "--max-steps", "1000000000000"])
    run_limit(r, "time")
    assert r.out == ""


@pytest.mark.parametrize("call", ["stdin.read_line()", "stdin.read(10)"])
def test_time_limit_while_blocked_on_stdin(call):
    p = subprocess.Popen(
        [str(LEASH), "--error-format", "json", "--max-time", "1", "-e", f'print("start")\nx = {call}\nprint("got")'],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    t0 = time.monotonic()
    try:
        p.stdin.write(b"partial")  # fewer than 10 bytes, no line end
        p.stdin.flush()
        rc = p.wait(timeout=15)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdin.close()
    elapsed = time.monotonic() - t0
    out, err = p.stdout.read(), p.stderr.read().decode()
    p.stdout.close()
    p.stderr.close()
    assert rc == 4, err
    assert '"kind":"time"' in err and '"error":"limit"' in err, err
    assert out == b"start\n"
    assert elapsed < 6


# --- memory ---------------------------------------------------------------------------------

MEM_PROGRAM = """a = repeat("x", 1000000)
fn hold(n)
b = repeat("y", n)
return len(b)
end
x = hold(600000)
print(x)
"""


def test_memory_limit_exact_by_stats(script):
    r = passes(script(MEM_PROGRAM, opts=["--stats"]))
    peak = r.stats["peak_memory_bytes"]
    assert 1_600_000 < peak < 1_700_000, r.stats
    assert passes(script(MEM_PROGRAM, opts=["--max-memory", str(peak)])).out == "600000\n"
    run_limit(script(MEM_PROGRAM, opts=["--max-memory", str(peak - 1)]), "memory")


# --- call depth (64, main included) -------------------------------------------------------


# --- string (1 MiB) -----------------------------------------------------------------------


def test_globals_limit_in_main(script):
    # Main's 4,096 local names are its globals (docs/LANGUAGE.md).
    body = "".join(f"g{i} = {i}\n" for i in range(4096))
    assert passes(script(body + "print(g4095)\n")).out == "4095\n"
    body = "".join(f"g{i} = {i}\n" for i in range(4097))
    load_limit(script(body + "print(g4096)\n"), "locals")


# --- list and map items (16,384) ------------------------------------------------------------


# --- frame storage (2 MiB accounted) -------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        "l = range(16384)\nprint(len(l))\n",
        "l = []\nfor i = 0 to 16383\npush(l, i * 0.5)\nend\nprint(len(l))\n",
        'l = []\nfor i = 0 to 16383\npush(l, "s" .. i)\nend\nprint(len(l))\n',
        'm = {}\nfor i = 0 to 16383\nm["key" .. i] = i\nend\nprint(len(m))\n',
        'm = {}\nfor i = 0 to 16383\nm["k" .. i] = "short"\nend\nprint(len(m))\n',
        'm = {}\nfor i = 0 to 16383\nm["k" .. i] = "v" .. i\nend\nprint(len(m))\n',
    ],
    ids=["list_numbers", "list_fractions", "list_short_strings", "map_numbers", "map_same_short_string",
         "map_short_strings"],
)
def test_collection_at_item_limit_fits_in_one_frame(script, code):
    # SPEC 8: the accounting constants are chosen so that a list or map at its item
    # limit, holding numbers or short strings, fits in one frame.
    r = script(code, opts=["--stats"])
    assert passes(r).out == "16384\n"
    assert r.stats["peak_frame_bytes"] <= 2 * MIB


def test_frame_storage_exact_by_stats(script):
    base = 'a = repeat("x", 1048576)\nb = repeat("y", K)\nprint(len(b))\n'
    r = passes(script(base.replace("K", "1000"), opts=["--stats"]))
    peak = r.stats["peak_frame_bytes"]
    k_max = 1000 + (2 * MIB - peak)
    assert 1_040_000 < k_max < 1_048_576
    r = script(base.replace("K", str(k_max)), opts=["--stats"])
    assert passes(r).out == f"{k_max}\n"
    assert r.stats["peak_frame_bytes"] == 2 * MIB
    run_limit(script(base.replace("K", str(k_max + 1))), "frame_storage")


def test_frame_storage_counts_for_snapshot(script):
    # The loop's snapshot of `l` is accounted to the frame as well as `l` itself.
    code = 'l = [repeat("x", 1048000)]\nfor s in l\nprint(len(s))\nend\n'
    r = script(code, opts=["--stats"])
    if r.status == 0:
        assert r.stats["peak_frame_bytes"] > 2 * 1048000
    else:
        run_limit(r, "frame_storage")


# --- call arguments (2 MiB accounted per call) ------------------------------------------------


def test_call_args_do_not_count_in_callers_frame(script):
    # Passing a big temporary to a builtin does not charge the caller's frame a second time.
    code = 'a = repeat("x", 1048576)\nn = len(repeat("y", 1048000))\nprint(n)\n'
    assert passes(script(code)).out == "1048000\n"


# --- environment overlay (4,096 keys, 2 MiB) -------------------------------------------------


# --- stdout (16 MiB per run, 1 MiB per print/write call) ---------------------------------------


def test_stdout_per_call(script):
    r = script('s = repeat("x", 1048576)\nprint(s)\nwrite(s)\n')
    assert passes(r).out_bytes == b"x" * MIB + b"\n" + b"x" * MIB
    r = script('s = repeat("x", 1048575)\nprint("", s)\nprint(slice(s, 1), "y")\n')
    assert passes(r).status == 0
    run_limit(script('s = repeat("x", 1048576)\nwrite(s, "y")\n'), "stdout")
    run_limit(script('s = repeat("x", 1048576)\nprint(s, "")\n'), "stdout")
    run_limit(script('s = repeat("x", 1048575)\nprint("ab", slice(s, 2))\nprint("ab", slice(s, 1))\n'), "stdout")


def test_stdout_total_exact(script):
    code = 's = repeat("x", 1048576)\nfor i = 1 to 16\nwrite(s)\nend\n'
    r = script(code, opts=["--stats"])
    assert passes(r).stats["stdout_bytes"] == 16 * MIB
    assert len(r.out_bytes) == 16 * MIB
    r = script(code + 'write("x")\n', opts=["--stats"])
    run_limit(r, "stdout")
    # The limit is checked before anything of the failing call is written.
    assert r.stats["stdout_bytes"] == 16 * MIB
    assert len(r.out_bytes) == 16 * MIB


def test_stdout_total_counts_newlines(script):
    code = 's = repeat("x", 1048576)\nfor i = 1 to 15\nwrite(s)\nend\nprint(slice(s, 1))\n'
    r = script(code, opts=["--stats"])
    assert passes(r).stats["stdout_bytes"] == 16 * MIB
    code = 's = repeat("x", 1048576)\nfor i = 1 to 15\nwrite(s)\nend\nprint(s)\n'
    run_limit(script(code), "stdout")


# --- stderr (16 MiB per run) --------------------------------------------------------------


@pytest.mark.parametrize("extra,ok_", [(0, True), (1, False)])
def test_stderr_total(script, extra, ok_):
    # 15 * (1 MiB + LF) + (1 MiB - 16 + LF) = 16 MiB exactly.
    code = f's = repeat("e", 1048576)\nfor i = 1 to 15\neprint(s)\nend\neprint(repeat("f", 1048560 + {extra}))\nprint("done")\n'
    r = script(code, opts=["--stats"])
    if ok_:
        assert passes(r).out == "done\n"
        assert r.stats["stderr_bytes"] == 16 * MIB
    else:
        run_limit(r, "stderr")
        assert r.out == ""


# --- stdin (64 KiB per line, 16 MiB per run) ---------------------------------------------------


@pytest.mark.parametrize(
    "data,ok_",
    [
        (b"a" * 65536 + b"\n", True),
        (b"a" * 65536 + b"\r\n", True),
        (b"a" * 65536, True),
        (b"a" * 65537 + b"\n", False),
        (b"a" * 65537, False),
    ],
)
def test_stdin_line_limit(script, data, ok_):
    r = script("l = stdin.read_line()\nprint(len(l))\n", input=data)
    if ok_:
        assert passes(r).out == "65536\n"
    else:
        run_limit(r, "stdin")


def test_stdin_line_limit_only_on_read_line(script):
    r = script("d = stdin.read(100000)\nprint(len(d))\n", input=b"b" * 100000)
    assert passes(r).out == "100000\n"


@pytest.mark.parametrize("extra,ok_", [(0, True), (1, False)])
def test_stdin_total_read(script, extra, ok_):
    code = "n = 0\nwhile true\nd = stdin.read(1048576)\nif d == nil\nbreak\nend\nn += len(d)\nend\nprint(n)\n"
    r = script(code, input=b"z" * (16 * MIB + extra), opts=["--stats"])
    if ok_:
        assert passes(r).out == f"{16 * MIB}\n"
        assert r.stats["stdin_bytes"] == 16 * MIB
    else:
        run_limit(r, "stdin")


@pytest.mark.parametrize("extra,ok_", [(b"", True), (b"x", False)])
def test_stdin_total_counts_line_endings(script, extra, ok_):
    data = (b"q" * 65535 + b"\n") * 256 + extra  # 16 MiB with endings
    code = "n = 0\nwhile stdin.read_line() != nil\nn += 1\nend\nprint(n)\n"
    r = script(code, input=data)
    if ok_:
        assert passes(r).out == "256\n"
    else:
        run_limit(r, "stdin")


# --- steps ------------------------------------------------------------------------------------


def test_functions_limit_counts_stdlib_module_functions(script):
    # SPEC 6: functions of imported stdlib modules count toward the 4,096.
    import pathlib
    import re

    src = (pathlib.Path(__file__).resolve().parent.parent / "stdlib" / "path.lsh").read_text()
    n_mod = len(re.findall(r"(?m)^fn ", src))
    assert n_mod > 0
    user = 4096 - n_mod
    body = "import path\n" + "".join(f"fn u{i}()\nend\n" for i in range(user)) + 'print("ran")\n'
    assert passes(script(body)).out == "ran\n"
    body = "import path\n" + "".join(f"fn u{i}()\nend\n" for i in range(user + 1))
    load_limit(script(body), "functions")
