//! Sharing within one large parse: equal short strings (`StrCache`, also `csv.parse`'s)
//! and equal small arrays of scalars (`ListCache`) made lately share one box, as equal
//! object keys and key sequences do (the parser's key table, `value::ShapeCache`).
//! Strings and lists are copy-on-write, so sharing is invisible to scripts; a shared
//! value is still accounted in full at each place that holds it.

use std::rc::Rc;

use crate::limits::*;
use crate::value::*;

/// Slots of a `StrCache`: 32 KiB of pointers.
const INTERN_SLOTS: usize = 4096;
/// Longest string value shared through a `StrCache`.
pub const INTERN_MAX: usize = 64;
/// Texts shorter than this parse without a `StrCache` (`json.next` parses one line at a
/// time: the cache would cost more than it saves).
pub const INTERN_MIN_TEXT: usize = 64 * 1024;

/// Short string values made lately (`INTERN_SLOTS` slots, direct-mapped by a hash of the
/// bytes), for parsers of large texts (`json.parse`, `csv.parse`): an equal value later
/// in the text shares the earlier one's box, as equal JSON keys do. Strings are
/// copy-on-write, so sharing is invisible to scripts; it makes repeated values (`"GET"`,
/// `"active"`, tags, a CSV file's category column) cost a slot each instead of a 48-byte
/// box. A value that misses takes the slot; a collision only costs a miss, so no text
/// makes it slower than one hash and one compare per value. The accounted size of a
/// shared string is still counted in full at each place that holds it (a bound above
/// what is held, as for shared keys).
#[derive(Debug, Default)]
pub struct StrCache {
    slots: Vec<Option<Bytes>>,
}

impl StrCache {
    /// A cache when `on` (else every `get` makes a new string).
    pub fn new(on: bool) -> Self {
        StrCache { slots: if on { vec![None; INTERN_SLOTS] } else { Vec::new() } }
    }

    /// A string of `b`: the cached equal one when there is one, else a new one (which
    /// takes the slot).
    #[inline]
    pub fn get(&mut self, b: &[u8]) -> Bytes {
        if b.len() > INTERN_MAX || self.slots.is_empty() {
            return bytes(b);
        }
        use std::hash::BuildHasher;
        let h = foldhash::fast::FixedState::with_seed(0x5eed).hash_one(b);
        let slot = &mut self.slots[(h as usize) & (INTERN_SLOTS - 1)];
        if let Some(s) = slot {
            if s.as_slice() == b {
                return s.clone();
            }
        }
        let s = bytes(b);
        *slot = Some(s.clone());
        s
    }
}

/// Slots of a `ListCache`.
const LIST_SLOTS: usize = 1024;
/// Most items of an array shared through a `ListCache`.
const LIST_SHARE_MAX: usize = 8;

/// Small arrays made lately (`LIST_SLOTS` slots, direct-mapped by a hash of the items),
/// as the `StrCache` for strings: an array of up to `LIST_SHARE_MAX` scalars (numbers,
/// `true`, `false`, `null`, strings of up to `INTERN_MAX` bytes) equal to one made
/// earlier in the text shares its list. Lists are copy-on-write, so sharing is invisible
/// to scripts (the first change through one reference copies it); repeated small arrays
/// (tags, flags, a pair of coordinates seen before) then cost a slot each instead of a
/// list (64-byte box and the items' chunk). Numbers compare by their bits (`0` and `-0`
/// stay apart). A shared list is accounted in full at each place that holds it.
pub(super) struct ListCache {
    slots: Vec<Option<Rc<List>>>,
}

impl ListCache {
    pub(super) fn new() -> Self {
        ListCache { slots: vec![None; LIST_SLOTS] }
    }

    /// The earlier list equal to `items` (`Ok`), or, for items that could be shared, the
    /// slot a new list of them takes (`Err(Some(slot))`).
    pub(super) fn find(&mut self, items: &[Value]) -> Result<Value, Option<usize>> {
        use std::hash::{BuildHasher, Hasher};
        if items.len() > LIST_SHARE_MAX {
            return Err(None);
        }
        let mut h = foldhash::fast::FixedState::with_seed(0x11_57).build_hasher();
        h.write_usize(items.len());
        for v in items {
            match v {
                Value::Nil => h.write_u8(0),
                Value::Bool(b) => h.write_u8(1 + *b as u8),
                Value::Num(x) => h.write_u64(x.to_bits()),
                Value::Str(b) if b.len() <= INTERN_MAX => h.write(b),
                _ => return Err(None),
            }
        }
        let i = (h.finish() as usize) & (LIST_SLOTS - 1);
        if let Some(l) = &self.slots[i] {
            let same = l.len() == items.len()
                && l.items().iter().zip(items).all(|(a, b)| match (a, b) {
                    (Value::Nil, Value::Nil) => true,
                    (Value::Bool(x), Value::Bool(y)) => x == y,
                    (Value::Num(x), Value::Num(y)) => x.to_bits() == y.to_bits(),
                    (Value::Str(x), Value::Str(y)) => Rc::ptr_eq(x, y) || x.as_slice() == y.as_slice(),
                    _ => false,
                });
            if same {
                return Ok(Value::List(l.clone()));
            }
        }
        Err(Some(i))
    }

    /// A list of `items`, kept in slot `i` for the arrays that follow.
    pub(super) fn put(&mut self, i: usize, items: Vec<Value>) -> Value {
        let l = Rc::new(List::from_vec(items));
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = Some(l.clone());
        }
        Value::List(l)
    }
}

/// What a copy of a shared list would hold besides its items (which it would share):
/// its header and its slots, as accounted.
pub(super) fn list_own(v: &Value) -> usize {
    match v {
        Value::List(l) => ACCT_LIST_HEADER + l.len() * ACCT_SLOT,
        _ => 0,
    }
}
