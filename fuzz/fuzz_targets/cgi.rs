//! The request side of CGI: the `cgi` module (stdlib/cgi.lsh) with fuzzed CGI variables
//! (query string, cookies, method, headers) and fuzzed arguments to its writers
//! (headers, cookies, redirects): errors are values, header injection never passes.
#![no_main]
use libfuzzer_sys::fuzz_target;

const DRIVER: &str = r#"
import cgi
a = args()
env.set("QUERY_STRING", a[0])
env.set("HTTP_COOKIE", a[1])
env.set("REQUEST_METHOD", a[2])
env.set("HTTP_X_THING", a[3])
env.set("CONTENT_TYPE", a[2])
env.set("CONTENT_LENGTH", a[3])
try
  q = cgi.query()
catch e
end
try
  c = cgi.cookies()
catch e
end
m = cgi.method()
try
  h = cgi.header(a[3])
  h = cgi.header("X-Thing")
catch e
end
try
  x = cgi.escape(a[0])
  t = cgi.status_text(a[2])
  t = cgi.status_text(num(a[3]))
catch e
end
try
  k = cgi.make_cookie(a[0], a[1], {path: a[2], domain: a[3], max_age: 10, secure: true, same_site: "Lax"})
catch e
end
try
  f = cgi.form()
catch e
end
try
  h = {"Status": a[2], "X": [a[3], a[1]]}
  h[a[0]] = a[1]
  cgi.headers(h)
catch e
end
try
  cgi.redirect(a[1])
catch e
end
"#;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(4, |&c| c == 0).map(<[u8]>::to_vec);
    let mut args: Vec<Vec<u8>> = (0..4).map(|_| parts.next().unwrap_or_default()).collect();
    // Environment values cannot hold NUL; the split leaves none but the last part's.
    for a in &mut args {
        a.retain(|&c| c != 0);
    }
    let out = leash_fuzz::run_driver(DRIVER, args);
    // Everything the driver writes is header lines (cgi.headers, cgi.redirect): none may
    // hold a control character but tab (CRLF ends each line).
    for line in out.held.split(|&c| c == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        assert!(
            !line.iter().any(|&c| leash::gateway::is_control(c)),
            "a control character in a header line: {:?}",
            String::from_utf8_lossy(line)
        );
    }
});
