"""db.* over PostgreSQL (SPEC 10, round 3): a real server started by pgfix.py on a private
socket directory and a loopback port (skipped, saying why, when PostgreSQL is missing)."""
import json
import os
import resource
import subprocess

import pytest

from conftest import LEASH
from pgfix import PASSWORD, pg  # noqa: F401  (the fixture)


def cap_memory():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run_pg(pg, code, tmp_path, opts=None, env=None, timeout=60):
    """Run `code` with a scope for the app database (unless `opts` replaces it)."""
    p = tmp_path / "t.lsh"
    p.write_text(code)
    opts = [pg.scope] if opts is None else opts
    proc = subprocess.run([str(LEASH), "--error-format", "json", *opts, str(p)], capture_output=True,
                          timeout=timeout, cwd=tmp_path, env=env, preexec_fn=cap_memory)
    return proc


def diag(proc):
    for line in proc.stderr.decode().splitlines():
        if line.startswith("{") and '"error"' in line:
            return json.loads(line)
    raise AssertionError(f"no diagnostic: {proc.stderr!r}")


def ok(pg, code, tmp_path, **kw):
    r = run_pg(pg, code, tmp_path, **kw)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def caught(stmt):
    return f'try\n  {stmt}\n  print("no error")\ncatch e\n  print(e.kind .. "|" .. e.message)\nend\n'


def opener(pg, **kw):
    return f'h = db.open("{pg.url(**kw)}")\n'


@pytest.fixture
def table(pg):
    pg.psql("DROP TABLE IF EXISTS t; CREATE TABLE t (id serial PRIMARY KEY, name text, score float8, ok bool, "
            "n numeric(10,3), big int8, d date, ts timestamptz, js jsonb, b bytea, ip inet, arr int[]); "
            "ALTER TABLE t OWNER TO app", db="app")


# ---------------------------------------------------------------------------
# Types, parameters, NULLs, errors, transactions
# ---------------------------------------------------------------------------


def test_types_and_nulls(pg, table, tmp_path):
    code = opener(pg) + (
        'print(db.exec(h, "INSERT INTO t (name, score, ok, n, big, d, ts, js, b, ip, arr) VALUES '
        '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", ["ann", 1.5, true, 12.345, 9007199254740992, "2026-12-03", '
        '"2026-12-03 10:00:00+02", "{\\"a\\": [1, 2]}", "\\x00\\x01", "10.0.0.1", "{1,2,3}"]))\n'
        'print(db.exec(h, "INSERT INTO t (name) VALUES (NULL)"))\n'
        'for r in db.query(h, "SELECT * FROM t ORDER BY id")\n  print(r)\nend\n'
        'r = db.query(h, "SELECT ?::bytea AS b", ["\\x00\\xff"])[0]\nprint(len(r.b), r.b == "\\x00\\xff")\n'
        'print(db.query(h, "SELECT 1::int2 AS a, 2::int4 AS b, 2.5::float4 AS c, 7::oid AS d, \'x\'::varchar AS e, '
        '\'y\'::char(3) AS f, NULL::int AS g, true AS h, interval \'1 day 2 hours\' AS i, sum(x) AS j '
        'FROM (VALUES (1.25), (2.5)) v(x)"))\n'
    )
    out = ok(pg, code, tmp_path).splitlines()
    assert out[0] == "1" and out[1] == "1"
    first = json.loads(out[2])
    assert first == {"id": 1, "name": "ann", "score": 1.5, "ok": True, "n": 12.345, "big": 9007199254740992,
                     "d": "2026-12-03", "ts": "2026-12-03 08:00:00+00", "js": '{"a": [1, 2]}', "b": "\u0000\u0001",
                     "ip": "10.0.0.1", "arr": "{1,2,3}"}
    # Columns in table order; NULL is nil.
    assert list(first) == ["id", "name", "score", "ok", "n", "big", "d", "ts", "js", "b", "ip", "arr"]
    second = json.loads(out[3])
    assert second["id"] == 2 and all(second[k] is None for k in second if k != "id")
    assert out[4] == "2 true"
    assert json.loads(out[5]) == [{"a": 1, "b": 2, "c": 2.5, "d": 7, "e": "x", "f": "y  ", "g": None, "h": True,
                                   "i": "1 day 02:00:00", "j": 3.75}]


def test_integers_past_2_53_and_non_finite_numbers_are_errors(pg, tmp_path):
    code = opener(pg) + caught('db.query(h, "SELECT 9007199254740993::int8 AS x")') + caught(
        'db.query(h, "SELECT \'NaN\'::float8 AS y")') + 'print(db.query(h, "SELECT 9007199254740993::int8::text AS x"))\n'
    out = ok(pg, code, tmp_path).splitlines()
    assert out[0].startswith("db|db.query: column \"x\" holds the integer 9007199254740993, beyond 2^53")
    assert out[1].startswith("db|db.query: column \"y\" holds a non-finite number")
    assert json.loads(out[2]) == [{"x": "9007199254740993"}]


def test_parameters_list_map_and_dollar(pg, table, tmp_path):
    code = opener(pg) + (
        'db.exec(h, "INSERT INTO t (name, score) VALUES (:name, :score), (:name, :score * 2)", '
        '{name: "bob", score: 2, unused: [1]})\n'
        'print(db.query(h, "SELECT name, score FROM t WHERE name = ? AND score > ? ORDER BY id", ["bob", 1]))\n'
        'print(db.query(h, "SELECT $2::text || $1 AS s", ["a", "b"]))\n'
        # `?` inside a string, a quoted name, a comment and a dollar quote is not a parameter.
        'print(db.query(h, "SELECT \'?\' AS \\"q?\\", $$ ? :x $$ AS d, ?::int AS n -- ?", [5]))\n'
        # `::` is a cast, not a name.
        'print(db.query(h, "SELECT :v::int + 1 AS n", {v: "41"}))\n'
        'print(db.query(h, "SELECT ? AS t, ? AS f, ?::int AS i, ? AS z", [true, false, true, nil]))\n'
        + caught('db.query(h, "SELECT ?, ?", [1])')
        + caught('db.query(h, "SELECT :a", {b: 1})')
        + caught('db.query(h, "SELECT ?", [[1]])')
        + caught('db.query(h, "SELECT ?::int", ["abc"])')
        + caught('db.query(h, "SELECT ?", ["a\\x00b"])')
        + caught('db.query(h, "SELECT 1", "x")')
    )
    out = ok(pg, code, tmp_path).splitlines()
    assert json.loads(out[0]) == [{"name": "bob", "score": 2}, {"name": "bob", "score": 4}]
    assert json.loads(out[1]) == [{"s": "ba"}]
    assert json.loads(out[2]) == [{"q?": "?", "d": " ? :x ", "n": 5}]
    assert json.loads(out[3]) == [{"n": 42}]
    assert json.loads(out[4]) == [{"t": "true", "f": "false", "i": 1, "z": None}]
    assert out[5] == "db|db.query: the SQL has 2 parameters but 1 value was given"
    assert out[6] == "db|db.query: no value for parameter :a"
    assert out[7].startswith("type|db.query: parameter 1 must be nil, a bool, a number or a string")
    assert out[8].startswith('db|db.query: invalid input syntax for type integer: "abc" (SQLSTATE 22P02)')
    assert out[9].startswith("db|") and "NUL" in out[9]
    assert out[10].startswith("type|")


def test_sql_errors_are_db_errors_and_the_connection_goes_on(pg, tmp_path):
    code = opener(pg) + caught('db.query(h, "SELECT * FROM nope")') + caught('db.exec(h, "SELEC 1")') + (
        'print(db.query(h, "SELECT 1 AS one"))\n')
    out = ok(pg, code, tmp_path).splitlines()
    assert out[0] == 'db|db.query: relation "nope" does not exist (SQLSTATE 42P01)'
    assert out[1].startswith('db|db.exec: syntax error at or near "SELEC"')
    assert json.loads(out[2]) == [{"one": 1}]
    r = run_pg(pg, opener(pg) + 'db.query(h, "SELECT * FROM nope")\n', tmp_path)
    assert r.returncode == 1 and diag(r)["kind"] == "db"


def test_exec_runs_a_script_and_counts_changed_rows(pg, table, tmp_path):
    code = opener(pg) + (
        'print(db.exec(h, "INSERT INTO t (name) VALUES (\'a\'), (\'b\'); UPDATE t SET score = 1; SELECT 1; '
        'DELETE FROM t WHERE name = \'a\'"))\n'
        'print(db.exec(h, "UPDATE t SET score = ?", [2]))\n'
        'print(db.exec(h, "SELECT * FROM t WHERE score = ?", [2]))\n'
        'print(db.exec(h, ""))\n'
    )
    assert ok(pg, code, tmp_path).split() == ["5", "1", "0", "0"]


def test_transactions_as_statements(pg, table, tmp_path):
    code = opener(pg) + (
        'db.exec(h, "BEGIN")\ndb.exec(h, "INSERT INTO t (name) VALUES (?)", ["x"])\ndb.exec(h, "ROLLBACK")\n'
        'print(db.query(h, "SELECT count(*) AS c FROM t")[0].c)\n'
        'db.exec(h, "BEGIN")\ndb.exec(h, "INSERT INTO t (name) VALUES (?)", ["y"])\n'
        + caught('db.exec(h, "INSERT INTO nope VALUES (1)")')
        + caught('db.query(h, "SELECT 1")')
        + 'db.exec(h, "ROLLBACK")\n'
        'db.exec(h, "BEGIN")\ndb.exec(h, "INSERT INTO t (name) VALUES (?)", ["z"])\ndb.exec(h, "COMMIT")\n'
        'print(db.query(h, "SELECT name FROM t"))\n'
        # An open transaction is rolled back when the run ends.
        'db.exec(h, "BEGIN")\ndb.exec(h, "DELETE FROM t")\n'
    )
    out = ok(pg, code, tmp_path).splitlines()
    assert out[0] == "0"
    assert out[1].startswith("db|") and out[2].startswith("db|db.query: current transaction is aborted")
    assert json.loads(out[3]) == [{"name": "z"}]
    assert pg.psql("SELECT name FROM t", db="app").strip() == "z"


# ---------------------------------------------------------------------------
# The gate
# ---------------------------------------------------------------------------


def test_the_gate_and_its_scopes(pg, tmp_path):
    code = opener(pg) + 'print(db.query(h, "SELECT current_database() AS d")[0].d)\n'
    port = pg.port
    assert ok(pg, code, tmp_path).strip() == "app"
    for opts in ([f"--allow-db=postgresql://127.0.0.1:{port}/app"], [f"--allow-db=postgresql://127.0.0.1:{port}"],
                 [f"--allow-db=postgresql://127.0.0.1:{port}/*"], [f"--allow-db=data.db,postgres://127.0.0.1:{port}/app"]):
        assert ok(pg, code, tmp_path, opts=opts).strip() == "app", opts
    refused = [
        [],
        ["--allow-network"],
        ["--allow-db"],
        ["--allow-db=."],
        ["--allow-network", "--allow-db=data.db"],
        [f"--allow-db=postgresql://127.0.0.1:{port}/other"],
        [f"--allow-db=postgresql://127.0.0.1:{port + 1}/app"],
        ["--allow-db=postgresql://127.0.0.1/app"],
        [f"--allow-db=postgresql://127.0.0.2:{port}/app"],
        [f"--allow-db=postgresql://localhost:{port}/app"],
    ]
    for opts in refused:
        r = run_pg(pg, code, tmp_path, opts=opts)
        assert r.returncode == 1, (opts, r)
        d = diag(r)
        assert d["kind"] == "permission", (opts, d)
        assert "--allow-db" in d["message"], d
        assert PASSWORD not in r.stderr.decode()
    d = diag(run_pg(pg, code, tmp_path, opts=[f"--allow-db=postgresql://127.0.0.1:{port}/other"]))
    assert d["message"] == (f'db.open: "postgresql://app@127.0.0.1:{port}/app" is outside the --allow-db scope '
                            f"(it needs --allow-db=postgresql://127.0.0.1:{port}/app)")
    # A name is resolved and its addresses checked: localhost granted by name.
    code_by_name = opener(pg, host="localhost") + 'print(db.query(h, "SELECT 1 AS x")[0].x)\n'
    assert ok(pg, code_by_name, tmp_path, opts=[f"--allow-db=postgresql://localhost:{port}/app"]).strip() == "1"
    # A name not granted is refused before any lookup.
    r = run_pg(pg, opener(pg, host="db.invalid") + "\n", tmp_path, opts=[f"--allow-db=postgresql://localhost:{port}/app"])
    assert diag(r)["kind"] == "permission"


@pytest.mark.parametrize("item", ["postgresql://u@h/db", "postgresql:///db", "postgresql://h/db?sslmode=require",
                                  "postgresql://h:0/db", "postgresql://h/a/b"])
def test_bad_scope_items_are_usage_errors(pg, tmp_path, item):
    r = run_pg(pg, "print(1)\n", tmp_path, opts=[f"--allow-db={item}"])
    assert r.returncode == 2, r


def test_bad_urls_are_value_errors_without_the_password(pg, tmp_path):
    for url in ["postgresql://127.0.0.1/app", "postgresql://app:hunter2@/app", "postgresql://app:hunter2@h:99999/app",
                "postgresql://app:hunter2@127.0.0.1/app?sslmode=prefer", "postgresql://app:hunter2@%2Ftmp/app",
                "postgresql://app:hunter2@127.0.0.1/app?password=x"]:
        r = run_pg(pg, caught(f'db.open("{url}")'), tmp_path)
        out = r.stdout.decode()
        assert out.startswith("value|db.open: the PostgreSQL URL"), (url, out)
        assert "hunter2" not in out


def test_audit_lines_and_check_never_show_the_password(pg, tmp_path):
    audit = tmp_path / "audit.log"
    code = opener(pg) + 'db.query(h, "SELECT 1")\ndb.close(h)\n' + caught(f'db.open("{pg.url(password="wrong")}")')
    r = run_pg(pg, code, tmp_path, opts=[pg.scope, "--audit", str(audit), "--stats"])
    assert r.returncode == 0, r
    assert "password authentication failed" in r.stdout.decode()
    lines = [json.loads(x) for x in audit.read_text().splitlines()]
    assert [x["builtin"] for x in lines] == ["db.open", "db.query", "db.close", "db.open"]
    assert lines[0]["target"] == f"postgresql://app@127.0.0.1:{pg.port}/app -> 127.0.0.1:{pg.port}"
    assert lines[0]["capability"] == "db" and lines[0]["result"] == "ok" and lines[0]["bytes"] > 0
    assert lines[3]["result"] == "db"
    text = audit.read_text() + r.stdout.decode() + r.stderr.decode()
    assert PASSWORD not in text and "wrong" not in audit.read_text()
    (tmp_path / "c.lsh").write_text(code)
    c = subprocess.run([str(LEASH), "check", "--json", str(tmp_path / "c.lsh")], capture_output=True, timeout=60)
    assert c.returncode == 0, c
    j = json.loads(c.stdout)
    assert j["capabilities"] == ["db"]
    assert j["calls"][0]["target"] == f"postgresql://app@127.0.0.1:{pg.port}/app"
    assert PASSWORD not in c.stdout.decode()
    c = subprocess.run([str(LEASH), "check", str(tmp_path / "c.lsh")], capture_output=True, timeout=60)
    assert c.stdout.decode().strip() == "capabilities: db"


def test_pgpassword_from_the_operator(pg, tmp_path):
    code = opener(pg, password=None) + 'print(db.query(h, "SELECT 1 AS x")[0].x)\n'
    env = dict(os.environ, PGPASSWORD=PASSWORD)
    assert ok(pg, code, tmp_path, env=env).strip() == "1"
    env.pop("PGPASSWORD")
    r = run_pg(pg, code, tmp_path, env=env)
    assert r.returncode == 1 and diag(r)["kind"] == "db"


# ---------------------------------------------------------------------------
# The leash: deadlines, limits, lost connections
# ---------------------------------------------------------------------------


def test_a_long_statement_stops_at_the_deadline(pg, tmp_path):
    for stmt in ['db.query(h, "SELECT pg_sleep(10)")', 'db.exec(h, "SELECT pg_sleep(10)")',
                 'db.exec(h, "SELECT pg_sleep(?)", [10])']:
        r = run_pg(pg, opener(pg) + stmt + "\n", tmp_path, opts=[pg.scope, "--max-time", "1"], timeout=30)
        assert r.returncode == 4, r
        assert diag(r)["kind"] == "time", r
    # The server's statement timeout was cut: no query of ours is left running.
    left = pg.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(%' "
                   "AND state = 'active' AND pid <> pg_backend_pid() AND application_name = 'leash'")
    assert left.strip() == "0"


def test_connection_set_up_is_bounded(pg, tmp_path):
    # A listener that never answers: the start-up waits for connect_timeout, no more.
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        code = caught(f'db.open("postgresql://app@127.0.0.1:{port}/app?connect_timeout=1")')
        r = run_pg(pg, code, tmp_path, opts=[f"--allow-db=postgresql://127.0.0.1:{port}/app"], timeout=30)
        assert r.stdout.decode().startswith("db|db.open: connecting postgresql://app@127.0.0.1:")
        assert "took longer than 1000 ms" in r.stdout.decode()
        r = run_pg(pg, code, tmp_path, opts=[f"--allow-db=postgresql://127.0.0.1:{port}/app", "--max-time", "0.5"],
                   timeout=30)
        assert r.returncode == 4 and diag(r)["kind"] == "time"
    finally:
        s.close()


@pytest.mark.parametrize("rows", [10_000_000])
def test_a_huge_select_ends_with_a_limit_not_in_memory(pg, tmp_path, rows):
    r = run_pg(pg, opener(pg) + f'x = db.query(h, "SELECT g, repeat(\'x\', 100) AS s FROM generate_series(1, {rows}) g")\n',
               tmp_path)
    assert r.returncode == 4 and diag(r)["kind"] == "frame_storage", r
    r = run_pg(pg, opener(pg) + f'db.exec(h, "SELECT g FROM generate_series(1, {rows}) g")\n', tmp_path,
               opts=[pg.scope, "--max-work", "50000000"])
    assert r.returncode == 4 and diag(r)["kind"] == "work", r


def test_rows_at_the_list_limit_and_one_past(pg, tmp_path):
    code = opener(pg) + 'print(len(db.query(h, "SELECT NULL AS x FROM generate_series(1, ?) g", [{n}])))\n'
    out = ok(pg, code.format(n=100), tmp_path, opts=[pg.scope, "--limit", "list=100"])
    assert out.strip() == "100"
    r = run_pg(pg, code.format(n=101), tmp_path, opts=[pg.scope, "--limit", "list=100"])
    assert r.returncode == 4 and diag(r)["kind"] == "list", r


def test_a_huge_value_is_refused_as_it_arrives(pg, tmp_path):
    # 100 MB in one row: refused when its message header arrives (64 MiB at most).
    r = run_pg(pg, opener(pg) + 'x = db.query(h, "SELECT repeat(\'x\', 100000000) AS s")\n', tmp_path)
    assert r.returncode == 4, r
    assert diag(r)["kind"] == "frame_storage"
    # 2 MiB: the string limit (1 MiB by default).
    r = run_pg(pg, opener(pg) + 'x = db.query(h, "SELECT repeat(\'x\', 2000000) AS s")\n', tmp_path)
    assert r.returncode == 4 and diag(r)["kind"] == "string", r


def test_a_dropped_connection_is_a_db_error(pg, tmp_path):
    code = opener(pg) + (
        'pid = db.query(h, "SELECT pg_backend_pid() AS p")[0].p\n'
        f'k = db.open("{pg.url()}")\n'
        'db.query(k, "SELECT pg_terminate_backend(?)", [pid])\n'
        + caught('db.query(h, "SELECT 1")')
        + caught('db.exec(h, "SELECT 1")')
        + 'db.close(h)\nprint(db.query(k, "SELECT 2 AS x")[0].x)\n'
    )
    out = ok(pg, code, tmp_path).splitlines()
    # The server's FATAL message, or the closed socket, whichever the client reads first.
    assert out[0].startswith("db|db.query: "), out
    assert "terminating connection due to administrator command" in out[0] or "was lost" in out[0], out
    assert out[1].startswith(f"db|db.exec: the connection to postgresql://app@127.0.0.1:{pg.port}/app was lost")
    assert out[2] == "2"


def test_open_connections_count_against_the_databases_limit(pg, tmp_path):
    code = (f'hs = []\nfor i in range(0, 16)\n  push(hs, db.open("{pg.url()}"))\nend\n'
            'push(hs, db.open(":memory:"))\n')
    r = run_pg(pg, code, tmp_path, opts=[pg.scope, "--allow-db"])
    assert r.returncode == 4 and diag(r)["kind"] == "databases", r


# ---------------------------------------------------------------------------
# TLS with a test CA
# ---------------------------------------------------------------------------


def test_tls_with_the_test_ca(pg, tmp_path):
    ca, other = pg.certs / "ca.pem", pg.certs / "other.pem"
    scopes = f"--allow-db=postgresql://127.0.0.1:{pg.port}/app,postgresql://localhost:{pg.port}/app"
    q = 'print(db.query(h, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")[0].ssl)\n'
    for mode in ["require", "verify-full"]:
        for host in ["127.0.0.1", "localhost"]:
            code = opener(pg, host=host, query=f"?sslmode={mode}") + q
            assert ok(pg, code, tmp_path, opts=[scopes, "--tls-ca-file", str(ca)]).strip() == "true"
    # Without TLS the same server answers in clear.
    assert ok(pg, opener(pg) + q, tmp_path).strip() == "false"
    code = caught(f'db.open("{pg.url(query="?sslmode=require")}")')
    for opts in [[scopes, "--tls-ca-file", str(other)], [scopes]]:
        out = ok(pg, code, tmp_path, opts=opts)
        assert out.startswith("db|db.open: cannot connect") and "UnknownIssuer" in out, out


def test_nothing_postgres_is_set_up_by_a_run_that_does_not_open_one(pg, tmp_path):
    # Under strace, no socket is made by a run that only prints (start-up stays lazy).
    import shutil
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    p = tmp_path / "n.lsh"
    p.write_text('print("hi")\n')
    r = subprocess.run(["strace", "-f", "-e", "trace=socket,connect", str(LEASH), pg.scope, str(p)],
                       capture_output=True, timeout=60)
    assert b"hi" in r.stdout
    assert b"socket(" not in r.stderr


def test_the_password_is_masked_in_a_shown_source_line(pg, tmp_path):
    p = tmp_path / "s.lsh"
    p.write_text(f'x = 1\nh = db.open("{pg.url()}")\n')
    r = subprocess.run([str(LEASH), str(p)], capture_output=True, timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 1 and "db.open needs --allow-db" in err
    assert PASSWORD not in err and f"app:{'*' * len(PASSWORD)}@127.0.0.1" in err


def test_connections_per_run_are_bounded(pg, tmp_path):
    code = (f'for i = 1 to {{n}}\n  h = db.open("{pg.url()}")\n  db.close(h)\nend\nprint("done")\n')
    assert ok(pg, code.format(n=64), tmp_path).strip() == "done"
    r = run_pg(pg, code.format(n=65), tmp_path)
    assert r.returncode == 4 and diag(r)["kind"] == "databases", r
    assert "more than 64 PostgreSQL connections per run" in diag(r)["message"]
