//! Builtins: one file per area, each ending with its table of entries
//! (name, arity, capability, cost rule, function). The tables feed the validator
//! (names, arity, capabilities for `leash check`), the evaluator (the function pointer
//! sits in the resolved call), and `leash --builtins` (the docs' cross-check).

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::diag::ErrKind;
use crate::interp::{Interp, R};
use crate::value::{is_integral, Bytes, Handle, HandleKind, List, Map, Value};

pub mod codec;
pub mod collections;
pub mod core;
pub mod csv;
pub mod date;
pub mod db;
pub mod env;
pub mod files;
pub mod http;
pub mod json;
pub mod net;
pub mod netcfg;
pub mod numbers;
pub mod rand;
pub mod re;
pub mod stdin;
pub mod strings;
pub mod url;

/// A capability a builtin needs (SPEC 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    Files,
    Network,
    Listen,
    Db,
}

impl Cap {
    pub fn flag(self) -> &'static str {
        match self {
            Cap::Files => "--allow-files",
            Cap::Network => "--allow-network",
            Cap::Listen => "--allow-listen",
            Cap::Db => "--allow-db",
        }
    }
}

/// How a builtin's work grows with its input: the rule the planned work meter
/// (`--max-work`, SPEC 8) will charge by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// Constant work.
    Const,
    /// Proportional to the bytes read or produced.
    Bytes,
    /// Proportional to the items of the collections read or produced.
    Items,
    /// n log n in the items (sorting).
    Sort,
    /// Proportional to the bytes moved by I/O.
    Io,
}

impl Cost {
    pub fn name(self) -> &'static str {
        match self {
            Cost::Const => "const",
            Cost::Bytes => "bytes",
            Cost::Items => "items",
            Cost::Sort => "sort",
            Cost::Io => "io",
        }
    }
}

pub type PlainFn = fn(&mut Interp<'_>, &mut [Value]) -> R<Value>;
pub type PlaceFn = fn(&mut Interp<'_>, &mut Value, &mut [Value]) -> R<Value>;

#[derive(Clone, Copy)]
pub enum Imp {
    Plain(PlainFn),
    /// The first argument is a place, changed in place; the function receives it apart.
    Place(PlaceFn),
}

impl std::fmt::Debug for Imp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Imp::Plain(_) => write!(f, "Plain"),
            Imp::Place(_) => write!(f, "Place"),
        }
    }
}

/// Arity meaning "any number".
pub const VARIADIC: u8 = u8::MAX;

#[derive(Debug)]
pub struct Builtin {
    /// Callable name: `len`, `math.sin`.
    pub name: &'static str,
    /// Signature as documented.
    pub sig: &'static str,
    pub min: u8,
    pub max: u8,
    pub cap: Option<Cap>,
    pub cost: Cost,
    pub imp: Imp,
}

impl Builtin {
    pub fn is_place(&self) -> bool {
        matches!(self.imp, Imp::Place(_))
    }

    /// "1 argument", "2 to 3 arguments", "at least 1 argument".
    pub fn arity_text(&self) -> String {
        let noun = |n: u8| if n == 1 { "argument" } else { "arguments" };
        if self.max == VARIADIC {
            format!("at least {} {}", self.min, noun(self.min))
        } else if self.min == self.max {
            format!("{} {}", self.min, noun(self.min))
        } else {
            format!("{} to {} arguments", self.min, self.max)
        }
    }
}

/// Build a table entry.
pub const fn b(name: &'static str, sig: &'static str, min: u8, max: u8, cost: Cost, f: PlainFn) -> Builtin {
    Builtin { name, sig, min, max, cap: None, cost, imp: Imp::Plain(f) }
}

/// Build a table entry gated by a capability.
pub const fn gated(
    name: &'static str,
    sig: &'static str,
    min: u8,
    max: u8,
    cap: Cap,
    cost: Cost,
    f: PlainFn,
) -> Builtin {
    Builtin { name, sig, min, max, cap: Some(cap), cost, imp: Imp::Plain(f) }
}

/// Build a table entry whose first argument is a place.
pub const fn place(name: &'static str, sig: &'static str, min: u8, max: u8, cost: Cost, f: PlaceFn) -> Builtin {
    Builtin { name, sig, min, max, cap: None, cost, imp: Imp::Place(f) }
}

/// Every area's table.
pub fn tables() -> [&'static [Builtin]; 17] {
    [
        core::TABLE,
        collections::TABLE,
        strings::TABLE,
        numbers::TABLE,
        rand::TABLE,
        env::TABLE,
        stdin::TABLE,
        files::TABLE,
        json::TABLE,
        csv::TABLE,
        date::TABLE,
        re::TABLE,
        url::TABLE,
        codec::TABLE,
        http::TABLE,
        net::TABLE,
        db::TABLE,
    ]
}

pub fn all() -> impl Iterator<Item = &'static Builtin> {
    tables().into_iter().flatten()
}

pub fn lookup(name: &str) -> Option<&'static Builtin> {
    static INDEX: OnceLock<HashMap<&'static str, &'static Builtin>> = OnceLock::new();
    INDEX.get_or_init(|| all().map(|b| (b.name, b)).collect()).get(name).copied()
}

/// A builtin that only stdlib modules may call (`fail`); see `core::MODULE_ONLY`.
pub fn lookup_module_only(name: &str) -> Option<&'static Builtin> {
    core::MODULE_ONLY.iter().find(|b| b.name == name)
}

/// Builtin namespaces (reserved names, SPEC 5).
pub const NAMESPACES: &[&str] = &[
    "math", "rand", "json", "csv", "date", "re", "url", "html", "base64", "hash", "file", "dir", "stdin", "env",
    "http", "net", "db",
];

/// Namespace constants (`math.pi`), resolved at load time.
pub fn constant(name: &str) -> Option<Value> {
    match name {
        "math.pi" => Some(Value::Num(std::f64::consts::PI)),
        "math.e" => Some(Value::Num(std::f64::consts::E)),
        _ => None,
    }
}

// ----------------------------------------------------------------------
// Argument helpers: the type checks every builtin shares.
// ----------------------------------------------------------------------

fn ordinal(i: usize) -> String {
    format!("argument {}", i + 1)
}

impl Interp<'_> {
    pub fn type_err(&self, name: &str, i: usize, want: &str, got: &Value) -> crate::interp::Fail {
        self.err(ErrKind::Type, format!("{name}: {} must be {want}, got {}", ordinal(i), got.type_name()))
    }

    pub fn arg_num(&self, name: &str, args: &[Value], i: usize) -> R<f64> {
        match &args[i] {
            Value::Num(n) => Ok(*n),
            other => Err(self.type_err(name, i, "a number", other)),
        }
    }

    /// An integral number within `lo..=hi`.
    pub fn arg_int(&self, name: &str, args: &[Value], i: usize, lo: f64, hi: f64) -> R<i64> {
        let n = self.arg_num(name, args, i)?;
        self.int_in(name, i, n, lo, hi)
    }

    pub fn int_in(&self, name: &str, i: usize, n: f64, lo: f64, hi: f64) -> R<i64> {
        if !is_integral(n) {
            return Err(self.err(
                ErrKind::Value,
                format!("{name}: {} must be an integer, got {}", ordinal(i), crate::value::num_to_string(n)),
            ));
        }
        if n < lo || n > hi {
            return Err(self.err(
                ErrKind::Value,
                format!(
                    "{name}: {} must be in {}..{}, got {}",
                    ordinal(i),
                    crate::value::num_to_string(lo),
                    crate::value::num_to_string(hi),
                    crate::value::num_to_string(n)
                ),
            ));
        }
        Ok(n as i64)
    }

    pub fn arg_str<'a>(&self, name: &str, args: &'a [Value], i: usize) -> R<&'a Bytes> {
        match &args[i] {
            Value::Str(s) => Ok(s),
            other => Err(self.type_err(name, i, "a string", other)),
        }
    }

    /// A string that must be valid UTF-8.
    pub fn arg_text<'a>(&self, name: &str, args: &'a [Value], i: usize) -> R<&'a str> {
        let s = self.arg_str(name, args, i)?;
        std::str::from_utf8(s)
            .map_err(|_| self.err(ErrKind::Value, format!("{name}: {} is not valid UTF-8", ordinal(i))))
    }

    pub fn arg_list<'a>(&self, name: &str, args: &'a [Value], i: usize) -> R<&'a List> {
        match &args[i] {
            Value::List(l) => Ok(l),
            other => Err(self.type_err(name, i, "a list", other)),
        }
    }

    pub fn arg_map<'a>(&self, name: &str, args: &'a [Value], i: usize) -> R<&'a Map> {
        match &args[i] {
            Value::Map(m) => Ok(m),
            other => Err(self.type_err(name, i, "a map", other)),
        }
    }

    /// A handle argument of one of `kinds` that `is_open` says is still open: a closed
    /// handle is a `value` error, anything else a `type` error (shared by every area
    /// that owns handles: readers, sockets, databases).
    pub fn arg_handle(
        &self,
        name: &str,
        args: &[Value],
        i: usize,
        kinds: &[HandleKind],
        is_open: impl Fn(&Handle) -> bool,
    ) -> R<Handle> {
        match &args[i] {
            Value::Handle(h) if kinds.contains(&h.kind) => {
                if is_open(h) {
                    Ok(*h)
                } else {
                    Err(self.err(ErrKind::Value, format!("{name}: the {} is closed", h.kind.name())))
                }
            }
            other => {
                let want: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                Err(self.type_err(name, i, &format!("a {} handle", want.join(" or ")), other))
            }
        }
    }

    /// Optional argument: None when absent or nil.
    pub fn opt<'a>(&self, args: &'a [Value], i: usize) -> Option<&'a Value> {
        match args.get(i) {
            None | Some(Value::Nil) => None,
            Some(v) => Some(v),
        }
    }
}
