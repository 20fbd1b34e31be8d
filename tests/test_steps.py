"""Step accounting (SPEC 8): every charging rule, exact counts via --stats, budget edges."""

# The exact count of each charging rule (one program per rule, with `# expect steps: N`)
# is in tests/cases/steps/ (tests/cases/README.md).


def test_include_line_free_included_lines_charged(tmp_path, script):
    (tmp_path / "lib.lsh").write_text("# lib\na = 1\nfn f()\nreturn 2\nend\n\nb = 3\n")
    r = script('include "lib.lsh"\ninclude "lib.lsh"\nx = f()\n', opts=["--stats"])
    assert r.status == 0, r
    assert r.stats["steps"] == 2 + 2
