"""http.request / http.get / http.post against a local HTTP server: responses, options,
errors, redirects not followed, proxies ignored, limits and run budgets."""
import json
import os
import time

from conftest import caught, err_of
from netfix import *  # noqa: F401,F403


def test_get_returns_status_headers_body(script, http_server):
    r = leash_net(script, f'''
r = http.get("{http_server.url}/hello")
print(r.status)
print(r.body)
print(r.headers["x-test"], r.headers["content-length"])
print(keys(r))
''')
    assert r.status == 0, r
    assert r.out.splitlines() == ["200", "hello", "yes 5", '["status","headers","body"]']


def test_header_names_lowercased_and_repeats_joined(script, http_server):
    r = leash_net(script, f'''
h = http.get("{http_server.url}/repeat").headers
print(h["set-cookie"])
print("x-mixed-case" in h, "X-Mixed-Case" in h)
''')
    assert r.out.splitlines() == ["a=1, b=2", "true false"], r


def test_any_status_is_a_response(script, http_server):
    r = leash_net(script, f'''
for s in [200, 204, 404, 500, 503]
  r = http.get("{http_server.url}/status/${{s}}")
  print(r.status, len(r.body))
end
''')
    assert r.out.split("\n")[:5] == ["200 11", "204 0", "404 11", "500 11", "503 11"], r


def test_redirect_is_returned_not_followed(script, http_server):
    before = http_server.hits
    r = leash_net(script, f'''
r = http.get("{http_server.url}/redirect")
print(r.status, r.headers.location, r.body)
''')
    assert r.out.strip() == "302 /hello moved", r
    assert http_server.hits == before + 1


def test_post_and_request_send_method_headers_body(script, http_server):
    r = leash_net(script, f'''
a = json.parse(http.post("{http_server.url}/echo", "a=1&b=2", {{headers: {{"Content-Type": "application/x-www-form-urlencoded", "X-One": "1"}}}}).body)
print(a.method, a.body, a.headers["x-one"], a.headers["content-type"])
b = json.parse(http.request("put", "{http_server.url}/echo?q=1", {{body: "data", headers: {{"X-Two": "2"}}}}).body)
print(b.method, b.path, b.body, b.headers["x-two"])
c = json.parse(http.request("DELETE", "{http_server.url}/echo").body)
print(c.method, c.body == "")
d = http.request("HEAD", "{http_server.url}/hello")
print(d.status, d.body == "", d.headers["content-length"])
e = json.parse(http.get("{http_server.url}/echo", {{headers: {{"User-Agent": "mine", "Host": "vhost.test"}}}}).body)
print(e.headers["user-agent"], e.headers["host"])
''')
    assert r.status == 0, r
    assert r.out.splitlines() == [
        "POST a=1&b=2 1 application/x-www-form-urlencoded",
        "PUT /echo?q=1 data 2",
        "DELETE true",
        "200 true 5",
        "mine vhost.test",
    ]


def test_default_user_agent(script, http_server):
    r = leash_net(script, f'print(json.parse(http.get("{http_server.url}/echo").body).headers["user-agent"])')
    assert r.out.startswith("leash/"), r


def test_proxy_environment_is_ignored(script, http_server):
    env = dict(os.environ)
    for k in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        env[k] = "http://127.0.0.1:1"
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    r = leash_net(script, f'print(http.get("{http_server.url}/hello").body)', env=env)
    assert r.status == 0 and r.out.strip() == "hello", r


def test_value_errors(script, http_server):
    u = http_server.url
    cases = {
        'http.get("ftp://example.com/")': "only http and https",
        'http.get("file:///etc/passwd")': "only http and https",
        'http.get("example.com")': "must start with http",
        f'http.get("http://x/" .. repeat("a", 8200))': "8192",
        f'http.get("{u}/hello", {{timeout_ms: 0}})': "timeout_ms",
        f'http.get("{u}/hello", {{timeout_ms: 30001}})': "timeout_ms",
        f'http.get("{u}/hello", {{timeout_ms: 1.5}})': "timeout_ms",
        f'http.get("{u}/hello", {{max_body: 0}})': "max_body",
        f'http.get("{u}/hello", {{max_body: 1048577}})': "max_body",
        f'http.get("{u}/hello", {{bogus: 1}})': "unknown option",
        f'http.get("{u}/hello", {{body: "x"}})': "unknown option",
        f'http.get("{u}/hello", {{headers: {{"bad name": "v"}}}})': "invalid header name",
        f'http.get("{u}/hello", {{headers: {{"X": "a\\nb"}}}})': "invalid value",
        # Every control character but tab (VT, FF, DEL, ...) is refused in a header value.
        f'http.get("{u}/hello", {{headers: {{"X": "a\\x0bb"}}}})': "invalid value",
        f'http.get("{u}/hello", {{headers: {{"X": "a\\x0cb"}}}})': "invalid value",
        f'http.get("{u}/hello", {{headers: {{"X": "a\\x7fb"}}}})': "invalid value",
        f'http.get("{u}/hello", {{headers: {{"X": "a\\x01b"}}}})': "invalid value",
        f'http.get("{u}/hello", {{headers: {{"X": "a\\x00b"}}}})': "invalid value",
        f'http.request("GE T", "{u}/hello")': "invalid method",
        f'http.get("{u}/hello", {{headers: {{"Content-Length": "5"}}}})': "set from the body",
        f'http.post("{u}/echo", "x", {{headers: {{"transfer-encoding": "chunked"}}}})': "set from the body",
    }
    for code, needle in cases.items():
        kind, msg = err_of(leash_net(script, caught(code)))
        assert kind == "value" and needle in msg, (code, kind, msg)


def test_type_errors(script, http_server):
    u = http_server.url
    for code in [
        "http.get(1)",
        f'http.get("{u}/hello", "opts")',
        f'http.get("{u}/hello", {{timeout_ms: "5"}})',
        f'http.get("{u}/hello", {{headers: ["x"]}})',
        f'http.get("{u}/hello", {{headers: {{"X": 1}}}})',
        f'http.post("{u}/echo", 5)',
        f'http.request(1, "{u}/hello")',
    ]:
        kind, msg = err_of(leash_net(script, caught(code)))
        assert kind == "type", (code, kind, msg)


def test_connection_refused_is_a_network_error(script):
    kind, msg = err_of(leash_net(script, caught(f'http.get("http://127.0.0.1:{free_port()}/")')))
    assert kind == "network" and "refused" in msg.lower(), msg


def test_unknown_host_is_a_network_error(script, dns_server):
    dns = dns_server({})
    kind, msg = err_of(leash_net(script, caught('http.get("http://nowhere.test/")'),
                                 opts=["--dns-server", f"127.0.0.1:{dns.port}"]))
    assert kind == "network" and "resolve" in msg, msg


def test_timeout_of_a_silent_server(script, tcp_server):
    srv = tcp_server(silent)
    t = time.time()
    kind, msg = err_of(leash_net(script, caught(f'http.get("http://127.0.0.1:{srv.port}/", {{timeout_ms: 300}})')))
    assert kind == "network" and "timed out" in msg, msg
    assert time.time() - t < 5


def test_body_limits(script, http_server):
    u = http_server.url
    r = leash_net(script, f'print(len(http.get("{u}/big?n=1048576").body))')
    assert r.out.strip() == "1048576", r
    r = leash_net(script, f'print(len(http.get("{u}/big?n=10", {{max_body: 10}}).body))')
    assert r.out.strip() == "10", r
    kind, msg = err_of(leash_net(script, caught(f'http.get("{u}/big?n=11", {{max_body: 10}})')))
    assert kind == "network" and "max_body" in msg, msg
    kind, msg = err_of(leash_net(script, caught(f'http.get("{u}/big?n=1048577")')))
    assert kind == "network" and "max_body" in msg, msg


def test_header_limit(script, http_server):
    u = http_server.url
    r = leash_net(script, f'print(len(http.get("{u}/bigheader?n=60000").headers["x-big"]))')
    assert r.out.strip() == "60000", r
    kind, msg = err_of(leash_net(script, caught(f'http.get("{u}/bigheader?n=70000")')))
    assert kind == "network" and "headers" in msg, msg


def test_64_requests_then_limit(script, http_server):
    code = f'''
for i = 1 to 64
  r = http.get("{http_server.url}/hello", {{timeout_ms: 900}})
end
print("64 ok")
http.get("{http_server.url}/hello", {{timeout_ms: 1}})
'''
    r = leash_net(script, code, timeout=60)
    assert r.out.strip() == "64 ok", r
    assert r.status == 4 and r.diag["kind"] == "http" and "64" in r.diag["message"], r


def test_timeout_reservation_budget(script, http_server):
    """Each request reserves its timeout_ms before it starts: one that asks more than the
    budget has left is refused before anything is sent. What a request used (at least a
    millisecond) stays spent: the third cannot have the whole 20,000 ms again."""
    u = http_server.url
    r = leash_net(script, f'''
http.get("{u}/hello", {{timeout_ms: 20000}})
print("20000 ms asked")
http.get("{u}/hello", {{timeout_ms: 19000}})
print("twice")
http.get("{u}/hello", {{timeout_ms: 20000}})
''', opts=["--limit", "http_timeouts=20000"])
    assert r.out == "20000 ms asked\ntwice\n", r
    assert r.status == 4 and r.diag["kind"] == "http" and r.diag["limit"] == "http_timeouts", r


def test_fast_requests_return_what_they_did_not_use(script, http_server):
    """SPEC 10 (round 3, issue 25): the part of a reservation a request did not use is
    returned when it ends, so 100 fast local requests fit the default 60,000 ms budget
    (without the refund twelve default requests filled it)."""
    u = http_server.url
    r = leash_net(script, f'''
n = 0
for i = 1 to 100
  if http.get("{u}/hello").status == 200
    n += 1
  end
end
print(n)
''', opts=["--limit", "http_requests=100"], timeout=120)
    assert r.status == 0 and r.out == "100\n", r


def test_a_slow_server_still_exhausts_the_budget(script, tcp_server):
    """A request that waits its whole timeout uses it: three 300 ms timeouts of a silent
    server use 900 ms of a 1,000 ms budget, and a fourth cannot reserve its 300."""
    srv = tcp_server(silent)
    url = f"http://127.0.0.1:{srv.port}/"
    code = f'''
for i = 1 to 4
  try
    http.get("{url}", {{timeout_ms: 300}})
  catch e
    print(e.kind)
  end
end
'''
    r = leash_net(script, code, opts=["--limit", "http_timeouts=1000"], timeout=60)
    assert r.out == "network\nnetwork\nnetwork\n", r
    assert r.status == 4 and r.diag["kind"] == "http" and r.diag["limit"] == "http_timeouts", r


def test_body_budget_16_mib(script, http_server):
    u = http_server.url
    r = leash_net(script, f'''
big = repeat("b", 1048576)
for i = 1 to 8
  http.post("{u}/status/204", big, {{timeout_ms: 1000}})
end
big = ""
for i = 1 to 8
  r = http.get("{u}/big?n=1048576", {{timeout_ms: 1000}})
end
print("16 MiB ok")
r = http.get("{u}/big?n=1", {{timeout_ms: 1000}})
''', opts=["--stats"], timeout=60)
    assert r.out.strip() == "16 MiB ok", r
    assert r.status == 4 and r.diag["kind"] == "http" and "bodies" in r.diag["message"], r
    assert r.stats["http_body_bytes"] == 16 * 1048576


def test_request_body_charged_before_sending(script, http_server):
    before = http_server.hits
    r = leash_net(script, f'''
big = repeat("b", 1048576)
for i = 1 to 16
  http.post("{http_server.url}/status/204", big, {{timeout_ms: 1000}})
end
print("sent 16")
http.post("{http_server.url}/status/204", "x", {{timeout_ms: 1000}})
''', timeout=60)
    assert r.out.strip() == "sent 16" and r.status == 4 and r.diag["kind"] == "http", r
    assert http_server.hits == before + 16


def test_max_time_ends_a_blocked_request(script, tcp_server):
    srv = tcp_server(silent)
    t = time.time()
    r = leash_net(script, f'''
try
  http.get("http://127.0.0.1:{srv.port}/", {{timeout_ms: 30000}})
catch e
  print("caught")
end
''', opts=["--max-time", "0.5"])
    assert r.status == 4 and r.diag["kind"] == "time", r
    assert r.out == ""
    assert time.time() - t < 5


def test_permission_without_the_flag_touches_nothing(script, http_server):
    before = http_server.hits
    for code in [f'http.get("{http_server.url}/hello")', f'http.post("{http_server.url}/echo", "x")',
                 f'http.request("GET", "{http_server.url}/hello")']:
        r = script(caught(code))
        kind, msg = err_of(r)
        assert kind == "permission" and "--allow-network" in msg, msg
    assert http_server.hits == before


def test_stats_count_requests(script, http_server):
    r = leash_net(script, f'http.get("{http_server.url}/hello")', opts=["--stats"])
    assert r.stats["http_requests"] == 1 and r.stats["http_body_bytes"] == 5, r
