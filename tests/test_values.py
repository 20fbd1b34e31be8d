"""Values (SPEC 4): number formatting, str(), truthiness, value (copy-on-write) semantics."""
import random
import struct


def test_str_of_string_is_unchanged_even_invalid_utf8(script):
    r = script('s = "\\xff\\xfe"\nwrite(str(s))\nprint(str(s) == s, len(str(s)))\n')
    assert r.status == 0, r
    assert r.out_bytes == b"\xff\xfetrue 2\n"


def test_print_of_invalid_utf8_string_writes_the_bytes(script):
    r = script('print("a\\xffb")\n')
    assert r.status == 0 and r.out_bytes == b"a\xffb\n"


# --- value semantics ------------------------------------------------------------


def test_map_holding_itself_is_a_copy(ok):
    assert ok('m = {"a": 1}\nm.self = m\nm.a = 2\nprint(m)') == '{"a":2,"self":{"a":1}}\n'


# --- number formatting against JavaScript's Number.prototype.toString ------------------
# js_num reimplements the JavaScript algorithm from Python's shortest round-trip digits
# (checked against node on thousands of values when written).


def js_num(x):
    if x == 0:
        return "0"
    if x < 0:
        return "-" + js_num(-x)
    r = repr(x)
    # digits and exponent from repr
    if "e" in r:
        mant, exp = r.split("e")
        exp = int(exp)
    else:
        mant, exp = r, 0
    if "." in mant:
        ip, fp = mant.split(".")
    else:
        ip, fp = mant, ""
    digits = (ip + fp).lstrip("0")
    # position of decimal point relative to start of digits
    lead_zeros = len(ip + fp) - len((ip + fp).lstrip("0"))
    n = len(ip) + exp - lead_zeros  # decimal exponent: value = 0.d1d2.. * 10^n
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e >= 0 else "-"
    if k == 1:
        return digits + "e" + sign + str(abs(e))
    return digits[0] + "." + digits[1:] + "e" + sign + str(abs(e))

def sample(n, seed=1):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            x = rnd.uniform(-1, 1) * 10 ** rnd.randint(-30, 30)
        elif kind == 1:
            x = struct.unpack("d", struct.pack("Q", rnd.getrandbits(64)))[0]
            if x != x or x in (float("inf"), float("-inf")):
                x = 1.5
        elif kind == 2:
            x = float(rnd.randint(-2**60, 2**60))
        else:
            x = rnd.randint(-10**6, 10**6) / 10 ** rnd.randint(0, 9)
        out.append(x)
    return out


def test_number_formatting_matches_javascript(script):
    xs = sample(2000, seed=20240229)
    xs += [1e21, 1e-7, 1e-6, 9.999999999999999e20, 123456789012345680000.0, 5e-324,
           1.7976931348623157e308, 2.0 ** 53, 2.0 ** 53 + 2, 0.1, 1 / 3, 2.0 ** -1074, 1e-6 * 0.999]
    src = "".join(f"print({repr(x)})\n" for x in xs)
    r = script(src)
    assert r.status == 0, r
    got = r.out.split("\n")[:-1]
    assert len(got) == len(xs)
    bad = [(x, g, js_num(x)) for x, g in zip(xs, got) if g != js_num(x)]
    assert bad == [], bad[:10]


def test_number_literals_round_trip(script):
    # Every printed number parses back (as a literal) to the same number.
    xs = sample(500, seed=7)
    src = "".join(f"assert({repr(x)} == {js_num(x)})\n" for x in xs) + 'print("ok")\n'
    r = script(src)
    assert (r.status, r.out) == (0, "ok\n"), r
