//! Only the gateway starts workers (SPEC 12, round 3).
//!
//! A web server that runs `leash` itself as a CGI program passes a query string without
//! `=` as argv (RFC 3875 4.4), so `POST /cgi-bin/leash?--allow-files+-` would run the
//! request body as a script with flags of the client's choosing. Under a web server
//! (`GATEWAY_INTERFACE` in the environment) and without the marker that only `leash-cgi`
//! sets for its workers ([`WORKER_MARKER`]), `leash` runs only as the interpreter of the
//! very page the server was asked for: `--cgi` in force and SCRIPT the same file as
//! `SCRIPT_FILENAME` (a page whose first line is `#!/usr/bin/env -S leash --cgi`; the
//! query's words arrive after SCRIPT, so they are script arguments, never flags). When the
//! server runs the `leash` executable itself (SCRIPT_FILENAME is this program), nothing
//! runs whatever the arguments. Every refusal answers `Status: 403` and logs one line.
//!
//! The marker is an environment variable: a client cannot set it (request headers reach
//! a CGI program only as `HTTP_*` variables); only the server's own configuration could.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::cli::{Command, Program};

/// Set (to `1`) by `leash-cgi` in the environment of every worker it starts.
pub const WORKER_MARKER: &str = "LEASH_CGI_WORKER";

const FORBIDDEN: &[u8] = b"Status: 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nForbidden\n";

/// `None`: go on. `Some(status)`: the run was refused (the 403 and the log line are
/// written): exit with `status`.
pub fn check(args: &[OsString]) -> Option<i32> {
    std::env::var_os("GATEWAY_INTERFACE")?;
    if std::env::var_os(WORKER_MARKER).is_some_and(|v| v == "1") {
        return None;
    }
    let why = match refusal(args) {
        None => return None,
        Some(why) => why,
    };
    // One line for the server's error log; nothing of the request (argv included) is echoed.
    let _ = std::io::stderr().write_all(
        format!("leash: refused to run under a web server outside the leash-cgi gateway: {why} (SPEC 12)\n").as_bytes(),
    );
    drain_body();
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(FORBIDDEN).and_then(|_| o.flush());
    Some(2)
}

/// Why a run started by a web server (not the gateway) must not go on, or `None` when it
/// is a page's own interpreter line.
fn refusal(args: &[OsString]) -> Option<&'static str> {
    let Some(target) = std::env::var_os("SCRIPT_FILENAME").filter(|v| !v.is_empty()) else {
        return Some("no SCRIPT_FILENAME");
    };
    let Some(target) = file_id(Path::new(&target)) else {
        return Some("SCRIPT_FILENAME cannot be read");
    };
    // The server runs this executable itself (it sits in a CGI directory): never.
    let me = std::env::current_exe().ok().and_then(|p| file_id(&p));
    if me.is_none() || me == Some(target) {
        return Some("the server runs the interpreter itself; keep `leash` outside every CGI directory");
    }
    // Anything but `leash [OPTIONS] --cgi SCRIPT [ARG...]` with SCRIPT the requested page.
    let first = args.first().map(|a| a.as_encoded_bytes());
    if matches!(first, Some(b"fmt" | b"completions" | b"check" | b"test" | b"repl")) {
        return Some("not a page's interpreter line");
    }
    let Ok((cfg, cmd)) = crate::cli::parse(args) else {
        return Some("not a page's interpreter line");
    };
    let Command::Run { program: Program::File(script), .. } = cmd else {
        return Some("not a page's interpreter line");
    };
    if !cfg.cgi {
        return Some("--cgi is not in force");
    }
    if file_id(&script) != Some(target) {
        return Some("SCRIPT is not the page the server was asked for");
    }
    None
}

/// Read and drop the request body (up to CONTENT_LENGTH, at most 1 MiB) so that a server
/// writing it to us (mod_cgid) does not abort the response when we leave it unread.
fn drain_body() {
    use std::io::Read;
    let n = std::env::var("CONTENT_LENGTH").ok().and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
    let _ = std::io::copy(&mut std::io::stdin().lock().take(n.min(1 << 20)), &mut std::io::sink());
}

/// A file's identity (device, inode), following symlinks.
fn file_id(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().filter(|m| m.is_file()).map(|m| (m.dev(), m.ino()))
}
