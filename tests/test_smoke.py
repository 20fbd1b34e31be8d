"""A first look: the binary runs a script, and reports what it was asked to."""
from conftest import run


def test_version_and_help():
    r = run(["--version"])
    assert r.status == 0 and r.out.startswith("leash ")
    r = run(["--help"])
    assert r.status == 0 and "--max-steps" in r.out


def test_runs_inline_code(script):
    r = script('print("hello", 1 + 2)')
    assert (r.status, r.out) == (0, "hello 3\n")


def test_readme_example_command_runs():
    # README's first command: `cargo run --release --quiet -- examples/hello.lsh`. With two
    # binaries in the package, `default-run` must name leash for it to work.
    import subprocess
    from conftest import ROOT
    manifest = (ROOT / "Cargo.toml").read_text()
    assert 'default-run = "leash"' in manifest
    readme = (ROOT / "README.md").read_text()
    assert "cargo run --release --quiet -- examples/hello.lsh" in readme
    r = run([ROOT / "examples" / "hello.lsh", "Ada"])
    assert r.status == 0 and r.out.startswith("Hello, Ada!\n"), r
