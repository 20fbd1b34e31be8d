"""A small FastCGI client (the web server's side of the protocol) for the tests of
`leash-cgi --fastcgi`: records, name-value pairs, one request on a connection."""
import socket
import struct

BEGIN_REQUEST, ABORT_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT, STDERR = 1, 2, 3, 4, 5, 6, 7
GET_VALUES, GET_VALUES_RESULT, UNKNOWN_TYPE = 9, 10, 11
RESPONDER, KEEP_CONN = 1, 1
REQUEST_COMPLETE, CANT_MPX_CONN, OVERLOADED, UNKNOWN_ROLE = 0, 1, 2, 3


def record(kind, rid, content=b""):
    pad = (8 - len(content) % 8) % 8
    return struct.pack(">BBHHBx", 1, kind, rid, len(content), pad) + content + b"\0" * pad


def pair_len(n):
    return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)


def pairs(d):
    out = b""
    for k, v in d.items():
        k = k.encode() if isinstance(k, str) else k
        v = v.encode() if isinstance(v, str) else v
        out += pair_len(len(k)) + pair_len(len(v)) + k + v
    return out


def parse_pairs(b):
    out, i = {}, 0
    while i < len(b):
        lens = []
        for _ in range(2):
            if b[i] < 128:
                lens.append(b[i])
                i += 1
            else:
                lens.append(struct.unpack(">I", b[i:i + 4])[0] & 0x7FFFFFFF)
                i += 4
        out[b[i:i + lens[0]].decode()] = b[i + lens[0]:i + lens[0] + lens[1]].decode()
        i += lens[0] + lens[1]
    return out


def stream(kind, rid, data):
    out = b""
    for i in range(0, len(data), 32768):
        out += record(kind, rid, data[i:i + 32768])
    return out + record(kind, rid)


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        c = s.recv(n - len(buf))
        if not c:
            raise EOFError(f"connection closed after {len(buf)} of {n} bytes")
        buf += c
    return buf


def read_record(s):
    """(kind, id, content), or None at a clean end."""
    h = s.recv(8, socket.MSG_WAITALL)
    if not h:
        return None
    if len(h) < 8:
        raise EOFError("cut inside a record header")
    _v, kind, rid, n, pad = struct.unpack(">BBHHBx", h)
    body = read_exact(s, n + pad) if n + pad else b""
    return kind, rid, body[:n]


def connect(addr, timeout=30):
    if isinstance(addr, str):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(addr)
    return s


def begin(s, rid=1, keep=False, params=None, body=b"", send_body=True):
    s.sendall(record(BEGIN_REQUEST, rid, struct.pack(">HB5x", RESPONDER, KEEP_CONN if keep else 0))
              + stream(PARAMS, rid, pairs(params or {}))
              + (stream(STDIN, rid, body) if send_body else b""))


def response(s, rid=1):
    """Read records up to END_REQUEST of `rid`: (stdout bytes, app status, protocol status,
    [other records])."""
    out, others = b"", []
    while True:
        r = read_record(s)
        if r is None:
            raise EOFError("connection closed before END_REQUEST")
        kind, got, content = r
        if kind == STDOUT and got == rid:
            out += content
        elif kind == END_REQUEST and got == rid:
            app, proto = struct.unpack(">IB3x", content)
            return out, app, proto, others
        else:
            others.append(r)


def request(addr, params, body=b"", timeout=30):
    s = connect(addr, timeout)
    try:
        begin(s, 1, False, params, body)
        return response(s, 1)
    finally:
        s.close()


def split_http(out):
    """A CGI response -> (status, headers dict lowercased, body)."""
    head, _, body = out.partition(b"\r\n\r\n")
    if not _:
        head, _, body = out.partition(b"\n\n")
    status, hdrs = 200, {}
    for line in head.decode("latin-1").splitlines():
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if "status" in hdrs:
        status = int(hdrs["status"][:3])
    elif "location" in hdrs:
        status = 302
    return status, hdrs, body
