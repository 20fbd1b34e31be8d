//! Values between Leash and PostgreSQL: the placeholders of a statement (`?`, `:name`)
//! rewritten to `$n`, Leash values as parameters, and a row's columns as Leash values
//! (the types converted from their binary form, the rest fetched as text).

use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};

use super::super::Host;
use crate::diag::ErrKind;
use crate::error::R;
use crate::value::*;

/// Rewrite the placeholders of `sql` to `$1`, `$2`...: `?` (`named` false) or `:name`
/// (`named` true; a name used twice is one parameter). Quoted strings, quoted
/// identifiers, dollar-quoted strings, comments and `::` casts are left alone. Returns
/// the SQL and the names in parameter order (for `?`, as many empty names).
pub fn translate(sql: &str, named: bool) -> (String, Vec<String>) {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut names: Vec<String> = Vec::new();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    let mut i = 0;
    let mut from = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' => {
                // E'...' takes backslash escapes.
                let esc = i > 0 && (b[i - 1] == b'e' || b[i - 1] == b'E') && (i < 2 || !ident(b[i - 2]));
                i += 1;
                while i < b.len() {
                    if esc && b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == b'\'' {
                        if b.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'$' if i == 0 || !ident(b[i - 1]) => {
                // $tag$ ... $tag$ (a `$1` is a parameter, not a tag).
                let mut j = i + 1;
                while j < b.len() && ident(b[j]) && !(j == i + 1 && b[j].is_ascii_digit()) {
                    j += 1;
                }
                if j < b.len() && b[j] == b'$' && !(j > i + 1 && b[i + 1].is_ascii_digit()) {
                    let tag = &sql[i..=j];
                    match sql[j + 1..].find(tag) {
                        Some(k) => i = j + 1 + k + tag.len(),
                        None => i = b.len(),
                    }
                } else {
                    i += 1;
                }
            }
            b':' if b.get(i + 1) == Some(&b':') => i += 2,
            b':' if named && b.get(i + 1).is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_') => {
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                let name = &sql[i + 1..j];
                let n = match names.iter().position(|x| x == name) {
                    Some(k) => k + 1,
                    None => {
                        names.push(name.to_string());
                        names.len()
                    }
                };
                out.push_str(&sql[from..i]);
                out.push_str(&format!("${n}"));
                i = j;
                from = j;
            }
            b'?' if !named => {
                names.push(String::new());
                out.push_str(&sql[from..i]);
                out.push_str(&format!("${}", names.len()));
                i += 1;
                from = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[from.min(sql.len())..]);
    (out, names)
}

/// A Leash value as a statement parameter: sent in the text format (the server parses
/// it as the type it inferred for the parameter, as psql would a literal), bytes for a
/// `bytea` parameter as they are.
#[derive(Debug)]
pub(super) enum Param {
    Null,
    Bool(bool),
    Num(f64),
    Str(Vec<u8>),
}

impl ToSql for Param {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        let int = matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8 | Type::OID);
        match self {
            Param::Null => return Ok(IsNull::Yes),
            Param::Bool(b) if int => out.extend_from_slice(if *b { b"1" } else { b"0" }),
            Param::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Param::Num(n) => out.extend_from_slice(num_to_string(*n).as_bytes()),
            Param::Str(s) => {
                if *ty != Type::BYTEA && s.contains(&0) {
                    return Err("a string parameter contains a NUL byte (PostgreSQL text cannot hold one)".into());
                }
                out.extend_from_slice(s)
            }
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, ty: &Type) -> tokio_postgres::types::Format {
        if matches!(self, Param::Str(_)) && *ty == Type::BYTEA {
            tokio_postgres::types::Format::Binary
        } else {
            tokio_postgres::types::Format::Text
        }
    }

    tokio_postgres::types::to_sql_checked!();
}

fn param_of(it: &Host, name: &str, which: &dyn Fn() -> String, v: &Value) -> R<Param> {
    Ok(match v {
        Value::Nil | Value::Unset => Param::Null,
        Value::Bool(b) => Param::Bool(*b),
        Value::Num(n) => Param::Num(*n),
        Value::Str(s) => Param::Str(s.as_slice().to_vec()),
        other => {
            return Err(it.err(
                ErrKind::Type,
                format!("{name}: {} must be nil, a bool, a number or a string, got {}", which(), other.type_name()),
            ))
        }
    })
}

/// The SQL with `$n` placeholders and the values, from the SQL and the params argument.
pub(super) fn bind(it: &Host, name: &str, sql: &str, p: Option<&Value>) -> R<(String, Vec<Param>)> {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    match p {
        None | Some(Value::Nil) => Ok((sql.to_string(), Vec::new())),
        Some(Value::List(l)) => {
            let (out, names) = translate(sql, false);
            let mut vals = Vec::with_capacity(l.len());
            for (k, v) in l.items().iter().enumerate() {
                vals.push(param_of(it, name, &|| format!("parameter {}", k + 1), v)?);
            }
            if names.is_empty() {
                // No `?`: the SQL may use `$1`... itself (the server counts them).
                return Ok((out, vals));
            }
            if names.len() != vals.len() {
                return Err(it.err(
                    ErrKind::Db,
                    format!(
                        "{name}: the SQL has {} parameter{} but {} value{} given",
                        names.len(),
                        plural(names.len()),
                        vals.len(),
                        if vals.len() == 1 { " was" } else { "s were" }
                    ),
                ));
            }
            Ok((out, vals))
        }
        Some(Value::Map(m)) => {
            let (out, names) = translate(sql, true);
            let mut vals = Vec::with_capacity(names.len());
            for n in &names {
                let Some(v) = m.get(n.as_bytes()) else {
                    return Err(it.err(ErrKind::Db, format!("{name}: no value for parameter :{n}")));
                };
                vals.push(param_of(it, name, &|| format!("parameter :{n}"), v)?);
            }
            Ok((out, vals))
        }
        Some(other) => Err(it.type_err(name, 2, "a list or a map", other)),
    }
}

/// A column's raw bytes, whatever its type.
pub(super) struct Raw<'a>(pub(super) Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }
    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

/// Types whose binary form `decode` converts; any other is fetched as text.
pub(super) fn native(ty: &Type) -> bool {
    matches!(
        *ty,
        Type::BOOL
            | Type::INT2
            | Type::INT4
            | Type::INT8
            | Type::OID
            | Type::FLOAT4
            | Type::FLOAT8
            | Type::NUMERIC
            | Type::TEXT
            | Type::VARCHAR
            | Type::BPCHAR
            | Type::NAME
            | Type::UNKNOWN
            | Type::CHAR
            | Type::JSON
            | Type::JSONB
            | Type::XML
            | Type::BYTEA
    ) || matches!(ty.kind(), tokio_postgres::types::Kind::Enum(_))
}

/// The text of a binary `numeric`.
fn numeric_text(b: &[u8]) -> Option<String> {
    let rd = |i: usize| b.get(i..i + 2).map(|x| i16::from_be_bytes([x[0], x[1]]));
    let (n, weight, sign, dscale) = (rd(0)? as usize, rd(2)? as i32, rd(4)? as u16, rd(6)?.max(0) as usize);
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => {}
    }
    let digits: Vec<i16> = (0..n).map(|k| rd(8 + 2 * k)).collect::<Option<_>>()?;
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    // Integer part: groups 0..=weight.
    if weight < 0 {
        s.push('0');
    } else {
        for k in 0..=weight as usize {
            let d = digits.get(k).copied().unwrap_or(0);
            if k == 0 {
                s.push_str(&d.to_string());
            } else {
                s.push_str(&format!("{d:04}"));
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut frac = String::new();
        let mut k = weight + 1;
        while frac.len() < dscale {
            let d = if k < 0 { 0 } else { digits.get(k as usize).copied().unwrap_or(0) };
            frac.push_str(&format!("{d:04}"));
            k += 1;
        }
        frac.truncate(dscale);
        s.push_str(&frac);
    }
    Some(s)
}

pub(super) fn decode(it: &Host, name: &str, col: &str, ty: &Type, raw: Option<&[u8]>) -> R<Value> {
    const EXACT: u64 = 1 << 53;
    let Some(b) = raw else { return Ok(Value::Nil) };
    let bad = || it.err(ErrKind::Db, format!("{name}: column \"{col}\" ({}) came malformed", ty.name()));
    let int = |i: i64| -> R<Value> {
        if i.unsigned_abs() > EXACT {
            return Err(it.err(
                ErrKind::Db,
                format!(
                    "{name}: column \"{col}\" holds the integer {i}, beyond 2^53 where numbers are exact \
                     (cast it to text or to float8 in the SQL)"
                ),
            ));
        }
        Ok(Value::Num(i as f64))
    };
    let float = |f: f64| -> R<Value> {
        if !f.is_finite() {
            return Err(it.err(
                ErrKind::Db,
                format!("{name}: column \"{col}\" holds a non-finite number (cast it to text in the SQL)"),
            ));
        }
        Ok(Value::Num(f))
    };
    let arr = |n: usize| -> R<&[u8]> {
        if b.len() == n {
            Ok(b)
        } else {
            Err(bad())
        }
    };
    match *ty {
        Type::BOOL => Ok(Value::Bool(arr(1)?[0] != 0)),
        Type::INT2 => int(i16::from_be_bytes(arr(2)?.try_into().map_err(|_| bad())?) as i64),
        Type::INT4 => int(i32::from_be_bytes(arr(4)?.try_into().map_err(|_| bad())?) as i64),
        Type::OID => int(u32::from_be_bytes(arr(4)?.try_into().map_err(|_| bad())?) as i64),
        Type::INT8 => int(i64::from_be_bytes(arr(8)?.try_into().map_err(|_| bad())?)),
        Type::FLOAT4 => float(f32::from_be_bytes(arr(4)?.try_into().map_err(|_| bad())?) as f64),
        Type::FLOAT8 => float(f64::from_be_bytes(arr(8)?.try_into().map_err(|_| bad())?)),
        Type::NUMERIC => {
            let t = numeric_text(b).ok_or_else(bad)?;
            match t.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Value::Num(f)),
                _ => float(f64::NAN),
            }
        }
        Type::JSONB => {
            let t = b.get(1..).filter(|_| b.first() == Some(&1)).ok_or_else(bad)?;
            it.check_str_len(t.len())?;
            Ok(Value::str_from(t))
        }
        _ => {
            it.check_str_len(b.len())?;
            Ok(Value::str_from(b))
        }
    }
}

/// `SELECT` the statement's columns as text where their type is not one `decode`
/// converts: `WITH q(c1, c2, ...) AS (SQL) SELECT q.c1, q.c2::text AS "name", ...`
/// (a data-modifying statement with RETURNING may stand in a WITH too).
pub(super) fn text_wrapped(sql: &str, cols: &[tokio_postgres::Column]) -> String {
    let body = sql.trim_end().trim_end_matches(';');
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let list: Vec<String> = (1..=cols.len()).map(|i| format!("c{i}")).collect();
    let sel: Vec<String> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if native(c.type_()) {
                format!("q.c{} AS {}", i + 1, q(c.name()))
            } else if *c.type_() == Type::INET {
                // inet's cast to text shows the mask; its output does not.
                format!(
                    "CASE WHEN q.c{n} IS NULL THEN NULL ELSE format('%s', q.c{n}) END AS {}",
                    q(c.name()),
                    n = i + 1
                )
            } else {
                format!("q.c{}::text AS {}", i + 1, q(c.name()))
            }
        })
        .collect();
    format!("WITH q({}) AS (\n{body}\n) SELECT {} FROM q", list.join(", "), sel.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        assert_eq!(translate("SELECT ?, ? FROM t", false), ("SELECT $1, $2 FROM t".into(), vec![String::new(); 2]));
        let (s, n) =
            translate("SELECT :a, :b::int, :a, 'x:y ?', \"c:d\", $$:e$$, $t$ ? $t$ -- :f\n /* :g /* ? */ */ :h", true);
        assert_eq!(s, "SELECT $1, $2::int, $1, 'x:y ?', \"c:d\", $$:e$$, $t$ ? $t$ -- :f\n /* :g /* ? */ */ $3");
        assert_eq!(n, ["a", "b", "h"]);
        assert_eq!(translate("SELECT E'\\'?' , ?", false).0, "SELECT E'\\'?' , $1");
        assert_eq!(translate("SELECT 'it''s ?', ?", false).0, "SELECT 'it''s ?', $1");
        assert_eq!(translate("SELECT $1 + ?", false).0, "SELECT $1 + $1");
        assert_eq!(translate("SELECT a::text FROM t WHERE x = :x", true).0, "SELECT a::text FROM t WHERE x = $1");
        assert_eq!(translate("SELECT 'unterminated ?", false).1.len(), 0);
    }

    #[test]
    fn numerics() {
        // 12345.678: weight 1, groups 1, 2345, 6780; dscale 3.
        let enc = |n: i16, w: i16, s: u16, d: i16, g: &[i16]| {
            let mut v = Vec::new();
            for x in [n, w, s as i16, d] {
                v.extend_from_slice(&x.to_be_bytes());
            }
            for x in g {
                v.extend_from_slice(&x.to_be_bytes());
            }
            v
        };
        assert_eq!(numeric_text(&enc(3, 1, 0, 3, &[1, 2345, 6780])).unwrap(), "12345.678");
        assert_eq!(numeric_text(&enc(1, -1, 0x4000, 2, &[500])).unwrap(), "-0.05");
        assert_eq!(numeric_text(&enc(0, 0, 0, 0, &[])).unwrap(), "0");
        assert_eq!(numeric_text(&enc(1, 2, 0, 0, &[7])).unwrap(), "700000000");
        assert_eq!(numeric_text(&enc(0, 0, 0xC000, 0, &[])).unwrap(), "NaN");
    }
}
