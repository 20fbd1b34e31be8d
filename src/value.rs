//! Values: nil, bool, number, string, list, map, handle.
//!
//! Strings, lists and maps are reference-counted and copy-on-write: assignment and
//! argument passing share them, and the first change through a shared reference copies
//! (`Rc::make_mut`). An unshared value is changed in place, so `s ..= x` and
//! `push(xs, v)` in a loop are linear.
//!
//! Lists and maps keep the accounted storage of their items (`heap`), updated by every
//! change, so the accounted size of any value is known in O(1) (see `Value::heap`).

use indexmap::IndexMap;
use std::cell::Cell;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::limits::*;

mod equal;
mod map;
#[cfg(test)]
mod tests;
mod text;

pub use equal::*;
pub use map::*;
pub use text::*;

/// Inline capacity of a string: strings this short live inside their reference-counted
/// box (one allocation: the box is 16 bytes of counts and the 24-byte `LStr`, a 48-byte
/// malloc chunk); longer ones have a heap buffer.
pub const STR_INLINE: usize = 22;

/// The bytes of a string (conventionally UTF-8, not necessarily).
///
/// 24 bytes, so that the shared box (`Bytes`) stays one 48-byte chunk: up to
/// `STR_INLINE` (22) bytes in place, or a heap buffer whose length is the capacity, with
/// the string's length in 48 bits beside it (the bytes past the length are zeros). With
/// `SmallVec<[u8; 16]>` (its capacity word beside the buffer) strings of 17 to 22 bytes
/// (e-mail addresses, dates with times, most IPv4 addresses) took a second allocation: a
/// 48-byte box and a 32-byte buffer, 80 bytes where they now take 48.
#[derive(Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LStr(Repr);

#[derive(Clone)]
enum Repr {
    Inline {
        len: InlineLen,
        buf: [u8; STR_INLINE],
    },
    /// `buf.len()` is the capacity; the string is its first `lo | hi << 32` bytes.
    Heap {
        buf: Box<[u8]>,
        lo: u32,
        hi: u16,
    },
}

/// The length of an inline string, 0 to `STR_INLINE`: an enum, so that the compiler knows
/// its range (reading a string's bytes needs no bounds check) and `Repr` keeps its
/// variant in the byte's unused values (no separate tag).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum InlineLen {
    L0,
    L1,
    L2,
    L3,
    L4,
    L5,
    L6,
    L7,
    L8,
    L9,
    L10,
    L11,
    L12,
    L13,
    L14,
    L15,
    L16,
    L17,
    L18,
    L19,
    L20,
    L21,
    L22,
}

const INLINE_LENS: [InlineLen; STR_INLINE + 1] = {
    use InlineLen::*;
    [L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15, L16, L17, L18, L19, L20, L21, L22]
};

/// The inline length `n` (at most `STR_INLINE`; more is taken as `STR_INLINE`).
#[inline(always)]
fn inline_len(n: usize) -> InlineLen {
    INLINE_LENS[n.min(STR_INLINE)]
}

impl Default for Repr {
    #[inline]
    fn default() -> Self {
        Repr::Inline { len: InlineLen::L0, buf: [0; STR_INLINE] }
    }
}

impl PartialEq for Repr {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}
impl Eq for Repr {}
impl PartialOrd for Repr {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Repr {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.bytes().cmp(other.bytes())
    }
}
impl Hash for Repr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bytes().hash(state)
    }
}

impl Repr {
    /// (An inline length is known to be at most `STR_INLINE` (`InlineLen`); a heap one is
    /// bounded by `min`, a conditional move: no bounds check's branch either way.)
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        match self {
            Repr::Inline { len, buf } => &buf[..*len as usize],
            Repr::Heap { buf, lo, hi } => &buf[..(*lo as usize | (*hi as usize) << 32).min(buf.len())],
        }
    }

    /// A heap buffer of `cap` bytes (at least `b.len()`) holding `b`.
    fn heap(b: &[u8], cap: usize) -> Repr {
        let mut v = Vec::with_capacity(cap);
        v.extend_from_slice(b);
        v.resize(cap, 0);
        Repr::Heap { buf: v.into_boxed_slice(), lo: b.len() as u32, hi: (b.len() >> 32) as u16 }
    }

    /// `v` as a string: short ones inline, long ones keep the vector's buffer (its spare
    /// capacity zeroed).
    fn from_vec(mut v: Vec<u8>) -> Repr {
        let n = v.len();
        if n <= STR_INLINE {
            return Repr::inline(&v);
        }
        v.resize(v.capacity(), 0);
        Repr::Heap { buf: v.into_boxed_slice(), lo: n as u32, hi: (n >> 32) as u16 }
    }

    /// `b` (at most `STR_INLINE` bytes) in place. Copied in fixed-size pieces that may
    /// overlap (two or three of 8 bytes, two of 4, or up to 3 single bytes), so that no
    /// `memcpy` call is made for the copy of a few bytes.
    #[inline(always)]
    fn inline(b: &[u8]) -> Repr {
        let mut buf = [0; STR_INLINE];
        let n = b.len().min(STR_INLINE);
        fill(&mut buf, b, n);
        Repr::Inline { len: inline_len(n), buf }
    }

    #[inline(always)]
    fn capacity(&self) -> usize {
        match self {
            Repr::Inline { .. } => STR_INLINE,
            Repr::Heap { buf, .. } => buf.len(),
        }
    }

    /// Room for `need` bytes in all: a heap buffer of exactly `need` (more than the
    /// capacity), the bytes kept (the buffer reallocated in place when malloc can).
    #[cold]
    fn grow_to(&mut self, need: usize) {
        match self {
            Repr::Inline { len, buf } => *self = Repr::heap(&buf[..*len as usize], need),
            Repr::Heap { buf, .. } => {
                let mut v = Vec::from(std::mem::take(buf));
                v.reserve_exact(need - v.len());
                v.resize(need, 0);
                *buf = v.into_boxed_slice();
            }
        }
    }

    /// `b` appended (the capacity is at least the new length).
    #[inline(always)]
    fn append(&mut self, b: &[u8]) {
        match self {
            Repr::Inline { len, buf } => {
                let n = *len as usize;
                buf[n..n + b.len()].copy_from_slice(b);
                *len = inline_len(n + b.len());
            }
            Repr::Heap { buf, lo, hi } => {
                let n = *lo as usize | (*hi as usize) << 32;
                let m = n + b.len();
                buf[n..m].copy_from_slice(b);
                *lo = m as u32;
                *hi = (m >> 32) as u16;
            }
        }
    }
}

/// The first `n` bytes of `b` into `buf` (see `Repr::inline`).
#[inline(always)]
fn fill(buf: &mut [u8; STR_INLINE], b: &[u8], n: usize) {
    short_moves(buf, b, n);
}

/// `src` copied over `dst` (as long): up to 24 bytes by `short_moves`, without a
/// `memcpy` call (an append of a character or a word, `s ..= t` in a loop, called it
/// every time round); a longer one by `memcpy`.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n > 24 || dst.len() != n {
        dst.copy_from_slice(src);
    } else {
        short_moves(dst, src, n);
    }
}

/// The first `n` bytes (at most 24) of `src` over those of `dst` by overlapping moves
/// of 8, 4 or single bytes. (Given `buf` itself, `fill` keeps the inline buffer's
/// constant length, so that its moves need no bounds checks.)
#[inline(always)]
fn short_moves(dst: &mut [u8], src: &[u8], n: usize) {
    if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        if n > 16 {
            dst[8..16].copy_from_slice(&src[8..16]);
        }
        dst[n - 8..n].copy_from_slice(&src[n - 8..n]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..n].copy_from_slice(&src[n - 4..n]);
    } else if n > 0 {
        dst[0] = src[0];
        dst[n / 2] = src[n / 2];
        dst[n - 1] = src[n - 1];
    }
}

/// A copy holds exactly the bytes (no spare capacity), as `SmallVec`'s copy did.
impl Clone for LStr {
    #[inline]
    fn clone(&self) -> Self {
        LStr::from(self.as_slice())
    }
}

impl std::fmt::Debug for LStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

impl std::ops::Deref for LStr {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.0.bytes()
    }
}

impl std::borrow::Borrow<[u8]> for LStr {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.0.bytes()
    }
}

impl From<Vec<u8>> for LStr {
    /// Short strings move into the inline buffer; long ones keep the vector's buffer.
    #[inline]
    fn from(v: Vec<u8>) -> Self {
        LStr(Repr::from_vec(v))
    }
}

impl From<&[u8]> for LStr {
    #[inline]
    fn from(v: &[u8]) -> Self {
        if v.len() <= STR_INLINE {
            LStr(Repr::inline(v))
        } else {
            LStr(Repr::Heap { buf: Box::from(v), lo: v.len() as u32, hi: (v.len() >> 32) as u16 })
        }
    }
}

impl From<&str> for LStr {
    fn from(v: &str) -> Self {
        LStr::from(v.as_bytes())
    }
}

impl LStr {
    pub fn with_capacity(n: usize) -> Self {
        if n <= STR_INLINE {
            LStr::default()
        } else {
            LStr(Repr::Heap { buf: vec![0; n].into_boxed_slice(), lo: 0, hi: 0 })
        }
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        self.0.bytes()
    }

    /// Capacity, as accounted: an inline string's buffer is part of its header, so it
    /// counts its length; a heap buffer counts its capacity.
    #[inline]
    pub fn acct_bytes(&self) -> usize {
        match &self.0 {
            Repr::Inline { len, .. } => *len as usize,
            Repr::Heap { buf, .. } => buf.len(),
        }
    }

    #[inline]
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }

    /// `b` appended; past the capacity the buffer grows to the next power of two of the
    /// length needed (as `SmallVec` grew; `reserve_str` grows it first where the
    /// string limit applies).
    #[inline]
    pub fn extend_from_slice(&mut self, b: &[u8]) {
        let need = self.len() + b.len();
        if need > self.0.capacity() {
            self.0.grow_to(need.next_power_of_two());
        }
        self.0.append(b)
    }

    pub fn push(&mut self, b: u8) {
        self.extend_from_slice(&[b])
    }

    /// `b` appended when a heap buffer has room for it (true); false, with nothing
    /// changed, when the string is inline or its buffer would have to grow. (An
    /// append that changes no storage: `s ..= t` in a loop, most times round.)
    #[inline(always)]
    pub fn append_within(&mut self, b: &[u8]) -> bool {
        if let Repr::Heap { buf, lo, hi } = &mut self.0 {
            let n = *lo as usize | (*hi as usize) << 32;
            let m = n + b.len();
            if let Some(room) = buf.get_mut(n..m) {
                copy_short(room, b);
                *lo = m as u32;
                *hi = (m >> 32) as u16;
                return true;
            }
        }
        false
    }

    /// Room for `n` more bytes: a buffer of exactly the length needed when there is not.
    pub fn reserve_exact(&mut self, n: usize) {
        let need = self.len() + n;
        if need > self.0.capacity() {
            self.0.grow_to(need);
        }
    }

    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Inline { len, buf } => buf[..len as usize].to_vec(),
            Repr::Heap { buf, lo, hi } => {
                let mut v = Vec::from(buf);
                v.truncate(lo as usize | (hi as usize) << 32);
                v
            }
        }
    }
}

/// String bytes, shared copy-on-write.
pub type Bytes = Rc<LStr>;

/// A shared string from bytes. A short one is written into its box in place: made on
/// the stack by pieces and moved into the box whole, it was read back by wider loads
/// than the stores that wrote it, a store-forwarding stall on every short string made
/// (`split`'s words; WORKLOG 2026-12-05, fourteenth session).
#[inline]
pub fn bytes(b: &[u8]) -> Bytes {
    if b.len() <= STR_INLINE {
        let mut rc = Rc::new(LStr::default());
        if let Some(LStr(Repr::Inline { len, buf })) = Rc::get_mut(&mut rc) {
            fill(buf, b, b.len());
            *len = inline_len(b.len());
        }
        return rc;
    }
    Rc::new(LStr::from(b))
}

/// A shared string from a built buffer: a short one written into its box in place (as
/// `bytes`), a longer one keeping the buffer.
#[inline]
pub fn bytes_vec(b: Vec<u8>) -> Bytes {
    if b.len() <= STR_INLINE {
        return bytes(&b);
    }
    Rc::new(LStr::from(b))
}

/// The one-byte string `b`, shared: a string indexed (`s[i]`) or `chr` of an ASCII code
/// makes no allocation, as CPython keeps its one-character strings. Each is made on its
/// first use in this thread (one run's); a holder is charged for it as for any string.
#[inline]
pub fn byte_str(b: u8) -> Bytes {
    thread_local! {
        static ONE: [std::cell::OnceCell<Bytes>; 256] = const { [const { std::cell::OnceCell::new() }; 256] };
    }
    ONE.with(|t| t[b as usize].get_or_init(|| bytes(&[b])).clone())
}

/// What a handle refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleKind {
    File,
    Csv,
    Socket,
    Listener,
    Db,
    /// A function argument (`builtins::fn_arg`): made by resolve.rs at a builtin's
    /// function parameter, never held by a variable.
    Function,
    /// An anonymous function of a builtin call running now (`builtins::FnRef::Lambda`).
    Lambda,
}

impl HandleKind {
    pub fn name(self) -> &'static str {
        match self {
            HandleKind::File => "file",
            HandleKind::Csv => "csv",
            HandleKind::Socket => "socket",
            HandleKind::Listener => "listener",
            HandleKind::Db => "db",
            HandleKind::Function | HandleKind::Lambda => "function",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle {
    pub kind: HandleKind,
    pub id: u32,
}

/// Laid out `repr(C, u64)`: the tag is a whole word and every payload sits in the
/// second word, so a value is two word-sized fields and nothing else. With a one-byte
/// tag (`repr(C, u8)`), moves copied the tag and the seven padding bytes after it in
/// overlapping pieces, and a load of a value written a moment before by narrower
/// stores missed the CPU's store forwarding (a stall of about a dozen cycles, seen
/// with `perf annotate` on every `for ... in` item and call return): nbody 35% and
/// richards 26% less CPU on the compiled core, 8-14% on the tree (WORKLOG, sixth session).
#[derive(Clone, Debug, Default)]
#[repr(C, u64)]
pub enum Value {
    /// A variable that holds no value yet. Never stored inside lists or maps, never
    /// visible to scripts: reading it is a `name` error.
    #[default]
    Unset,
    Nil,
    Bool(bool),
    Num(f64),
    Str(Bytes),
    List(Rc<List>),
    Map(Map),
    Handle(Handle),
}

/// A map key: string bytes, shared with the string values they came from.
#[derive(Clone, Debug)]
pub struct Key(pub Bytes);

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.0.as_slice() == other.0.as_slice()
    }
}
impl Eq for Key {}
impl Hash for Key {
    #[inline(always)]
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_key(self.0.as_slice(), state)
    }
}

/// The hash of a map key's bytes, for `Key` and every look-up by bytes (`KeyRef` in
/// map.rs): one `write` of the bytes, without the length prefix that `[u8]`'s `Hash`
/// writes first (foldhash's `write` mixes the length into its seed by itself; the prefix
/// cost a second multiply and the hasher's bookkeeping for it, about 10 instructions a
/// look-up). A key is never hashed as a plain slice: `Key` has no `Borrow<[u8]>`.
#[inline(always)]
pub(crate) fn hash_key<H: Hasher>(k: &[u8], state: &mut H) {
    state.write(k)
}

impl Key {
    fn acct(&self) -> usize {
        self.0.acct_bytes()
    }
}

/// Whether a number is integral. (Cheaper than `fract()`, which is a library call on
/// baseline x86-64.)
#[inline(always)]
pub fn is_integral(x: f64) -> bool {
    if x.abs() < 9.2e18 {
        leash_alloc::trunc_i64(x) as f64 == x
    } else {
        x.is_finite()
    }
}

/// Accounted heap storage of a string.
#[inline]
pub fn str_heap(s: &LStr) -> usize {
    ACCT_STRING_HEADER + s.acct_bytes()
}

/// The run's `string`, `list` and `map` limits, for growth by doubling: a value grown to
/// its limit carries no capacity past it, so that a value at the limit is accounted at the
/// limit (its capacity). Set once per run by `Host::new`; a stale value could only make
/// growth less tidy, never let a value past its limit (the limits are checked apart).
static GROW_STRING: AtomicUsize = AtomicUsize::new(LIMITS[L::String as usize].default as usize);
static GROW_LIST: AtomicUsize = AtomicUsize::new(LIMITS[L::List as usize].default as usize);
static GROW_MAP: AtomicUsize = AtomicUsize::new(LIMITS[L::Map as usize].default as usize);

pub fn set_growth_limits(lim: &Limits) {
    GROW_STRING.store(lim.n(L::String), Relaxed);
    GROW_LIST.store(lim.n(L::List), Relaxed);
    GROW_MAP.store(lim.n(L::Map), Relaxed);
}

/// The capacity a growing string or list moves to from `cap` when it needs `need`:
/// doubling while small, then an eighth more each time (still amortized linear: the
/// copies of all growths together are at most about nine times the final size), never
/// past `limit`. So a value grown large is accounted near what it holds, not at a
/// capacity rounded up to the limit: a string grown to 13 MB under `string=16M` holds at
/// most about 14.7 MB, where doubling gave it the whole 16 MB (issue 25).
#[inline]
fn grown(cap: usize, need: usize, small: usize, floor: usize, limit: usize) -> usize {
    let step = if cap < small { cap } else { cap / 8 };
    need.max(cap + step).max(floor).min(limit.max(need))
}

/// Past this many bytes a growing string grows by an eighth, not by doubling.
const GROW_DOUBLE_BYTES: usize = MIB;
/// Past this many items a growing list or map grows by an eighth, not by doubling.
const GROW_DOUBLE_ITEMS: usize = 65_536;

/// Grow `v` so it can hold `extra` more bytes (`grown`): never past the string limit, so
/// a string at the limit never carries more than the limit in capacity.
pub fn reserve_str(v: &mut LStr, extra: usize) {
    let need = v.len() + extra;
    if need > v.capacity() {
        let target = grown(v.capacity(), need, GROW_DOUBLE_BYTES, 16, GROW_STRING.load(Relaxed));
        v.reserve_exact(target - v.len());
    }
}

/// A list and the accounted storage of its items.
#[derive(Clone, Debug, Default)]
pub struct List {
    items: Vec<Value>,
    heap: usize,
}

impl List {
    pub fn new() -> Self {
        List::default()
    }

    pub fn from_vec(items: Vec<Value>) -> Self {
        let heap = items.iter().map(Value::heap).sum();
        List { items, heap }
    }

    /// A list of `items` whose own storage (the sum of `Value::heap` over them) the
    /// caller measured as it gathered them: no second pass over the items.
    #[inline]
    pub(crate) fn from_measured(items: Vec<Value>, heap: usize) -> Self {
        debug_assert_eq!(heap, items.iter().map(Value::heap).sum::<usize>());
        List { items, heap }
    }

    #[inline]
    pub fn items(&self) -> &[Value] {
        &self.items
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Accounted storage: header, one slot per unit of capacity, and the items' own.
    #[inline]
    pub fn acct(&self) -> usize {
        ACCT_LIST_HEADER + self.items.capacity() * ACCT_SLOT + self.heap
    }

    pub fn push(&mut self, v: Value) {
        if self.items.len() == self.items.capacity() {
            let cap = self.items.capacity();
            let target = grown(cap, self.items.len() + 1, GROW_DOUBLE_ITEMS, 4, GROW_LIST.load(Relaxed));
            self.items.reserve_exact(target - self.items.len());
        }
        self.heap += v.heap();
        self.items.push(v);
    }

    pub fn pop(&mut self) -> Option<Value> {
        let v = self.items.pop()?;
        self.heap -= v.heap();
        Some(v)
    }

    pub fn insert(&mut self, i: usize, v: Value) {
        self.heap += v.heap();
        self.items.insert(i, v);
    }

    pub fn remove(&mut self, i: usize) -> Value {
        let v = self.items.remove(i);
        self.heap -= v.heap();
        v
    }

    /// Replace item `i`, returning the old one.
    pub fn set(&mut self, i: usize, v: Value) -> Value {
        self.heap += v.heap();
        let old = std::mem::replace(&mut self.items[i], v);
        self.heap -= old.heap();
        old
    }

    /// Item `i` when it is plain (nil, a boolean, a number), to be replaced in place by
    /// another plain value (None: no such item, or not plain). A plain value holds no
    /// storage, so the list's accounting stays true without `with_item`'s bookkeeping.
    #[inline(always)]
    pub fn plain_mut(&mut self, i: usize) -> Option<&mut Value> {
        match self.items.get_mut(i)? {
            x @ (Value::Num(_) | Value::Bool(_) | Value::Nil) => Some(x),
            _ => None,
        }
    }

    /// Change item `i` in place through `f`, keeping this list's accounting true.
    #[inline]
    pub fn with_item<R>(&mut self, i: usize, f: impl FnOnce(&mut Value) -> R) -> R {
        let before = self.items[i].heap();
        let r = f(&mut self.items[i]);
        self.heap = self.heap + self.items[i].heap() - before;
        r
    }

    pub fn into_vec(mut self) -> Vec<Value> {
        std::mem::take(&mut self.items)
    }
}

/// The item index a number names in a list of `len` items (negative from the end),
/// when it is a whole number in range.
#[inline(always)]
pub fn list_at(n: f64, len: usize) -> Option<usize> {
    // Converted first, then checked: a whole number converts back to itself (NaN,
    // a fraction and anything out of `i64`'s range do not, saturated or truncated);
    // a negative one counts from the end, and one unsigned compare takes out what is
    // still negative with the too large. (Range checks before an `as usize` left that
    // conversion's saturation code on the path: 20 instructions, 4% of richards; the
    // end added to the number before its conversion took 7 more on every index.) The
    // conversion is the processor's (`trunc_i64`): NaN and numbers out of range give
    // `i64::MIN`, which converts back to itself only from -2^63, an index out of range
    // of any list; `as`'s saturation took five instructions more.
    let j = leash_alloc::trunc_i64(n);
    if j as f64 != n {
        return None;
    }
    let k = if j < 0 { j.wrapping_add(len as i64) } else { j };
    if (k as u64) < len as u64 {
        Some(k as usize)
    } else {
        None
    }
}

/// `list_at` for a whole number known when the code was compiled (`Op::IndexN`).
#[inline(always)]
pub fn list_at_int(i: i32, len: usize) -> Option<usize> {
    let k = if i < 0 { i64::from(i).wrapping_add(len as i64) } else { i64::from(i) };
    if (k as u64) < len as u64 {
        Some(k as usize)
    } else {
        None
    }
}

/// A key of a path walked in place (`plain_leaf`): a number (a list's item) or a
/// string (a map's key).
#[derive(Clone, Copy, Debug)]
pub enum PathKey<'c> {
    Num(f64),
    Str(&'c [u8]),
}

impl PathKey<'_> {
    /// The key as a value (for the place functions, which take values).
    pub fn value(&self) -> Value {
        match *self {
            PathKey::Num(n) => Value::Num(n),
            PathKey::Str(s) => Value::str_from(s),
        }
    }
}

/// The value at the end of `keys` (one at least) from `v`, through lists and maps that
/// nothing else shares, when it is plain (nil, a boolean, a number): to be replaced in
/// place by another plain value. Each map key is looked for through its site's inline
/// cache in `ics` (as `Map::get_cached`), a list item by `list_at`. None when a step
/// does not hold: a shared container, no such item or key, a key of the other kind, a
/// map key past `KEY_FREE_BYTES` (whose look-up costs work), a leaf that is not plain.
///
/// A plain value holds no storage, so writing one over a plain leaf changes no
/// container's accounting on the way down; that is why only a plain leaf is handed
/// out, and why the walk needs no `with_item`-style bookkeeping at each step (one loop,
/// no closures: through them nbody's field updates took twice the instructions).
#[inline(always)]
pub fn plain_leaf<'a>(mut v: &'a mut Value, keys: &[PathKey<'_>], ics: &[Site]) -> Option<&'a mut Value> {
    for (k, ic) in keys.iter().zip(ics) {
        v = plain_step(v, *k, ic)?;
    }
    plain_end(v)
}

/// `plain_leaf` for two keys (`bodies[i].vx`, `tasks[t].state`, `grid[y][x]`), the
/// most common chain: the keys stay in registers (through the slice and its loop they
/// went by the native stack).
#[inline(always)]
pub fn plain_leaf2<'a>(
    v: &'a mut Value,
    k0: PathKey<'_>,
    ic0: &Site,
    k1: PathKey<'_>,
    ic1: &Site,
) -> Option<&'a mut Value> {
    let v = plain_step(v, k0, ic0)?;
    let v = plain_step(v, k1, ic1)?;
    plain_end(v)
}

/// One step of `plain_leaf`: a list's item by a number in range, a map's entry by a
/// short string key, in a container nothing else shares.
#[inline(always)]
fn plain_step<'a>(v: &'a mut Value, k: PathKey<'_>, ic: &Site) -> Option<&'a mut Value> {
    match (v, k) {
        (Value::List(rc), PathKey::Num(n)) => {
            let l = Rc::get_mut(rc)?;
            let i = list_at(n, l.items.len())?;
            Some(&mut l.items[i])
        }
        (Value::Map(rc), PathKey::Str(key)) if key.len() <= KEY_FREE_BYTES => rc.unique()?.value_cached_mut(key, ic),
        _ => None,
    }
}

/// The end of `plain_leaf`'s walk: a plain value.
#[inline(always)]
fn plain_end(v: &mut Value) -> Option<&mut Value> {
    match v {
        Value::Num(_) | Value::Bool(_) | Value::Nil => Some(v),
        _ => None,
    }
}

/// The value at `keys` in `v` changed by `leaf` (a place builtin: `push(piles[i], d)`,
/// `pop(m.items)`), along containers `v` alone holds: a list's item by a number in
/// range, a map's entry by a string key it has (through the step's cache). With the
/// leaf's result, the change of the storage of the value it changed: every container
/// on the way changed by as much (its own layout is not touched), which is added to
/// each on the way back, and which is `v`'s own change, for the caller to charge.
/// None, with nothing changed, at a shared container or a step that does not resolve:
/// the place functions then copy it or report the error.
///
/// (Generic over the leaf, and each container's count changed by the one difference
/// measured at the end: with a dynamic leaf and each step measuring its item before
/// and after (`with_item`), a place builtin's call took 90 instructions more. The
/// first step is taken here, inline; deeper ones by `in_place_deeper`.)
#[inline(always)]
pub fn in_place<T>(
    v: &mut Value,
    keys: &[PathKey<'_>],
    ics: &[Site],
    leaf: impl FnOnce(&mut Value) -> T,
) -> Option<(T, isize)> {
    let (Some((k, rest)), Some((ic, ics))) = (keys.split_first(), ics.split_first()) else {
        return Some(measured(v, leaf));
    };
    let (item, heap) = in_place_step(v, *k, ic)?;
    let (r, d) = if rest.is_empty() { measured(item, leaf) } else { in_place_deeper(item, rest, ics, leaf)? };
    *heap = (*heap as isize + d) as usize;
    Some((r, d))
}

/// `in_place` past its first step.
#[inline(never)]
fn in_place_deeper<T>(
    v: &mut Value,
    keys: &[PathKey<'_>],
    ics: &[Site],
    leaf: impl FnOnce(&mut Value) -> T,
) -> Option<(T, isize)> {
    let (Some((k, rest)), Some((ic, ics))) = (keys.split_first(), ics.split_first()) else {
        return Some(measured(v, leaf));
    };
    let (item, heap) = in_place_step(v, *k, ic)?;
    let (r, d) = in_place_deeper(item, rest, ics, leaf)?;
    *heap = (*heap as isize + d) as usize;
    Some((r, d))
}

/// One step of `in_place`: the item key `k` names in `v` when `v` alone holds it, with
/// the count of its items' storage.
#[inline(always)]
fn in_place_step<'a>(v: &'a mut Value, k: PathKey<'_>, ic: &Site) -> Option<(&'a mut Value, &'a mut usize)> {
    match (v, k) {
        (Value::List(rc), PathKey::Num(n)) => {
            let l = Rc::get_mut(rc)?;
            let i = list_at(n, l.items.len())?;
            Some((&mut l.items[i], &mut l.heap))
        }
        (Value::Map(rc), PathKey::Str(key)) => rc.unique()?.value_and_heap_cached(key, ic),
        _ => None,
    }
}

/// `leaf` run on `v`, and the change of `v`'s storage it made.
#[inline(always)]
pub(crate) fn measured<T>(v: &mut Value, leaf: impl FnOnce(&mut Value) -> T) -> (T, isize) {
    let before = v.heap();
    let r = leaf(v);
    (r, v.heap() as isize - before as isize)
}

/// Dropping a list drains nested lists and maps it alone holds into one work list
/// instead of dropping them recursively: a value nested millions deep (`a = [a]` in a
/// loop) is freed without native stack in proportion to its depth.
impl Drop for List {
    fn drop(&mut self) {
        if self.items.iter().any(|v| matches!(v, Value::List(_) | Value::Map(_))) {
            drain_nested(std::mem::take(&mut self.items));
        }
    }
}

impl Value {
    /// A string copied from `b`: one allocation (the shared box, with up to
    /// `STR_INLINE` bytes inside it; a longer string adds its buffer), where
    /// `Value::str(b.to_vec())` would allocate and free a vector besides.
    #[inline]
    pub fn str_from(b: &[u8]) -> Value {
        Value::Str(bytes(b))
    }

    /// A string value. Spare capacity left by building it is given back when large, so
    /// that a string is accounted near its length (a 1 MiB string fits in a frame).
    #[inline]
    pub fn str(mut b: Vec<u8>) -> Value {
        if b.len() > STR_INLINE && b.capacity() - b.len() > 64 && b.capacity() - b.len() > b.len() / 8 {
            b.shrink_to_fit();
        }
        Value::Str(bytes_vec(b))
    }

    pub fn string(s: &str) -> Value {
        Value::Str(bytes(s.as_bytes()))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(List::from_vec(items)))
    }

    pub fn map(m: Map) -> Value {
        Value::Map(m)
    }

    /// Accounted heap storage beyond the value's own 16-byte slot.
    #[inline]
    pub fn heap(&self) -> usize {
        match self {
            Value::Str(s) => str_heap(s),
            Value::List(l) => l.acct(),
            Value::Map(m) => m.acct(),
            _ => 0,
        }
    }

    /// Accounted size: the slot plus its heap storage.
    #[inline]
    pub fn acct(&self) -> usize {
        ACCT_SLOT + self.heap()
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Unset | Value::Nil => "nil",
            Value::Bool(_) => "bool",
            Value::Num(_) => "number",
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Handle(_) => "handle",
        }
    }

    #[inline]
    pub fn truthy(&self) -> bool {
        match self {
            Value::Unset | Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Num(n) => *n != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Handle(_) => true,
        }
    }
}
