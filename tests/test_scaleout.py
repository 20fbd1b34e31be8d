"""Scale-out shown: two Apache instances on two loopback ports, each running Leash pages
through the CGI gateway (leash-cgi), share one PostgreSQL server (pgfix.py). Clients load
both sides at once; every row written is then found exactly once.

The size of the load is LEASH_SCALEOUT_REQUESTS requests per client (default 12) with
LEASH_SCALEOUT_CLIENTS clients per server (default 3); with `-s` the test prints its
figures (README.md, "Scaling out", quotes a larger run)."""
import concurrent.futures
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import LEASH
from pgfix import PASSWORD, pg  # noqa: F401  (the fixture)
from test_cgi import APACHE_CONF, APACHE_MODULES, APACHE_SETUPS, LEASH_CGI, _free_port, _run_user, fetch

ROWS_PER_REQUEST = 5

# One page view: a transaction that writes ROWS_PER_REQUEST rows naming the server and
# the request, and reads back how many rows this client has; the password comes from
# PGPASSWORD, which Apache sets and the gateway passes (env_pass).
WRITE_PAGE = """import cgi
q = cgi.query()
h = db.open("postgresql://app@127.0.0.1:{port}/app")
db.exec(h, "BEGIN")
for i = 1 to {rows}
  db.exec(h, "INSERT INTO hits (server, client, req, i) VALUES (:s, :c, :r, :i)", {{s: q.s, c: q.c, r: num(q.r), i: i}})
end
db.exec(h, "COMMIT")
n = db.query(h, "SELECT count(*) AS n FROM hits WHERE server = ? AND client = ?", [q.s, q.c])[0].n
db.close(h)
cgi.headers({{"Content-Type": "text/plain"}})
print(n)
"""

GATEWAY = """root = "{base}/www/app"
max_time_ms = 10000
env_pass = ["PGPASSWORD"]

[[dir]]
path = "db"
allow = ["db=postgresql://127.0.0.1:{port}/app"]
"""


def start_apache(pgport, setup="mod_cgid"):
    module, setup_conf = APACHE_SETUPS[setup]
    exe = shutil.which("apache2") or ("/usr/sbin/apache2" if os.path.exists("/usr/sbin/apache2") else None)
    if not exe:
        pytest.skip("apache2 is not installed (scripts/test.sh installs it with apt-get when it can)")
    for m in [module, "mod_actions.so", "mod_reqtimeout.so"]:
        if not (APACHE_MODULES / m).exists():
            pytest.skip(f"{m} not found in {APACHE_MODULES}")
    if not LEASH_CGI.exists():
        pytest.skip(f"{LEASH_CGI} is not built")
    user = _run_user()
    if user is None:
        pytest.skip("running as root but neither www-data nor nobody exists for Apache's children")
    base = pathlib.Path(tempfile.mkdtemp(prefix="leash-scaleout-"))
    # The documented layout (tests/test_cgi.py's APACHE_CONF): only the gateway is mapped,
    # `leash` beside it in a directory no URL reaches.
    for d in ["run", "logs", "lib", "www/app/db"]:
        (base / d).mkdir(parents=True, exist_ok=True)
    shutil.copy2(LEASH_CGI, base / "lib" / "leash-cgi")
    shutil.copy2(LEASH, base / "lib" / "leash")
    (base / "www/app/db/write.lsh").write_text(WRITE_PAGE.format(port=pgport, rows=ROWS_PER_REQUEST))
    (base / "leash-cgi.toml").write_text(GATEWAY.format(base=base, port=pgport))
    (base / "roomy.toml").write_text(f'root = "{base}/www/app"\n')
    port = _free_port()
    conf = APACHE_CONF.format(base=base, port=port, user=user, mods=APACHE_MODULES,
                              setup=setup_conf.format(base=base, mods=APACHE_MODULES))
    conf += f'SetEnv PGPASSWORD "{PASSWORD}"\n'
    (base / "httpd.conf").write_text(conf)
    for dirpath, _, filenames in os.walk(base):
        os.chmod(dirpath, 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o755)
    proc = subprocess.Popen([exe, "-f", str(base / "httpd.conf"), "-D", "FOREGROUND"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 15
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace")
            shutil.rmtree(base, ignore_errors=True)
            pytest.skip(f"apache2 could not start: {err.strip()[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                shutil.rmtree(base, ignore_errors=True)
                pytest.skip(f"apache2 did not listen on port {port} within 15 s")
            time.sleep(0.05)
    return base, port, proc


def stop_apache(base, proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def two_servers(pg):
    a = start_apache(pg.port)
    try:
        b = start_apache(pg.port)
    except BaseException:
        stop_apache(a[0], a[2])
        raise
    yield a[1], b[1]
    for base, _, proc in (a, b):
        stop_apache(base, proc)


def test_two_web_servers_share_one_postgresql(pg, two_servers):
    pg.psql("DROP TABLE IF EXISTS hits; CREATE TABLE hits (id bigserial PRIMARY KEY, server text, client text, "
            "req int, i int, UNIQUE (server, client, req, i)); ALTER TABLE hits OWNER TO app", db="app")
    requests = int(os.environ.get("LEASH_SCALEOUT_REQUESTS", "12"))
    clients = int(os.environ.get("LEASH_SCALEOUT_CLIENTS", "3"))
    ports = dict(zip("AB", two_servers))

    def client(server, c):
        seen = []
        for r in range(requests):
            url = f"http://127.0.0.1:{ports[server]}/app/db/write.lsh?s={server}&c={c}&r={r}"
            status, _, body = fetch(url, timeout=60)
            assert status == 200, (status, body)
            seen.append(int(body))
        return seen

    t0 = time.monotonic()
    jobs = [(s, f"c{k}") for s in "AB" for k in range(clients)]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as ex:
        results = list(ex.map(lambda j: client(*j), jobs))
    elapsed = time.monotonic() - t0
    # Each client saw its own rows grow by one request's rows at a time.
    for seen in results:
        assert seen == [ROWS_PER_REQUEST * (k + 1) for k in range(requests)], seen
    # Every row accounted for: one per (server, client, request, i), none lost or doubled.
    total = len(jobs) * requests * ROWS_PER_REQUEST
    counts = pg.psql("SELECT server, count(*), count(DISTINCT (client, req, i)) FROM hits GROUP BY server "
                     "ORDER BY server", db="app").split()
    per_server = clients * requests * ROWS_PER_REQUEST
    assert counts == [f"A|{per_server}|{per_server}", f"B|{per_server}|{per_server}"], counts
    assert pg.psql("SELECT count(*) FROM hits", db="app").strip() == str(total)
    n = len(jobs) * requests
    print(f"\nscale-out: 2 Apache (mod_cgid) x {clients} clients, {n} page views, {total} rows in "
          f"{elapsed:.2f} s: {n / elapsed:.0f} pages/s, {total / elapsed:.0f} rows/s")
