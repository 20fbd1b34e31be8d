#!/usr/bin/env python3
"""Leash behind one Apache, side by side with PHP and Python (bench/README.md, "CGI and
FastCGI"): the same page (a query parameter escaped into a 100-row table) served by

  Leash CGI          leash-cgi run by mod_cgid (Action + AddHandler), then `leash` (exec)
  Leash FastCGI      leash-cgi --fastcgi (workers forked from the warm process), mod_proxy_fcgi
  Leash FastCGI/exec the same with worker_start = "exec" (a fork and an exec of `leash` per request)
  php-fpm            pm = static, mod_proxy_fcgi (the way PHP is deployed)
  php-cgi            php-cgi run by mod_cgid (Action + AddHandler)
  Python CGI         a python3 CGI script run by mod_cgid

one Apache 2.4 (event MPM), measured with ab (apache2-utils): requests per second and the
50th / 99th percentile latency. The FastCGI servers get the same number of workers
(--workers, default 8). Usage:

  python3 bench/cgi/run.py [--bin target/release] [-c 8] [-n 5000] [--cgi-n 500] [--workers 8]

Prints one markdown table (and writes it to target/bench/cgi.md). A server that is not
installed (php-fpm, php-cgi) is left out, saying so.
"""
import argparse
import glob
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODS = pathlib.Path("/usr/lib/apache2/modules")

LEASH_PAGE = """import cgi
q = cgi.escape(get(cgi.query(), "q", "none"))
cgi.headers({"Content-Type": "text/html; charset=utf-8"})
print("<!doctype html><html><head><title>Table</title></head><body><table>")
for i = 1 to 100
  print("<tr><td>" .. str(i) .. "</td><td>" .. q .. "</td></tr>")
end
print("</table></body></html>")
"""

PHP_PAGE = """<?php
$q = htmlspecialchars($_GET['q'] ?? 'none', ENT_QUOTES);
header('Content-Type: text/html; charset=utf-8');
echo "<!doctype html><html><head><title>Table</title></head><body><table>\\n";
for ($i = 1; $i <= 100; $i++) {
    echo "<tr><td>$i</td><td>$q</td></tr>\\n";
}
echo "</table></body></html>\\n";
"""

PY_PAGE = """#!/usr/bin/python3
import html, os, sys, urllib.parse
q = html.escape(urllib.parse.parse_qs(os.environ.get("QUERY_STRING", "")).get("q", ["none"])[0])
out = ["Content-Type: text/html; charset=utf-8\\r\\n\\r\\n",
       "<!doctype html><html><head><title>Table</title></head><body><table>\\n"]
for i in range(1, 101):
    out.append(f"<tr><td>{i}</td><td>{q}</td></tr>\\n")
out.append("</table></body></html>\\n")
sys.stdout.write("".join(out))
"""

# The server part both Apache set-ups share (this one and floor.py's): where it keeps
# its files, the event MPM and its threads; each adds its modules between them.
APACHE_HEAD = """ServerRoot "{base}"
Listen 127.0.0.1:{port}
PidFile "{base}/run/httpd.pid"
DefaultRuntimeDir "{base}/run"
ErrorLog "{base}/logs/error.log"
LogLevel error
ServerName 127.0.0.1
{user}
LoadModule mpm_event_module {mods}/mod_mpm_event.so
LoadModule authz_core_module {mods}/mod_authz_core.so
LoadModule mime_module {mods}/mod_mime.so
"""
APACHE_MPM = """StartServers 2
ThreadsPerChild 64
MaxRequestWorkers 256
ServerLimit 4
TypesConfig /dev/null
DocumentRoot "{base}/www"
"""

APACHE = APACHE_HEAD + """LoadModule alias_module {mods}/mod_alias.so
LoadModule env_module {mods}/mod_env.so
LoadModule actions_module {mods}/mod_actions.so
LoadModule cgid_module {mods}/mod_cgid.so
LoadModule proxy_module {mods}/mod_proxy.so
LoadModule proxy_fcgi_module {mods}/mod_proxy_fcgi.so
ScriptSock "{base}/run/cgid.sock"
""" + APACHE_MPM + """ScriptAlias /cgi-bin/ "{base}/cgi-bin/"
SetEnv LEASH_CGI_CONFIG "{base}/leash-cgi.toml"
Action leash-script /cgi-bin/leash-cgi
Action php-script /cgi-bin/php-cgi
<Directory />
  Require all granted
</Directory>
<Directory "{base}/www/lcgi">
  AddHandler leash-script .lsh
</Directory>
<Directory "{base}/www/phpcgi">
  AddHandler php-script .php
</Directory>
<Directory "{base}/www/py">
  Options +ExecCGI
  AddHandler cgi-script .py
</Directory>
<Directory "{base}/www/lfcgi">
  <FilesMatch "\\.lsh$">
    SetHandler "proxy:fcgi://127.0.0.1:{lport}"
  </FilesMatch>
</Directory>
<Directory "{base}/www/lfcgix">
  <FilesMatch "\\.lsh$">
    SetHandler "proxy:fcgi://127.0.0.1:{xport}"
  </FilesMatch>
</Directory>
<Directory "{base}/www/fpm">
  <FilesMatch "\\.php$">
    SetHandler "proxy:fcgi://127.0.0.1:{fport}"
  </FilesMatch>
</Directory>
"""

FPM = """[global]
pid = {base}/run/fpm.pid
error_log = {base}/logs/fpm.log
daemonize = no
[bench]
{user}
listen = 127.0.0.1:{port}
pm = static
pm.max_children = {workers}
pm.max_requests = 0
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what):
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit(f"{what} exited: {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not listen on {port}")


def ab(url, n, c):
    r = subprocess.run(["ab", "-q", "-n", str(n), "-c", str(c), url], capture_output=True, text=True)
    out = r.stdout
    if "Requests per second" not in out:
        sys.exit(f"ab failed on {url}: {r.stdout[-800:]} {r.stderr[-800:]}")
    rps = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    p50 = int(re.search(r"^\s+50%\s+(\d+)", out, re.M).group(1))
    p99 = int(re.search(r"^\s+99%\s+(\d+)", out, re.M).group(1))
    return rps, p50, p99, failed + (int(non2xx.group(1)) if non2xx else 0)


TICK = os.sysconf("SC_CLK_TCK")


def proc_times(pid):
    """(utime + stime, cutime + cstime) of a process in clock ticks; (0, 0) when it is gone."""
    try:
        f = open(f"/proc/{pid}/stat").read()
    except OSError:
        return 0, 0
    x = f[f.rfind(")") + 2:].split()
    return int(x[11]) + int(x[12]), int(x[13]) + int(x[14])


def tree(pid):
    """pid and its live descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for t in glob.glob(f"/proc/{p}/task/*/children"):  # a child belongs to the thread that made it
            try:
                todo.extend(int(k) for k in open(t).read().split())
            except OSError:
                pass
    return out


def cpu(pids):
    """CPU ticks of the process trees under pids: every live process's own time plus what
    its reaped children used (a reaped process is no longer alive: nothing counts twice)."""
    return sum(sum(proc_times(p)) for root in pids for p in tree(root))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "target" / "release"))
    ap.add_argument("-c", type=int, default=8)
    ap.add_argument("-n", type=int, default=5000)
    ap.add_argument("--cgi-n", type=int, default=500)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--fcgi-conf", default="", help="lines added to Leash FastCGI's configuration "
                    "(e.g. 'program_cache = 0' to measure without the program cache)")
    ap.add_argument("--only", help="run only the rows whose name contains one of these comma-separated texts "
                    "(e.g. 'fork,php-fpm')")
    a = ap.parse_args()
    binp = pathlib.Path(a.bin)
    apache = shutil.which("apache2") or "/usr/sbin/apache2"
    fpm = shutil.which("php-fpm") or next(iter(sorted(glob.glob("/usr/sbin/php-fpm*"))), None)
    phpcgi = shutil.which("php-cgi")
    root_user = os.geteuid() == 0
    base = pathlib.Path(tempfile.mkdtemp(prefix="leash-bench-cgi-"))
    procs = []
    fpm_proc = None
    try:
        for d in ["run", "logs", "cgi-bin", "www/lcgi", "www/lfcgi", "www/lfcgix", "www/fpm", "www/phpcgi", "www/py"]:
            (base / d).mkdir(parents=True, exist_ok=True)
        for d in ["lcgi", "lfcgi", "lfcgix"]:
            (base / "www" / d / "page.lsh").write_text(LEASH_PAGE)
        for d in ["fpm", "phpcgi"]:
            (base / "www" / d / "page.php").write_text(PHP_PAGE)
        (base / "www/py/page.py").write_text(PY_PAGE)
        pages_written = time.monotonic()
        shutil.copy2(binp / "leash-cgi", base / "cgi-bin" / "leash-cgi")
        shutil.copy2(binp / "leash", base / "cgi-bin" / "leash")
        if phpcgi:
            (base / "cgi-bin/php-cgi").write_text(f"#!/bin/sh\nexec {phpcgi}\n")
        conf = f'root = "{base}/www"\nmax_time_ms = 10000\nmax_workers = {a.workers}\nqueue = 1024\n' + a.fcgi_conf.replace("\\n", "\n") + "\n"
        (base / "leash-cgi.toml").write_text(conf)
        (base / "leash-fcgi-exec.toml").write_text(
            conf + f'worker_start = "exec"\ninterpreter = "{base}/cgi-bin/leash"\n')
        for dirpath, _d, files in os.walk(base):
            os.chmod(dirpath, 0o755)
            for f in files:
                os.chmod(os.path.join(dirpath, f), 0o755)
        lport, xport, fport, port = free_port(), free_port(), free_port(), free_port()
        for cfg, p in [("leash-cgi.toml", lport), ("leash-fcgi-exec.toml", xport)]:
            env = {"LEASH_CGI_CONFIG": str(base / cfg), "PATH": "/usr/bin:/bin"}
            pr = subprocess.Popen([str(base / "cgi-bin/leash-cgi"), "--fastcgi", f"127.0.0.1:{p}"], env=env,
                                  stderr=open(base / "logs" / f"{cfg}.log", "wb"), start_new_session=True)
            procs.append(pr)
            wait_port(p, pr, "leash-cgi --fastcgi")
        rows = [("Leash CGI (mod_cgid)", "lcgi/page.lsh", a.cgi_n),
                (f"Leash FastCGI, fork ({a.workers} workers)", "lfcgi/page.lsh", a.n),
                (f"Leash FastCGI, exec ({a.workers} workers)", "lfcgix/page.lsh", a.n)]
        if fpm:
            user = "user = www-data\ngroup = www-data" if root_user else ""
            (base / "fpm.conf").write_text(FPM.format(base=base, port=fport, workers=a.workers, user=user))
            pr = subprocess.Popen([fpm, "-F", "-y", str(base / "fpm.conf")], stderr=subprocess.DEVNULL,
                                  start_new_session=True)
            procs.append(pr)
            fpm_proc = pr
            wait_port(fport, pr, "php-fpm")
            rows.append((f"php-fpm, pm=static ({a.workers} children)", "fpm/page.php", a.n))
        else:
            print("(php-fpm is not installed: left out)", file=sys.stderr)
        if phpcgi:
            rows.append(("php-cgi (mod_cgid)", "phpcgi/page.php", a.cgi_n))
        else:
            print("(php-cgi is not installed: left out)", file=sys.stderr)
        rows.append(("Python 3 CGI (mod_cgid)", "py/page.py", a.cgi_n))
        user = "User www-data\nGroup www-data" if root_user else ""
        (base / "httpd.conf").write_text(APACHE.format(base=base, port=port, user=user, mods=MODS, lport=lport,
                                                       xport=xport, fport=fport))
        pr = subprocess.Popen([apache, "-f", str(base / "httpd.conf"), "-D", "FOREGROUND"], start_new_session=True)
        procs.append(pr)
        apache_proc = pr
        wait_port(port, pr, "apache2")
        # Leash FastCGI's program cache leaves a file changed in the last 2 s to its workers
        # (program_cache_min_age_ms): the pages are older than that when measured.
        time.sleep(max(0.0, 2.2 - (time.monotonic() - pages_written)))
        out = [f"ab -c {a.c}; {os.cpu_count()} CPUs; page: a query parameter escaped into a 100-row table", "",
               "| server | requests | req/s | p50 ms | p99 ms | failed | CPU ms/request |",
               "|---|---:|---:|---:|---:|---:|---:|"]
        if a.only:
            rows = [r for r in rows if any(o in r[0] for o in a.only.split(","))]
        leash_servers = procs[:2]
        notes = []
        before = [(len(os.listdir(f"/proc/{p.pid}/fd"))) for p in leash_servers]
        for name, path, n in rows:
            url = f"http://127.0.0.1:{port}/{path}?q=%3Cb%3Ebench%3C/b%3E"
            body = subprocess.run(["curl", "-s", url], capture_output=True, text=True).stdout if shutil.which(
                "curl") else ""
            if body and body.count("&lt;b&gt;bench&lt;/b&gt;") != 100:
                sys.exit(f"{name}: unexpected page: {body[:300]!r}")
            ab(url, min(200, n), a.c)  # warm up
            # CPU per request: Apache (with the CGI programs it runs) and the FastCGI
            # server that answers the row (its warm process and workers, or php-fpm's).
            backend = {"lfcgi/": procs[0].pid, "lfcgix": procs[1].pid}.get(path[:6])
            if path.startswith("fpm/") and fpm_proc:
                backend = fpm_proc.pid
            roots = [apache_proc.pid] + ([backend] if backend else [])
            lf = procs[0].pid
            zyg = [p for p in tree(lf) if p != lf][:1]
            parts0 = (sum(proc_times(lf)), sum(proc_times(zyg[0])[:1]) if zyg else 0,
                      proc_times(zyg[0])[1] if zyg else 0)
            c0 = cpu(roots)
            rps, p50, p99, failed = ab(url, n, a.c)
            c1 = cpu(roots)
            ms = (c1 - c0) / TICK / n * 1000
            # mod_cgid's CGI programs are not reaped by an Apache process (its daemon's
            # child forks them and exits; init reaps them): their CPU is not countable here.
            shown = f"{ms:.2f}" if backend else "-"
            out.append(f"| {name} | {n} | {rps:,.0f} | {p50} | {p99} | {failed} | {shown} |")
            print(out[-1], flush=True)
            if path.startswith("lfcgi/"):
                parts1 = (sum(proc_times(lf)), sum(proc_times(zyg[0])[:1]) if zyg else 0,
                          proc_times(zyg[0])[1] if zyg else 0)
                d = [(b - x) / TICK / n * 1000 for x, b in zip(parts0, parts1)]
                notes.append(f"{name}: CPU ms/request: server {d[0]:.2f}, warm process {d[1]:.2f}, "
                             f"workers {d[2]:.2f} (Apache and the rest: {ms - sum(d):.2f})")
        out.extend(["", f"load average before the runs' end: {os.getloadavg()[0]:.1f}"] + notes)
        # Leaks: the FastCGI servers' descriptors, processes and TMPDIRs after the runs.
        time.sleep(1)
        for p, fd0 in zip(leash_servers, before):
            kids = subprocess.run(["ps", "--ppid", str(p.pid), "-o", "pid="], capture_output=True, text=True).stdout.split()
            grandkids = subprocess.run(["ps", "--ppid", ",".join(kids) or "1", "-o", "pid=,sid="], capture_output=True,
                                       text=True).stdout.split() if kids else []
            # A worker with a request leads its own session; a spare worker (forked ahead,
            # waiting for one request) is still in the warm process's: not a leak.
            pairs = list(zip(grandkids[::2], grandkids[1::2]))
            spares = [p for p, s in pairs if p != s]
            grandkids = [p for p, s in pairs if p == s]
            tmp = pathlib.Path(tempfile.gettempdir()) / f"leash-cgi-{p.pid}"
            left = len(os.listdir(tmp)) if tmp.exists() else 0
            out.append(f"leash-cgi --fastcgi pid {p.pid}: descriptors {fd0} before, "
                       f"{len(os.listdir(f'/proc/{p.pid}/fd'))} after; warm processes {len(kids)}, "
                       f"workers left {len(grandkids)} (spares waiting {len(spares)}), TMPDIRs left {left}")
        text = "\n".join(out) + "\n"
        (ROOT / "target" / "bench").mkdir(parents=True, exist_ok=True)
        (ROOT / "target" / "bench" / "cgi.md").write_text(text)
        print(text)
    finally:
        for pr in reversed(procs):
            try:
                os.killpg(pr.pid, signal.SIGTERM)
                pr.wait(timeout=20)
            except Exception:
                pass
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
