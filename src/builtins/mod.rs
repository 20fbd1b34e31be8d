//! Builtins: one file per area, each ending with its table of entries
//! (name, arity, capability, cost rule, function). The tables feed the validator
//! (names, arity, capabilities for `leash check`), the evaluator (the function pointer
//! sits in the resolved call), and `leash --builtins` (the docs' cross-check).

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::diag::ErrKind;
use crate::error::R;
use crate::value::{is_integral, Bytes, Handle, HandleKind, List, Map, Value};
pub use host::{Callbacks, Host};

pub mod bits;
pub mod codec;
pub mod collections;
pub mod core;
pub mod csv;
pub mod date;
pub mod db;
pub mod db_pg;
pub mod db_sqlfn;
pub mod env;
pub mod files;
pub mod format;
pub mod host;
pub mod http;
pub mod json;
pub mod net;
pub mod netcfg;
pub mod numbers;
pub mod rand;
pub mod re;
pub mod snapshot;
pub mod stdin;
pub mod strings;
pub mod url;
pub mod utf8;

/// A capability a builtin needs (SPEC 9): the one table is `crate::caps`.
pub use crate::caps::Cap;

/// What a builtin's generic work charge measures (SPEC 8.1): the sizes of its arguments,
/// charged before it runs, and of its result, charged after. A string counts its bytes;
/// a list or map its items (top level: the items' own contents are what the builtin's
/// own charges, for the few that look inside, add).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The base charge only.
    Const,
    /// Bytes of string arguments and result.
    Bytes,
    /// Items of list and map arguments and result (and of a place's target).
    Items,
    /// Bytes and items, each at its own rate.
    BytesItems,
    /// Sorting the list argument of n items: n * ceil(log2 n) at the item rate, and its
    /// strings' bytes times ceil(log2 n) at the byte rate (each comparison reads at most
    /// the shorter string).
    Sort,
    /// Bytes moved by I/O (arguments written, results read; the builtin charges what
    /// moves without passing through a value, like a file copy).
    Io,
    /// Only the result's bytes and items (the work is in what is produced: `slice`).
    Out,
    /// The base here; the builtin charges its own measure (documented with it) through
    /// `Host::work` at its rates, before the work where the size is known in advance
    /// (`repeat`, `range`, `join`), as it goes otherwise.
    Custom,
}

/// A builtin's cost rule: `base + byte_rate * bytes + item_rate * items` work units,
/// the sizes measured as its `rule` says. Rates are kept in 1/256 units, so that a rate
/// below one unit (a memchr scan) is exact integer arithmetic; every charge is
/// deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    pub rule: Rule,
    pub base: u32,
    pub byte_x256: u32,
    pub item_x256: u32,
}

/// Sorting: each string item counts this many bytes more than its length, for the cost
/// of a string comparison beyond its bytes (calibrated with short strings).
pub const SORT_STRING_BYTES: u64 = 24;

/// Work charged by every builtin call besides its rule (about what a call of a cheap
/// builtin costs beyond the line's step).
pub const CALL_WORK: u32 = 20;

/// The rule of constant-time builtins: the call's base only.
pub const CONST: Cost = Cost::konst(CALL_WORK);

const fn x256(r: f64) -> u32 {
    (r * 256.0) as u32
}

impl Cost {
    pub const fn new(rule: Rule, base: u32, byte: f64, item: f64) -> Cost {
        Cost { rule, base, byte_x256: x256(byte), item_x256: x256(item) }
    }
    /// Constant work: the call's base.
    pub const fn konst(base: u32) -> Cost {
        Cost::new(Rule::Const, base, 0.0, 0.0)
    }
    pub const fn bytes(byte: f64) -> Cost {
        Cost::new(Rule::Bytes, CALL_WORK, byte, 0.0)
    }
    pub const fn items(item: f64) -> Cost {
        Cost::new(Rule::Items, CALL_WORK, 0.0, item)
    }
    pub const fn bytes_items(byte: f64, item: f64) -> Cost {
        Cost::new(Rule::BytesItems, CALL_WORK, byte, item)
    }
    pub const fn sort(byte: f64, item: f64) -> Cost {
        Cost::new(Rule::Sort, CALL_WORK, byte, item)
    }
    pub const fn io(byte: f64) -> Cost {
        Cost::new(Rule::Io, CALL_WORK, byte, 0.0)
    }
    pub const fn out(byte: f64, item: f64) -> Cost {
        Cost::new(Rule::Out, CALL_WORK, byte, item)
    }
    pub const fn custom(byte: f64, item: f64) -> Cost {
        Cost::new(Rule::Custom, CALL_WORK, byte, item)
    }

    pub fn name(self) -> &'static str {
        match self.rule {
            Rule::Const => "const",
            Rule::Bytes => "bytes",
            Rule::Items => "items",
            Rule::BytesItems => "bytes+items",
            Rule::Sort => "sort",
            Rule::Io => "io",
            Rule::Out => "out",
            Rule::Custom => "custom",
        }
    }

    /// The rule with its constants, as `leash --builtins` and UTILITIES.md show it:
    /// `bytes: 20 + 0.5/byte`.
    pub fn describe(self) -> String {
        let rate = |x: u32| {
            let r = x as f64 / 256.0;
            let mut t = format!("{r:.3}");
            while t.ends_with('0') {
                t.pop();
            }
            if t.ends_with('.') {
                t.pop();
            }
            t
        };
        let mut s = format!("{}: {}", self.name(), self.base);
        let (byte, item) = match self.rule {
            Rule::Sort => ("/byte*log2(n)", "/item*log2(n)"),
            _ => ("/byte", "/item"),
        };
        if self.byte_x256 > 0 {
            s.push_str(&format!(" + {}{byte}", rate(self.byte_x256)));
        }
        if self.item_x256 > 0 {
            s.push_str(&format!(" + {}{item}", rate(self.item_x256)));
        }
        s
    }
}

/// The size of one value as the generic charge measures it: (bytes, items).
#[inline]
fn measure(v: &Value) -> (u64, u64) {
    match v {
        Value::Str(s) => (s.len() as u64, 0),
        Value::List(l) => (0, l.len() as u64),
        Value::Map(m) => (0, m.len() as u64),
        _ => (0, 0),
    }
}

/// Whether `measure` may find a size in `v` (a string, a list or a map): any other
/// value measures (0, 0), and a rate times nothing is nothing.
#[inline(always)]
pub fn sized(v: &Value) -> bool {
    matches!(v, Value::Str(_) | Value::List(_) | Value::Map(_))
}

/// ceil(log2 n), at least 1.
fn log2_ceil(n: u64) -> u64 {
    (64 - n.saturating_sub(1).leading_zeros() as u64).max(1)
}

impl Cost {
    /// `byte_rate * bytes + item_rate * items`, rounded up (what `Custom` builtins charge).
    #[inline]
    pub fn units(self, bytes: u64, items: u64) -> u64 {
        crate::meter::scaled(bytes, self.byte_x256).saturating_add(crate::meter::scaled(items, self.item_x256))
    }

    /// Work charged before the builtin runs: its base and its arguments' sizes.
    #[inline(always)]
    pub fn before(self, args: &[Value]) -> u64 {
        match self.rule {
            Rule::Const | Rule::Custom | Rule::Out => self.base as u64,
            // Arguments that all measure nothing (numbers, booleans, nil: `min(i, 5)`)
            // add nothing to the base, told here without the call (`sort` too: it
            // measures its first argument when that is a list).
            _ if !args.iter().any(sized) => self.base as u64,
            _ => self.before_sized(args),
        }
    }

    #[inline(never)]
    fn before_sized(self, args: &[Value]) -> u64 {
        let base = self.base as u64;
        if self.rule == Rule::Sort {
            let Some(Value::List(l)) = args.first() else { return base };
            let n = l.len() as u64;
            let log = log2_ceil(n);
            let bytes: u64 = l
                .items()
                .iter()
                .map(|v| match v {
                    Value::Str(s) => s.len() as u64 + SORT_STRING_BYTES,
                    _ => 0,
                })
                .sum();
            return base.saturating_add(self.units(bytes.saturating_mul(log), n.saturating_mul(log)));
        }
        let (mut bytes, mut items) = (0, 0);
        for a in args {
            let (b, i) = measure(a);
            bytes += b;
            items += i;
        }
        base.saturating_add(self.units(bytes, items))
    }

    /// Whether the rule also measures a place builtin's target (`insert`, `remove`: the
    /// items they shift).
    #[inline(always)]
    pub fn measures_target(self) -> bool {
        self.rule == Rule::Items
    }

    /// Work for a place builtin's target.
    pub fn target(self, target: &Value) -> u64 {
        let (b, i) = measure(target);
        self.units(b, i)
    }

    /// Whether the rule measures the result.
    #[inline(always)]
    pub fn measures_result(self) -> bool {
        !matches!(self.rule, Rule::Const | Rule::Sort | Rule::Custom)
    }

    /// Work charged after the builtin returned: its result's size.
    #[inline(never)]
    pub fn after(self, result: &Value) -> u64 {
        let (b, i) = measure(result);
        self.units(b, i)
    }
}

/// A builtin: the host (what it may touch) and its arguments.
pub type PlainFn = fn(&mut Host, &mut [Value]) -> R<Value>;
/// A place builtin: the host, its place (changed in place) and its other arguments.
pub type PlaceFn = fn(&mut Host, &mut Value, &mut [Value]) -> R<Value>;
/// A builtin that calls user functions (it has a function parameter): the host and the
/// call, through `Callbacks`.
pub type CallsFn = fn(&mut dyn Callbacks, &mut [Value]) -> R<Value>;

#[derive(Clone, Copy)]
pub enum Imp {
    Plain(PlainFn),
    /// The first argument is a place, changed in place; the function receives it apart.
    Place(PlaceFn),
    /// It calls user functions (`map`, `sort` with a function, `re.replace` with one).
    Calls(CallsFn),
}

impl std::fmt::Debug for Imp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Imp::Plain(_) => write!(f, "Plain"),
            Imp::Place(_) => write!(f, "Place"),
            Imp::Calls(_) => write!(f, "Calls"),
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
    /// The parameter that takes a function argument (SPEC 10, "Function arguments"),
    /// if any: resolved at load to a user function of the arity the builtin calls it with.
    pub fnp: Option<FnParam>,
    /// A look at borrowed arguments that answers the common case without a call: no
    /// argument copied, nothing allocated. It answers only where the call would charge
    /// its constant work and nothing else, fail nothing and change nothing (None: make
    /// the call, which also says what is wrong); set only on ungated entries with a
    /// constant cost rule, or with a rule that measures only strings, lists and maps
    /// when the peek answers for numbers alone (`min`, `max`: their charge for
    /// numbers is the base) (checked by a unit test). The compiled core uses it.
    pub peek: Option<PeekFn>,
    /// A place builtin's change of a list that its variable alone holds, made on the
    /// list itself (`push(xs, v)`, `pop(xs)` on a variable, no key): no walk of the
    /// place, no measure of the target before and after through `Value`, no call
    /// through the place functions. It answers only where the call would charge its
    /// constant work and the list's storage change and nothing else, and fail nothing
    /// (None, with nothing changed: the call is made, which also says what is wrong);
    /// set only on place entries with a constant cost rule (checked by a unit test).
    /// The compiled core uses it.
    pub fast: Option<ListFast>,
}

/// A builtin's `peek` (see `Builtin::peek`).
pub type PeekFn = fn(&[&Value]) -> Option<Value>;

/// A place builtin's `fast` change (see `Builtin::fast`). An enum, not a function
/// pointer: the change is inlined where the compiled core makes it (through a pointer,
/// `List::push` stayed a call of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFast {
    Push,
    Pop,
}

impl ListFast {
    /// The change of list `l` (not shared) with the arguments after the place (taken by
    /// it), within the host's limits: its result, or None with nothing changed.
    #[inline(always)]
    pub fn apply(self, host: &Host, l: &mut List, args: &mut [Value]) -> Option<Value> {
        match self {
            ListFast::Push => collections::push_fast(host, l, args),
            ListFast::Pop => l.pop(),
        }
    }
}

/// A builtin's function parameter: where it stands, how many arguments the builtin
/// passes each time it calls it, and whether the position takes only a function (`map`'s
/// second argument) or a value or a function (`sort_by`'s key, `re.replace`'s third:
/// there a bare name that names a user function is the function, anything else a value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FnParam {
    /// 0-based argument position.
    pub pos: u8,
    /// The number of arguments the builtin calls it with.
    pub arity: u8,
    /// Only a function is accepted here (else a value is too).
    pub only: bool,
}

/// A function argument at run time, as `Callbacks::call` takes it: a named user
/// function (its index), or an anonymous function of a builtin call running now (its
/// entry in the evaluator's table of them: its synthetic function and captured values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FnRef {
    Named(usize),
    Lambda(usize),
}

/// A function argument at run time: what resolve.rs put at an FN position, carried as a
/// handle that no script can see or keep (it exists only in a builtin's argument list).
pub fn fn_arg(v: &Value) -> Option<FnRef> {
    match v {
        Value::Handle(Handle { kind: HandleKind::Function, id }) => Some(FnRef::Named(*id as usize)),
        Value::Handle(Handle { kind: HandleKind::Lambda, id }) => Some(FnRef::Lambda(*id as usize)),
        _ => None,
    }
}

impl Builtin {
    /// This entry with a function parameter at `pos`, called with `arity` arguments;
    /// `only`: nothing but a function is accepted there.
    pub const fn with_fn(mut self, pos: u8, arity: u8, only: bool) -> Builtin {
        self.fnp = Some(FnParam { pos, arity, only });
        self
    }

    /// This entry with a `peek`.
    pub const fn with_peek(mut self, f: PeekFn) -> Builtin {
        self.peek = Some(f);
        self
    }

    /// This place entry with a `fast` change of an unshared list.
    pub const fn with_fast(mut self, f: ListFast) -> Builtin {
        self.fast = Some(f);
        self
    }

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
    Builtin { name, sig, min, max, cap: None, cost, imp: Imp::Plain(f), fnp: None, peek: None, fast: None }
}

/// Build a table entry for a builtin that calls user functions; `with_fn` then says
/// where its function parameter is.
pub const fn calls(name: &'static str, sig: &'static str, min: u8, max: u8, cost: Cost, f: CallsFn) -> Builtin {
    Builtin { name, sig, min, max, cap: None, cost, imp: Imp::Calls(f), fnp: None, peek: None, fast: None }
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
    Builtin { name, sig, min, max, cap: Some(cap), cost, imp: Imp::Plain(f), fnp: None, peek: None, fast: None }
}

/// Build a table entry whose first argument is a place.
pub const fn place(name: &'static str, sig: &'static str, min: u8, max: u8, cost: Cost, f: PlaceFn) -> Builtin {
    Builtin { name, sig, min, max, cap: None, cost, imp: Imp::Place(f), fnp: None, peek: None, fast: None }
}

/// Every area's table.
pub fn tables() -> [&'static [Builtin]; 20] {
    [
        core::TABLE,
        collections::TABLE,
        strings::TABLE,
        format::TABLE,
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
        bits::TABLE,
        utf8::TABLE,
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
    "http", "net", "db", "bit", "utf8",
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

/// The user function at argument `i` (a function parameter: resolve.rs put one there).
pub fn fn_at(cx: &mut dyn Callbacks, name: &str, args: &[Value], i: usize) -> R<FnRef> {
    match args.get(i).and_then(fn_arg) {
        Some(f) if cx.callable(f) => Ok(f),
        _ => Err(cx.host().err(ErrKind::Type, format!("{name}: {} must be a function", ordinal(i)))),
    }
}

impl Host {
    pub fn type_err(&self, name: &str, i: usize, want: &str, got: &Value) -> crate::error::Fail {
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

#[cfg(test)]
mod peek_tests {
    use super::*;

    /// A peek skips the capability check, the audit line and every cost rule but the
    /// constant one: only ungated, plain entries may have one, with a constant cost,
    /// or with a rule that measures only strings, lists and maps and a peek that
    /// answers for numbers alone (where that rule charges its base).
    #[test]
    fn peeks_only_on_ungated_constant_cost_entries() {
        let mut n = 0;
        let (num, s) = (Value::Num(2.0), Value::string("a"));
        let l = Value::List(std::rc::Rc::new(List::from_vec(vec![Value::Num(1.0), Value::Num(3.0)])));
        for b in all() {
            if let Some(peek) = b.peek {
                n += 1;
                assert!(b.cap.is_none(), "{} is gated", b.name);
                assert!(matches!(b.imp, Imp::Plain(_)), "{} is a place builtin", b.name);
                assert!(b.fnp.is_none(), "{} takes a function", b.name);
                if b.cost.rule == Rule::Const {
                    assert!(!b.cost.measures_result(), "{}'s cost is not constant", b.name);
                    continue;
                }
                assert!(matches!(b.cost.rule, Rule::Items | Rule::Bytes | Rule::BytesItems), "{}'s rule", b.name);
                for args in [&[&l][..], &[&s][..], &[&num, &s], &[&s, &num], &[&num, &l], &[&num, &num, &s]] {
                    assert!(peek(args).is_none(), "{} peeks at a sized argument", b.name);
                }
                let nums = [Value::Num(1.0), Value::Num(2.0), Value::Num(3.0)];
                // (Its result is not measured after the call either: not sized.)
                let r = peek(&[&nums[0], &nums[1]]).unwrap_or_else(|| panic!("{} does not peek at numbers", b.name));
                assert!(!sized(&r), "{}'s result would be measured", b.name);
                assert_eq!(b.cost.before(&nums), b.cost.before(&[]), "{} charges numbers more than its base", b.name);
            }
        }
        assert!(n >= 17, "len, get, min, max and the number builtins have peeks");
    }

    /// A `fast` change charges the constant work and the list's storage change, and
    /// skips the rest of the place call: only ungated place entries with a constant
    /// cost rule may have one.
    #[test]
    fn fast_changes_only_on_constant_cost_place_entries() {
        let mut n = 0;
        for b in all() {
            if b.fast.is_some() {
                n += 1;
                assert!(b.cap.is_none(), "{} is gated", b.name);
                assert!(b.is_place(), "{} is not a place builtin", b.name);
                assert!(b.cost.rule == Rule::Const, "{}'s cost is not constant", b.name);
                assert!(!b.cost.measures_result() && !b.cost.measures_target(), "{} measures", b.name);
                assert!(b.max <= 2, "{} takes more than one argument after its place", b.name);
            }
        }
        assert_eq!(n, 2, "push and pop have fast changes");
    }
}

#[cfg(test)]
mod cost_tests {
    use super::*;

    /// `before` and `builtin_vals` skip the measure of values that are not `sized`:
    /// that is only right while those measure nothing, and a rate times nothing is 0.
    #[test]
    fn values_not_sized_measure_nothing() {
        let vals = [
            Value::Nil,
            Value::Bool(true),
            Value::Num(2.5),
            Value::Num(f64::NAN),
            Value::str(b"ab".to_vec()),
            Value::list(vec![Value::Num(1.0)]),
            Value::map(crate::value::Map::new()),
        ];
        for v in &vals {
            if !sized(v) {
                assert_eq!(measure(v), (0, 0), "{}", v.type_name());
            }
        }
        assert!(vals.iter().filter(|v| sized(v)).count() == 3);
        for b in all() {
            let c = b.cost;
            assert_eq!(c.units(0, 0), 0, "{}", b.name);
            assert_eq!(c.after(&Value::Num(1.0)), 0, "{}", b.name);
            let plain = [Value::Num(1.0), Value::Nil];
            assert_eq!(c.before(&plain), c.before_sized(&plain), "{}", b.name);
            assert_eq!(c.before(&[]), c.base as u64, "{}", b.name);
        }
    }
}
