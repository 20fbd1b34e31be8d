"""DNS through --dns-server (a UDP server in the test) and TLS trust (a test CA made with
openssl, given with --tls-ca-file): for net.* and http.* alike."""
import socket
import time

from conftest import caught, err_of
from netfix import *  # noqa: F401,F403


def dns_opts(dns):
    return ["--dns-server", f"127.0.0.1:{dns.port}"]


# ---------------------------------------------------------------------------
# DNS
# ---------------------------------------------------------------------------


def test_resolve_through_the_dns_server(script, dns_server):
    dns = dns_server({"web.test": ["10.1.2.3", "10.1.2.4", "fd00::5"], "v6.test": ["fd00::6"]})
    r = leash_net(script, '''
print(sort(net.resolve("web.test")))
print(net.resolve("v6.test"))
print(net.resolve("WEB.test.") == net.resolve("web.test"))
''', opts=dns_opts(dns))
    assert r.status == 0, r
    assert r.out.splitlines() == ['["10.1.2.3","10.1.2.4","fd00::5"]', '["fd00::6"]', "true"], r
    assert ("web.test", 1) in dns.queries and ("web.test", 28) in dns.queries


def test_unknown_name_is_a_network_error(script, dns_server):
    dns = dns_server({})
    kind, msg = err_of(leash_net(script, caught('net.resolve("nope.test")'), opts=dns_opts(dns)))
    assert kind == "network" and "nope.test" in msg, msg
    kind, msg = err_of(leash_net(script, caught('net.connect("nope.test", 80)'), opts=dns_opts(dns)))
    assert kind == "network" and "resolve" in msg, msg


def test_the_hosts_file_is_not_used_with_a_dns_server(script, dns_server):
    dns = dns_server({})
    kind, _ = err_of(leash_net(script, caught('net.resolve("ip6-localhost")'), opts=dns_opts(dns)))
    assert kind == "network"


def test_connect_and_http_by_name(script, dns_server, http_server, tcp_server):
    srv = tcp_server(echo_lines)
    dns = dns_server({"svc.test": ["127.0.0.1"]})
    port = http_server.server_address[1]
    r = leash_net(script, f'''
h = net.connect("svc.test", {srv.port})
net.send(h, "x\\n")
print(net.read_line(h, 2000))
print(http.get("http://svc.test:{port}/hello").body)
''', opts=dns_opts(dns))
    assert r.out.splitlines() == ["echo: x", "hello"], r


def test_connect_tries_addresses_in_order_at_most_eight(script, dns_server, tcp_server):
    srv = tcp_server(echo_lines)
    refused = [f"127.0.0.{i}" for i in range(2, 10)]  # nothing listens there: refused at once
    dns = dns_server({"second.test": ["127.0.0.2", "127.0.0.1"], "ninth.test": refused + ["127.0.0.1"],
                      "eighth.test": refused[:7] + ["127.0.0.1"]})
    r = leash_net(script, f'''
print(net.addr(net.connect("second.test", {srv.port})).host)
print(net.addr(net.connect("eighth.test", {srv.port})).host)
try
  net.connect("ninth.test", {srv.port})
catch e
  print(e.kind, e.message)
end
''', opts=dns_opts(dns))
    lines = r.out.splitlines()
    assert lines[:2] == ["127.0.0.1", "127.0.0.1"], r
    assert lines[2].startswith("network net.connect: cannot connect to ninth.test"), r


def test_dns_timeout(script, dns_server):
    dns = dns_server({}, silent=["slow.test"])
    t = time.time()
    kind, msg = err_of(leash_net(script, caught('net.connect("slow.test", 80, {timeout_ms: 300})'), opts=dns_opts(dns)))
    assert kind == "network" and "timed out" in msg, msg
    assert time.time() - t < 5
    r = leash_net(script, caught('net.resolve("slow.test")'), opts=dns_opts(dns) + ["--max-time", "0.4"])
    assert r.status == 4 and r.diag["kind"] == "time", r
    assert time.time() - t < 8


def test_256_lookups_then_limit(script, dns_server):
    dns = dns_server({"a.test": ["10.0.0.1"]})
    r = leash_net(script, '''
for i = 1 to 256
  net.resolve("a.test")
end
print(net.resolve("10.0.0.1"))
print("256 ok")
net.resolve("a.test")
''', opts=dns_opts(dns))
    assert r.out.splitlines() == ['["10.0.0.1"]', "256 ok"], r
    assert r.status == 4 and r.diag["kind"] == "sockets" and "lookups" in r.diag["message"], r


def test_dns_server_needs_the_network_gate():
    r = run(["--dns-server", "127.0.0.1", "-e", "print(1)"])
    assert r.status == 2 and "--allow-network" in r.err


# ---------------------------------------------------------------------------
# TLS
# ---------------------------------------------------------------------------


def ca(certs):
    return ["--tls-ca-file", certs / "ca.pem"]


def test_https_with_the_test_ca(script, https_server, certs):
    r = leash_net(script, f'''
print(http.get("https://localhost:{https_server.port}/hello").body)
print(http.get("https://127.0.0.1:{https_server.port}/hello").status)
''', opts=ca(certs))
    assert r.out.splitlines() == ["hello", "200"], r


def test_https_unknown_ca_refused(script, https_server):
    kind, msg = err_of(leash_net(script, caught(f'http.get("https://localhost:{https_server.port}/hello")')))
    assert kind == "network" and "certificate" in msg.lower(), msg


def test_https_name_mismatch_refused(script, https_wrong, certs):
    kind, msg = err_of(leash_net(script, caught(f'http.get("https://localhost:{https_wrong.port}/hello")'),
                                 opts=ca(certs)))
    assert kind == "network" and "certificate" in msg.lower(), msg


def test_https_by_name_through_the_dns_server(script, https_server, certs, dns_server):
    dns = dns_server({"localhost": ["127.0.0.1"]})
    r = leash_net(script, f'print(http.get("https://localhost:{https_server.port}/hello").body)',
                  opts=ca(certs) + dns_opts(dns))
    assert r.out.strip() == "hello", r


def tls_echo(tcp_server, certs, name="localhost"):
    return tcp_server(echo_lines, tls=_tls_ctx(certs, name))


def test_tls_socket(script, tcp_server, certs):
    srv = tls_echo(tcp_server, certs)
    r = leash_net(script, f'''
h = net.connect("localhost", {srv.port}, {{tls: true}})
net.send(h, "secret\\n")
print(net.read_line(h, 2000))
net.close(h)
h = net.connect("127.0.0.1", {srv.port}, {{tls: true, timeout_ms: 2000}})
net.send(h, "by address\\n")
print(trim(net.recv(h, 100, 2000)))
''', opts=ca(certs))
    assert r.out.splitlines() == ["echo: secret", "echo: by address"], r


def test_tls_socket_unknown_ca_and_mismatch(script, tcp_server, certs):
    srv = tls_echo(tcp_server, certs)
    kind, msg = err_of(leash_net(script, caught(f'net.connect("localhost", {srv.port}, {{tls: true}})')))
    assert kind == "network" and "TLS" in msg and "certificate" in msg.lower(), msg
    wrong = tls_echo(tcp_server, certs, "wrong")
    kind, msg = err_of(leash_net(script, caught(f'net.connect("localhost", {wrong.port}, {{tls: true}})'),
                                 opts=ca(certs)))
    assert kind == "network" and "certificate" in msg.lower(), msg


def test_tls_to_a_plain_server_fails(script, tcp_server, certs):
    srv = tcp_server(echo_lines)
    t = time.time()
    kind, msg = err_of(leash_net(script, caught(f'net.connect("localhost", {srv.port}, {{tls: true, timeout_ms: 1000}})'),
                                 opts=ca(certs)))
    assert kind == "network", msg
    assert time.time() - t < 5


def test_a_tls_failure_invalidates_the_handle(script, tcp_server, certs):
    def garbage(conn):
        conn.recv(100)
        raw = socket.socket(fileno=socket.dup(conn.fileno()))
        raw.sendall(b"\x17\x03\x03\x00\x20" + b"\x00" * 32)  # an application record that cannot decrypt
        time.sleep(5)

    srv = tcp_server(garbage, tls=_tls_ctx(certs, "localhost"))
    r = leash_net(script, f'''
h = net.connect("localhost", {srv.port}, {{tls: true}})
net.send(h, "go\\n")
try
  net.recv(h, 10, 2000)
catch e
  print(e.kind, e.message)
end
try
  net.recv(h, 10, 2000)
catch e
  print(e.kind, e.message)
end
print(net.addr(h).host)
net.close(h)
''', opts=ca(certs))
    lines = r.out.splitlines()
    assert lines[0].startswith("network net.recv: TLS"), r
    assert lines[1].startswith("network net.recv: the socket is unusable"), r
    assert lines[2] == "127.0.0.1", r


def test_tls_ca_file_is_read_only_when_needed(script, https_server, certs):
    bad = ["--tls-ca-file", certs / "empty.pem"]
    r = leash_net(script, 'print("hello")', opts=bad)
    assert r.status == 0 and r.out == "hello\n", r
    kind, msg = err_of(leash_net(script, caught(f'http.get("https://localhost:{https_server.port}/hello")'), opts=bad))
    assert kind == "network" and "--tls-ca-file" in msg, msg
    kind, msg = err_of(leash_net(script, caught(f'net.connect("localhost", {https_server.port}, {{tls: true}})'),
                                 opts=bad))
    assert kind == "network" and "--tls-ca-file" in msg, msg


def test_tls_ca_file_needs_the_network_gate(certs):
    r = run(["--tls-ca-file", certs / "ca.pem", "-e", "print(1)"])
    assert r.status == 2 and "--allow-network" in r.err
