"""SPEC 13 tools: `leash fmt`, `--profile`, the REPL, shell completions and the man page."""
import json
import os
import re
import pathlib
import shutil
import subprocess

import pytest

from conftest import LEASH, ROOT, run

PROJECT_DIRS = ["stdlib", "tests", "examples", "bench/leash"]


def project_scripts():
    out = []
    for d in PROJECT_DIRS:
        out += sorted((ROOT / d).rglob("*.lsh"))
    # tests/cases holds programs written to fail (load errors on purpose) with their
    # expectations in comments; the case runner (tests/test_cases.py) runs those.
    cases = ROOT / "tests" / "cases"
    return [p for p in out if "node_modules" not in p.parts and cases not in p.parents]


def check_dump(path, cwd):
    """What `leash check` says of a script (status, stdout, stderr without the path)."""
    r = run(["check", str(path)], cwd=cwd)
    return r.status, r.out, r.err.replace(str(path), "SCRIPT")


# ----------------------------------------------------------------------------------------
# fmt
# ----------------------------------------------------------------------------------------

MESSY = (ROOT / "tests/lsh/fmt/messy.lsh.txt").read_text()
CANONICAL = """#!/usr/bin/env leash
# a messy script: the formatter's input
import path
fn add(a, b) # adds
  return a + b
end
fn classify(n)
  if n < 0
    return "neg"
  elif n == 0 and not (n != 0)
    return 'zero'
  else
    return "pos ${ n*2 }"
  end
end
x = add(1, -2) * -3
m = {a: 1, "b": [1, -2, 3]}
for i = 1 to 3 step 1
  # inside the loop
  x += i ** 2 % 7
end
for k, v in m
  print(k .. ": " .. v)
end
try
  throw "boom"
catch e
  print(e)
end
while x > 100
  x -= 1
end
print(classify(x), m.a, m["b"][0], path.join("a", "b"))
"""


def test_fmt_canonical_layout_and_same_output(tmp_path):
    f = tmp_path / "m.lsh"
    f.write_text(MESSY)
    before = run([str(f)])
    assert before.status == 0, before
    r = run(["fmt", str(f)])
    assert r.status == 0, r
    assert f.read_text() == CANONICAL
    after = run([str(f)])
    assert (after.status, after.out, after.err) == (before.status, before.out, before.err)


def test_fmt_check_statuses_and_idempotence(tmp_path):
    f = tmp_path / "m.lsh"
    f.write_text(MESSY)
    r = run(["fmt", "--check", str(f)])
    assert r.status == 1 and str(f) in r.out
    assert f.read_text() == MESSY  # --check changes nothing
    assert run(["fmt", str(f)]).status == 0
    r = run(["fmt", "--check", str(f)])
    assert r.status == 0 and r.out == ""
    assert run(["fmt", str(f)]).status == 0
    assert f.read_text() == CANONICAL


def test_fmt_stdin_to_stdout():
    r = run(["fmt", "-"], input=MESSY.encode())
    assert r.status == 0 and r.out == CANONICAL
    assert run(["fmt", "--check", "-"], input=MESSY.encode()).status == 1
    assert run(["fmt", "--check", "-"], input=CANONICAL.encode()).status == 0


def test_fmt_keeps_comments():
    src = "# head\nx = 1   # one\nif x  # open\n# body\ny = '#' .. \"#\"  #   tail  \nend # done\n"
    r = run(["fmt", "-"], input=src.encode())
    assert r.status == 0
    assert r.out == "# head\nx = 1 # one\nif x # open\n  # body\n  y = '#' .. \"#\" #   tail\nend # done\n"


def test_fmt_refuses_what_does_not_parse(tmp_path):
    f = tmp_path / "bad.lsh"
    f.write_text("x = (1\nif y\n")
    r = run(["fmt", str(f)])
    assert r.status == 3 and "bad.lsh:1" in r.err
    assert f.read_text() == "x = (1\nif y\n"
    assert run(["fmt", str(tmp_path / "missing.lsh")]).status == 3
    assert run(["fmt"]).status == 2
    assert run(["fmt", "--bogus", str(f)]).status == 2


def test_fmt_whole_project(tmp_path):
    """Every .lsh of the project: formatting keeps what `leash check` says and what the
    runnable ones print, and a second format changes nothing."""
    scripts = project_scripts()
    assert len(scripts) >= 10
    copy = tmp_path / "p"
    for s in scripts:
        dst = copy / s.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(s, dst)
    copies = [copy / s.relative_to(ROOT) for s in scripts]
    before = {c: check_dump(c, copy) for c in copies}
    runs_before = {}
    for c in copies:
        if "bench" in c.parts or "examples" in c.parts:
            runs_before[c] = run(["--max-steps", "3000000", str(c)], cwd=c.parent)
    r = run(["fmt"] + [str(c) for c in copies])
    assert r.status == 0, r
    for c in copies:
        assert check_dump(c, copy) == before[c], c
    for c, b in runs_before.items():
        a = run(["--max-steps", "3000000", str(c)], cwd=c.parent)
        assert (a.status, a.out) == (b.status, b.out), c
    texts = {c: c.read_text() for c in copies}
    r = run(["fmt", "--check"] + [str(c) for c in copies])
    assert r.status == 0, r
    assert all(c.read_text() == texts[c] for c in copies)
    # The test runner's own scripts still pass after formatting.
    t = run(["test", str(copy / "tests")], cwd=copy)
    t0 = run(["test", str(ROOT / "tests")], cwd=ROOT)
    assert (t.status, t.out) == (t0.status, t0.out)


# ----------------------------------------------------------------------------------------
# --profile
# ----------------------------------------------------------------------------------------

PROF = """fn g(n)
  x = 0
  for i = 1 to n
    x += i
  end
  return x
end
fn f(n)
  return g(n) + g(1)
end
s = ""
for k = 1 to 3
  s = s .. f(10)
end
print(s)
"""


def read_profile(p):
    stacks = {}
    for line in pathlib.Path(p).read_text().splitlines():
        stack, n = line.rsplit(" ", 1)
        assert stack and int(n) > 0
        stacks[stack] = int(n)
    return stacks


def read_lines(p):
    rows = pathlib.Path(str(p) + ".lines").read_text().splitlines()
    assert rows[0] == "line\tsteps\twork\tcalls"
    out = {}
    for r in rows[1:]:
        where, steps, work, calls = r.split("\t")
        out[where] = (int(steps), int(work), int(calls))
    return out


def test_profile_sums_to_stats_and_names_stacks(tmp_path):
    f = tmp_path / "p.lsh"
    f.write_text(PROF)
    prof = tmp_path / "out.folded"
    r = run(["--stats", "--profile", str(prof), str(f)])
    assert r.status == 0, r
    st = r.stats
    steps = read_profile(prof)
    work = read_profile(str(prof) + ".work")
    lines = read_lines(prof)
    assert set(steps) == {"main", "main;f", "main;f;g"}
    assert sum(steps.values()) == st["steps"]
    assert sum(work.values()) == st["work"]
    assert sum(v[0] for v in lines.values()) == st["steps"]
    assert sum(v[1] for v in lines.values()) == st["work"]
    # g's loop: 3 calls of f, each calling g(10) and g(1): the `for` line runs 11+2 times a call of f.
    assert lines[f"{f}:3"][0] == 3 * (11 + 2)
    assert lines[f"{f}:9"][2] == 6  # two calls of g per call of f
    assert lines[f"{f}:13"][2] == 3
    assert steps["main;f"] == 3


def test_profile_written_on_a_limit_exit(tmp_path):
    f = tmp_path / "p.lsh"
    f.write_text(PROF)
    prof = tmp_path / "out.folded"
    r = run(["--stats", "--max-steps", "20", "--profile", str(prof), str(f)])
    assert r.status == 4
    steps = read_profile(prof)
    assert sum(steps.values()) == r.stats["steps"] == 20
    assert "main;f;g" in steps
    r = run(["--profile", str(prof), "-e", "x = ("])
    assert r.status == 3 and prof.read_text() == ""


def test_profile_error_exit_and_bad_path(tmp_path):
    prof = tmp_path / "e.folded"
    r = run(["--stats", "--profile", str(prof), "-e", "fn f()\nthrow 1\nend\nf()"])
    assert r.status == 1
    assert read_profile(prof) == {"main": 1, "main;f": 1}
    r = run(["--profile", str(tmp_path / "no" / "such"), "-e", "print(1)"])
    assert r.status == 0 and "cannot write the profile" in r.err


# ----------------------------------------------------------------------------------------
# The interactive session, through a pseudo-terminal
# ----------------------------------------------------------------------------------------

def repl_session(home, entries, args=("repl",), timeout=20):
    """Run `leash ARGS` on a pty, type each entry (a line) and Ctrl-D; return the output."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:
        env = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / "data"), TERM="xterm")
        os.execve(str(LEASH), [str(LEASH), *args], env)
    out = b""
    deadline = time.monotonic() + timeout

    def read_until(marker):
        nonlocal out
        while marker not in out:
            assert time.monotonic() < deadline, out
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    return
                if not chunk:
                    return
                out += chunk

    def wait_prompt(mark):
        nonlocal out
        def ready():
            nl = out.find(b"\n", mark)
            return nl >= 0 and (out.find(b"> ", nl) >= 0 or out.find(b"... ", nl) >= 0)

        while not ready():
            assert time.monotonic() < deadline, out
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    return
                if not chunk:
                    return
                out += chunk

    mark = 0
    read_until(b"> ")
    for e in entries:
        mark = len(out)
        os.write(fd, e.encode() + b"\r")
        wait_prompt(mark)
    # Ctrl-D ends the session. A ^D that reaches the terminal before the line editor has
    # put it back in raw mode can be lost on a loaded machine: send it again while the
    # session is still there (a second ^D on an empty prompt is harmless).
    status = None
    while status is None:
        os.write(fd, b"\x04")
        again = time.monotonic() + 3
        while time.monotonic() < again:
            assert time.monotonic() < deadline, out
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                out += chunk
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
        elif time.monotonic() < again:
            # The output ended (EOF on the pty): the process is exiting.
            _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode("utf-8", "replace"))
    return text.replace("\r\n", "\n").replace("\r", ""), os.waitstatus_to_exitcode(status)


def test_repl_entries_errors_limits_and_history(tmp_path):
    out, status = repl_session(
        tmp_path,
        [
            "1 + 2",
            '"a" .. 1',
            "fn sq(x)",
            "return x * x",
            "end",
            "sq(7)",
            "y = nope",
            "x = 5",
            "while true",
            "end",
            "x * 2",
            "print(sq(x))",
            "[1, \"b\"]",
        ],
        args=("--max-steps", "1000", "repl"),
    )
    assert status == 0, out
    lines = out.splitlines()
    assert "3" in lines  # a bare expression's value
    assert '"a1"' in lines  # strings quoted
    assert "... " in out  # the block continued
    assert "49" in lines
    # A name no entry ever assigned is a load error now (SPEC 7), and the session goes on.
    assert "load error [name]: variable `nope` is never assigned" in out
    assert "limit error [steps]: step limit of 1000 reached" in out
    assert "10" in lines  # the global kept past the error and the limit
    assert "25" in lines  # the function kept, print's nil not shown
    assert '[1,"b"]' in out
    hist = (tmp_path / "data" / "leash" / "history").read_text()
    assert "sq(7)" in hist and "fn sq(x)" in hist
    # A second session reads the history: Up then Enter runs the last entry again.
    out2, status2 = repl_session(tmp_path, ["\x1b[A"])
    assert status2 == 0
    assert '[1,"b"]' in out2


def test_repl_exit_status_and_no_terminal(tmp_path):
    out, status = repl_session(tmp_path, ["exit(7)"])
    assert status == 7
    r = run([])  # stdin is not a terminal: today's usage error
    assert r.status == 2 and "no SCRIPT given" in r.err


# ----------------------------------------------------------------------------------------
# Completions and the man page
# ----------------------------------------------------------------------------------------

def test_bash_completions_load(tmp_path):
    r = run(["completions", "bash"])
    assert r.status == 0
    f = tmp_path / "leash.bash"
    f.write_text(r.out)
    assert subprocess.run(["bash", "-n", str(f)]).returncode == 0
    p = subprocess.run(["bash", "-c", f"source {f} && complete -p leash"], capture_output=True, text=True)
    assert p.returncode == 0 and "_leash" in p.stdout
    # Generated from the option table: every option of --help is offered.
    helped = re.findall(r"^  (--[a-z-]+)", run(["--help"]).out, re.M)
    assert "--profile" in helped and "--max-steps" in helped
    for o in helped:
        assert o in r.out, o
    script = f"source {f}; COMP_WORDS=(leash --max-st); COMP_CWORD=1; _leash; echo ${{COMPREPLY[@]}}"
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert p.stdout.split() == ["--max-steps"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_and_man(shell, tmp_path):
    r = run(["completions", shell])
    assert r.status == 0 and "--max-steps" in r.out.replace("-l max-steps", "--max-steps")
    if shutil.which(shell):
        f = tmp_path / f"leash.{shell}"
        f.write_text(r.out)
        flag = "-n" if shell == "zsh" else "--no-execute"
        assert subprocess.run([shell, flag, str(f)]).returncode == 0
    m = run(["completions", "man"])
    assert m.status == 0 and m.out.startswith(".TH LEASH 1") and "max\\-steps" in m.out
    assert run(["completions", "tcsh"]).status == 2


# ----------------------------------------------------------------------------------------
# The TextMate grammar, tokenised by vscode-textmate with vscode-oniguruma
# ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def textmate(tmp_path_factory):
    """node_modules with vscode-textmate and vscode-oniguruma: $LEASH_NODE_MODULES, or
    installed from npm into a temporary directory; the test is skipped without npm."""
    given = os.environ.get("LEASH_NODE_MODULES")
    if given:
        return given
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not available: the grammar test needs vscode-textmate")
    d = tmp_path_factory.mktemp("tm")
    p = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent", "vscode-textmate", "vscode-oniguruma"],
        cwd=d, capture_output=True, text=True, timeout=300,
    )
    if p.returncode != 0:
        pytest.skip(f"npm install failed (no registry?): {p.stderr[-300:]}")
    return str(d / "node_modules")


def tokenise(node_modules, files):
    p = subprocess.run(
        ["node", str(ROOT / "tests/editors/tokenize.js"), str(ROOT / "editors/leash.tmLanguage.json"), *map(str, files)],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, NODE_PATH=node_modules),
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_grammar_scopes(textmate, tmp_path):
    f = tmp_path / "g.lsh"
    f.write_text('fn f(n) # doubles\n  return n * 2\nend\nx = "a\\n${f(0x1f)}" .. \'raw\\n\'\nprint(json.encode(1.5e3))\n')
    toks = {(line, text): scopes for line, text, scopes in tokenise(textmate, [f])[str(f)]}
    assert "storage.type.function.leash" in toks[(1, "fn")]
    assert "entity.name.function.leash" in toks[(1, "f")]
    assert "comment.line.number-sign.leash" in toks[(1, "# doubles")]
    assert "keyword.control.leash" in toks[(2, "return")]
    assert "constant.numeric.leash" in toks[(2, "2")]
    assert "keyword.control.leash" in toks[(3, "end")]
    assert "constant.character.escape.leash" in toks[(4, "\\n")]
    assert "meta.interpolation.leash" in toks[(4, "0x1f")] and "constant.numeric.leash" in toks[(4, "0x1f")]
    assert "string.quoted.double.leash" in toks[(4, "a")]
    assert "string.quoted.single.leash" in toks[(4, "raw\\n")]
    assert "support.class.builtin.leash" in toks[(5, "json")]
    assert "constant.numeric.leash" in toks[(5, "1.5e3")]


def test_grammar_block_strings(textmate, tmp_path):
    f = tmp_path / "b.lsh"
    f.write_text(
        'page = """\n'
        '  <p class="x"># not a comment ${cgi.escape(name)}\\t</p>\n'
        '  """\n'
        "sql = '''\n"
        "  SELECT '${raw}' -- \\n\n"
        "  '''\n"
        "x = 1 # after\n"
    )
    toks = tokenise(textmate, [f])[str(f)]
    by = {}
    for line, text, scopes in toks:
        by.setdefault((line, text.strip()), scopes)
    block = "string.quoted.triple.leash"
    raw = "string.quoted.triple.raw.leash"
    assert block in by[(1, '"""')]
    assert block in by[(2, '<p class="x"># not a comment')], by
    assert not any(s.startswith("comment.") for s in by[(2, '<p class="x"># not a comment')])
    assert "meta.interpolation.leash" in by[(2, "escape")]
    assert "constant.character.escape.leash" in by[(2, "\\t")]
    assert block in by[(3, '"""')]
    assert raw in by[(5, "SELECT '${raw}' -- \\n")], by
    assert raw in by[(6, "'''")]
    # After the closing delimiter, code again.
    assert "comment.line.number-sign.leash" in by[(7, "# after")]
    assert not any(block in s or raw in s for s in by[(7, "x")])


def test_grammar_on_the_projects_scripts(textmate):
    scripts = project_scripts()
    out = tokenise(textmate, scripts)
    seen = set()
    for f, toks in out.items():
        for line, text, scopes in toks:
            seen.update(scopes)
            # `#` inside a string is never a comment, and every comment starts with `#`.
            if any(s.startswith("comment.") for s in scopes):
                assert text.lstrip().startswith("#"), (f, line, text)
    for want in ["keyword.control.leash", "string.quoted.double.leash", "comment.line.number-sign.leash",
                 "constant.numeric.leash", "meta.interpolation.leash"]:
        assert want in seen, want


def test_vscode_extension_uses_the_grammar():
    pkg = json.loads((ROOT / "editors/vscode/package.json").read_text())
    g = pkg["contributes"]["grammars"][0]
    assert (ROOT / "editors/vscode" / g["path"]).read_bytes() == (ROOT / "editors/leash.tmLanguage.json").read_bytes()
    conf = json.loads((ROOT / "editors/vscode/language-configuration.json").read_text())
    assert conf["comments"]["lineComment"] == "#"
    inc = re.compile(conf["indentationRules"]["increaseIndentPattern"])
    dec = re.compile(conf["indentationRules"]["decreaseIndentPattern"])
    for line in ["fn f(x)", "if a", "while b", "for i = 1 to 3", "try", "  else"]:
        assert inc.match(line), line
    for line in ["end", "  elif x", "else", "catch e"]:
        assert dec.match(line), line


def test_profile_reads_into_inferno(tmp_path):
    tool = shutil.which("inferno-flamegraph") or (shutil.which("inferno-flamegraph", path="/tmp/inferno/bin"))
    if not tool:
        pytest.skip("inferno-flamegraph is not installed (cargo install inferno)")
    prof = tmp_path / "p.folded"
    assert run(["--profile", str(prof), str(ROOT / "bench/leash/json.lsh")]).status == 0
    for f in [prof, pathlib.Path(str(prof) + ".work")]:
        p = subprocess.run([tool, str(f)], capture_output=True, timeout=60)
        assert p.returncode == 0 and b"<svg" in p.stdout and b"build_text" in p.stdout


# ----------------------------------------------------------------------------------------
# bench/idioms.py: its shapes are programs that run
# ----------------------------------------------------------------------------------------

def test_bench_idioms_shapes_run(tmp_path):
    """Every shape `bench/idioms.py` times is a program that runs to its end (a shape
    that failed at once would be timed as its error path)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("idioms", ROOT / "bench" / "idioms.py")
    idioms = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(idioms)
    assert len(idioms.SHAPES) > 20 and idioms.SHAPES[0][0] == "base"
    for name, setup, body in idioms.SHAPES:
        p = tmp_path / f"{name}.lsh"
        p.write_text(idioms.program(setup, body))
        r = run(idioms.FLAGS + [str(p)])
        assert r.status == 0, (name, r.err)


# ----------------------------------------------------------------------------------------
# bench/itrace.py: the machine instructions of compiled instructions, stepped under gdb
# ----------------------------------------------------------------------------------------

def test_bench_itrace_counts_each_dispatch(tmp_path):
    """`bench/itrace.py` stops at the dispatch loop of the built binary and counts the
    machine instructions of each compiled instruction of a steady loop: a move and the
    `for` loop's back edge alternate, so the counts repeat in pairs."""
    if not shutil.which("gdb") or not shutil.which("objdump"):
        pytest.skip("gdb or objdump is not installed")
    p = tmp_path / "loop.lsh"
    p.write_text("fn f()\n  x = 0\n  for i = 1 to 100000\n    x = i\n  end\nend\nf()\n")
    r = subprocess.run(["python3", str(ROOT / "bench" / "itrace.py"), "--quiet", "--skip", "2000",
                        "--ops", "4", LEASH, str(p)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    counts = [int(n) for n in re.findall(r"-- (\d+) instructions", r.stdout)]
    assert len(counts) == 4, r.stdout
    assert all(10 < n < 1000 for n in counts), counts
    assert counts[0] == counts[2] and counts[1] == counts[3], counts
