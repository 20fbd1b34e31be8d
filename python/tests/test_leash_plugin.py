"""The pytest plugin, installed the way a user installs it: a fresh virtualenv
(`python3 -m venv`), `pip install ./python` into it (offline: no build isolation, no
index), then pytest run on a sample tree of `*_test.lsh` files and a Python test that
uses the `leash` fixture."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("LEASH_BIN") or str(ROOT / "target" / "release" / "leash")
if not os.path.exists(BIN):
    pytest.skip(f"no leash binary at {BIN} (build it, or set LEASH_BIN)", allow_module_level=True)

CALC = """\
# A sample of Leash tests.
base = 10

fn test_add()
  assert_eq(base + 1, 11)
end

fn test_text_differs()
  print("output of test_text_differs")
  assert_eq("one\\ntwo\\nthree", "one\\nTWO\\nthree")
end

fn test_prints()
  print("hello from test_prints")
end

# mark: slow
fn test_slow_loop()
  n = 0
  while n < 1000
    n = n + 1
  end
  assert_eq(n, 1000)
end
"""

DATA = """\
fn test_reads_data()
  assert_eq(file.read("data.txt"), "payload")
end
"""

TOP = """\
x = 1 / 0

fn test_never()
end
"""

BROKEN = """\
fn test_broken()
  if true
    print("no end")
end
"""

PYTEST_FILE = """\
import leash as leash_pkg


def test_fixture_runs_code(leash):
    r = leash(code='print(1 + 1)')
    assert r.status == 0 and r.text == "2\\n"
    assert r.stats["steps"] >= 1


def test_fixture_writes_and_runs_a_script(leash):
    s = leash.write("job.lsh", 'line = stdin.read_line()\\nprint(upper(line))\\n')
    r = leash.run(script=s, stdin=b"abc\\n", limits={"stdin": "1K"})
    assert r.check().text == "ABC\\n"
    assert leash.tmp_path == s.parent


def test_fixture_errors(leash):
    r = leash(code="x = 1 / 0")
    assert r.status == 1 and isinstance(r.diagnostic, leash_pkg.Diagnostic)
    assert r.diagnostic.kind == "arith"
"""


def _have_build_backend(py):
    code = (
        "import setuptools, sys\n"
        "v = tuple(int(x) for x in setuptools.__version__.split('.')[:2])\n"
        "if v < (70, 1):\n"
        "    import wheel\n"
    )
    return subprocess.run([py, "-c", code], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtualenv with the package pip-installed from a copy of ./python."""
    base = tmp_path_factory.mktemp("leash-venv")
    src = base / "python"
    shutil.copytree(
        ROOT / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests", ".*")
    )
    env_dir = base / "venv"
    # System site-packages: pytest (and the build backend, for an offline install)
    # come from the interpreter running this suite.
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], capture_output=True, timeout=300
    )
    if made.returncode != 0:
        # No ensurepip (Debian without python3-venv): the interpreter's own pip, seen
        # through the system site-packages, installs into the venv as well.
        shutil.rmtree(env_dir, ignore_errors=True)
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(env_dir)],
            check=True,
            timeout=300,
        )
    py = str(env_dir / "bin" / "python")
    if subprocess.run([py, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("python3 -m venv made a virtualenv without pip, and the interpreter has no pip of its own")
    if not _have_build_backend(py):
        pytest.skip("setuptools (>= 70.1, or older with wheel) is not installed: pip cannot build ./python offline")
    p = subprocess.run(
        [py, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-index", "--no-deps", str(src)],
        capture_output=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    # The installed copy is the one imported (not a source tree on sys.path).
    p = subprocess.run([py, "-c", "import leash; print(leash.__file__)"], capture_output=True, timeout=60, cwd=base)
    assert str(env_dir) in p.stdout.decode(), p
    return py


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "proj"
    t.mkdir()
    (t / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow tests\n")
    (t / "calc_test.lsh").write_text(CALC)
    sub = t / "sub"
    sub.mkdir()
    (sub / "data_test.lsh").write_text(DATA)
    (t / "data.txt").write_text("payload")
    (t / "top_test.lsh").write_text(TOP)
    (t / "test_with_fixture.py").write_text(PYTEST_FILE)
    return t


def pytest_run(py, tree, *args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LEASH_"))}
    # The binary comes only from --leash-bin (not LEASH_BIN, not PATH).
    env["PATH"] = os.path.dirname(py) + ":/usr/bin:/bin"
    env.pop("PYTHONPATH", None)
    env.update(env_extra or {})
    argv = [py, "-m", "pytest", "-rA", "-p", "no:xdist", "-p", "no:randomly", f"--leash-bin={BIN}", *args]
    p = subprocess.run(argv, cwd=tree, env=env, capture_output=True, timeout=600)
    out = p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")
    outcomes = {}
    for line in out.splitlines():
        m = re.match(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+)", line)
        if m:
            outcomes[m.group(2)] = m.group(1)
    return p.returncode, outcomes, out


def test_plugin_is_registered(venv):
    p = subprocess.run([venv, "-m", "pytest", "--help"], capture_output=True, timeout=120)
    help_text = p.stdout.decode()
    assert "--leash-bin" in help_text and "--leash-args" in help_text
    p = subprocess.run(
        [venv, "-c", "import importlib.metadata as m; print([e.value for e in m.entry_points(group='pytest11')])"],
        capture_output=True,
        timeout=60,
    )
    assert "leash.pytest_plugin" in p.stdout.decode()


def test_passes_fails_and_reports(venv, tree):
    status, outcomes, out = pytest_run(venv, tree, "--leash-args=--allow-files")
    assert outcomes == {
        "calc_test.lsh::test_add": "PASSED",
        "calc_test.lsh::test_text_differs": "FAILED",
        "calc_test.lsh::test_prints": "PASSED",
        "calc_test.lsh::test_slow_loop": "PASSED",
        "sub/data_test.lsh::test_reads_data": "PASSED",
        "top_test.lsh::test_never": "FAILED",
        "test_with_fixture.py::test_fixture_runs_code": "PASSED",
        "test_with_fixture.py::test_fixture_writes_and_runs_a_script": "PASSED",
        "test_with_fixture.py::test_fixture_errors": "PASSED",
    }, out
    assert status == 1
    # The failure: file:line, the Leash message, the source line, the test's output.
    assert "calc_test.lsh:10: runtime error [assert]:" in out, out
    assert 'assert_eq("one\\ntwo\\nthree", "one\\nTWO\\nthree")' in out
    assert "output of test_text_differs" in out
    # The top level's failure names the file and the line.
    assert "top_test.lsh:1: runtime error [arith]" in out and "division by zero" in out


def test_permission_without_leash_args(venv, tree):
    status, outcomes, out = pytest_run(venv, tree, "sub")
    assert outcomes == {"sub/data_test.lsh::test_reads_data": "FAILED"}, out
    assert "[permission]" in out and "--allow-files" in out


def test_k_selects(venv, tree):
    status, outcomes, out = pytest_run(venv, tree, "-k", "add or prints", "calc_test.lsh")
    assert outcomes == {"calc_test.lsh::test_add": "PASSED", "calc_test.lsh::test_prints": "PASSED"}, out
    assert status == 0 and "2 deselected" in out
    status, outcomes, out = pytest_run(venv, tree, "-k", "calc_test and not differs", "calc_test.lsh")
    assert set(outcomes) == {"calc_test.lsh::test_add", "calc_test.lsh::test_prints", "calc_test.lsh::test_slow_loop"}


def test_markers(venv, tree):
    status, outcomes, out = pytest_run(venv, tree, "-m", "slow", "calc_test.lsh")
    assert outcomes == {"calc_test.lsh::test_slow_loop": "PASSED"}, out
    status, outcomes, out = pytest_run(venv, tree, "-m", "leash and not slow", "--leash-args=--allow-files")
    assert "calc_test.lsh::test_slow_loop" not in outcomes and "calc_test.lsh::test_add" in outcomes
    assert not any(k.startswith("test_with_fixture.py") for k in outcomes), out


def test_x_stops_at_the_first_failure(venv, tree):
    status, outcomes, out = pytest_run(venv, tree, "-x", "calc_test.lsh")
    assert outcomes == {"calc_test.lsh::test_add": "PASSED", "calc_test.lsh::test_text_differs": "FAILED"}, out
    assert "stopping after 1 failures" in out


def test_last_failed(venv, tree):
    pytest_run(venv, tree, "--leash-args=--allow-files")
    status, outcomes, out = pytest_run(venv, tree, "--lf", "--leash-args=--allow-files")
    assert outcomes == {
        "calc_test.lsh::test_text_differs": "FAILED",
        "top_test.lsh::test_never": "FAILED",
    }, out


def test_load_error_is_a_collection_error(venv, tree):
    (tree / "broken_test.lsh").write_text(BROKEN)
    status, outcomes, out = pytest_run(venv, tree, "broken_test.lsh", "calc_test.lsh")
    assert status == 2 and "ERROR collecting broken_test.lsh" in out, out
    assert "broken_test.lsh:" in out and "load error" in out
    status, outcomes, out = pytest_run(venv, tree, "--continue-on-collection-errors", "calc_test.lsh", "broken_test.lsh")
    assert outcomes.get("broken_test.lsh") == "ERROR" and outcomes.get("calc_test.lsh::test_add") == "PASSED", out


def test_leash_args_reach_leash_test(venv, tree):
    (tree / "loop_test.lsh").write_text("fn test_spin()\n  while true\n  end\nend\n")
    status, outcomes, out = pytest_run(venv, tree, "--leash-args=--max-steps 500", "loop_test.lsh")
    assert outcomes == {"loop_test.lsh::test_spin": "FAILED"}, out
    assert "limit error [steps]" in out


def test_no_binary_is_a_clear_error(venv, tree):
    status, outcomes, out = pytest_run(venv, tree, "--leash-bin=/nonexistent/leash", "calc_test.lsh")
    assert status != 0 and "/nonexistent/leash" in out, out


def test_plugin_can_be_turned_off(venv, tree):
    status, outcomes, out = pytest_run(venv, tree, "-p", "no:leash", "calc_test.lsh")
    # Without the plugin a .lsh file is not a test file.
    assert outcomes == {} and status in (4, 5), out


def test_readme_example(venv, tmp_path):
    """The worked example of python/README.md, run as written."""
    readme = (ROOT / "python" / "README.md").read_text()
    blocks = re.findall(r"```(\w+) file=(\S+)\n(.*?)```", readme, re.S)
    assert blocks, "python/README.md has no `file=` blocks"
    for _lang, name, body in blocks:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(body))
    status, outcomes, out = pytest_run(venv, tmp_path, "-p", "no:cacheprovider")
    assert status == 0 and outcomes and all(v == "PASSED" for v in outcomes.values()), out
