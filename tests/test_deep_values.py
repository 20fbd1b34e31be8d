"""Issue 25, SPEC 8: walking a value (`str`, `==`/`!=`, `in`, JSON writing, copies,
dropping) needs no native stack in proportion to its nesting, so `frame_storage` and
`call_args` go up to `--max-memory`, and a value nested millions deep ends with a limit
or success, never a crash. Every child runs with its address space capped."""
import resource
import subprocess

import pytest

from conftest import LEASH, Result

MIB = 1024 * 1024

DEEP = """n = int(args()[0])
a = []
b = []
i = 0
while i < n
  a = [a]
  b = [b]
  i = i + 1
end
print(a == b, a != b, a in [1, b])
s = str(a)
print(len(s))
a = nil
b = nil
print("dropped")
"""

BIG = ["--limit", "all=max", "--max-steps", "100000000", "--max-work", "1000000000000"]


def capped(limit_as):
    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return pre


def leash(args, cap=1024 * MIB, timeout=600):
    p = subprocess.run(
        [str(LEASH), "--error-format", "json", *[str(a) for a in args]],
        capture_output=True,
        timeout=timeout,
        preexec_fn=capped(cap),
    )
    return Result(p)


def never_crashed(r):
    # a signal (negative status), 70 (internal error) or anything but success/limit
    assert r.status in (0, 4), r


def test_five_million_deep_at_the_memory_bound_is_a_limit(tmp_path):
    p = tmp_path / "deep.lsh"
    p.write_text(DEEP)
    r = leash([*BIG, "--max-memory", "256M", p, "5000000"], cap=1536 * MIB)
    never_crashed(r)
    assert r.status == 4 and r.diag["kind"] == "memory", r


def test_five_million_deep_built_compared_printed_and_dropped(tmp_path):
    """With room for it: two 5,000,000-deep values, compared, printed, freed."""
    p = tmp_path / "deep.lsh"
    p.write_text(DEEP)
    r = leash([*BIG, "--max-memory", "2G", p, "5000000"], cap=4096 * MIB)
    never_crashed(r)
    assert r.status == 0, r
    assert r.out == "true false true\n10000002\ndropped\n", r


def test_printing_a_deep_value_stops_at_the_string_limit(tmp_path):
    p = tmp_path / "deep.lsh"
    p.write_text(DEEP)
    r = leash([*BIG, "--limit", "string=1M", "--max-memory", "1G", p, "1000000"], cap=2048 * MIB)
    assert r.status == 4 and r.diag["kind"] == "string", r


def test_deep_maps_and_mixed_nesting(tmp_path):
    p = tmp_path / "deep.lsh"
    p.write_text(
        """n = int(args()[0])
m = {}
k = {}
i = 0
while i < n
  m = {x: [m]}
  k = {x: [k]}
  i = i + 1
end
print(m == k)
t = json.stringify({x: 1})
print(len(str(m)))
m = nil
k["y"] = 1
print(m == k)
"""
    )
    r = leash([*BIG, "--max-memory", "1G", p, "500000"], cap=2048 * MIB)
    assert r.status == 0, r
    assert r.out == f"true\n{500000 * 8 + 2}\nfalse\n", r


def test_deep_value_freed_when_a_function_returns(tmp_path):
    p = tmp_path / "deep.lsh"
    p.write_text(
        """fn build(n)
  a = []
  for i in range(n)
    a = [a]
  end
  return len(a)
end
print(build(int(args()[0])))
print(build(int(args()[0])))
"""
    )
    r = leash([*BIG, "--max-memory", "512M", p, "1000000"], cap=2048 * MIB)
    assert r.status == 0 and r.out == "1\n1\n", r


def test_json_stringify_of_a_deep_value_is_the_json_limit(tmp_path):
    p = tmp_path / "deep.lsh"
    p.write_text("a = []\nfor i in range(100000)\n  a = [a]\nend\nprint(json.stringify(a))\n")
    r = leash([*BIG, "--max-memory", "512M", p], cap=2048 * MIB)
    assert r.status == 4 and r.diag["kind"] == "json" and r.diag["limit"] == "json_depth", r


@pytest.mark.parametrize("name", ["frame_storage", "call_args"])
def test_frame_ceilings_are_max_memory(name):
    ok = leash(["--max-memory", "1G", "--limit", f"{name}=1G", "-e", "x = 1"])
    assert ok.status == 0, ok
    r = leash(["--max-memory", "1G", "--limit", f"{name}=1025M", "-e", "x = 1"])
    assert r.status == 2 and "to --max-memory (1G)" in r.diag["message"], r
    r = leash(["--max-memory", "1G", "--limit", f"{name}=max", "-e", "x = 1"])
    assert r.status == 0, r


def test_a_frame_of_64_mib_with_frame_storage_raised(tmp_path):
    """Past the old 32 MiB ceiling: a 40 MB string held in a frame."""
    p = tmp_path / "t.lsh"
    p.write_text('s = repeat("a", 40000000)\nprint(len(s))\n')
    args = ["--limit", "string=64M", "--max-memory", "512M"]
    r = leash([*args, "--limit", "frame_storage=64M", p], cap=2048 * MIB)
    assert r.status == 0 and r.out == "40000000\n", r
    r = leash([*args, "--limit", "frame_storage=32M", p], cap=2048 * MIB)
    assert r.status == 4 and r.diag["kind"] == "frame_storage", r
