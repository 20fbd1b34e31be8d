"""scripts/module-cycles.py: the import check CI runs (issue 24)."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "module-cycles.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=60)


def test_the_crate_has_no_cycle_beyond_the_allowed_ones():
    r = run("--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "module graph:" in r.stdout


def make_crate(tmp_path, files):
    src = tmp_path / "src"
    for name, text in files.items():
        p = src / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return src


def test_a_cycle_is_found_and_a_new_one_fails_the_check(tmp_path):
    src = make_crate(tmp_path, {
        "lib.rs": "pub mod a;\npub mod b;\npub mod c;\npub mod d;\n",
        "a.rs": "use crate::b::X;\n// use crate::d::Y; a comment names nothing\n",
        "b.rs": "pub fn f() { crate::c::g() }\n",
        "c.rs": "use crate::{a::Z, d};\n",
        "d/mod.rs": "use super::a;\nmod inner;\n",
        "d/inner.rs": "use super::b; // super is d here, not the root\n",
    })
    allowed = tmp_path / "allowed"
    allowed.write_text("")
    r = run("--src", str(src), "--allowed", str(allowed), "--graph")
    assert r.returncode == 0, r.stderr
    assert "d -> a" in r.stdout and "a -> d" not in r.stdout and "d -> b" not in r.stdout
    assert "cycle 1: 4 modules: a b c d" in r.stdout
    r = run("--src", str(src), "--allowed", str(allowed), "--check")
    assert r.returncode == 1 and "NEW CYCLE" in r.stdout
    allowed.write_text("a b c d\n")
    assert run("--src", str(src), "--allowed", str(allowed), "--check").returncode == 0
    # A grown cycle is new even when its old part was allowed.
    allowed.write_text("a b c\n")
    assert run("--src", str(src), "--allowed", str(allowed), "--check").returncode == 1


def test_no_cycle(tmp_path):
    src = make_crate(tmp_path, {"lib.rs": "", "a.rs": "use crate::b;\n", "b.rs": "\n"})
    r = run("--src", str(src), "--allowed", str(tmp_path / "none"), "--check")
    assert r.returncode == 0 and "0 cycle(s)" in r.stdout
