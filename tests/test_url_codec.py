"""url.*, html.escape, base64.*, hash.sha256."""
import base64
import hashlib
import json
import urllib.parse

import pytest


def lit(s):
    """A Leash string literal for `s` (`$` escaped: `${` interpolates in Leash)."""
    return json.dumps(s, ensure_ascii=False).replace("$", "\\$")


def run_json(script, expr, **kw):
    r = script(f"print(json.stringify({expr}))", **kw)
    assert r.status == 0, r
    return json.loads(r.out)


# ---------------------------------------------------------------------------
# url.encode / url.decode
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("s", ["", "abc", "a b&c=d/e?f#g", "-._~", "é€😀", "100%", "+", "!*'();:@&=+$,/?#[]"])
def test_encode_agrees_with_python(script, s):
    got = run_json(script, f"url.encode({lit(s)})")
    assert got == urllib.parse.quote(s, safe="-._~")
    assert run_json(script, f"url.decode(url.encode({lit(s)}))") == s


def test_encode_bytes_and_upper_hex(script):
    r = script(r'print(url.encode("\x00\xff\n"), url.encode("AZaz09"))')
    assert (r.status, r.out) == (0, "%00%FF%0A AZaz09\n"), r


def test_decode(script):
    r = script(r'print(url.decode("a+b%20c%2f%2F%C3%A9"), len(url.decode("%ff")))')
    assert (r.status, r.out) == (0, "a+b c//é 1\n"), r


@pytest.mark.parametrize("s", ["%", "%4", "%zz", "a%g1", "%%", "%%41", "100%"])
def test_decode_bad_escape(script, s):
    # SPEC 10 (issue 13): a malformed `%` stays as it is, as the WHATWG URL Standard's
    # percent-decode keeps it; the rest is decoded (`%%41` is `%A`).
    want = s.replace("%41", "A")
    assert run_json(script, f"url.decode({lit(s)})") == want


def test_decode_returns_bytes_unchanged(script):
    # Not UTF-8: the decoded bytes themselves, no U+FFFD.
    r = script(r'x = url.decode("%ff%fe")' + "\nprint(len(x))")
    assert (r.status, r.out) == (0, "2\n"), r


# ---------------------------------------------------------------------------
# Query strings
# ---------------------------------------------------------------------------


def test_parse_query(script):
    got = run_json(script, 'url.parse_query("a=1&b=x+y%21&c&a=2&&d=&e=f=g&%C3%A9=%E2%82%AC")')
    assert got == {"a": "2", "b": "x y!", "c": "", "d": "", "e": "f=g", "é": "€"}
    assert list(got) == ["a", "b", "c", "d", "e", "é"]
    assert run_json(script, 'url.parse_query("?q=1")') == {"q": "1"}
    assert run_json(script, 'url.parse_query("")') == {}


@pytest.mark.parametrize(
    "q",
    [
        "a=1&b=%zz",
        "a=%&b=%4&c=%%41",
        "x=%FF&y=a%C3%A9b&z=%C3",
        "%FE%FF=v&k=%E2%82",
        "a=%ED%A0%80&b=%F0%9F%98%80",
        "+%2B+=+%20+",
        "k=100%&j=%G1",
    ],
)
def test_parse_query_malformed_and_non_utf8_as_the_standard_parses(script, q):
    # The WHATWG application/x-www-form-urlencoded parser, which Python's parse_qsl
    # follows: a malformed `%` stays, invalid UTF-8 becomes U+FFFD.
    from urllib.parse import parse_qsl

    want = dict(parse_qsl(q, keep_blank_values=True, errors="replace"))
    assert run_json(script, f"url.parse_query({lit(q)})") == want


def test_build_query(script):
    r = script('print(url.build_query({q: "a b&c", n: 1.5, t: true, "k y": "é", list: [1, "x"]}))')
    assert (r.status, r.out) == (0, "q=a+b%26c&n=1.5&t=true&k+y=%C3%A9&list=1&list=x\n"), r
    r = script('print(url.build_query({}))')
    assert r.out == "\n"


def test_build_query_round_trips(script):
    m = {"a": "1 2", "b": "&=?#+%", "é": "ü", "": "empty key"}
    got = run_json(script, f"url.parse_query(url.build_query(json.parse({lit(json.dumps(m))})))")
    assert got == m
    assert urllib.parse.parse_qs(
        script(f"write(url.build_query(json.parse({lit(json.dumps(m))})))").out, keep_blank_values=True
    ) == {k: [v] for k, v in m.items()}


@pytest.mark.parametrize("m", ["{a: nil}", "{a: {b: 1}}", "{a: [[1]]}", "[1]"])
def test_build_query_refuses(script, m):
    r = script(f"url.build_query({m})")
    assert (r.status, r.diag["kind"]) == (1, "type"), r


# ---------------------------------------------------------------------------
# url.parse
# ---------------------------------------------------------------------------

PARTS = ["scheme", "user", "host", "port", "path", "query", "fragment"]


@pytest.mark.parametrize(
    "u,expected",
    [
        (
            "https://user:pw@Example.com:8443/a/b%20c?x=1&y=2#frag",
            ["https", "user:pw", "Example.com", 8443, "/a/b%20c", "x=1&y=2", "frag"],
        ),
        ("HTTP://example.com", ["http", None, "example.com", None, "", None, None]),
        ("http://example.com/", ["http", None, "example.com", None, "/", None, None]),
        ("http://example.com:/?#", ["http", None, "example.com", None, "/", "", ""]),
        ("http://[::1]:8080/x", ["http", None, "::1", 8080, "/x", None, None]),
        ("http://[2001:db8::7]/", ["http", None, "2001:db8::7", None, "/", None, None]),
        ("file:///etc/hosts", ["file", None, "", None, "/etc/hosts", None, None]),
        ("mailto:ada@example.com", ["mailto", None, None, None, "ada@example.com", None, None]),
        ("urn:isbn:0451450523", ["urn", None, None, None, "isbn:0451450523", None, None]),
        ("/search?q=a+b#top", [None, None, None, None, "/search", "q=a+b", "top"]),
        ("//cdn.example.com/x.js", [None, None, "cdn.example.com", None, "/x.js", None, None]),
        ("?only=query", [None, None, None, None, "", "only=query", None]),
        ("", [None, None, None, None, "", None, None]),
        ("http://h:0/", ["http", None, "h", 0, "/", None, None]),
        ("http://h:65535/", ["http", None, "h", 65535, "/", None, None]),
        ("http://a@b@h/", ["http", "a@b", "h", None, "/", None, None]),
        ("http://h/p?q=1?2#f#g", ["http", None, "h", None, "/p", "q=1?2", "f#g"]),
    ],
)
def test_parse(script, u, expected):
    got = run_json(script, f"url.parse({lit(u)})")
    assert list(got) == PARTS
    assert [got[k] for k in PARTS] == expected


def test_parse_agrees_with_python_on_common_urls(script):
    for u in ["https://u@example.org:81/p/q?a=b#c", "http://example.org/x;y?z", "ftp://h/f.txt"]:
        got = run_json(script, f"url.parse({lit(u)})")
        p = urllib.parse.urlsplit(u)
        assert (got["scheme"], got["user"], got["host"], got["port"], got["path"], got["query"], got["fragment"]) == (
            p.scheme, p.username, p.hostname.lower() if p.hostname else None, p.port, p.path,
            p.query or None, p.fragment or None,
        )


@pytest.mark.parametrize(
    "u",
    [
        "http://h:65536/",
        "http://h:8x/",
        "http://h:-1/",
        "http://h:1:2/",
        "http://[::1/",
        "http://[::1]x/",
        "http://[zz]/",
        "1http://h/",
        ":nothing",
        "http://exa mple.com/",
        "http://h/a b",
        "http://h/\t",
        "http://h/%zz",
        "http://h/%4",
        "http://h<x>/",
    ],
)
def test_parse_refuses(script, u):
    r = script(f"url.parse({lit(u)})")
    assert (r.status, r.diag["kind"]) == (1, "parse"), r


# ---------------------------------------------------------------------------
# html, base64, hash
# ---------------------------------------------------------------------------


def test_html_escape(script):
    r = script("""print(html.escape("<a href='x' title=\\"y\\">Tom & Jerry</a> é"))""")
    assert (r.status, r.out) == (0, "&lt;a href=&#39;x&#39; title=&quot;y&quot;&gt;Tom &amp; Jerry&lt;/a&gt; é\n"), r
    r = script('print(html.escape("plain"), html.escape(""), html.escape("&amp;"))')
    assert r.out == "plain  &amp;amp;\n"


RFC4648 = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
           ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]


@pytest.mark.parametrize("plain,coded", RFC4648)
def test_base64_rfc4648_vectors(script, plain, coded):
    r = script(f'print(base64.encode("{plain}"), "|", base64.decode("{coded}"))')
    assert (r.status, r.out) == (0, f"{coded} | {plain}\n"), r


def test_base64_bytes(script):
    r = script(r'print(base64.encode("\x00\xff\xfe"), base64.decode("AP/+") == "\x00\xff\xfe", base64.encode("é"))')
    assert (r.status, r.out) == (0, "AP/+ true " + base64.b64encode("é".encode()).decode() + "\n"), r


@pytest.mark.parametrize(
    "s",
    ["Zg", "Zg=", "Zm8", "Z===", "Zg==Zg==", "Zm9v!", "Zm9v\n", " Zm9v", "Zm-_", "Zh==", "=Zg=", "Z"],
)
def test_base64_decode_refuses(script, s):
    r = script(f"base64.decode({lit(s)})")
    assert (r.status, r.diag["kind"]) == (1, "parse"), r


SHA256 = [
    ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    (
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    ),
]


@pytest.mark.parametrize("s,digest", SHA256)
def test_sha256_known_answers(script, s, digest):
    r = script(f'print(hash.sha256("{s}"))')
    assert (r.status, r.out) == (0, digest + "\n"), r


def test_sha256_million_a_and_bytes(script):
    r = script('print(hash.sha256(repeat("a", 1000000)))\nprint(hash.sha256("\\xff\\x00"))')
    assert r.out.splitlines() == [
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
        hashlib.sha256(b"\xff\x00").hexdigest(),
    ]


# ---------------------------------------------------------------------------
# Bounds at N and N+1 (outputs within the string limit, maps within the map limit)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr,n,out_len",
    [
        ('base64.encode(repeat("a", N))', 786432, 1048576),
        ('html.escape(repeat("&", N))', 209715, 1048575),
        ('url.encode(repeat(" ", N))', 349525, 1048575),
        ('url.build_query({k: repeat("&", N)})', 349524, 1048574),
    ],
)
def test_output_bounds(script, expr, n, out_len):
    r = script(f"print(len({expr.replace('N', str(n))}))")
    assert (r.status, r.out) == (0, f"{out_len}\n"), r
    r = script(f"{expr.replace('N', str(n + 1))}")
    assert (r.status, r.diag["kind"]) == (4, "string"), r


def test_parse_query_map_bound(script):
    code = "print(len(url.parse_query(stdin.read(1048576))))"
    q = "&".join(f"k{i}" for i in range(16384))
    r = script(code, input=q)
    assert (r.status, r.out) == (0, "16384\n"), r
    r = script(code, input=q + "&k16384")
    assert (r.status, r.diag["kind"]) == (4, "map"), r
