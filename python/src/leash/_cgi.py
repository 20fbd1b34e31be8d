"""leash.cgi: run a CGI page as a web server would (`leash --cgi`), parse its response."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import urlencode

from ._run import Result, StrPath, run

_REQUEST_VARS = ("CONTENT_TYPE", "CONTENT_LENGTH", "QUERY_STRING", "REQUEST_METHOD", "LEASH_CGI_WORKER")

Query = Union[str, Mapping[str, Any], Sequence[Tuple[str, Any]]]


@dataclass(frozen=True)
class CgiResponse:
    """The HTTP response a CGI page produced: status code, header lines in order,
    body bytes; `result` is the underlying run (its diagnostics, stats, stderr)."""

    status: int
    headers: List[Tuple[str, str]]
    body: bytes
    result: Result

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def header(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """The first header called `name` (any case)."""
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return default


def parse_response(raw: bytes) -> Tuple[int, List[Tuple[str, str]], bytes]:
    """Split CGI output into (status, headers, body). A `Status:` header gives the
    status; without one it is 302 when there is a `Location`, else 200."""
    sep = [(raw.find(s), s) for s in (b"\r\n\r\n", b"\n\n")]
    found = [(i, s) for i, s in sep if i >= 0]
    if not found:
        return 200, [], raw
    i, s = min(found)
    head, body = raw[:i], raw[i + len(s) :]
    headers: List[Tuple[str, str]] = []
    for line in head.replace(b"\r\n", b"\n").split(b"\n"):
        if b":" in line:
            name, value = line.split(b":", 1)
            headers.append((name.decode("latin-1").strip(), value.decode("latin-1").strip()))
    status = 200
    for k, v in headers:
        if k.lower() == "status":
            try:
                status = int(v.split()[0])
            except (ValueError, IndexError):
                status = 500
            break
    else:
        if any(k.lower() == "location" for k, _ in headers):
            status = 302
    return status, headers, body


def _encode(q: Query) -> str:
    if isinstance(q, str):
        return q
    return urlencode(list(q.items()) if isinstance(q, Mapping) else list(q), doseq=True)


def cgi(
    script: StrPath,
    query: Optional[Query] = None,
    form: Optional[Query] = None,
    body: Union[bytes, str, None] = None,
    method: Optional[str] = None,
    headers: Optional[Mapping[str, str]] = None,
    env: Optional[Mapping[str, str]] = None,
    **kwargs: Any,
) -> CgiResponse:
    """Run `script` as a CGI page: `leash --cgi SCRIPT` with the CGI/1.1 variables a web
    server sets (RFC 3875). `query` is the query string (text or a mapping, encoded);
    `form` is an urlencoded POST body (a mapping or text); `body` is a raw request body
    (then give `headers={"Content-Type": ...}`); `method` defaults to POST with a body,
    GET without. `headers` become `HTTP_*` variables (Content-Type and Content-Length
    their own). `env` adds further variables. Other keyword arguments go to `leash.run`
    (`allow=`, `limits=`, `timeout=`, `leash_bin=`, ...)."""
    path = os.path.abspath(os.fspath(script))
    data: bytes = b""
    ctype: Optional[str] = None
    if form is not None:
        data = _encode(form).encode("utf-8")
        ctype = "application/x-www-form-urlencoded"
    if body is not None:
        data = body.encode("utf-8") if isinstance(body, str) else body
    # The caller's environment, less anything a request would set (and the gateway's
    # worker marker: this is a page run by its own interpreter line, as a server would).
    base = dict(os.environ)
    for k in list(base):
        if k.startswith("HTTP_") or k in _REQUEST_VARS:
            del base[k]
    cgi_env = {
        "GATEWAY_INTERFACE": "CGI/1.1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "SERVER_SOFTWARE": "leash-python",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "REMOTE_ADDR": "127.0.0.1",
        "REQUEST_METHOD": (method or ("POST" if form is not None or body is not None else "GET")).upper(),
        "QUERY_STRING": _encode(query) if query is not None else "",
        "SCRIPT_FILENAME": path,
        "SCRIPT_NAME": "/" + os.path.basename(path),
        "REQUEST_URI": "/" + os.path.basename(path) + ("?" + _encode(query) if query else ""),
    }
    if data or form is not None or body is not None:
        cgi_env["CONTENT_LENGTH"] = str(len(data))
    for k, v in (headers or {}).items():
        key = k.upper().replace("-", "_")
        if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            cgi_env[key] = v
        else:
            cgi_env["HTTP_" + key] = v
    if ctype and "CONTENT_TYPE" not in cgi_env:
        cgi_env["CONTENT_TYPE"] = ctype
    base.update(cgi_env)
    base.update(env or {})
    r = run(script=path, stdin=data, env=base, cgi=True, **kwargs)
    status, hdrs, payload = parse_response(r.stdout)
    return CgiResponse(status, hdrs, payload, r)
