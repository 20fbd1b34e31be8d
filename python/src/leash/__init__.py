"""Drive Leash from Python: `leash.run(...)` runs one script in a subprocess and
returns a `Result` (status, stdout and stderr bytes, diagnostics, stats), read from the
run's `--report`; `leash.cgi(...)` runs a CGI page as a web server would. The pytest
plugin (`leash.pytest_plugin`, registered as a `pytest11` entry point) collects
`*_test.lsh` files and gives tests a `leash` fixture."""

from ._cgi import CgiResponse, cgi, parse_response
from ._run import (
    Diagnostic,
    LeashError,
    LeashNotFound,
    LeashTimeout,
    Result,
    find_leash,
    options,
    run,
)

__all__ = [
    "CgiResponse",
    "Diagnostic",
    "LeashError",
    "LeashNotFound",
    "LeashTimeout",
    "Result",
    "cgi",
    "find_leash",
    "options",
    "parse_response",
    "run",
]

__version__ = "0.1.0"
