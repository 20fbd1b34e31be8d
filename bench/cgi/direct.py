#!/usr/bin/env python3
"""Leash FastCGI's CPU per request, straight to the server (no web server): starts
`leash-cgi --fastcgi` on loopback TCP with bench/cgi/run.py's page, sends requests the
way Apache's mod_proxy_fcgi does (a new connection per request, KEEP_CONN off), and
prints the CPU per request of the server, the warm process and the workers (from
/proc: the warm process reaps every worker, so its children's times are the workers'),
page faults per worker, and latency.

  python3 bench/cgi/direct.py [--bin target/quick] [-n 1000] [-c 1] [--rounds 1]
                              [--conf 'spare_workers = 2'] [--page print|page]

With -c above 1, that many client threads send requests at once. --rounds repeats the
measurement on the same server (the first is a warm-up of 200 requests).
"""
import argparse
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import fcgi_client as fc  # noqa: E402

sys.path.insert(0, str(ROOT / "bench" / "cgi"))
from run import LEASH_PAGE, free_port, proc_times, tree, TICK  # noqa: E402

PRINT_PAGE = 'print("Content-Type: text/plain")\nprint("")\nprint("hi")\n'


def stat_fields(pid):
    try:
        f = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    return f[f.rfind(")") + 2:].split()


def faults(pid):
    """(own minor faults, reaped children's minor faults)."""
    x = stat_fields(pid)
    return (int(x[7]), int(x[8])) if x else (0, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "target" / "quick"))
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("-c", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--conf", default="")
    ap.add_argument("--page", default="page", choices=["page", "print"])
    ap.add_argument("--perf", action="store_true", help="also count with perf stat (task-clock, context "
                    "switches, page faults) the server, and the warm process with every worker it forks")
    a = ap.parse_args()
    base = pathlib.Path(tempfile.mkdtemp(prefix="leash-bench-direct-"))
    srv = None
    try:
        (base / "www").mkdir()
        page = base / "www" / "page.lsh"
        page.write_text(LEASH_PAGE if a.page == "page" else PRINT_PAGE)
        os.utime(page, (time.time() - 60, time.time() - 60))
        conf = f'root = "{base}/www"\nmax_time_ms = 10000\nmax_workers = 8\nqueue = 1024\n' + \
            a.conf.replace("\\n", "\n") + "\n"
        (base / "leash-cgi.toml").write_text(conf)
        port = free_port()
        env = {"LEASH_CGI_CONFIG": str(base / "leash-cgi.toml"), "PATH": "/usr/bin:/bin"}
        srv = subprocess.Popen([str(pathlib.Path(a.bin) / "leash-cgi"), "--fastcgi", f"127.0.0.1:{port}"],
                               env=env, stderr=open(base / "server.log", "wb"), start_new_session=True)
        addr = ("127.0.0.1", port)
        end = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(addr, timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > end or srv.poll() is not None:
                    sys.exit("the server did not start")
                time.sleep(0.05)
        params = {"SCRIPT_FILENAME": str(page), "QUERY_STRING": "q=%3Cb%3Ebench%3C/b%3E",
                  "REQUEST_METHOD": "GET", "SERVER_PROTOCOL": "HTTP/1.1", "GATEWAY_INTERFACE": "CGI/1.1",
                  "SCRIPT_NAME": "/page.lsh", "REQUEST_URI": "/page.lsh?q=x", "SERVER_NAME": "127.0.0.1",
                  "SERVER_PORT": "80", "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "127.0.0.1",
                  "HTTP_USER_AGENT": "ApacheBench/2.3", "HTTP_ACCEPT": "*/*"}

        def one(lat):
            t = time.perf_counter()
            out, app, proto, _ = fc.request(addr, params)
            lat.append(time.perf_counter() - t)
            if app != 0 or b"200" not in out[:200] and b"Content-Type" not in out[:200]:
                raise SystemExit(f"unexpected response: {out[:200]!r}")

        def run(n):
            lat = []
            per = [n // a.c + (1 if i < n % a.c else 0) for i in range(a.c)]
            ths = [threading.Thread(target=lambda k=k: [one(lat) for _ in range(k)]) for k in per]
            t = time.perf_counter()
            for th in ths:
                th.start()
            for th in ths:
                th.join()
            return time.perf_counter() - t, sorted(lat)

        run(200)
        time.sleep(0.3)
        warm = [p for p in tree(srv.pid) if p != srv.pid][0]
        print(f"# {a.page}, -n {a.n} -c {a.c}, conf {a.conf!r}, bin {a.bin}")
        print("| round | req/s | p50 ms | p99 ms | server ms/req | warm ms/req | workers ms/req | total | faults/worker | warm faults/req |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in range(a.rounds):
            perfs = []
            if a.perf:
                for who, pid in [("server", srv.pid), ("warm+workers", warm)]:
                    out = base / f"perf-{who}.txt"
                    perfs.append((who, out, subprocess.Popen(
                        ["perf", "stat", "-x,", "-e", "task-clock,context-switches,page-faults", "-p", str(pid),
                         "-o", str(out)], stderr=subprocess.DEVNULL)))
                time.sleep(0.5)
            s0, w0, f0 = sum(proc_times(srv.pid)), proc_times(warm), faults(warm)
            wall, lat = run(a.n)
            time.sleep(0.2)
            for who, out, pr in perfs:
                pr.send_signal(signal.SIGINT)
                pr.wait()
                vals = {}
                for line in out.read_text().splitlines():
                    f = line.split(",")
                    if len(f) > 2 and f[0].replace(".", "").isdigit():
                        vals[f[2]] = float(f[0])
                print(f"  perf {who}: task-clock {vals.get('task-clock', 0) / a.n:.3f} ms/req, "
                      f"context switches {vals.get('context-switches', 0) / a.n:.2f}/req, "
                      f"page faults {vals.get('page-faults', 0) / a.n:.1f}/req")
            s1, w1, f1 = sum(proc_times(srv.pid)), proc_times(warm), faults(warm)
            ms = lambda d: d / TICK / a.n * 1000  # noqa: E731
            sv, wm, wk = ms(s1 - s0), ms(w1[0] - w0[0]), ms(w1[1] - w0[1])
            print(f"| {r + 1} | {a.n / wall:,.0f} | {lat[len(lat) // 2] * 1000:.2f} | "
                  f"{lat[int(len(lat) * 0.99)] * 1000:.2f} | {sv:.3f} | {wm:.3f} | {wk:.3f} | {sv + wm + wk:.3f} | "
                  f"{(f1[1] - f0[1]) / a.n:.0f} | {(f1[0] - f0[0]) / a.n:.1f} |", flush=True)
        print(f"load average: {os.getloadavg()[0]:.1f}; server pid {srv.pid}, warm pid {warm}")
        if os.environ.get("DIRECT_HOLD"):
            time.sleep(float(os.environ["DIRECT_HOLD"]))
    finally:
        if srv:
            os.killpg(srv.pid, signal.SIGTERM)
            srv.wait(timeout=20)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
