#!/usr/bin/env python3
"""The floor of a fresh process per request behind Apache (issue 29): one Apache (event
MPM, mod_proxy_fcgi, as bench/cgi/run.py sets it up) in front of

  floor static        bench/cgi/floor.c's FastCGI responder: the bench page's bytes,
                      answered from one process (no fork): Apache's own share, and ab's
  floor fork bare     the same, each connection answered by a child forked for it from
                      the small responder itself (its own few mappings)
  floor fork          the same, each connection answered by a child forked for it from a
                      process mapped like Leash's warm process (`floor serve --fork --like`)
  floor fork+faults   the same, the child first touching what a worker touches at the
                      least (code pages, copies of the parent's heap pages, new pages:
                      --code/--heap/--fresh, the counts of WORKLOG's profile)
  Leash FastCGI       leash-cgi --fastcgi (fork), the bench page
  php-fpm             pm = static, the PHP page

measured with ab, rows alternating for --rounds rounds. Per row: req/s, and CPU per
request three ways: the whole machine (/proc/stat, both CPUs, minus the idle rate of
other work measured just before: --quiet-s; meaningful only on a machine without other
work, since niced work that runs while a row waits gives way while it runs), the process
trees (Apache + the backend + ab, from /proc and getrusage), and each part.

  python3 bench/cgi/floor.py [--bin target/quick] [-c 8] [-n 4000] [--rounds 2]
"""
import argparse
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "cgi"))
from run import APACHE_HEAD, APACHE_MPM, LEASH_PAGE, PHP_PAGE, MODS, FPM, free_port, wait_port, ab, cpu, tree, TICK  # noqa: E402

APACHE = APACHE_HEAD + """LoadModule proxy_module {mods}/mod_proxy.so
LoadModule proxy_fcgi_module {mods}/mod_proxy_fcgi.so
""" + APACHE_MPM + """<Directory />
  Require all granted
</Directory>
{dirs}
"""

DIR = """<Directory "{base}/www/{name}">
  <FilesMatch "\\.(lsh|php)$">
    SetHandler "proxy:fcgi://127.0.0.1:{port}"
  </FilesMatch>
</Directory>
"""


def machine():
    """(busy, idle) jiffies of the whole machine."""
    f = open("/proc/stat").readline().split()[1:9]
    v = [int(x) for x in f]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7], v[3] + v[4]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "target" / "quick"))
    ap.add_argument("-c", type=int, default=8)
    ap.add_argument("-n", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--quiet-s", type=float, default=3.0, help="seconds of the other work's rate measured before a row")
    ap.add_argument("--touch", default="48,20,15", help="code,heap,fresh pages the 'fork+faults' child touches")
    ap.add_argument("--only", help="rows whose name contains one of these comma-separated texts")
    a = ap.parse_args()
    apache = shutil.which("apache2") or "/usr/sbin/apache2"
    fpm = shutil.which("php-fpm") or next(iter(sorted(pathlib.Path("/usr/sbin").glob("php-fpm*"))), None)
    floor = ROOT / "target" / "bench" / "floor"
    floor.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-O2", "-o", str(floor), str(ROOT / "bench" / "cgi" / "floor.c")], check=True)
    root_user = os.geteuid() == 0
    base = pathlib.Path(tempfile.mkdtemp(prefix="leash-bench-floor-"))
    procs = []
    try:
        names = ["static", "forkbare", "fork", "forkf", "leash", "fpm"]
        for d in ["run", "logs"] + [f"www/{n}" for n in names]:
            (base / d).mkdir(parents=True, exist_ok=True)
        for n in names:
            (base / "www" / n / ("page.php" if n == "fpm" else "page.lsh")).write_text(
                PHP_PAGE if n == "fpm" else LEASH_PAGE)
        old = time.time() - 60
        for n in names:
            for f in (base / "www" / n).iterdir():
                os.utime(f, (old, old))
        for dirpath, _d, files in os.walk(base):
            os.chmod(dirpath, 0o755)
            for f in files:
                os.chmod(os.path.join(dirpath, f), 0o755)
        ports = {n: free_port() for n in names}
        (base / "leash-cgi.toml").write_text(
            f'root = "{base}/www"\nmax_time_ms = 10000\nmax_workers = {a.workers}\nqueue = 1024\n')
        env = {"LEASH_CGI_CONFIG": str(base / "leash-cgi.toml"), "PATH": "/usr/bin:/bin"}
        leash = subprocess.Popen([str(pathlib.Path(a.bin) / "leash-cgi"), "--fastcgi", f"127.0.0.1:{ports['leash']}"],
                                 env=env, stderr=open(base / "logs" / "leash.log", "wb"), start_new_session=True)
        procs.append(leash)
        wait_port(ports["leash"], leash, "leash-cgi --fastcgi")
        time.sleep(0.5)
        warm = [p for p in tree(leash.pid) if p != leash.pid][0]
        code, heap, fresh = a.touch.split(",")
        backends = {"leash": leash}
        for n, extra in [("static", []), ("forkbare", ["--fork"]), ("fork", ["--fork", "--like", str(warm)]),
                         ("forkf", ["--fork", "--like", str(warm), "--code", code, "--heap", heap, "--fresh", fresh])]:
            pr = subprocess.Popen([str(floor), "serve", str(ports[n])] + extra, stderr=open(base / "logs" / f"{n}.log", "wb"),
                                  start_new_session=True)
            procs.append(pr)
            wait_port(ports[n], pr, f"floor {n}")
            backends[n] = pr
        if fpm:
            user = "user = www-data\ngroup = www-data" if root_user else ""
            (base / "fpm.conf").write_text(FPM.format(base=base, port=ports["fpm"], workers=a.workers, user=user))
            pr = subprocess.Popen([str(fpm), "-F", "-y", str(base / "fpm.conf")], stderr=subprocess.DEVNULL,
                                  start_new_session=True)
            procs.append(pr)
            wait_port(ports["fpm"], pr, "php-fpm")
            backends["fpm"] = pr
        else:
            names.remove("fpm")
            print("(php-fpm is not installed: left out)", file=sys.stderr)
        dirs = "".join(DIR.format(base=base, name=n, port=ports[n]) for n in names)
        user = "User www-data\nGroup www-data" if root_user else ""
        aport = free_port()
        (base / "httpd.conf").write_text(APACHE.format(base=base, port=aport, user=user, mods=MODS, dirs=dirs))
        ap_proc = subprocess.Popen([apache, "-f", str(base / "httpd.conf"), "-D", "FOREGROUND"], start_new_session=True)
        procs.append(ap_proc)
        wait_port(aport, ap_proc, "apache2")
        for f in sorted((base / "logs").glob("*.log")):
            t = f.read_text(errors="replace").strip()
            if t and f.name != "leash.log":
                print(f"{f.name}: {t}")
        label = {"static": "floor static (no fork)", "forkbare": "floor fork (a small C process)", "fork": "floor fork (like the warm process)",
                 "forkf": f"floor fork+faults ({code} code, {heap} heap, {fresh} new pages)",
                 "leash": "Leash FastCGI, fork", "fpm": f"php-fpm, pm=static ({a.workers})"}
        rows = names if not a.only else [n for n in names if any(o in label[n] or o == n for o in a.only.split(","))]
        print(f"# ab -c {a.c} -n {a.n}, {os.cpu_count()} CPUs, bin {a.bin}, warm pid {warm}")
        print("| round | row | req/s | p50 ms | p99 ms | failed | machine ms/req (other work subtracted) | "
              "Apache | backend | ab | sum of the three |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in range(a.rounds):
            for n in rows:
                url = f"http://127.0.0.1:{aport}/{n}/page.{'php' if n == 'fpm' else 'lsh'}?q=%3Cb%3Ebench%3C/b%3E"
                ab(url, 300, a.c)
                b0, i0 = machine()
                time.sleep(a.quiet_s)
                b1, i1 = machine()
                other = (b1 - b0) / (a.quiet_s)  # jiffies a second of other work
                ap0, be0, ab0 = cpu([ap_proc.pid]), cpu([backends[n].pid]), children_cpu()
                t0 = time.monotonic()
                rps, p50, p99, failed = ab(url, a.n, a.c)
                t1 = time.monotonic()
                b2, _ = machine()
                ap1, be1, ab1 = cpu([ap_proc.pid]), cpu([backends[n].pid]), children_cpu()
                ms = lambda ticks: ticks / TICK / a.n * 1000  # noqa: E731
                mach = ms((b2 - b1) - other * (t1 - t0))
                apm, bem, abm = ms(ap1 - ap0), ms(be1 - be0), (ab1 - ab0) / a.n * 1000
                print(f"| {r + 1} | {label[n]} | {rps:,.0f} | {p50} | {p99} | {failed} | {mach:.3f} "
                      f"({ms(b2 - b1):.3f} - {ms(other * (t1 - t0)):.3f}) | {apm:.3f} | {bem:.3f} | {abm:.3f} | "
                      f"{apm + bem + abm:.3f} |", flush=True)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
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
