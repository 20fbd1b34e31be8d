"""Statements over several lines and block strings (SPEC 2 and 3; issue 16): a statement
goes on while a bracket is open and is one logical line (one step, charged and profiled at
its first line; diagnostics at the physical line and column of the spot); block strings
`\"\"\"` and `'''` with the closing delimiter's indentation removed (Swift's rule)."""
import json
import os


from conftest import run
from test_tools import repl_session

Q3 = '"""'


def steps(script, code):
    r = script(code, opts=["--stats"])
    assert r.status == 0, r
    return r.stats["steps"], r.out


# ----------------------------------------------------------------------------------------
# Steps: a logical line costs the steps of one line
# ----------------------------------------------------------------------------------------


def test_profile_charges_the_first_line(script, tmp_path):
    prof = tmp_path / "p.txt"
    code = "x = 1\nprint(\n  x,\n  2\n)\n"
    r = script(code, opts=["--profile", str(prof)])
    assert r.status == 0, r
    text = (tmp_path / "p.txt.lines").read_text()
    rows = [row.split("\t") for row in text.splitlines()[1:]]
    assert [(r[0].rsplit(":", 1)[1], r[1]) for r in rows] == [("1", "1"), ("2", "1")], text


# ----------------------------------------------------------------------------------------
# Diagnostics name the physical line and column of the spot
# ----------------------------------------------------------------------------------------

def test_runtime_error_on_a_continuation_line(script):
    code = "x = 0\nprint(\n  1,\n  10 / x,\n)\n"
    r = script(code)
    assert r.status == 1
    d = r.diag
    assert d["kind"] == "arith" and d["line"] == 4 and d["column"] == 6, d
    # The text form shows that physical line with a caret under the operator.
    r2 = run(["-e", code])
    assert "10 / x" in r2.err and "^" in r2.err, r2.err


def test_resolve_error_on_a_continuation_line(script):
    code = "print(\n  1,\n  lenn([1]),\n)\n"
    r = script(code)
    assert r.status == 3
    d = r.diag
    assert d["kind"] == "name" and d["line"] == 3 and d["column"] == 3, d
    r2 = run(["-e", code])
    assert "lenn([1])" in r2.err, r2.err


def test_unclosed_bracket_at_eof_is_one_error_at_the_opener(script):
    code = "fn f(x)\n  return x\nend\nif true\n  y = f(1,\n  2\n  print(y)\nend\nz = 3\n"
    r = script(code)
    assert r.status == 3
    assert len(r.diags) == 1, r.diags
    d = r.diag
    assert d["error"] == "load" and d["kind"] == "syntax", d
    assert d["line"] == 5 and d["column"] == 8, d
    assert "never closed" in d["message"]
    r2 = run(["-e", code])
    assert r2.err.count("error") == 1, r2.err
    assert "help:" in r2.err


# ----------------------------------------------------------------------------------------
# Limits: tokens per physical line, expression bytes over the whole expression
# ----------------------------------------------------------------------------------------

def test_tokens_limit_is_per_physical_line(script):
    # Five lines of 600 tokens each: 3,000 tokens in one call, each line under 1,024.
    row = "1, " * 300  # 600 tokens
    code = "x = len([\n" + (row + "\n") * 5 + "])\nprint(x)\n"
    r = script(code)
    assert r.status == 0, r
    assert r.out == "1500\n"
    # One physical line over the limit is still refused, at its own line.
    code2 = "x = [\n1,\n" + "1, " * 600 + "\n]\n"
    r2 = script(code2)
    assert r2.status == 3 and r2.diag["kind"] == "tokens" and r2.diag["line"] == 3, r2.diags


def test_expression_bytes_limit_spans_the_lines(script):
    # 20 lines of ~1,000 bytes: each line is small, the expression is over 16,384 bytes.
    row = "1, " * 333
    code = "x = [\n" + (row + "\n") * 20 + "]\n"
    r = script(code)
    assert r.status == 3
    assert r.diag["kind"] == "expr_bytes" and r.diag["line"] == 1, r.diags


def test_huge_statement_is_refused_without_holding_it(script):
    # Far past what any statement within the expression limits can hold.
    code = "x = [\n" + ("1, " * 300 + "\n") * 400 + "]\n"
    r = script(code)
    assert r.status == 3
    assert r.diag["kind"] == "expr_bytes", r.diags
    assert len(r.diags) == 1


# ----------------------------------------------------------------------------------------
# Block strings
# ----------------------------------------------------------------------------------------


def test_unterminated_block_string_is_one_error_at_its_opener(script):
    code = f'if true\n  s = {Q3}\n    text\n    more\nend\n'
    r = script(code)
    assert r.status == 3
    assert len(r.diags) == 1, r.diags
    d = r.diag
    assert d["kind"] == "syntax" and d["line"] == 2 and d["column"] == 7, d
    # A closing delimiter with something after it is not one: the help says so.
    code2 = f'print({Q3}\n  hi\n  {Q3})\n'
    r2 = script(code2)
    assert r2.status == 3 and len(r2.diags) == 1 and r2.diag["line"] == 1
    t = run(["-e", code2])
    assert "alone on its line" in t.err, t.err


def test_crlf_source(ok):
    code = f's = {Q3}\r\n  a\r\n  b\r\n  {Q3}\r\nprint(json.stringify(s))\r\nprint(len([\r\n  1,\r\n]))\r\n'
    assert ok(code).splitlines() == ['"a\\nb"', "1"]


def test_sql_statement_in_db_exec(script):
    # A closing delimiter is alone on its line, so arguments after a block string go on
    # the next line:
    code = f'''h = db.open(":memory:")
db.exec(h, {Q3}
  CREATE TABLE notes(
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL -- a comment in SQL
  )
  {Q3}
)
db.exec(h, "INSERT INTO notes(title) VALUES (?)", ["groceries"])
rows = db.query(h, {Q3}
  SELECT id, title
  FROM notes
  WHERE title = ?
  {Q3}
  , ["groceries"])
print(rows[0].id, rows[0].title)
'''
    r = script(code, opts=["--allow-db", "--stats"])
    assert r.status == 0, r
    assert r.out == "1 groceries\n"
    assert r.stats["steps"] == 5


CGI_PAGE = f'''import cgi
q = cgi.query()
name = cgi.escape(get(q, "name", "world"))
cgi.headers({{"Content-Type": "text/html; charset=utf-8"}})
print({Q3}
  <!doctype html>
  <html>
    <body>
      <h1 class="greeting">Hello, ${{name}}!</h1>
    </body>
  </html>
  {Q3}
)
'''


def test_cgi_template(tmp_path):
    p = tmp_path / "page.lsh"
    p.write_text(CGI_PAGE)
    env = dict(os.environ, QUERY_STRING="name=%3Cb%3EAda", REQUEST_METHOD="GET", GATEWAY_INTERFACE="CGI/1.1",
               SCRIPT_FILENAME=str(p))  # the page's own interpreter line (SPEC 12, round 3)
    r = run(["--cgi", p], env=env)
    assert r.status == 0, r
    head, _, body = r.out.partition("\n\n") if "\r\n\r\n" not in r.out else r.out.partition("\r\n\r\n")
    assert "text/html" in head
    assert body == ('<!doctype html>\n<html>\n  <body>\n    <h1 class="greeting">Hello, &lt;b&gt;Ada!</h1>\n'
                    '  </body>\n</html>\n')


# ----------------------------------------------------------------------------------------
# Tools: fmt, check, the REPL
# ----------------------------------------------------------------------------------------

def test_fmt_indents_continuations_and_keeps_block_strings(tmp_path):
    src = ("x = f(\n1,\n    [\n2,\n3],\n{a: 1,\nb: 2}\n)\n"
           f"if true\ns = {Q3}\n      keep   \n   this\n   {Q3}\nend\nfn f(a, b, c)\nreturn a\nend\n")
    want = ("x = f(\n  1,\n  [\n    2,\n    3],\n  {a: 1,\n    b: 2}\n)\n"
            f"if true\n  s = {Q3}\n      keep   \n   this\n   {Q3}\nend\nfn f(a, b, c)\n  return a\nend\n")
    p = tmp_path / "a.lsh"
    p.write_text(src)
    r = run(["fmt", p])
    assert r.status == 0, r
    assert p.read_text() == want
    # Idempotent, and --check agrees.
    r = run(["fmt", "--check", p])
    assert r.status == 0, r
    assert run(["fmt", "-"], input=want).out == want


def test_fmt_refuses_unclosed(tmp_path):
    p = tmp_path / "b.lsh"
    p.write_text(f"s = {Q3}\n  x\n")
    r = run(["fmt", p])
    assert r.status == 3
    assert p.read_text() == f"s = {Q3}\n  x\n"


def test_check_accepts_the_new_forms(tmp_path):
    p = tmp_path / "c.lsh"
    p.write_text(CGI_PAGE)
    r = run(["check", p])
    assert r.status == 0, r


def test_repl_continues_brackets_and_block_strings(tmp_path):
    out, status = repl_session(
        tmp_path,
        [
            "xs = [",
            "  1,",
            "  2,",
            "]",
            "len(xs)",
            f"s = {Q3}",
            "  a",
            "",
            "  b",
            f"  {Q3}",
            "s",
        ],
    )
    assert status == 0, out
    lines = out.splitlines()
    assert "2" in lines, out
    assert '"a\\n\\nb"' in lines, out


def test_readme_cgi_example_is_the_example_file_and_runs():
    from conftest import ROOT
    readme = (ROOT / "README.md").read_text()
    page = (ROOT / "examples" / "greet.lsh").read_text()
    assert "```\n" + page + "```" in readme
    env = dict(os.environ, QUERY_STRING="name=%3Cb%3EAda", REQUEST_METHOD="GET")
    r = run(["--cgi", ROOT / "examples" / "greet.lsh"], env=env)
    assert r.status == 0, r
    body = r.out.replace("\r\n", "\n").split("\n\n", 1)[1]
    shown = readme.split("the page without the template's indentation:\n\n```\n", 1)[1].split("```", 1)[0]
    assert body == shown
