//! Collection builtins: length, keys and values, in-place changes (`push`, `pop`,
//! `insert`, `remove` take a place), slicing, sorting, searching, ranges, sums,
//! joining and splitting.

use std::cmp::Ordering;
use std::rc::Rc;

use super::host::find_bytes;
use super::Host;
use super::{b, calls, fn_arg, place, Builtin, Callbacks, Cost, ListFast, CONST, SORT_STRING_BYTES, VARIADIC};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;

fn len(it: &mut Host, args: &mut [Value]) -> R<Value> {
    len_peek(&[&args[0]]).ok_or_else(|| it.type_err("len", 0, "a string, list or map", &args[0]))
}

/// `len`'s peek: the length of a string, list or map.
fn len_peek(args: &[&Value]) -> Option<Value> {
    let n = match args.first()? {
        Value::Str(s) => s.len(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.len(),
        _ => return None,
    };
    Some(Value::Num(n as f64))
}

/// `get`'s peek: a map and a key short enough to cost nothing beyond the call's
/// constant work (`key_work`), the value or the default.
fn get_peek(args: &[&Value]) -> Option<Value> {
    match args {
        [Value::Map(m), Value::Str(k), rest @ ..] if k.len() <= crate::limits::KEY_FREE_BYTES => {
            Some(lookup_or(m, k, rest.first().copied()))
        }
        _ => None,
    }
}

/// The value of `k` in `m`, else the default (nil when there is none).
fn lookup_or(m: &Map, k: &[u8], default: Option<&Value>) -> Value {
    match m.get(k) {
        Some(v) => v.clone(),
        None => default.cloned().unwrap_or(Value::Nil),
    }
}

fn keys(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let m = it.arg_map("keys", args, 0)?;
    it.room(m.len().saturating_mul(ACCT_SLOT))?;
    let items = m.keys().map(|k| Value::Str(k.clone())).collect();
    it.make_list(items)
}

fn values(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let m = it.arg_map("values", args, 0)?;
    it.room(m.len().saturating_mul(ACCT_SLOT))?;
    let items = m.values().cloned().collect();
    it.make_list(items)
}

fn get(it: &mut Host, args: &mut [Value]) -> R<Value> {
    fn default(args: &mut [Value]) -> Value {
        args.get_mut(2).map(std::mem::take).unwrap_or(Value::Nil)
    }
    match &args[0] {
        Value::Map(_) => {
            let k = it.arg_str("get", args, 1)?;
            it.work(super::host::key_work(k.len()))?;
            let Value::Map(m) = &args[0] else { unreachable!("matched above") };
            let k = it.arg_str("get", args, 1)?;
            Ok(lookup_or(m, k, args.get(2)))
        }
        Value::List(l) => {
            let n = it.arg_num("get", args, 1)?;
            if !is_integral(n) {
                return Err(it.err(ErrKind::Value, "get: a list index must be an integer"));
            }
            let i = if n < 0.0 { n + l.len() as f64 } else { n };
            if i < 0.0 || i >= l.len() as f64 {
                return Ok(default(args));
            }
            Ok(l.items()[i as usize].clone())
        }
        other => Err(it.type_err("get", 0, "a map or list", other)),
    }
}

fn target_list<'a>(it: &Host, name: &str, target: &'a mut Value) -> R<&'a mut Rc<List>> {
    match target {
        Value::List(l) => Ok(l),
        other => Err(it.type_err(name, 0, "a list", other)),
    }
}

/// `f` on list `l` to change it (its copy charged first, `Host::cow`): an unshared list
/// where it is, inline; a shared one copied by `Rc::make_mut` (an out-of-line call that
/// was a tenth of `push`'s instructions when made for every list).
#[inline(always)]
fn with_list<T>(l: &mut Rc<List>, f: impl FnOnce(&mut List) -> T) -> T {
    match Rc::get_mut(l) {
        Some(l) => f(l),
        None => f(Rc::make_mut(l)),
    }
}

fn push(it: &mut Host, target: &mut Value, args: &mut [Value]) -> R<Value> {
    let l = target_list(it, "push", target)?;
    it.check_list_len(l.len() + 1)?;
    let v = std::mem::take(&mut args[0]);
    it.cow(l)?;
    with_list(l, |l| l.push(v));
    Ok(Value::Nil)
}

/// `push`'s change of an unshared list (`Builtin::fast`): None at the list limit.
#[inline(always)]
pub(super) fn push_fast(it: &Host, l: &mut List, args: &mut [Value]) -> Option<Value> {
    if l.len() + 1 > it.lim.n(L::List) {
        return None;
    }
    l.push(std::mem::take(args.first_mut()?));
    Some(Value::Nil)
}

fn pop(it: &mut Host, target: &mut Value, _: &mut [Value]) -> R<Value> {
    let l = target_list(it, "pop", target)?;
    if l.is_empty() {
        return Err(it.err(ErrKind::Index, "pop: the list is empty"));
    }
    it.cow(l)?;
    Ok(with_list(l, List::pop).unwrap_or(Value::Nil))
}

fn insert(it: &mut Host, target: &mut Value, args: &mut [Value]) -> R<Value> {
    let n = it.arg_num("insert", args, 0)?;
    let l = target_list(it, "insert", target)?;
    let len = l.len() as f64;
    if !is_integral(n) {
        return Err(it.err(ErrKind::Value, "insert: the index must be an integer"));
    }
    let i = if n < 0.0 { n + len } else { n };
    if i < 0.0 || i > len {
        return Err(it.err(ErrKind::Index, format!("insert: index {} out of range for length {len}", num_to_string(n))));
    }
    it.check_list_len(l.len() + 1)?;
    let v = std::mem::take(&mut args[1]);
    it.cow(l)?;
    with_list(l, |l| l.insert(i as usize, v));
    Ok(Value::Nil)
}

fn remove(it: &mut Host, target: &mut Value, args: &mut [Value]) -> R<Value> {
    match target {
        Value::List(l) => {
            let i = it.index(&args[0], l.len())?;
            it.cow(l)?;
            Ok(with_list(l, |l| l.remove(i)))
        }
        Value::Map(m) => {
            let k = it.arg_str("remove", args, 0)?;
            if !m.contains(k) {
                return Err(it.err(ErrKind::Key, format!("remove: key {} not found", crate::diag::quoted(k))));
            }
            it.cow(m)?;
            Ok(m.remove(k).unwrap_or(Value::Nil))
        }
        other => Err(it.type_err("remove", 0, "a list or map", other)),
    }
}

/// Clamp a slice bound: integral, negative counts from the end.
fn bound(it: &Host, name: &str, args: &[Value], i: usize, len: usize, default: usize) -> R<usize> {
    let Some(_) = it.opt(args, i) else { return Ok(default) };
    let n = it.arg_num(name, args, i)?;
    if !is_integral(n) {
        return Err(it.err(ErrKind::Value, format!("{name}: argument {} must be an integer", i + 1)));
    }
    let v = if n < 0.0 { n + len as f64 } else { n };
    Ok(v.clamp(0.0, len as f64) as usize)
}

fn slice(it: &mut Host, args: &mut [Value]) -> R<Value> {
    match &args[0] {
        Value::List(l) => {
            let (s, e) = (bound(it, "slice", args, 1, l.len(), 0)?, bound(it, "slice", args, 2, l.len(), l.len())?);
            it.room(e.saturating_sub(s) * ACCT_SLOT)?;
            let items = if s < e { l.items()[s..e].to_vec() } else { vec![] };
            it.make_list(items)
        }
        Value::Str(t) => {
            let (s, e) = (bound(it, "slice", args, 1, t.len(), 0)?, bound(it, "slice", args, 2, t.len(), t.len())?);
            it.room(e.saturating_sub(s))?;
            // (Copied straight into the string: a short one is written into its box,
            // where a vector first was allocated and freed besides.)
            Ok(Value::str_from(if s < e { &t[s..e] } else { &[] }))
        }
        other => Err(it.type_err("slice", 0, "a list or string", other)),
    }
}

/// A sort's look at the deadline: every `LONG_OP_CHECK_ITEMS` comparisons; once it has
/// passed, every comparison says "equal" so the sort finishes at once (its result is then
/// thrown away for the `time` limit).
struct SortDeadline {
    deadline: Option<std::time::Instant>,
    n: usize,
    passed: bool,
}

impl SortDeadline {
    fn new(deadline: Option<std::time::Instant>) -> Self {
        SortDeadline { deadline, n: 0, passed: false }
    }

    #[inline]
    fn cmp(&mut self, f: impl FnOnce() -> Option<Ordering>) -> Ordering {
        if self.passed {
            return Ordering::Equal;
        }
        self.n += 1;
        if self.n.is_multiple_of(LONG_OP_CHECK_ITEMS) && crate::meter::past(self.deadline) {
            self.passed = true;
            return Ordering::Equal;
        }
        f().unwrap_or(Ordering::Equal)
    }
}

/// Order two sort keys: numbers numerically, strings bytewise, nothing else.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Num(x), Value::Num(y)) => x.partial_cmp(y),
        (Value::Str(x), Value::Str(y)) => Some(x.as_slice().cmp(y.as_slice())),
        _ => None,
    }
}

/// Check that sort keys are all numbers or all strings.
/// (The keys are walked where they are: gathered into a vector of references first,
/// a sort of ten million items held 80 MB more for the check alone.)
fn sortable<'a>(it: &Host, name: &str, mut keys: impl Iterator<Item = &'a Value>) -> R<()> {
    let Some(first) = keys.next() else { return Ok(()) };
    let kind = first.type_name();
    if !matches!(first, Value::Num(_) | Value::Str(_)) {
        return Err(it.err(ErrKind::Type, format!("{name}: can sort numbers or strings, not {kind}")));
    }
    if let Some(bad) = keys.find(|k| k.type_name() != kind) {
        return Err(it.err(ErrKind::Type, format!("{name}: cannot sort a mix of {kind} and {}", bad.type_name())));
    }
    Ok(())
}

fn sort(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    if let Some(fi) = args.get(1).and_then(fn_arg) {
        return sort_fn(cx, args, fi);
    }
    sort_plain(cx.host(), args)
}

fn sort_plain(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let l = it.arg_list("sort", args, 0)?;
    // (Room for the copy a shared list is sorted into: one the call alone holds is
    // sorted in place.)
    if matches!(&args[0], Value::List(rc) if Rc::strong_count(rc) > 1) {
        it.room(l.len().saturating_mul(ACCT_SLOT))?;
    }
    sortable(it, "sort", l.items().iter())?;
    let mut items = match std::mem::take(&mut args[0]) {
        Value::List(rc) => Rc::try_unwrap(rc).map(List::into_vec).unwrap_or_else(|rc| rc.items().to_vec()),
        _ => unreachable!(),
    };
    let mut tick = SortDeadline::new(it.meter.deadline);
    items.sort_by(|a, b| tick.cmp(|| order(a, b)));
    it.check_time()?;
    it.make_list(items)
}

fn sort_by(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    if let Some(fi) = fn_arg(&args[1]) {
        return sort_by_fn(cx, args, fi);
    }
    let it = cx.host();
    let key = it.arg_str("sort_by", args, 1)?.clone();
    let l = it.arg_list("sort_by", args, 0)?;
    it.room(l.len().saturating_mul(2 * ACCT_SLOT))?;
    let mut keyed = Vec::with_capacity(l.len());
    for item in l.items() {
        let Value::Map(m) = item else {
            return Err(it.err(ErrKind::Type, format!("sort_by: items must be maps, got {}", item.type_name())));
        };
        let Some(k) = m.get(&key) else {
            return Err(it.err(ErrKind::Key, format!("sort_by: an item has no key {}", crate::diag::quoted(&key))));
        };
        keyed.push((k.clone(), item.clone()));
    }
    sort_keyed(it, keyed)
}

/// Sort (key, item) pairs by their keys (numbers or strings, not a mix), stable. The
/// keys' string bytes are charged as `sort` charges its strings' (the cost rule's byte
/// rate, times ceil(log2 n)).
fn sort_keyed(it: &mut Host, mut keyed: Vec<(Value, Value)>) -> R<Value> {
    sortable(it, "sort_by", keyed.iter().map(|(k, _)| k))?;
    let bytes: u64 = keyed
        .iter()
        .map(|(k, _)| match k {
            Value::Str(s) => s.len() as u64 + SORT_STRING_BYTES,
            _ => 0,
        })
        .sum();
    if bytes > 0 {
        let log = (usize::BITS - keyed.len().saturating_sub(1).leading_zeros()).max(1) as u64;
        it.work(SORT_BY.units(bytes.saturating_mul(log), 0))?;
    }
    let mut tick = SortDeadline::new(it.meter.deadline);
    keyed.sort_by(|a, b| tick.cmp(|| order(&a.0, &b.0)));
    it.check_time()?;
    it.make_list(keyed.into_iter().map(|(_, v)| v).collect())
}

// ----------------------------------------------------------------------
// Function arguments (SPEC 10): each call of the function is an ordinary call
// (`Callbacks::call`: call depth, steps of its lines, work, storage), and its failure
// (an error, a `throw`, a limit, `exit`) ends the builtin with that failure unchanged.
// ----------------------------------------------------------------------

/// A stable bottom-up merge sort of the indices `0..n` by `before(a, b)` ("a must come
/// before b"), which may fail: the first failure ends the sort. Whatever `before`
/// answers, even inconsistently, it is asked at most n * ceil(log2 n) times (each pass
/// merges runs with at most n - 1 questions, over ceil(log2 n) passes) and the result is
/// a permutation of the indices: the order is the merge sort's with the answers given.
/// (std's sort is not used here: with an inconsistent comparison it may panic.)
pub(crate) fn merge_sort(n: usize, mut before: impl FnMut(usize, usize) -> R<bool>) -> R<Vec<u32>> {
    let mut a: Vec<u32> = (0..n as u32).collect();
    let mut b = vec![0u32; n];
    let mut width = 1;
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut i, mut j, mut k) = (lo, mid, lo);
            while i < mid && j < hi {
                // The right item goes first only when it must: equal items keep their order.
                if before(a[j] as usize, a[i] as usize)? {
                    b[k] = a[j];
                    j += 1;
                } else {
                    b[k] = a[i];
                    i += 1;
                }
                k += 1;
            }
            b[k..k + (mid - i)].copy_from_slice(&a[i..mid]);
            k += mid - i;
            b[k..hi].copy_from_slice(&a[j..hi]);
            lo = hi;
        }
        std::mem::swap(&mut a, &mut b);
        width *= 2;
    }
    Ok(a)
}

/// The items of list argument 0 (shared: the function receives copies, copy-on-write,
/// and cannot change the list being worked on).
fn items_of(it: &Host, name: &str, args: &[Value]) -> R<Rc<List>> {
    it.arg_list(name, args, 0)?;
    match &args[0] {
        Value::List(l) => Ok(l.clone()),
        _ => unreachable!("checked by arg_list"),
    }
}

/// `sort(list, before)`: `before(a, b)` is truthy when a must come before b.
fn sort_fn(cx: &mut dyn Callbacks, args: &mut [Value], fi: super::FnRef) -> R<Value> {
    let l = items_of(cx.host(), "sort", args)?;
    // (The merge sort's two index vectors, and the sorted list.)
    cx.host().room(l.len().saturating_mul(ACCT_SLOT + 8))?;
    let items = l.items();
    let order = merge_sort(items.len(), |a, b| Ok(cx.call(fi, &mut [items[a].clone(), items[b].clone()])?.truthy()))?;
    cx.host().make_list(order.into_iter().map(|i| items[i as usize].clone()).collect())
}

/// `sort_by(list, key_fn)`: each item's key computed once, then sorted as `sort_by`'s
/// map keys are.
fn sort_by_fn(cx: &mut dyn Callbacks, args: &mut [Value], fi: super::FnRef) -> R<Value> {
    let l = items_of(cx.host(), "sort_by", args)?;
    cx.host().room(l.len().saturating_mul(2 * ACCT_SLOT))?;
    let mut keyed = Vec::with_capacity(l.len());
    for item in l.items() {
        let k = cx.call(fi, &mut [item.clone()])?;
        keyed.push((k, item.clone()));
    }
    sort_keyed(cx.host(), keyed)
}

/// Items gathered for a result list, its accounted size checked as it grows, so that a
/// function returning big values fails at the frame limit before holding much more.
struct Gather {
    items: Vec<Value>,
    acct: usize,
}

impl Gather {
    fn new(n: usize) -> Self {
        Gather { items: Vec::with_capacity(n), acct: 0 }
    }

    fn push(&mut self, it: &Host, v: Value) -> R<()> {
        self.acct += v.acct();
        if self.acct > it.lim.n(L::FrameStorage) {
            return Err(it.limit(
                LimitKind::FrameStorage,
                format!(
                    "a value of more than {} accounted bytes exceeds the frame limit of {}",
                    self.acct,
                    it.lim.n(L::FrameStorage)
                ),
            ));
        }
        self.items.push(v);
        Ok(())
    }
}

/// `map(list, fn)`: a new list of fn(item) for each item.
fn map(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    let l = items_of(cx.host(), "map", args)?;
    let fi = super::fn_at(cx, "map", args, 1)?;
    let mut out = Gather::new(l.len());
    for item in l.items() {
        let v = cx.call(fi, &mut [item.clone()])?;
        out.push(cx.host(), v)?;
    }
    cx.host().make_list(out.items)
}

/// `filter(list, fn)`: the items for which fn(item) is truthy, in order.
fn filter(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    let l = items_of(cx.host(), "filter", args)?;
    let fi = super::fn_at(cx, "filter", args, 1)?;
    let mut out = Vec::new();
    for item in l.items() {
        if cx.call(fi, &mut [item.clone()])?.truthy() {
            out.push(item.clone());
        }
    }
    cx.host().make_list(out)
}

/// `reduce(list, fn, init)`: acc = init, then acc = fn(acc, item) for each item. The
/// accumulator is moved into each call, so a function that pushes onto it and returns
/// it does not copy it.
fn reduce(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    let l = items_of(cx.host(), "reduce", args)?;
    let fi = super::fn_at(cx, "reduce", args, 1)?;
    let mut acc = std::mem::take(&mut args[2]);
    for item in l.items() {
        acc = cx.call(fi, &mut [acc, item.clone()])?;
    }
    Ok(acc)
}

/// `any`, `all`, `count`: how many items fn(item) is truthy for; `any` stops at the
/// first truthy answer, `all` at the first falsy one.
fn tally(cx: &mut dyn Callbacks, name: &str, args: &[Value], stop_at: Option<bool>) -> R<(usize, bool)> {
    let l = items_of(cx.host(), name, args)?;
    let fi = super::fn_at(cx, name, args, 1)?;
    let mut n = 0;
    for item in l.items() {
        let t = cx.call(fi, &mut [item.clone()])?.truthy();
        n += t as usize;
        if stop_at == Some(t) {
            return Ok((n, true));
        }
    }
    Ok((n, false))
}

fn any(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    Ok(Value::Bool(tally(cx, "any", args, Some(true))?.1))
}

fn all(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    Ok(Value::Bool(!tally(cx, "all", args, Some(false))?.1))
}

/// `count(list, FN)`, or `count(s, sub)` when the first argument is a string.
fn count(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    if let Value::Str(_) = &args[0] {
        return super::strings::count_sub(cx.host(), args);
    }
    if !matches!(&args[0], Value::List(_)) {
        return Err(cx.host().type_err("count", 0, "a list or a string", &args[0]));
    }
    Ok(Value::Num(tally(cx, "count", args, None)?.0 as f64))
}

// ----------------------------------------------------------------------
// Round 3: repeat(list, n), concat, extend. Each charges the items it produces before
// producing them (their number is known), at REPEAT's item rate.
// ----------------------------------------------------------------------

/// `repeat(list, n)`: the items n times (`repeat([0], 1000)`).
pub(crate) fn repeat_list(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let n = it.arg_int("repeat", args, 1, 0.0, 9_007_199_254_740_991.0)? as u64;
    let l = it.arg_list("repeat", args, 0)?;
    let total = (l.len() as u64).saturating_mul(n);
    if total > it.lim.n(L::List) as u64 {
        return Err(it.limit(
            LimitKind::List,
            format!("list of more than {max_list_items} items", max_list_items = it.lim.n(L::List)),
        ));
    }
    it.room((total as usize).saturating_mul(ACCT_SLOT))?;
    let l = l.clone();
    it.work(super::strings::REPEAT.units(0, total))?;
    let mut items = Vec::with_capacity(total as usize);
    // An empty list repeated is empty at once: its `n` is bounded by no limit (the
    // total is 0), and `repeat([], 2^53 - 1)` counted it out (a hang past
    // `--max-time`, found by the `eval` fuzz target). A non-empty one's `n` is at most
    // the total, which the list limit bounds.
    if !l.is_empty() {
        for _ in 0..n {
            items.extend_from_slice(l.items());
        }
    }
    it.make_list(items)
}

/// concat: the items of the new list, charged before it is built.
const CONCAT: Cost = Cost::custom(0.0, 5.0);

/// extend: the items appended.
const EXTEND: Cost = Cost::custom(0.0, 4.0);

/// `concat(list, list, ...)`: a new list of every argument's items, in order.
fn concat(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let mut total = 0usize;
    for i in 0..args.len() {
        total += it.arg_list("concat", args, i)?.len();
    }
    it.list_room(total, total)?;
    it.work(CONCAT.units(0, total as u64))?;
    let mut items = Vec::with_capacity(total);
    for a in args.iter() {
        if let Value::List(l) = a {
            items.extend_from_slice(l.items());
        }
    }
    it.make_list(items)
}

/// `extend(PLACE, list)`: append every item of the list in place (`push` for each).
fn extend(it: &mut Host, target: &mut Value, args: &mut [Value]) -> R<Value> {
    let add = match &args[0] {
        Value::List(l) => l.clone(),
        other => return Err(it.type_err("extend", 1, "a list", other)),
    };
    let l = target_list(it, "extend", target)?;
    it.check_list_len(l.len() + add.len())?;
    it.work(EXTEND.units(0, add.len() as u64))?;
    it.cow(l)?;
    with_list(l, |v| {
        for x in add.items() {
            v.push(x.clone());
        }
    });
    Ok(Value::Nil)
}

/// `group_by(list, fn)`: a map from `str(fn(item))` to the items with that key, keys in
/// the order first seen, items in list order.
fn group_by(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    let l = items_of(cx.host(), "group_by", args)?;
    let fi = super::fn_at(cx, "group_by", args, 1)?;
    let mut groups: indexmap::IndexMap<Vec<u8>, Vec<Value>> = indexmap::IndexMap::new();
    let mut acct = 0usize;
    for item in l.items() {
        let k = cx.call(fi, &mut [item.clone()])?;
        let it = cx.host();
        let k = match k {
            Value::Str(s) => s.to_vec(),
            other => it.to_text(&other, it.lim.n(L::String))?,
        };
        it.work(GROUP_BY.units(k.len() as u64, 1))?;
        acct += item.acct() + ACCT_SLOT;
        if !groups.contains_key(&k) {
            acct += k.len() + ACCT_SLOT;
            it.check_map_len(groups.len() + 1)?;
        }
        if acct > it.lim.n(L::FrameStorage) {
            return Err(it.limit(
                LimitKind::FrameStorage,
                format!("group_by: the groups exceed the frame limit of {} accounted bytes", it.lim.n(L::FrameStorage)),
            ));
        }
        groups.entry(k).or_default().push(item.clone());
    }
    let it = cx.host();
    let mut m = Map::with_capacity(groups.len());
    for (k, items) in groups {
        m.insert(bytes(&k), it.make_list(items)?);
    }
    it.make_map(m)
}

/// group_by: per item, its key's bytes (hashed and looked up) and the item.
const GROUP_BY: Cost = Cost::custom(1.0, 30.0);

/// sort_by: its rule (also for the bytes of string keys).
const SORT_BY: Cost = Cost::sort(0.2, 5.0);

fn reverse(it: &mut Host, args: &mut [Value]) -> R<Value> {
    match &args[0] {
        Value::List(l) => it.room(l.len().saturating_mul(ACCT_SLOT))?,
        Value::Str(s) => it.room(s.len())?,
        _ => {}
    }
    match &args[0] {
        Value::List(l) => it.make_list(l.items().iter().rev().cloned().collect()),
        Value::Str(s) => Ok(Value::str(match std::str::from_utf8(s) {
            Ok(t) => t.chars().rev().collect::<String>().into_bytes(),
            Err(_) => s.iter().rev().copied().collect(),
        })),
        other => Err(it.type_err("reverse", 0, "a list or string", other)),
    }
}

fn index_of(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let i = match &args[0] {
        Value::List(l) => {
            let mut n = EqCount::default();
            let i = l.items().iter().position(|v| equals_counted(v, &args[1], &mut n));
            it.work(n.units())?;
            i
        }
        Value::Str(s) => {
            let sub = it.arg_str("index_of", args, 1)?;
            it.work(super::host::find_work(s.len(), sub.len()))?;
            find_bytes(s, sub)
        }
        other => return Err(it.type_err("index_of", 0, "a list or string", other)),
    };
    Ok(Value::Num(i.map(|i| i as f64).unwrap_or(-1.0)))
}

/// range: the items of the result, charged before it is built.
const RANGE: Cost = Cost::custom(0.0, 4.0);

fn range(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (a, e) = if args.len() == 1 {
        (0.0, it.arg_num("range", args, 0)?)
    } else {
        (it.arg_num("range", args, 0)?, it.arg_num("range", args, 1)?)
    };
    let st = if args.len() == 3 { it.arg_num("range", args, 2)? } else { 1.0 };
    if st == 0.0 {
        return Err(it.err(ErrKind::Value, "range: step must not be 0"));
    }
    let count = ((e - a) / st).ceil();
    let count = if count.is_finite() && count > 0.0 { count } else { 0.0 };
    if count > it.lim.n(L::List) as f64 {
        return Err(it.limit(
            LimitKind::List,
            format!("range of more than {max_list_items} items", max_list_items = it.lim.n(L::List)),
        ));
    }
    it.room((count as usize).saturating_mul(ACCT_SLOT))?;
    it.work(RANGE.units(0, count as u64))?;
    let items = (0..count as usize).map(|k| Value::Num(a + k as f64 * st)).collect();
    it.make_list(items)
}

/// The numbers `sum`, `min` and `max` take: one list's items, or the arguments
/// themselves (read in place: no vector is built, a call of `max(x, y)` allocates nothing).
fn numbers<'a>(it: &Host, name: &str, args: &'a [Value]) -> R<&'a [Value]> {
    if args.len() == 1 {
        match &args[0] {
            Value::List(l) => Ok(l.items()),
            other => Err(it.type_err(name, 0, "a list (or give two or more numbers)", other)),
        }
    } else {
        Ok(args)
    }
}

/// `v` as a number, else the error naming `name`.
#[inline]
fn number(it: &Host, name: &str, v: &Value) -> R<f64> {
    match v {
        Value::Num(n) => Ok(*n),
        other => Err(it.err(ErrKind::Type, format!("{name}: takes numbers, got {}", other.type_name()))),
    }
}

fn sum(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.arg_list("sum", args, 0)?;
    let s: f64 = numbers(it, "sum", args)?.iter().map(|v| number(it, "sum", v)).sum::<R<f64>>()?;
    if !s.is_finite() {
        return Err(it.err(ErrKind::Arith, "sum: arithmetic overflow"));
    }
    Ok(Value::Num(s))
}

fn min_max(it: &Host, name: &str, args: &[Value], pick: fn(f64, f64) -> f64) -> R<Value> {
    let mut acc = None;
    for v in numbers(it, name, args)? {
        let n = number(it, name, v)?;
        acc = Some(match acc {
            None => n,
            Some(a) => pick(a, n),
        });
    }
    match acc {
        Some(n) => Ok(Value::Num(n)),
        None => Err(it.err(ErrKind::Value, format!("{name}: the list is empty"))),
    }
}

fn pick_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

fn pick_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

fn min(it: &mut Host, args: &mut [Value]) -> R<Value> {
    min_max(it, "min", args, pick_min)
}

fn max(it: &mut Host, args: &mut [Value]) -> R<Value> {
    min_max(it, "max", args, pick_max)
}

/// The peek of `min` or `max` of two or more numbers (`best = max(best, x)`): what
/// the call gives, and the call's charge for them is its base alone (its cost rule
/// measures strings, lists and maps). None for one argument (a list) or any that is
/// not a number: the call, which also says what is wrong.
fn peek_pick(args: &[&Value], pick: fn(f64, f64) -> f64) -> Option<Value> {
    let [first, rest @ ..] = args else { return None };
    let Value::Num(mut acc) = **first else { return None };
    if rest.is_empty() {
        return None;
    }
    for v in rest {
        let Value::Num(x) = **v else { return None };
        acc = pick(acc, x);
    }
    Some(Value::Num(acc))
}

/// join: the items, and the bytes of the result (strings and separators), charged
/// before it is built; items that are lists or maps are charged as their text is written.
const JOIN: Cost = Cost::custom(0.25, 10.0);

fn join(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let l = it.arg_list("join", args, 0)?;
    let sep = it.arg_str("join", args, 1)?;
    let n = l.len() as u64;
    // The strings' bytes and the number of other items, in one pass.
    let (text, others) = l.items().iter().fold((0u64, 0u64), |(t, o), v| match v {
        Value::Str(s) => (t + s.len() as u64, o),
        _ => (t, o + 1),
    });
    let bytes = text + n.saturating_sub(1) * sep.len() as u64;
    it.work(JOIN.units(bytes, n))?;
    // Room for the strings and separators (and a number's text per other item), up to
    // the string limit: grown from nothing, the text's reallocations cost more than
    // the copies for a short list.
    let room = bytes.saturating_add(others * 8).min(it.lim.n(L::String) as u64);
    it.room(room as usize)?;
    let mut out = Vec::with_capacity(room as usize);
    for (i, v) in l.items().iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(sep);
        }
        it.write_text(v, &mut out, it.lim.n(L::String))?;
        it.check_str_len(out.len())?;
    }
    Ok(Value::str(out))
}

fn split(it: &mut Host, args: &mut [Value]) -> R<Value> {
    // The bytes once (not through the string's box at each piece).
    let s: &[u8] = it.arg_str("split", args, 0)?.as_slice();
    let sep = it.arg_str("split", args, 1)?;
    if sep.is_empty() {
        return Err(it.err(ErrKind::Value, "split: the separator must not be empty"));
    }
    let max = match it.opt(args, 2) {
        None => usize::MAX,
        Some(_) => it.arg_int("split", args, 2, 0.0, it.lim.n(L::List) as f64)? as usize,
    };
    // The pieces are counted first (memchr), so the list is built in one allocation of
    // the capacity that growing it one push at a time would reach (`grown_capacity`): the
    // same accounted storage, without the reallocations.
    let pieces = match sep.as_slice() {
        [c] => memchr::memchr_iter(*c, s).take(max).count(),
        _ => memchr::memmem::find_iter(s, sep.as_slice()).take(max).count(),
    } + 1;
    let cap = grown_capacity(pieces);
    it.list_room(pieces, cap)?;
    let mut parts = Vec::with_capacity(cap);
    let mut rest: &[u8] = s;
    if let [c] = sep.as_slice() {
        let mut start = 0;
        for i in memchr::memchr_iter(*c, s).take(pieces - 1) {
            parts.push(Value::str_from(&s[start..i]));
            start = i + 1;
        }
        rest = &s[start..];
    } else {
        let finder = memchr::memmem::Finder::new(sep.as_slice());
        for _ in 1..pieces {
            let i = finder.find(rest).expect("a counted separator");
            parts.push(Value::str_from(&rest[..i]));
            rest = &rest[i + sep.len()..];
        }
    }
    parts.push(Value::str_from(rest));
    it.make_list(parts)
}

/// The capacity a vector of values reaches when `n` items are pushed one at a time onto
/// an empty one (4, then doubling): a list built to a known length gets it at once, so
/// that it is accounted as it was when built by pushing (unit test `grown_capacity_is_pushing`).
pub fn grown_capacity(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        n.next_power_of_two().max(4)
    }
}

fn lines(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("lines", args, 0)?;
    let mut out = Vec::new();
    let mut body: &[u8] = s;
    if body.last() == Some(&b'\n') {
        body = &body[..body.len() - 1];
    }
    if s.is_empty() {
        return it.make_list(out);
    }
    // The lines counted first (memchr), so that the list's size is known before it is
    // built (`list_room`); its capacity is the one pushing them reaches, as `split`'s.
    let n = memchr::memchr_iter(b'\n', body).count() + 1;
    it.list_room(n, grown_capacity(n))?;
    out.reserve_exact(grown_capacity(n));
    // (Found by memchr, as counted: a byte-by-byte `split` cost 0.6 ns a byte on long
    // lines, three times the copy.)
    let mut start = 0;
    let one = |line: &[u8]| Value::str_from(line.strip_suffix(b"\r").unwrap_or(line));
    for i in memchr::memchr_iter(b'\n', body) {
        out.push(one(&body[start..i]));
        start = i + 1;
    }
    out.push(one(&body[start..]));
    it.make_list(out)
}

pub const TABLE: &[Builtin] = &[
    b("len", "len(v)", 1, 1, CONST, len).with_peek(len_peek),
    b("keys", "keys(map)", 1, 1, Cost::items(6.0), keys),
    b("values", "values(map)", 1, 1, Cost::items(7.0), values),
    b("get", "get(collection, key[, default])", 2, 3, CONST, get).with_peek(get_peek),
    place("push", "push(PLACE, v)", 2, 2, CONST, push).with_fast(ListFast::Push),
    place("pop", "pop(PLACE)", 1, 1, CONST, pop).with_fast(ListFast::Pop),
    place("insert", "insert(PLACE, i, v)", 3, 3, Cost::items(2.0), insert),
    place("remove", "remove(PLACE, index_or_key)", 2, 2, Cost::items(2.0), remove),
    b("slice", "slice(v, start[, end])", 2, 3, Cost::out(0.25, 6.0), slice),
    calls("sort", "sort(list[, FN(a, b)])", 1, 2, Cost::sort(0.3, 4.0), sort).with_fn(1, 2, true),
    calls("sort_by", "sort_by(list, key | FN(item))", 2, 2, SORT_BY, sort_by).with_fn(1, 1, false),
    calls("map", "map(list, FN(item))", 2, 2, Cost::items(6.0), map).with_fn(1, 1, true),
    calls("filter", "filter(list, FN(item))", 2, 2, Cost::items(6.0), filter).with_fn(1, 1, true),
    calls("reduce", "reduce(list, FN(acc, item), init)", 3, 3, Cost::items(4.0), reduce).with_fn(1, 2, true),
    calls("any", "any(list, FN(item))", 2, 2, Cost::items(3.0), any).with_fn(1, 1, true),
    calls("all", "all(list, FN(item))", 2, 2, Cost::items(3.0), all).with_fn(1, 1, true),
    calls("count", "count(list, FN(item)) | count(s, sub)", 2, 2, Cost::items(3.0), count).with_fn(1, 1, false),
    calls("group_by", "group_by(list, FN(item))", 2, 2, GROUP_BY, group_by).with_fn(1, 1, true),
    b("reverse", "reverse(v)", 1, 1, Cost::bytes_items(0.8, 3.0), reverse),
    b("index_of", "index_of(v, x)", 2, 2, CONST, index_of),
    b("range", "range([a, ]b[, step])", 1, 3, RANGE, range),
    // (2 per item until 2026-12-05: reading the numbers in place made a call about half
    // as dear, 0.5 ns a unit at 2, bench/work.py row "sum"; a list of numbers is its
    // only shape, any other item ends it with an error.)
    b("sum", "sum(list)", 1, 1, Cost::items(1.0), sum),
    // (2 per item until 2026-12-06: 0.29 ns a unit, bench/work.py row "min", under
    // the band's floor, as `sum` was; a list of numbers is their only shape.)
    b("min", "min(list) | min(a, b, ...)", 1, VARIADIC, Cost::items(0.625), min).with_peek(|a| peek_pick(a, pick_min)),
    b("max", "max(list) | max(a, b, ...)", 1, VARIADIC, Cost::items(0.625), max).with_peek(|a| peek_pick(a, pick_max)),
    b("join", "join(list, sep)", 2, 2, JOIN, join),
    // (85 per item until 2026-12-06: its worst shape, a piece per two bytes, measured
    // 0.55 ns a unit, at the band's floor; bench/work.py row "split (one-byte pieces)".)
    b("split", "split(s, sep[, max])", 2, 3, Cost::bytes_items(0.5, 50.0), split),
    // (0.4 a byte and 80 a line until 2026-12-07: the lines are now found by memchr, and
    // every shape read under the band, 0.16 ns a unit for 8000-byte lines to 0.50 for
    // one-byte lines; bench/work.py rows "lines (...)".)
    b("lines", "lines(s)", 1, 1, Cost::bytes_items(0.125, 45.0), lines),
    b("concat", "concat(list, list, ...)", 1, VARIADIC, CONCAT, concat),
    place("extend", "extend(PLACE, list)", 2, 2, EXTEND, extend),
];

#[cfg(test)]
mod tests {
    use super::{grown_capacity, merge_sort};
    use crate::value::Value;

    #[test]
    fn merge_sort_is_stable_and_bounded() {
        // Keys with many ties: equal keys keep their input order.
        let keys: Vec<u32> = (0..1000u32).map(|i| (i * 7919) % 13).collect();
        let mut asked = 0u64;
        let order = merge_sort(keys.len(), |a, b| {
            asked += 1;
            Ok(keys[a] < keys[b])
        })
        .unwrap();
        let mut want: Vec<u32> = (0..1000).collect();
        want.sort_by_key(|&i| keys[i as usize]);
        assert_eq!(order, want);
        assert!(asked <= 1000 * 10);
    }

    #[test]
    fn merge_sort_survives_inconsistent_answers() {
        for n in [0usize, 1, 2, 3, 17, 1000, 4097] {
            let mut state = 12345u64;
            let mut asked = 0u64;
            let order = merge_sort(n, |_, _| {
                asked += 1;
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                Ok(state >> 63 == 1)
            })
            .unwrap();
            let mut seen = order.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..n as u32).collect::<Vec<_>>());
            let log = (usize::BITS - n.saturating_sub(1).leading_zeros()) as u64;
            assert!(asked <= n as u64 * log, "{n}: {asked}");
        }
    }

    #[test]
    fn grown_capacity_is_pushing() {
        let mut v: Vec<Value> = Vec::new();
        assert_eq!(grown_capacity(0), v.capacity());
        for n in 1..5000 {
            v.push(Value::Nil);
            assert_eq!(grown_capacity(n), v.capacity(), "{n} items");
        }
    }
}
