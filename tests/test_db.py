"""SQLite: db.open / db.exec / db.query / db.close behind --allow-db (SPEC 9, 10).

Real database files in tmp_path, checked from Python's sqlite3 module too. Bounds:
steps (SQLite's virtual-machine work, charged by a progress handler), --max-time, the
value limits on results (checked while rows are read), 16 open databases (`databases`),
SQLite's heap (`memory`), lengths (1 MiB strings; a `db` error inside SQLite).
"""
import sqlite3
import threading
import time

import pytest
from conftest import caught, err_of, run

DB = ["--allow-db"]
RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c"


def db(script, code, *args, opts=(), **kw):
    return script(code, *args, opts=DB + list(opts), timeout=kw.pop("timeout", 30), **kw)


def ok(script, code, **kw):
    r = db(script, code, **kw)
    assert r.status == 0, r
    return r.out


def limit(script, code, kind, **kw):
    r = db(script, code, **kw)
    assert (r.status, r.diag["error"], r.diag["kind"]) == (4, "limit", kind), r
    return r


def db_error(script, stmt, setup="", **kw):
    """Run `stmt` after `setup` on h = an in-memory database; the caught (kind, message)."""
    return err_of(db(script, 'h = db.open(":memory:")\n' + setup + caught(stmt), **kw))


# ---------------------------------------------------------------------------
# The gate
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    ['db.open("x.db")', 'db.exec(nil, "CREATE TABLE t(a)")', 'db.query(nil, "SELECT 1")', "db.close(nil)"],
)
def test_without_the_flag_every_builtin_is_a_permission_error(script, tmp_path, call):
    r = script(call + "\n")
    assert (r.status, r.diag["error"], r.diag["kind"]) == (1, "runtime", "permission"), r
    assert r.diag["message"] == f"{call.split('(')[0]} needs --allow-db"
    assert not (tmp_path / "x.db").exists()


def test_permission_is_raised_before_the_arguments_and_is_catchable(script, tmp_path):
    r = script(caught('db.open(str(1 / 0) .. "x.db")'))
    assert err_of(r) == ("permission", "db.open needs --allow-db")
    assert list(tmp_path.iterdir()) == [tmp_path / "t.lsh"]


def test_other_flags_do_not_grant_db(script, tmp_path):
    r = script('db.open("x.db")\n', opts=["--allow-files"])
    assert r.diag["kind"] == "permission", r
    assert not (tmp_path / "x.db").exists()


def test_check_lists_db(tmp_path):
    p = tmp_path / "a.lsh"
    p.write_text('fn never()\n  db.close(db.open("x.db"))\nend\nprint(1)\n')
    r = run(["check", p])
    assert (r.status, r.out) == (0, "capabilities: db\n"), r
    p.write_text('x = file.read("a")\nh = db.open(":memory:")\n')
    assert run(["check", p]).out == "capabilities: read db\n"
    assert not (tmp_path / "x.db").exists()


# ---------------------------------------------------------------------------
# Round trips through real files
# ---------------------------------------------------------------------------


def test_create_insert_query_and_python_sees_it(script, tmp_path):
    out = ok(
        script,
        'h = db.open("app.db")\n'
        'print(db.exec(h, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL)"))\n'
        'print(db.exec(h, "INSERT INTO t(name, score) VALUES (?, ?)", ["ann", 1.5]))\n'
        'print(db.exec(h, "INSERT INTO t(name, score) VALUES (:name, :score)", {score: 2, name: "bob"}))\n'
        'rows = db.query(h, "SELECT id, name, score FROM t ORDER BY id")\n'
        "print(rows)\n"
        "print(keys(rows[0]))\n"
        "db.close(h)\n",
    )
    assert out.splitlines() == [
        "0",
        "1",
        "1",
        '[{"id":1,"name":"ann","score":1.5},{"id":2,"name":"bob","score":2}]',
        '["id","name","score"]',
    ]
    con = sqlite3.connect(tmp_path / "app.db")
    assert con.execute("SELECT id, name, score, typeof(score) FROM t ORDER BY id").fetchall() == [
        (1, "ann", 1.5, "real"),
        (2, "bob", 2.0, "real"),  # 2 was bound as INTEGER; the REAL column's affinity made it real
    ]
    con.close()


def test_reads_a_database_python_wrote(script, tmp_path):
    con = sqlite3.connect(tmp_path / "py.db")
    con.execute("CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB, n)")
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", (-42, 0.25, "héllo", b"\x00\xffab", None))
    con.commit()
    con.close()
    out = ok(
        script,
        'h = db.open("py.db")\n'
        'row = db.query(h, "SELECT * FROM t")[0]\n'
        "print(keys(row))\n"
        'print(row.i, row.r, row.s, row.n, type(row.b), len(row.b), base64.encode(row.b))\n'
        'print(type(row.i), type(row.r), type(row.s), type(row.n))\n',
    )
    assert out.splitlines() == [
        '["i","r","s","b","n"]',
        "-42 0.25 héllo nil string 4 AP9hYg==",
        "number number string nil",
    ]


def test_leash_values_bind_as_sqlite_types(script, tmp_path):
    ok(
        script,
        'h = db.open("types.db")\n'
        'db.exec(h, "CREATE TABLE v(k TEXT, x)")\n'
        'vals = [["nil", nil], ["true", true], ["false", false], ["int", 42], ["neg", -7], ["negzero", -0], '
        '["frac", 0.5], ["huge", 1e20], ["max53", 9007199254740993], ["str", "añb"], ["empty", ""]]\n'
        "for p in vals\n"
        '  db.exec(h, "INSERT INTO v VALUES (?, ?)", p)\n'
        "end\n"
        'db.exec(h, "INSERT INTO v VALUES (\'blob\', CAST(? AS BLOB))", ["ab"])\n'
        "db.close(h)\n",
    )
    con = sqlite3.connect(tmp_path / "types.db")
    got = {k: (t, x) for k, t, x in con.execute("SELECT k, typeof(x), x FROM v")}
    assert got == {
        "nil": ("null", None),
        "true": ("integer", 1),
        "false": ("integer", 0),
        "int": ("integer", 42),
        "neg": ("integer", -7),
        "negzero": ("integer", 0),
        "frac": ("real", 0.5),
        "huge": ("real", 1e20),
        "max53": ("integer", 9007199254740992),
        "str": ("text", "añb"),
        "empty": ("text", ""),
        "blob": ("blob", b"ab"),
    }


def test_integer_past_i64_binds_as_real_and_round_trips(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        'r = db.query(h, "SELECT typeof(?) AS t, ? AS v", [1e19, 1e19])[0]\n'
        "print(r.t, r.v == 1e19)\n"
        'r = db.query(h, "SELECT typeof(?) AS t", [-9223372036854775808])[0]\n'
        "print(r.t)\n",
    )
    assert out.splitlines() == ["real true", "integer"]


def test_strings_are_bound_as_bytes(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        's = base64.decode("/wA=")\n'
        'r = db.query(h, "SELECT typeof(?) AS t, length(CAST(? AS BLOB)) AS n, ? AS s", [s, s, s])[0]\n'
        "print(r.t, r.n, r.s == s)\n",
    )
    assert out.strip() == "text 2 true"


def test_results_map_sqlite_types(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        'r = db.query(h, "SELECT 1 AS i, 2.5 AS r, \'x\' AS t, x\'6162\' AS b, NULL AS n, 9007199254740992 AS big, '
        '-9007199254740992 AS small, 1e300 AS e")[0]\n'
        "print(r)\n",
    )
    assert out.strip() == '{"i":1,"r":2.5,"t":"x","b":"ab","n":null,"big":9007199254740992,"small":-9007199254740992,"e":1e+300}'


@pytest.mark.parametrize("sql", ["SELECT 9007199254740993 AS v", "SELECT -9007199254740993 AS v",
                                 "SELECT 9223372036854775807 AS v"])
def test_an_integer_beyond_2_53_is_a_db_error(script, sql):
    kind, msg = db_error(script, f'db.query(h, "{sql}")')
    assert kind == "db"
    assert 'column "v"' in msg and "2^53" in msg, msg


def test_a_non_finite_real_is_a_db_error(script):
    kind, msg = db_error(script, 'db.query(h, "SELECT 1e999 AS v")')
    assert (kind, msg) == ("db", 'db.query: column "v" holds a non-finite real')


# ---------------------------------------------------------------------------
# db.exec and db.query
# ---------------------------------------------------------------------------


def test_exec_counts_changed_rows(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        'print(db.exec(h, "CREATE TABLE t(a); INSERT INTO t VALUES (1), (2), (3); INSERT INTO t VALUES (4)"))\n'
        'print(db.exec(h, "CREATE INDEX ta ON t(a)"))\n'
        'print(db.exec(h, "UPDATE t SET a = a * 10 WHERE a > ?", [1]))\n'
        'print(db.exec(h, "SELECT * FROM t"))\n'
        'print(db.exec(h, "DELETE FROM t"))\n'
        'print(db.exec(h, "  -- nothing\\n"))\n'
        'print(db.exec(h, "PRAGMA user_version = 3"))\n'
        'print(db.query(h, "PRAGMA user_version"))\n',
    )
    assert out.splitlines() == ["4", "0", "3", "0", "4", "0", "0", '[{"user_version":3}]']


def test_exec_script_stops_at_the_first_failing_statement(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        + caught('db.exec(h, "CREATE TABLE t(a UNIQUE); INSERT INTO t VALUES (1); INSERT INTO t VALUES (1); '
                 'INSERT INTO t VALUES (2)")')
        + 'print(db.query(h, "SELECT a FROM t"))\n',
    )
    first, second = out.splitlines()
    assert first.startswith("db|db.exec: UNIQUE constraint failed: t.a"), first
    assert second == '[{"a":1}]'


def test_transactions(script, tmp_path):
    ok(
        script,
        'h = db.open("tx.db")\n'
        'db.exec(h, "CREATE TABLE t(a)")\n'
        'db.exec(h, "BEGIN")\n'
        'db.exec(h, "INSERT INTO t VALUES (1)")\n'
        'db.exec(h, "ROLLBACK")\n'
        'db.exec(h, "BEGIN; INSERT INTO t VALUES (2); COMMIT")\n'
        'db.exec(h, "BEGIN")\n'
        'db.exec(h, "INSERT INTO t VALUES (3)")\n',
    )
    # The transaction left open at exit was rolled back when the database was closed.
    con = sqlite3.connect(tmp_path / "tx.db")
    assert con.execute("SELECT a FROM t").fetchall() == [(2,)]
    con.close()
    assert not (tmp_path / "tx.db-journal").exists()


def test_query_rows_keep_column_order_and_later_duplicates_win(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        'r = db.query(h, "SELECT 3 AS z, 1 AS a, 2 AS m, 4 AS a")\n'
        "print(r, keys(r[0]))\n"
        'print(db.query(h, "SELECT 1 WHERE 0"))\n'
        'print(db.query(h, "-- only a comment"))\n',
    )
    assert out.splitlines() == ['[{"z":3,"a":4,"m":2}] ["z","a","m"]', "[]", "[]"]


def test_query_can_write_with_returning(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        'db.exec(h, "CREATE TABLE t(id INTEGER PRIMARY KEY, a)")\n'
        'print(db.query(h, "INSERT INTO t(a) VALUES (?), (?) RETURNING id", ["x", "y"]))\n'
        'print(db.query(h, "UPDATE t SET a = 1"))\n'
        'print(db.query(h, "SELECT count(*) AS n FROM t WHERE a = 1"))\n',
    )
    assert out.splitlines() == ['[{"id":1},{"id":2}]', "[]", '[{"n":2}]']


def test_query_refuses_more_than_one_statement(script):
    kind, msg = db_error(script, 'db.query(h, "SELECT 1; SELECT 2")')
    assert (kind, msg) == ("db", "db.query: the SQL holds more than one statement (parameters bind to one statement)")
    kind, _ = db_error(script, 'db.exec(h, "CREATE TABLE a(x); CREATE TABLE b(x)", [])')
    assert kind == "db"


# ---------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------


def test_positional_and_named_parameters(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        'print(db.query(h, "SELECT ? AS a, ? AS b", [1, "two"]))\n'
        'print(db.query(h, "SELECT ?2 AS a, ?1 AS b, ?2 AS c", ["x", "y"]))\n'
        'print(db.query(h, "SELECT :a AS a, @b AS b, $c AS c, :a AS d", {c: 3, b: 2, a: 1, unused: [1]}))\n'
        'print(db.query(h, "SELECT :a AS a, :b AS b", [1, 2]))\n'
        'print(db.query(h, "SELECT 1 AS a", nil))\n',
    )
    assert out.splitlines() == [
        '[{"a":1,"b":"two"}]',
        '[{"a":"y","b":"x","c":"y"}]',
        '[{"a":1,"b":2,"c":3,"d":1}]',
        '[{"a":1,"b":2}]',
        '[{"a":1}]',
    ]


@pytest.mark.parametrize(
    "stmt, message",
    [
        ('db.query(h, "SELECT ?, ?", [1])', "db.query: the SQL has 2 parameters but 1 value was given"),
        ('db.query(h, "SELECT ?", [1, 2])', "db.query: the SQL has 1 parameter but 2 values were given"),
        ('db.query(h, "SELECT ?")', "db.query: the SQL has 1 parameter and no values were given"),
        ('db.exec(h, "CREATE TABLE t(a); INSERT INTO t VALUES (?)")',
         "db.exec: the SQL has 1 parameter and no values were given"),
        ('db.query(h, "SELECT :a AS a", {b: 1})', "db.query: no value for parameter :a"),
        ('db.query(h, "SELECT ? AS a", {a: 1})',
         "db.query: parameter 1 has no name (bind `?` placeholders with a list)"),
    ],
)
def test_parameter_mismatches_are_db_errors(script, stmt, message):
    assert db_error(script, stmt) == ("db", message)


@pytest.mark.parametrize(
    "params, message",
    [
        ("[[1]]", "db.exec: parameter 1 must be nil, a bool, a number or a string, got list"),
        ("[1, {}]", "db.exec: parameter 2 must be nil, a bool, a number or a string, got map"),
        ("[h]", "db.exec: parameter 1 must be nil, a bool, a number or a string, got handle"),
        ("{a: [1]}", "db.exec: parameter :a must be nil, a bool, a number or a string, got list"),
        ('"x"', "db.exec: argument 3 must be a list or a map, got string"),
        ("3", "db.exec: argument 3 must be a list or a map, got number"),
    ],
)
def test_parameter_types(script, params, message):
    setup = 'db.exec(h, "CREATE TABLE t(a)")\n'
    r = db(script, 'h = db.open(":memory:")\n' + setup + caught(f'db.exec(h, "INSERT INTO t VALUES (:a)", {params})')
           + 'print(db.query(h, "SELECT count(*) AS n FROM t"))\n')
    assert r.status == 0, r
    line, count = r.out.splitlines()
    assert line == "type|" + message
    assert count == '[{"n":0}]'


@pytest.mark.parametrize(
    "stmt, kind, message",
    [
        ('db.exec(1, "SELECT 1")', "type", "db.exec: argument 1 must be a db handle, got number"),
        ('db.query("h", "SELECT 1")', "type", "db.query: argument 1 must be a db handle, got string"),
        ("db.close(nil)", "type", "db.close: argument 1 must be a db handle, got nil"),
        ("db.open(1)", "type", "db.open: argument 1 must be a string, got number"),
        ("db.exec(h, 1)", "type", "db.exec: argument 2 must be a string, got number"),
        ('db.query(h, base64.decode("/w=="))', "value", "db.query: argument 2 is not valid UTF-8"),
        ('db.open("a" .. base64.decode("AA==") .. "b")', "value", "db.open: argument 1 contains a NUL byte"),
    ],
)
def test_argument_errors(script, stmt, kind, message):
    assert db_error(script, stmt) == (kind, message)


# ---------------------------------------------------------------------------
# Handles
# ---------------------------------------------------------------------------


def test_handles_and_closing(script):
    out = ok(
        script,
        'a = db.open(":memory:")\nb = db.open(":memory:")\n'
        "print(type(a), str(a), str(b), a == a, a == b)\n"
        "print(db.close(a))\n"
        + caught("db.close(a)")
        + caught('db.query(a, "SELECT 1")')
        + caught('db.exec(a, "SELECT 1")')
        + 'print(db.query(b, "SELECT 1 AS x"))\n',
    )
    assert out.splitlines() == [
        "handle <db 1> <db 2> true false",
        "nil",
        "value|db.close: the db is closed",
        "value|db.query: the db is closed",
        "value|db.exec: the db is closed",
        '[{"x":1}]',
    ]


def test_a_file_handle_is_not_a_db_handle(script, tmp_path):
    (tmp_path / "f").write_text("x\n")
    r = db(script, 'f = file.open("f")\n' + caught('db.query(f, "SELECT 1")'), opts=["--allow-files"])
    assert err_of(r) == ("type", "db.query: argument 1 must be a db handle, got handle")


def test_each_database_is_separate(script):
    out = ok(
        script,
        'a = db.open(":memory:")\nb = db.open(":memory:")\n'
        'db.exec(a, "CREATE TABLE t(x)")\n'
        + caught('db.query(b, "SELECT * FROM t")'),
    )
    assert out.strip() == "db|db.query: no such table: t"


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stmt, message",
    [
        ('db.query(h, "SELEC 1")', 'db.query: near "SELEC": syntax error'),
        ('db.query(h, "SELECT * FROM nope")', "db.query: no such table: nope"),
        ('db.exec(h, "INSERT INTO t VALUES (NULL)")', "db.exec: NOT NULL constraint failed: t.a"),
        ('db.exec(h, "INSERT INTO t VALUES (1)")', "db.exec: UNIQUE constraint failed: t.a"),
        ('db.query(h, "SELECT nofunc(1)")', "db.query: no such function: nofunc"),
    ],
)
def test_sqlite_errors_are_db_errors_with_sqlites_message(script, stmt, message):
    setup = 'db.exec(h, "CREATE TABLE t(a NOT NULL UNIQUE); INSERT INTO t VALUES (1)")\n'
    assert db_error(script, stmt, setup) == ("db", message)


def test_an_uncaught_db_error_ends_the_run_with_status_1(script):
    r = db(script, 'h = db.open(":memory:")\nx = 1\ndb.query(h, "SELECT * FROM nope")\nprint("after")\n')
    assert (r.status, r.diag["error"], r.diag["kind"], r.diag["line"]) == (1, "runtime", "db", 3), r
    assert r.diag["message"] == "db.query: no such table: nope"
    assert "after" not in r.out


def test_open_failures(script, tmp_path):
    (tmp_path / "text.db").write_text("this is not a database, just some text that is long enough\n" * 20)
    (tmp_path / "adir").mkdir()
    out = ok(
        script,
        caught('db.open("text.db")') + caught('db.open("adir")') + caught('db.open("missing/x.db")')
        + 'h = db.open(":memory:")\nprint(h)\n',
    )
    lines = out.splitlines()
    assert lines[0] == 'db|db.open: cannot open "text.db": file is not a database'
    assert lines[1].startswith('db|db.open: cannot open "adir": '), lines[1]
    assert lines[2].startswith('db|db.open: cannot open "missing/x.db": unable to open database file'), lines[2]
    assert lines[3] == "<db 1>"
    assert not (tmp_path / "missing").exists()


def test_paths_are_relative_to_the_working_directory_and_not_uris(script, tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    ok(script, 'db.close(db.open("w.db"))\ndb.close(db.open("file:u.db?mode=ro"))\n', cwd=sub)
    assert (sub / "w.db").exists() and not (tmp_path / "w.db").exists()
    assert (sub / "file:u.db?mode=ro").exists()


def test_memory_and_temporary_databases_leave_no_file(script, tmp_path):
    out = ok(
        script,
        'for p in [":memory:", ""]\n'
        "  h = db.open(p)\n"
        '  db.exec(h, "CREATE TABLE t(a); INSERT INTO t VALUES (1)")\n'
        '  print(db.query(h, "SELECT a FROM t"))\n'
        "  db.close(h)\n"
        "end\n",
    )
    assert out.splitlines() == ['[{"a":1}]', '[{"a":1}]']
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.lsh"]


# ---------------------------------------------------------------------------
# Refused: ATTACH, DETACH, extension loading
# ---------------------------------------------------------------------------


def test_attach_is_refused(script, tmp_path):
    kind, msg = db_error(script, "db.exec(h, \"ATTACH DATABASE 'other.db' AS o\")")
    assert (kind, msg) == ("db", "db.exec: ATTACH is refused: not authorized")
    kind, msg = db_error(script, "db.query(h, \"ATTACH ':memory:' AS o\")")
    assert (kind, msg) == ("db", "db.query: ATTACH is refused: not authorized")
    assert not (tmp_path / "other.db").exists()


def test_detach_is_refused(script):
    kind, msg = db_error(script, 'db.exec(h, "DETACH DATABASE temp")')
    assert (kind, msg) == ("db", "db.exec: DETACH is refused: not authorized")


@pytest.mark.parametrize("sql", ["SELECT load_extension('libfoo')", "SELECT LOAD_EXTENSION('x', 'y')"])
def test_extension_loading_is_refused(script, sql):
    kind, msg = db_error(script, f'db.query(h, "{sql}")')
    assert kind == "db"
    assert msg.startswith("db.query: extension loading is refused: not authorized"), msg
    kind, _ = db_error(script, f'db.exec(h, "{sql}")')
    assert kind == "db"


# ---------------------------------------------------------------------------
# Steps and time
# ---------------------------------------------------------------------------


def test_a_runaway_query_stops_at_the_step_limit(script):
    code = 'h = db.open(":memory:")\ntry\n  db.query(h, "' + RUNAWAY + '")\ncatch e\n  print("caught")\nend\n'
    r = limit(script, code, "steps", opts=["--max-steps", "100000", "--stats"])
    assert r.diag["line"] == 3
    assert r.stats["steps"] == 100000
    assert "caught" not in r.out


def test_the_default_step_budget_stops_a_runaway_query(script):
    start = time.monotonic()
    r = limit(script, 'h = db.open(":memory:")\ndb.exec(h, "' + RUNAWAY + '")\n', "steps", opts=["--stats"])
    assert r.stats["steps"] == 1000000
    assert time.monotonic() - start < 15


def test_a_runaway_query_stops_at_the_deadline(script):
    start = time.monotonic()
    r = limit(script, 'h = db.open(":memory:")\ndb.query(h, "' + RUNAWAY + '")\n', "time",
              opts=["--max-time", "0.3", "--max-steps", "100000000"])
    assert r.diag["line"] == 2
    assert time.monotonic() - start < 5


def test_sqlite_work_is_charged_in_steps_deterministically(script):
    code = ('h = db.open(":memory:")\n'
            'db.query(h, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) '
            'SELECT sum(x) AS s FROM c")\n')
    a = db(script, code, opts=["--stats"])
    b = db(script, code, opts=["--stats"])
    assert a.status == b.status == 0, (a, b)
    assert a.stats["steps"] == b.stats["steps"]
    # About 8 instructions per row, one step per 100 instructions, plus the 2 lines.
    assert 1000 < a.stats["steps"] < 10000, a.stats
    small = db(script, 'h = db.open(":memory:")\ndb.query(h, "SELECT 1")\n', opts=["--stats"])
    assert small.stats["steps"] == 2


def test_steps_used_inside_sqlite_count_against_the_budget_of_later_lines(script):
    code = ('h = db.open(":memory:")\n'
            'db.query(h, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) '
            'SELECT sum(x) AS s FROM c")\n'
            "i = 0\nwhile true\n  i += 1\nend\n")
    r = limit(script, code, "steps", opts=["--max-steps", "5000", "--stats"])
    assert r.diag["line"] in (4, 5), r
    assert r.stats["steps"] == 5000


def test_a_locked_database_waits_no_longer_than_the_deadline(script, tmp_path):
    con = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
    con.execute("CREATE TABLE t(a)")
    con.execute("BEGIN EXCLUSIVE")
    try:
        start = time.monotonic()
        r = limit(script, 'h = db.open("locked.db")\ndb.exec(h, "INSERT INTO t VALUES (1)")\n', "time",
                  opts=["--max-time", "0.5"])
        assert time.monotonic() - start < 4, r
    finally:
        con.close()


def test_a_lock_is_waited_for_until_the_deadline_not_just_five_seconds(script, tmp_path):
    # With a deadline (always under the CGI gateway) a call waits for another
    # connection's lock until the deadline, not only DB_BUSY_TIMEOUT_MS (5 s): a lock
    # held for 5.5 s is waited out.
    con = sqlite3.connect(tmp_path / "held.db", isolation_level=None, check_same_thread=False)
    con.execute("CREATE TABLE t(a)")
    con.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(5.5, lambda: con.execute("COMMIT"))
    release.start()
    try:
        start = time.monotonic()
        out = ok(script, 'h = db.open("held.db")\ndb.exec(h, "INSERT INTO t VALUES (1)")\nprint("in")\n',
                 opts=["--max-time", "15"], timeout=30)
        assert out == "in\n" and time.monotonic() - start > 5.4
    finally:
        release.join()
        con.close()
    assert sqlite3.connect(tmp_path / "held.db").execute("SELECT count(*) FROM t").fetchone() == (1,)


def test_a_read_then_write_transaction_is_refused_at_once_with_advice(script, tmp_path):
    # Another connection is writing (it holds the RESERVED lock). A deferred transaction
    # that has read cannot wait for it (SQLite's deadlock avoidance): refused at once,
    # and the message says what to do. BEGIN IMMEDIATE waits instead, and goes through.
    con = sqlite3.connect(tmp_path / "rw.db", isolation_level=None, check_same_thread=False)
    con.execute("CREATE TABLE t(a)")
    con.execute("BEGIN IMMEDIATE")
    con.execute("INSERT INTO t VALUES (0)")
    try:
        code = (
            'h = db.open("rw.db")\ndb.exec(h, "BEGIN")\nprint(db.query(h, "SELECT count(*) AS n FROM t")[0].n)\n'
            + caught('db.exec(h, "INSERT INTO t VALUES (1)")')
        )
        start = time.monotonic()
        kind, msg = err_of(db(script, code, opts=["--max-time", "10"]))
        assert time.monotonic() - start < 3
        assert kind == "db" and msg.startswith("db.exec: database is locked (") and "BEGIN IMMEDIATE" in msg, msg
        release = threading.Timer(0.5, lambda: con.execute("COMMIT"))
        release.start()
        code = (
            'h = db.open("rw.db")\ndb.exec(h, "BEGIN IMMEDIATE")\nn = db.query(h, "SELECT count(*) AS n FROM t")[0].n\n'
            'db.exec(h, "INSERT INTO t VALUES (?)", [n + 1])\ndb.exec(h, "COMMIT")\nprint(n)\n'
        )
        assert ok(script, code, opts=["--max-time", "10"]) == "1\n"
        release.join()
    finally:
        con.close()


# ---------------------------------------------------------------------------
# Value limits on results, lengths, memory, open databases
# ---------------------------------------------------------------------------


def test_a_large_result_within_the_limits(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        'rows = db.query(h, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10000) '
        'SELECT x FROM c")\n'
        "print(len(rows), rows[0].x, rows[-1].x)\n",
    )
    assert out.strip() == "10000 1 10000"


@pytest.mark.parametrize("n", [16384, 16385, 1000000000])
def test_results_past_the_frame_or_list_limit_stop_while_reading(script, n):
    # A row is a map: one column costs about 177 accounted bytes, so some 11,800 rows fill
    # the 2 MiB a value may hold: frame storage runs out before the 16,384-row list limit
    # can be reached. Either way the run stops while the rows are read (a billion rows
    # take no time), not after.
    sql = f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {n}) SELECT x FROM c"
    start = time.monotonic()
    r = limit(script, f'h = db.open(":memory:")\nrows = db.query(h, "{sql}")\n', "frame_storage")
    assert "db.query: the rows exceed the frame limit" in r.diag["message"]
    assert time.monotonic() - start < 5


def test_wide_rows_stop_at_the_frame_limit(script):
    sql = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100) "
           "SELECT CAST(zeroblob(100000) AS TEXT) AS s FROM c")
    limit(script, f'h = db.open(":memory:")\nrows = db.query(h, "{sql}")\n', "frame_storage")


def test_strings_up_to_one_mib(script, tmp_path):
    out = ok(
        script,
        'h = db.open("big.db")\n'
        'db.exec(h, "CREATE TABLE t(id INTEGER PRIMARY KEY, s TEXT, n INTEGER)")\n'
        's = repeat("x", 1048576)\n'
        'print(db.exec(h, "INSERT INTO t(s, n) VALUES (?, 1)", [s]))\n'
        'print(len(db.query(h, "SELECT s FROM t")[0].s))\n'
        + caught('db.query(h, "SELECT length(zeroblob(2000000)) AS n")'),
    )
    assert out.splitlines() == ["1", "1048576", "db|db.query: string or blob too big"]
    con = sqlite3.connect(tmp_path / "big.db")
    assert con.execute("SELECT length(s) FROM t").fetchone() == (1048576,)
    con.close()


def test_a_result_string_over_one_mib_is_the_string_limit(script):
    limit(script, 'h = db.open(":memory:")\nr = db.query(h, "SELECT zeroblob(1048577) AS z")\n', "string")


def test_sql_text_is_bounded(script):
    out = ok(
        script,
        'h = db.open(":memory:")\n'
        'print(db.query(h, "SELECT 1 AS one" .. repeat(" ", 262000)))\n'
        + caught('db.query(h, "SELECT 1" .. repeat(" ", 262200))'),
    )
    lines = out.splitlines()
    assert lines[0] == '[{"one":1}]'
    assert lines[1] == "db|db.query: statement too long", lines[1]


def test_sqlites_heap_is_bounded(script):
    code = ('h = db.open(":memory:")\ndb.exec(h, "CREATE TABLE t(b)")\n'
            'db.exec(h, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100) '
            'INSERT INTO t SELECT zeroblob(1000000) FROM c")\n')
    r = limit(script, code, "memory")
    assert "SQLite ran out of memory" in r.diag["message"]


def test_sixteen_databases_open_at_once(script):
    code = ("hs = []\nfor i in range(0, 16)\n  push(hs, db.open(\":memory:\"))\nend\n"
            "db.close(hs[0])\npush(hs, db.open(\":memory:\"))\nprint(len(hs))\n")
    assert ok(script, code).strip() == "17"
    r = limit(script, code + 'try\n  db.open(":memory:")\ncatch e\n  print("caught")\nend\n', "databases")
    assert r.diag["message"] == "more than 16 open databases"
    assert r.out.strip() == "17"


def test_a_failed_open_takes_no_slot(script, tmp_path):
    code = ("for i in range(0, 20)\n  try\n    db.open(\"missing/x.db\")\n  catch e\n  end\nend\n"
            "hs = []\nfor i in range(0, 16)\n  push(hs, db.open(\":memory:\"))\nend\nprint(len(hs))\n")
    assert ok(script, code).strip() == "16"


def test_invalid_utf8_column_name_in_a_crafted_file_is_an_error(script, tmp_path):
    path = tmp_path / "crafted.db"
    con = sqlite3.connect(path, isolation_level=None)
    con.execute('CREATE TABLE t("ab")')
    con.execute("INSERT INTO t VALUES (1)")
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_schema SET sql = CAST(? AS TEXT) WHERE name = 't'", (b'CREATE TABLE t("a\xff")',))
    con.close()
    kind, msg = err_of(db(script, 'h = db.open("crafted.db")\n' + caught('db.query(h, "SELECT * FROM t")')))
    assert kind == "db", msg
