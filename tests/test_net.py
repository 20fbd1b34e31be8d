"""net.*: connect, listen, accept, send, recv, read_line, close, addr; their errors,
end-of-stream and deadline semantics, and the socket run budgets."""
import socket
import threading
import time

from conftest import caught, err_of
from netfix import *  # noqa: F401,F403

# A connected pair inside one script: listener, client side, server side.
PAIR = '''
l = net.listen("", 0)
port = net.addr(l).port
c = net.connect("127.0.0.1", port)
s = net.accept(l, 2000)
'''


def listen(script, code, **kw):
    return script(code, opts=LISTEN + list(kw.pop("opts", [])), timeout=kw.pop("timeout", 30), **kw)


def test_pair_send_read_line_recv(script):
    r = listen(script, PAIR + '''
net.send(c, "one\\r\\ntwo\\nthree")
print(net.read_line(s))
print(net.read_line(s))
print(net.recv(s, 3))
net.send(s, "back")
print(net.recv(c, 100))
net.close(c)
print(net.recv(s, 10))
print(net.read_line(s))
net.close(s)
net.close(l)
''')
    assert r.status == 0, r
    assert r.out.splitlines() == ["one", "two", "thr", "back", "ee", "nil"], r


def test_last_line_without_ending_then_nil(script):
    r = listen(script, PAIR + '''
net.send(c, "a\\nlast")
net.close(c)
print(net.read_line(s))
print(net.read_line(s))
print(net.read_line(s))
print(net.recv(s, 5))
''')
    assert r.out.splitlines() == ["a", "last", "nil", "nil"], r


def test_addr(script):
    r = listen(script, PAIR + '''
a = net.addr(l)
print(a.host, a.port == port)
b = net.addr(c)
print(b.host, b.port == port, b.local_host)
d = net.addr(s)
print(d.port == b.local_port, d.local_port == port)
''')
    assert r.out.splitlines() == ["127.0.0.1 true", "127.0.0.1 true 127.0.0.1", "true true"], r


def test_connect_to_a_python_line_server(script, tcp_server):
    srv = tcp_server(echo_lines)
    r = leash_net(script, f'''
h = net.connect("localhost", {srv.port})
net.send(h, "hi\\n")
print(net.read_line(h, 2000))
net.close(h)
''')
    assert r.out.strip() == "echo: hi", r


def test_resolve(script):
    r = leash_net(script, '''
print(net.resolve("127.0.0.1"))
print(net.resolve("::1"))
print("127.0.0.1" in net.resolve("localhost"))
''')
    assert r.out.splitlines() == ['["127.0.0.1"]', '["::1"]', "true"], r


def test_accept_timeout_returns_nil(script):
    t = time.time()
    r = listen(script, '''
l = net.listen("127.0.0.1", 0)
print(net.accept(l, 0))
print(net.accept(l, 200))
''')
    assert r.out.splitlines() == ["nil", "nil"], r
    assert time.time() - t < 5


def test_recv_and_read_line_timeouts_are_network_errors(script):
    r = listen(script, PAIR + '''
try
  net.recv(s, 10, 100)
catch e
  print(e.kind, e.message)
end
try
  net.read_line(s, 0)
catch e
  print(e.kind, e.message)
end
net.send(c, "still usable\\n")
print(net.read_line(s, 1000))
''')
    lines = r.out.splitlines()
    assert lines[0].startswith("network net.recv:") and "timed out" in lines[0], r
    assert lines[1].startswith("network net.read_line:"), r
    assert lines[2] == "still usable", r


def test_connect_errors(script):
    port = free_port()
    kind, msg = err_of(leash_net(script, caught(f'net.connect("127.0.0.1", {port})')))
    assert kind == "network" and "refused" in msg.lower() and f"127.0.0.1:{port}" in msg, msg
    for code, want in [
        ('net.connect("", 80)', "value"),
        ('net.connect("a b", 80)', "value"),
        ('net.connect(repeat("a", 256), 80)', "value"),
        ('net.connect("127.0.0.1", 0)', "value"),
        ('net.connect("127.0.0.1", 65536)', "value"),
        ('net.connect("127.0.0.1", 80, {timeout_ms: 0})', "value"),
        ('net.connect("127.0.0.1", 80, {timeout_ms: 30001})', "value"),
        ('net.connect("127.0.0.1", 80, {bogus: 1})', "value"),
        ('net.connect("127.0.0.1", 80, {tls: 1})', "type"),
        ('net.connect(1, 80)', "type"),
        ('net.connect("127.0.0.1", "80")', "type"),
    ]:
        kind, msg = err_of(leash_net(script, caught(code)))
        assert kind == want, (code, kind, msg)


def test_handle_errors(script):
    r = listen(script, PAIR + caught('net.send(l, "x")') + caught('net.recv(c, 0)')
               + caught('net.recv(c, 1048577)') + caught('net.recv(c, 1, -1)') + caught('net.accept(c)')
               + caught('net.send(c, 5)') + caught('net.recv("x", 1)') + '''
net.close(c)
''' + caught('net.close(c)') + caught('net.send(c, "x")') + caught('net.addr(c)') + '''
net.close(l)
''' + caught('net.accept(l, 0)') + caught('net.close(l)'))
    got = [line.split("|")[0] for line in r.out.splitlines()]
    assert got == ["type", "value", "value", "value", "type", "type", "type",
                   "value", "value", "value", "value", "value"], r
    assert "closed" in r.out.splitlines()[-1]


def test_listen_errors(script):
    for code in ['net.listen("example.com", 0)', 'net.listen("127.0.0.1", 65536)', 'net.listen("127.0.0.1", -1)']:
        kind, _ = err_of(listen(script, caught(code)))
        assert kind == "value", code
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        kind, msg = err_of(listen(script, caught(f'net.listen("127.0.0.1", {s.getsockname()[1]})')))
        assert kind == "network" and "in use" in msg, msg
    finally:
        s.close()


def test_line_limit(script):
    r = listen(script, PAIR + '''
net.send(c, repeat("a", 65536) .. "\\r\\n")
print(len(net.read_line(s)))
net.send(c, repeat("a", 65537) .. "\\n")
net.read_line(s)
''')
    assert r.out.strip() == "65536", r
    assert r.status == 4 and r.diag["kind"] == "sockets" and "65536" in r.diag["message"], r


def test_sixteen_open_then_limit(script):
    r = listen(script, '''
l = net.listen("", 0)
p = net.addr(l).port
hs = []
for i = 1 to 15
  push(hs, net.connect("127.0.0.1", p))
end
print("16 open")
net.close(hs[0])
push(hs, net.connect("127.0.0.1", p))
print("closing frees a slot")
net.connect("127.0.0.1", p)
''')
    assert r.out.splitlines() == ["16 open", "closing frees a slot"], r
    assert r.status == 4 and r.diag["kind"] == "sockets" and "16" in r.diag["message"], r


def test_accept_counts_toward_open_sockets(script):
    r = listen(script, '''
l = net.listen("", 0)
p = net.addr(l).port
hs = []
for i = 1 to 14
  push(hs, net.connect("127.0.0.1", p))
end
push(hs, net.accept(l, 1000))
print("16 open")
net.accept(l, 1000)
''')
    assert r.out.strip() == "16 open" and r.status == 4 and r.diag["kind"] == "sockets", r


def test_64_connects_then_limit(script):
    r = listen(script, '''
l = net.listen("", 0)
p = net.addr(l).port
for i = 1 to 64
  c = net.connect("127.0.0.1", p)
  s = net.accept(l, 1000)
  net.close(c)
  net.close(s)
end
print("64 connects, 64 accepts")
try
  net.accept(l, 0)
catch e
  print("caught")
end
''', timeout=60)
    assert r.out.strip() == "64 connects, 64 accepts", r
    assert r.status == 4 and r.diag["kind"] == "sockets" and "accept" in r.diag["message"], r
    r = leash_net(script, f'''
for i = 1 to 64
  try
    net.connect("127.0.0.1", {free_port()})
  catch e
  end
end
print("64 failed connects")
net.connect("127.0.0.1", 1)
''')
    assert r.out.strip() == "64 failed connects", r
    assert r.status == 4 and r.diag["kind"] == "sockets" and "connect" in r.diag["message"], r


def test_16_mib_sent_then_limit(script):
    r = listen(script, PAIR + '''
chunk = repeat("z", 1048576)
got = 0
for i = 1 to 16
  net.send(c, chunk)
  want = got + 1048576
  while got < want
    got += len(net.recv(s, 1048576, 5000))
  end
end
print("sent and received", got)
net.send(c, "x")
''', opts=["--stats"], timeout=60)
    assert r.out.strip() == "sent and received 16777216", r
    assert r.status == 4 and r.diag["kind"] == "sockets" and "sent" in r.diag["message"], r
    assert r.stats["net_sent_bytes"] == 16777216 and r.stats["net_recv_bytes"] == 16777216


def test_16_mib_received_then_limit(script, tcp_server):
    def pour(conn):
        conn.sendall(b"y" * (16 * 1048576 + 1))
        time.sleep(10)

    srv = tcp_server(pour)
    r = leash_net(script, f'''
h = net.connect("127.0.0.1", {srv.port})
got = 0
while got < 16777216
  got += len(net.recv(h, min(1048576, 16777216 - got), 5000))
end
print("received", got)
net.recv(h, 1, 5000)
''', timeout=60)
    assert r.out.strip() == "received 16777216", r
    assert r.status == 4 and r.diag["kind"] == "sockets" and "received" in r.diag["message"], r


def test_max_time_ends_blocked_calls(script, tcp_server):
    srv = tcp_server(silent)
    for code in [f'h = net.connect("127.0.0.1", {srv.port})\nnet.recv(h, 10)',
                 f'h = net.connect("127.0.0.1", {srv.port})\nnet.read_line(h)',
                 f'h = net.connect("127.0.0.1", {srv.port})\nnet.read_line(h, 600000)',
                 'l = net.listen("", 0)\nnet.accept(l)']:
        t = time.time()
        r = listen(script, f'try\n{code}\ncatch e\n  print("caught")\nend\n', opts=["--max-time", "0.4"])
        assert r.status == 4 and r.diag["kind"] == "time", (code, r)
        assert r.out == ""
        assert time.time() - t < 5, code


def test_send_after_peer_closed_is_a_network_error(script):
    r = listen(script, PAIR + '''
net.close(s)
try
  for i = 1 to 100
    net.send(c, repeat("x", 65536))
  end
catch e
  print(e.kind)
end
try
  net.send(c, "y")
catch e
  print(e.kind, e.message)
end
''')
    lines = r.out.splitlines()
    assert lines[0] == "network", r
    assert "unusable" in lines[1], r


def test_permissions(script):
    for code in ['net.connect("127.0.0.1", 1)', 'net.resolve("localhost")', 'net.send(1, "x")',
                 'net.recv(1, 1)', 'net.read_line(1)', 'net.close(1)', 'net.addr(1)']:
        kind, msg = err_of(script(caught(code)))
        assert kind == "permission" and "--allow-network" in msg, (code, msg)
    port = free_port()
    for code in [f'net.listen("", {port})', 'net.accept(1)']:
        for opts in [[], NET]:
            kind, msg = err_of(script(caught(code), opts=opts))
            assert kind == "permission" and "--allow-listen" in msg, (code, opts, msg)
    # nothing was bound
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.close()


def test_check_lists_capabilities(tmp_path):
    (tmp_path / "a.lsh").write_text('fn f()\n  http.get("http://x/")\nend\n')
    (tmp_path / "b.lsh").write_text('net.connect("x", 1)\n')
    (tmp_path / "c.lsh").write_text('fn never()\n  l = net.listen("", 0)\nend\nprint(1)\n')
    assert run(["check", tmp_path / "a.lsh"]).out.strip() == "capabilities: network"
    assert run(["check", tmp_path / "b.lsh"]).out.strip() == "capabilities: network"
    assert run(["check", tmp_path / "c.lsh"]).out.strip() == "capabilities: network listen"


def test_handles_released_at_exit(script):
    r = listen(script, '''
l = net.listen("", 0)
print(net.addr(l).port)
''')
    port = int(r.out)
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.close()


def test_str_of_handles(script):
    r = listen(script, PAIR + '''
print(type(c), type(l))
print(str(l))
''')
    assert r.out.splitlines()[0] == "handle handle", r
    assert r.out.splitlines()[1].startswith("<listener "), r
