//! PostgreSQL URLs: `db_pg::redact` (what `leash check --json` shows of a `db.open`
//! literal) and `db_pg::mask_passwords` (a source line as diagnostics quote it) on any
//! text, and on a line built around a URL whose password is known.
//!
//! Input: bytes taken as text (lossy UTF-8). On the whole text: never a panic; a masked
//! line has the same characters as the line (so that a diagnostic's caret columns stay
//! right) but for `*`s; a redacted URL is a `postgresql://` URL with no password field
//! when it parses. Then the text is split at its first two NUL bytes into a user, a
//! password and the rest (a host, a port, a database, a query); each part's characters
//! that end a URL's authority are dropped, and the line
//! `h = db.open("postgresql://USER:PASSWORD@REST")` is built: its mask must be exactly the
//! line with each character of the password replaced by `*`, and its redaction must be
//! the redaction of the URL without the password (or the one for a URL that does not
//! parse).
#![no_main]
use leash::builtins::db_pg::{is_url, mask_passwords, redact};
use libfuzzer_sys::fuzz_target;

/// Characters that end a URL's authority where `mask_passwords` looks for it, or that
/// would move its `@` or `:`.
fn ends_authority(c: char) -> bool {
    matches!(c, '/' | '"' | '\'' | '?' | '@' | ':') || c.is_whitespace()
}

fn check_any(text: &str) {
    let masked = mask_passwords(text);
    let (a, b): (Vec<char>, Vec<char>) = (text.chars().collect(), masked.chars().collect());
    assert_eq!(a.len(), b.len(), "mask_passwords changed the number of characters");
    for (x, y) in a.iter().zip(&b) {
        assert!(x == y || *y == '*', "mask_passwords changed {x:?} into {y:?}");
    }
    let r = redact(text.as_bytes());
    if !is_url(text.as_bytes()) {
        assert_eq!(r, text.as_bytes(), "redact changed what is not a PostgreSQL URL");
    } else {
        let shown = String::from_utf8(r).expect("redact gives UTF-8 for a URL");
        assert!(shown.starts_with("postgresql://"), "redact gave {shown:?}");
    }
}

fn check_built(user: &str, password: &str, rest: &str) {
    let clean = |s: &str| s.chars().filter(|&c| !ends_authority(c) && c != '\\').collect::<String>();
    let (user, password) = (clean(user), clean(password));
    // The rest may hold a path and a query, but no quote (it closes the string literal)
    // and no `@` (it would move the authority's end).
    let rest: String = rest.chars().filter(|&c| !matches!(c, '"' | '\'' | '@' | '\\') && !c.is_whitespace()).collect();
    if user.is_empty() || password.is_empty() {
        return;
    }
    let head = "h = db.open(\"postgresql://";
    let line = format!("{head}{user}:{password}@{rest}\")");
    let want = format!("{head}{user}:{}@{rest}\")", "*".repeat(password.chars().count()));
    assert_eq!(mask_passwords(&line), want, "the password is not masked exactly");
    // The redaction shows nothing of the password: it is the redaction of the same URL
    // without one (or the URL did not parse: a bad escape in the password). (Looking for
    // the password's text in the redaction instead gave a false alarm: a database name
    // `spa:p%40x` is shown as `spa:p@x`, holding `:p@` for the password `p`.)
    let url = format!("postgresql://{user}:{password}@{rest}");
    let without = format!("postgresql://{user}@{rest}");
    let shown = redact(url.as_bytes());
    assert!(
        shown == b"postgresql://(unparsable URL)" || shown == redact(without.as_bytes()),
        "redact shows something of the password: {:?}",
        String::from_utf8_lossy(&shown)
    );
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    check_any(&text);
    // The `--allow-db=postgresql://HOST[:PORT][/DB]` scope item's parser, on the same text.
    let _ = leash::gate::parse_pg_scope(&text, "--allow-db");
    let mut parts = text.splitn(3, '\0');
    let (user, password, rest) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    check_built(user, password, rest);
});
