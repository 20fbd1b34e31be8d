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


# ---------------------------------------------------------------------------
# Query strings
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# url.parse
# ---------------------------------------------------------------------------

PARTS = ["scheme", "user", "host", "port", "path", "query", "fragment"]


# ---------------------------------------------------------------------------
# html, base64, hash
# ---------------------------------------------------------------------------


RFC4648 = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
           ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]


SHA256 = [
    ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    (
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    ),
]


# ---------------------------------------------------------------------------
# Bounds at N and N+1 (outputs within the string limit, maps within the map limit)
# ---------------------------------------------------------------------------


def test_parse_query_map_bound(script):
    code = "print(len(url.parse_query(stdin.read(1048576))))"
    q = "&".join(f"k{i}" for i in range(16384))
    r = script(code, input=q)
    assert (r.status, r.out) == (0, "16384\n"), r
    r = script(code, input=q + "&k16384")
    assert (r.status, r.diag["kind"]) == (4, "map"), r
