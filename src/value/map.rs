//! Maps: small maps in one vector, records of one shape sharing their keys (`Shape`,
//! `ShapeCache`), larger ones hash-indexed (`MapInner`); look-ups with inline caches
//! and the last-found hint; the drop that frees nested values from a work list. Child
//! of `value`.

use super::*;
use leash_alloc::{Release, ThinRc};

/// As for lists: nested values a map alone holds are freed from a work list, when its
/// last reference goes (`ThinRc`'s release step, out of line: a map's drop inlined
/// where values are dropped stays a compare and a decrement).
struct Drain;

impl Release<Head, Value> for Drain {
    fn release(h: &mut Head, vals: &mut [Value]) {
        if iter_of(&h.e, vals).any(|(_, v)| matches!(v, Value::List(_) | Value::Map(_))) {
            let mut work = Vec::new();
            take_values_into(h, vals, &mut work);
            drain_nested(work);
        }
    }
}

/// Free `work` and every list and map only it holds, from the work list: a container
/// freed last (no other reference) gives its items to the list before it goes.
///
/// A map's values go straight onto the list (gathered in a vector of their own first,
/// json took 3% more instructions); a list's items by `append` (one by one through
/// `drain`, binarytrees took 3% more), when one of them is a list or map: a list of
/// plain values and strings is dropped where it is, so that the work list does not grow
/// by its items (dropping `[l]` with `l` a list of 12 million numbers held 192 MiB more
/// while it ran: peak RSS past the bound at a run's end).
pub(super) fn drain_nested(mut work: Vec<Value>) {
    while let Some(v) = work.pop() {
        match v {
            Value::List(rc) => {
                if let Ok(mut l) = Rc::try_unwrap(rc) {
                    if l.items.iter().any(|v| matches!(v, Value::List(_) | Value::Map(_))) {
                        work.append(&mut l.items);
                    } else {
                        // (Taken out, so that the list's own drop does not look again.)
                        drop(std::mem::take(&mut l.items));
                    }
                }
            }
            Value::Map(mut m) if ThinRc::is_unique(&m.0) => {
                let (h, vals) = m.parts_mut();
                take_values_into(h, vals, &mut work);
            }
            _ => {}
        }
    }
}

/// The hash-indexed layout of a map past `MAP_SMALL` entries.
pub type MapInner = IndexMap<Key, Value, foldhash::fast::RandomState>;

/// Maps of up to this many entries keep them in one vector in insertion order, found by
/// comparing key bytes (short keys compare in a few instructions), without a hash index
/// or stored hashes: a parsed record of 6 fields holds 224 bytes of map where the
/// indexed layout held 416 (issue 25). The first insertion past it moves the map to
/// the indexed layout (`MapInner`), where it stays.
pub const MAP_SMALL: usize = 8;

/// Shapes hold up to this many keys: a record of 9 to 16 fields (a wide literal, a
/// parsed row) holds its values and its shape's pointer (80 + 24 bytes a field
/// accounted) where the indexed layout held 96 + 64 a slot, and its fields are read at
/// their sites' shape (nineteenth session). A map of more keys than `MAP_SMALL` that
/// leaves its shape moves to the indexed layout.
pub const MAP_SHAPED: usize = 16;

/// The keys of maps built with one key sequence (`Map::shaped`): 1 to `MAP_SHAPED`
/// distinct keys in order, shared by every map of that shape (issue 25: a parsed record
/// holds only its values, 16 bytes each, and a pointer to its shape; so does a map a
/// literal makes, each literal's keys one shape made when its code is compiled).
#[derive(Debug)]
pub struct Shape {
    /// `SITE_SHAPED` and this shape's number (`id << 8`): what a site's cache holds,
    /// with the key's index in the low byte, after a look-up in a map of this shape.
    site: u64,
    keys: Box<[Key]>,
    /// Each key's signature and length (`key_sig`): a look-up by a key not known at its
    /// site compares these words, not the keys' strings (reading a key's bytes goes
    /// through its string's box: about 30 instructions a key, where this is three).
    sigs: Box<[(u64, usize)]>,
}

/// A key's signature: up to eight of its bytes in one word. For a key of up to 8 bytes
/// the bytes read cover the key (overlapping 4-byte halves, or the first, middle and
/// last byte), so an equal signature and length mean an equal key; a longer key's
/// signature holds its first and last four bytes, and a match is confirmed by the bytes.
#[inline(always)]
fn key_sig(k: &[u8]) -> u64 {
    let n = k.len();
    if n >= 4 {
        let w = |i: usize| u32::from_le_bytes([k[i], k[i + 1], k[i + 2], k[i + 3]]) as u64;
        w(0) | w(n - 4) << 32
    } else if n > 0 {
        k[0] as u64 | (k[n / 2] as u64) << 8 | (k[n - 1] as u64) << 16
    } else {
        0
    }
}

/// A site's inline cache (an instruction's, for its constant key): the index where the
/// key was last found, and for a shaped map the shape it was found in (`Shape::site`).
/// A key's index in a map of the same shape is the same, so a shaped map is read at its
/// site by one compare of the shape's number: no key bytes compared (hidden classes,
/// as JavaScript engines and Luau cache a field's slot). Only a site whose key is one
/// constant may use one (every instruction that has a site).
pub type Site = Cell<u64>;

/// The flag of a site that holds a shape (`Shape::site`) and its index's mask.
const SITE_SHAPED: u64 = 1 << 63;
const SITE_INDEX: u64 = 0xff;

/// Shape numbers, one a shape made, never reused (2^55 of them: at one a nanosecond,
/// over a year), so that a site's cache cannot take a new shape for an old one.
static SHAPES_MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Shape {
    /// The shape of maps with these keys in this order; nothing for a key list a shaped
    /// map cannot take (empty, more than `MAP_SHAPED` keys, a key twice).
    pub fn new(keys: &[Bytes]) -> Option<Rc<Shape>> {
        if keys.is_empty() || keys.len() > MAP_SHAPED {
            return None;
        }
        for (i, k) in keys.iter().enumerate() {
            if keys[..i].iter().any(|j| j.as_slice() == k.as_slice()) {
                return None;
            }
        }
        let id = SHAPES_MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(Rc::new(Shape {
            site: SITE_SHAPED | id << 8,
            keys: keys.iter().map(|k| Key(k.clone())).collect(),
            sigs: keys.iter().map(|k| (key_sig(k.as_slice()), k.len())).collect(),
        }))
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether this shape's keys are `keys` (the same strings, or equal bytes).
    fn is<'a>(&self, keys: impl ExactSizeIterator<Item = &'a Bytes>) -> bool {
        self.keys.len() == keys.len()
            && self.keys.iter().zip(keys).all(|(a, b)| Rc::ptr_eq(&a.0, b) || a.0.as_slice() == b.as_slice())
    }
}

/// Shapes for maps built one after another with recurring key sequences (the records
/// of a parse): a key sequence seen a second time gets a shape, which later maps with
/// the same keys share. Direct-mapped by a hash of the key bytes (deterministic: which
/// maps are shaped follows from the text alone); a collision only costs a miss.
pub struct ShapeCache {
    slots: Vec<ShapeSlot>,
}

#[derive(Clone)]
enum ShapeSlot {
    Empty,
    Seen(u64),
    Shape(u64, Rc<Shape>),
}

const SHAPE_SLOTS: usize = 256;

impl Default for ShapeCache {
    fn default() -> Self {
        ShapeCache { slots: vec![ShapeSlot::Empty; SHAPE_SLOTS] }
    }
}

impl ShapeCache {
    pub fn new() -> Self {
        ShapeCache::default()
    }

    /// The shape for maps with `keys` in this order, if this sequence was seen before (a
    /// sequence seen once is remembered by its hash: the first map of a sequence is built
    /// unshaped, so a shape is never made for one map alone).
    pub fn get<'a, I>(&mut self, keys: I) -> Option<Rc<Shape>>
    where
        I: ExactSizeIterator<Item = &'a Bytes> + Clone,
    {
        if keys.len() == 0 || keys.len() > MAP_SHAPED {
            return None;
        }
        let mut h: u64 = keys.len() as u64;
        for k in keys.clone() {
            let b = k.as_slice();
            let mut w = [0u8; 8];
            let n = b.len().min(8);
            w[..n].copy_from_slice(&b[..n]);
            let mut t = [0u8; 8];
            t[8 - n..].copy_from_slice(&b[b.len() - n..]);
            h = (h ^ b.len() as u64 ^ u64::from_le_bytes(w)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            h = (h ^ u64::from_le_bytes(t)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        }
        h ^= h >> 29;
        let slot = &mut self.slots[(h as usize) % SHAPE_SLOTS];
        match slot {
            ShapeSlot::Shape(sh, s) if *sh == h && s.is(keys.clone()) => return Some(s.clone()),
            ShapeSlot::Seen(sh) if *sh == h => {}
            _ => {
                *slot = ShapeSlot::Seen(h);
                return None;
            }
        }
        let owned: Vec<Bytes> = keys.cloned().collect();
        let s = Shape::new(&owned)?;
        *slot = ShapeSlot::Shape(h, s.clone());
        Some(s)
    }
}

/// The entries of a small map: a block of `Option` slots (its length the capacity), the
/// first `len` of them filled. Never shared between two maps (a map's copy copies it).
type Slots = ThinRc<(), Option<(Key, Value)>>;

/// A map's entries in one of its three layouts, with the last-found hint. 16 bytes: the
/// variant, the hint (and a small map's length) in one word, a pointer in the other, so
/// that the whole header (`Head`) is 24 bytes and a shaped map's block is the two counts,
/// the header and its values (a 6-field record: 136 bytes, one 144-byte chunk).
#[derive(Debug)]
enum Entries {
    /// At most `MAP_SMALL` entries, in insertion order, in `slots` (none before the
    /// first; `len` of them filled).
    Small { hint: Cell<u32>, len: u8, slots: Option<Slots> },
    /// Indexed (boxed: one word).
    Big { hint: Cell<u32>, m: Box<MapInner> },
    /// The keys of a shared `Shape`; the values are the map's own block's items. Made by
    /// `Map::shaped`; a new key or a removal first moves the map to `Small`.
    Shaped { hint: Cell<u32>, shape: Rc<Shape> },
}

/// A copy keeps the capacity of the original (a small map's copy-on-write copy is
/// accounted as the original was); a shaped map's values are copied with its block.
impl Clone for Entries {
    fn clone(&self) -> Self {
        match self {
            Entries::Small { hint, len, slots } => Entries::Small {
                hint: hint.clone(),
                len: *len,
                slots: slots.as_ref().map(|s| ThinRc::new((), s.slice().iter().cloned())),
            },
            Entries::Big { hint, m } => Entries::Big { hint: hint.clone(), m: m.clone() },
            Entries::Shaped { hint, shape } => Entries::Shaped { hint: hint.clone(), shape: shape.clone() },
        }
    }
}

/// The header of a map's block: its entries (or, shaped, its keys) and the accounted
/// storage of its keys and values.
#[derive(Clone, Debug)]
struct Head {
    heap: usize,
    e: Entries,
}

/// The filled slots of a small map.
#[inline(always)]
fn small_of(len: u8, slots: &Option<Slots>) -> &[Option<(Key, Value)>] {
    match slots {
        Some(s) => s.slice().get(..len as usize).unwrap_or(&[]),
        None => &[],
    }
}

/// The filled slots of a small map, to change (the block is never shared: `make_mut`
/// only checks).
#[inline(always)]
fn small_of_mut(len: u8, slots: &mut Option<Slots>) -> &mut [Option<(Key, Value)>] {
    match slots {
        Some(s) => ThinRc::make_mut(s).1.get_mut(..len as usize).unwrap_or(&mut []),
        None => &mut [],
    }
}

/// Every slot of a small map, its capacity (those past its length are empty: a look-up
/// by key or index over them needs no length).
#[inline(always)]
fn slots_all(slots: &Option<Slots>) -> &[Option<(Key, Value)>] {
    match slots {
        Some(s) => s.slice(),
        None => &[],
    }
}

/// `slots_all`, to change.
#[inline(always)]
fn slots_all_mut(slots: &mut Option<Slots>) -> &mut [Option<(Key, Value)>] {
    match slots {
        Some(s) => ThinRc::make_mut(s).1,
        None => &mut [],
    }
}

/// The entry at `i` of small-map slots.
#[inline(always)]
fn small_at(v: &[Option<(Key, Value)>], i: usize) -> Option<(&Key, &Value)> {
    v.get(i)?.as_ref().map(|(k, v)| (k, v))
}

/// The entry at `i` of small-map slots, its value to change.
#[inline(always)]
fn small_at_mut(v: &mut [Option<(Key, Value)>], i: usize) -> Option<(&Key, &mut Value)> {
    v.get_mut(i)?.as_mut().map(|(k, v)| (&*k, v))
}

/// Slots for `cap` entries holding the first `n` of `old` (taken out of it).
fn slots_with(old: Option<Slots>, n: usize, cap: usize) -> Option<Slots> {
    if cap == 0 {
        return None;
    }
    let mut old = old;
    let from: &mut [Option<(Key, Value)>] = match &mut old {
        Some(s) => ThinRc::make_mut(s).1,
        None => &mut [],
    };
    Some(ThinRc::new((), (0..cap).map(|i| if i < n { from.get_mut(i).and_then(Option::take) } else { None })))
}

/// A key looked up in a big map by its bytes: hashed as `Key` hashes (`hash_key`),
/// compared by `bytes_eq` (no `memcmp` call for a short key).
struct KeyRef<'a>(&'a [u8]);

impl Hash for KeyRef<'_> {
    #[inline(always)]
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_key(self.0, state)
    }
}

impl indexmap::Equivalent<Key> for KeyRef<'_> {
    #[inline(always)]
    fn equivalent(&self, key: &Key) -> bool {
        bytes_eq(self.0, key.0.as_slice())
    }
}

/// Where key `k` is among small-map entries. A key of another length, or whose last
/// byte differs, is passed over without a `memcmp` call; a key that is the very bytes
/// of `k` (the same string) is found without one.
#[inline(never)]
fn find_small(v: &[Option<(Key, Value)>], k: &[u8]) -> Option<usize> {
    let last = k.last().copied();
    v.iter().position(|e| match e {
        Some((key, _)) => {
            let b = key.0.as_slice();
            b.len() == k.len() && (b.as_ptr() == k.as_ptr() || (b.last().copied() == last && bytes_eq(b, k)))
        }
        None => false,
    })
}

/// `find_small` over a shape's keys. (Kept beside `find_by_sig` for a write's slot, the
/// insert and the remove: their call sites, given the shape instead of its keys, moved
/// `vm_exec`'s register allocation and made every program 0.4 to 2.4% dearer.)
#[inline(never)]
fn find_shaped(keys: &[Key], k: &[u8]) -> Option<usize> {
    let last = k.last().copied();
    keys.iter().position(|key| {
        let b = key.0.as_slice();
        b.len() == k.len() && (b.as_ptr() == k.as_ptr() || (b.last().copied() == last && bytes_eq(b, k)))
    })
}

/// `find_shaped` by the keys' signatures (`Shape::sigs`): a key of up to 8 bytes is
/// found by them alone, a longer one's bytes compared where they match.
#[inline(never)]
fn find_by_sig(shape: &Shape, k: &[u8]) -> Option<usize> {
    let sig = (key_sig(k), k.len());
    if k.len() <= 8 {
        return shape.sigs.iter().position(|&s| s == sig);
    }
    shape.sigs.iter().zip(shape.keys.iter()).position(|(&s, key)| s == sig && bytes_eq(key.0.as_slice(), k))
}

/// A shaped map's look-up, out of line: the other layouts' inlined paths stay as short
/// as they were.
#[inline(never)]
fn find_in_shape<'a>(shape: &Shape, vals: &'a [Value], k: &[u8]) -> Option<(usize, &'a Value)> {
    let i = find_by_sig(shape, k)?;
    Some((i, vals.get(i)?))
}

/// The value slot of key `k` (one look at the layout).
#[inline(always)]
fn slot_of<'a>(e: &'a mut Entries, vals: &'a mut [Value], k: &[u8]) -> Option<&'a mut Value> {
    match e {
        Entries::Small { slots, .. } => {
            let e = slots_all_mut(slots);
            let i = find_small(e, k)?;
            small_at_mut(e, i).map(|(_, v)| v)
        }
        Entries::Big { m, .. } => m.get_mut(&KeyRef(k)),
        Entries::Shaped { shape, .. } => vals.get_mut(find_shaped(&shape.keys, k)?),
    }
}

/// The value slot at index `i`.
#[inline(always)]
fn slot_at<'a>(e: &'a mut Entries, vals: &'a mut [Value], i: usize) -> Option<&'a mut Value> {
    match e {
        Entries::Small { slots, .. } => small_at_mut(slots_all_mut(slots), i).map(|(_, v)| v),
        Entries::Big { m, .. } => m.get_index_mut(i).map(|(_, v)| v),
        Entries::Shaped { .. } => vals.get_mut(i),
    }
}

/// The value slot at index `i` if its key is `k` (one look at the layout).
#[inline(always)]
fn slot_at_if<'a>(e: &'a mut Entries, vals: &'a mut [Value], i: usize, k: &[u8]) -> Option<&'a mut Value> {
    let (key, slot) = match e {
        Entries::Small { slots, .. } => small_at_mut(slots_all_mut(slots), i)?,
        Entries::Big { m, .. } => m.get_index_mut(i)?,
        Entries::Shaped { shape, .. } => (shape.keys.get(i)?, vals.get_mut(i)?),
    };
    bytes_eq(key.0.as_slice(), k).then_some(slot)
}

/// Where key `k` is: at index `site` (a write site's inline cache), else where the
/// map's last look-up found a key (`m[k] = get(m, k, 0) + 1`), else by its hash; the
/// site learns the index on a miss.
#[inline(always)]
fn cached_index(e: &Entries, vals: &[Value], k: &[u8], site: &Site) -> Option<usize> {
    let c = site.get();
    if let Some(i) = shaped_hit(e, c, || k) {
        return Some(i);
    }
    let at = |i: usize| key_at(e, vals, i, k);
    let guess = site_index(c);
    if at(guess) {
        learn(e, site, guess);
        return Some(guess);
    }
    let hint = hint_of(e).get() as usize;
    let i = if hint != guess && at(hint) { hint } else { index_in(e, k)? };
    learn(e, site, i);
    Some(i)
}

/// The index of its key that site cache `c` holds for a shaped map `e` of the shape it
/// read before (no key bytes looked at: the same shape has its key at the same index);
/// None for any other map.
#[inline(always)]
fn shaped_hit<'k>(e: &Entries, c: u64, k: impl FnOnce() -> &'k [u8]) -> Option<usize> {
    match e {
        Entries::Shaped { shape, .. } if c & !SITE_INDEX == shape.site => {
            let i = (c & SITE_INDEX) as usize;
            debug_assert_eq!(shape.keys.get(i).map(|key| key.0.as_slice()), Some(k()));
            Some(i)
        }
        _ => None,
    }
}

/// The index a site's cache holds, with or without a shape: a map of another shape (or
/// none) with the same keys in the same order has its key there too (the bodies of
/// n-body, each its own literal), which one compare of the key's bytes tells.
#[inline(always)]
fn site_index(c: u64) -> usize {
    (if c & SITE_SHAPED != 0 { c & SITE_INDEX } else { c }) as usize
}

/// Site `site` learns that its key is at index `i` of a map with entries `e` (with the
/// shape, for a shaped map).
#[inline]
fn learn(e: &Entries, site: &Site, i: usize) {
    site.set(match e {
        Entries::Shaped { shape, .. } => shape.site | i as u64,
        _ => i as u64,
    });
}

/// The last-found hint of a map's entries.
#[inline(always)]
fn hint_of(e: &Entries) -> &Cell<u32> {
    match e {
        Entries::Small { hint, .. } | Entries::Big { hint, .. } | Entries::Shaped { hint, .. } => hint,
    }
}

/// The entry at index `i` (`vals`: a shaped map's values).
#[inline(always)]
fn entry_at<'a>(e: &'a Entries, vals: &'a [Value], i: usize) -> Option<(&'a Bytes, &'a Value)> {
    match e {
        Entries::Small { slots, .. } => small_at(slots_all(slots), i).map(|(k, v)| (&k.0, v)),
        Entries::Big { m, .. } => m.get_index(i).map(|(k, v)| (&k.0, v)),
        Entries::Shaped { shape, .. } => Some((&shape.keys.get(i)?.0, vals.get(i)?)),
    }
}

/// Whether the key at index `i` is `k`.
#[inline(always)]
fn key_at(e: &Entries, vals: &[Value], i: usize, k: &[u8]) -> bool {
    matches!(entry_at(e, vals, i), Some((key, _)) if bytes_eq(key.as_slice(), k))
}

/// Where key `k` is.
#[inline(always)]
fn index_in(e: &Entries, k: &[u8]) -> Option<usize> {
    match e {
        Entries::Small { slots, .. } => find_small(slots_all(slots), k),
        Entries::Big { m, .. } => m.get_index_of(&KeyRef(k)),
        Entries::Shaped { shape, .. } => find_by_sig(shape, k),
    }
}

/// `f` run on `slot`, a value of the map whose accounted bytes are `heap`, kept true.
#[inline(always)]
fn changed<R>(heap: &mut usize, slot: &mut Value, f: impl FnOnce(&mut Value) -> R) -> R {
    let before = slot.heap();
    let r = f(slot);
    *heap = *heap + slot.heap() - before;
    r
}

/// Iterator over a map's entries in insertion order.
pub struct MapIter<'a>(MapIterInner<'a>);

enum MapIterInner<'a> {
    Small(std::slice::Iter<'a, Option<(Key, Value)>>),
    Big(indexmap::map::Iter<'a, Key, Value>),
    Shaped(std::iter::Zip<std::slice::Iter<'a, Key>, std::slice::Iter<'a, Value>>),
}

impl<'a> Iterator for MapIter<'a> {
    type Item = (&'a Bytes, &'a Value);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            // (the slots iterated are the filled ones)
            MapIterInner::Small(it) => it.find_map(|e| e.as_ref().map(|(k, v)| (&k.0, v))),
            MapIterInner::Big(it) => it.next().map(|(k, v)| (&k.0, v)),
            MapIterInner::Shaped(it) => it.next().map(|(k, v)| (&k.0, v)),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            MapIterInner::Small(it) => it.size_hint(),
            MapIterInner::Big(it) => it.size_hint(),
            MapIterInner::Shaped(it) => it.size_hint(),
        }
    }
}

/// The entries of a map's header `e` and values `vals`, in order.
fn iter_of<'a>(e: &'a Entries, vals: &'a [Value]) -> MapIter<'a> {
    MapIter(match e {
        Entries::Small { len, slots, .. } => MapIterInner::Small(small_of(*len, slots).iter()),
        Entries::Big { m, .. } => MapIterInner::Big(m.iter()),
        Entries::Shaped { shape, .. } => MapIterInner::Shaped(shape.keys.iter().zip(vals.iter())),
    })
}

/// Take every value out of a map's header and values onto `out`, leaving it empty.
fn take_values_into(h: &mut Head, vals: &mut [Value], out: &mut Vec<Value>) {
    match &mut h.e {
        Entries::Small { len, slots, .. } => {
            out.extend(small_of_mut(*len, slots).iter_mut().filter_map(|e| e.take().map(|(_, v)| v)));
            *len = 0;
        }
        Entries::Big { m, .. } => out.extend(m.drain(..).map(|(_, v)| v)),
        Entries::Shaped { .. } => out.extend(vals.iter_mut().map(std::mem::take)),
    }
}

/// A map with string keys in insertion order, and the accounted storage of its entries:
/// a one-word handle to a reference-counted block (`leash_alloc::ThinRc`: the header,
/// then a shaped map's values), copy-on-write: `clone` shares the block, and a change
/// through a shared handle copies it first (as `Rc::make_mut` did for the `Rc<Map>` of
/// before). So a parsed record is one allocation (issue 25).
pub struct Map(ThinRc<Head, Value, Drain>);

impl Clone for Map {
    /// Another reference to the same map (copied at its first change).
    #[inline(always)]
    fn clone(&self) -> Self {
        Map(self.0.clone())
    }
}

impl Default for Map {
    fn default() -> Self {
        Map::new()
    }
}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Map {
    pub fn new() -> Self {
        Map::with_capacity(0)
    }

    #[inline(always)]
    fn head(&self) -> &Head {
        self.0.header()
    }

    #[inline(always)]
    fn hint(&self) -> &Cell<u32> {
        hint_of(&self.head().e)
    }

    /// The header and the (shaped) values, to change: the block is copied first when
    /// shared.
    #[inline(always)]
    fn parts_mut(&mut self) -> (&mut Head, &mut [Value]) {
        ThinRc::make_mut(&mut self.0)
    }

    /// This map, to change in place, when no other reference shares it (as `Rc::get_mut`).
    #[inline(always)]
    pub fn unique(&mut self) -> Option<&mut Map> {
        ThinRc::is_unique(&self.0).then_some(self)
    }

    /// Whether two maps are the same block.
    #[inline(always)]
    pub fn ptr_eq(a: &Map, b: &Map) -> bool {
        ThinRc::ptr_eq(&a.0, &b.0)
    }

    /// References to this map's block.
    pub fn strong_count(&self) -> usize {
        ThinRc::strong_count(&self.0)
    }

    /// The accounted storage of the keys and values (tests).
    #[cfg(test)]
    pub(crate) fn heap(&self) -> usize {
        self.head().heap
    }

    /// A map with room for exactly `n` entries (for maps built to a known size, so that
    /// small maps are not accounted at the default growth capacity).
    pub fn with_capacity(n: usize) -> Self {
        let n = n.min(GROW_MAP.load(Relaxed));
        let e = if n <= MAP_SMALL {
            Entries::Small { hint: Cell::new(0), len: 0, slots: slots_with(None, 0, n) }
        } else {
            Entries::Big { hint: Cell::new(0), m: Box::new(MapInner::with_capacity_and_hasher(n, Default::default())) }
        };
        Map(ThinRc::with_release(Head { heap: 0, e }, std::iter::empty()))
    }

    /// A map with the keys of `shape` and the values `vals` (as many as its keys), which
    /// holds only its values and shares its keys with the other maps of that shape. A
    /// number of values other than the shape's keys builds the map key by key instead.
    pub fn shaped(shape: &Rc<Shape>, vals: impl ExactSizeIterator<Item = Value>) -> Map {
        if vals.len() != shape.len() {
            let mut m = Map::with_capacity(vals.len());
            for (k, v) in shape.keys.iter().zip(vals) {
                m.insert(k.0.clone(), v);
            }
            return m;
        }
        let mut heap: usize = shape.keys.iter().map(Key::acct).sum();
        let e = Entries::Shaped { hint: Cell::new(0), shape: shape.clone() };
        let mut b = ThinRc::with_release(Head { heap: 0, e }, vals.inspect(|v| heap += v.heap()));
        if let Some((h, _)) = ThinRc::get_mut(&mut b) {
            h.heap = heap;
        }
        Map(b)
    }

    /// A shaped map moves to the small layout (with room for `cap` entries), or to the
    /// indexed one past `MAP_SMALL` entries, keeping its entries, their order and its
    /// accounted heap, in a block of its own without values; other layouts stay.
    #[cold]
    fn unshape(&mut self, cap: usize) {
        let (h, vals) = self.parts_mut();
        if let Entries::Shaped { hint, shape } = &h.e {
            let n = vals.len();
            let keys = &shape.keys;
            if n > MAP_SMALL {
                let mut m = MapInner::with_capacity_and_hasher(cap.max(n), Default::default());
                m.extend(keys.iter().cloned().zip(vals.iter_mut().map(std::mem::take)));
                let e = Entries::Big { hint: hint.clone(), m: Box::new(m) };
                self.0 = ThinRc::with_release(Head { heap: h.heap, e }, std::iter::empty());
                return;
            }
            let slots = ThinRc::new(
                (),
                (0..cap.max(n)).map(|i| match (keys.get(i), vals.get_mut(i)) {
                    (Some(k), Some(v)) => Some((k.clone(), std::mem::take(v))),
                    _ => None,
                }),
            );
            let e = Entries::Small { hint: hint.clone(), len: n as u8, slots: Some(slots) };
            self.0 = ThinRc::with_release(Head { heap: h.heap, e }, std::iter::empty());
        }
    }

    /// Whether the map is in its small layout (tests).
    #[cfg(test)]
    fn is_small(&self) -> bool {
        matches!(self.head().e, Entries::Small { .. })
    }

    /// Whether the map is shaped (tests).
    #[cfg(test)]
    pub(crate) fn is_shaped(&self) -> bool {
        matches!(self.head().e, Entries::Shaped { .. })
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        match &self.head().e {
            Entries::Small { len, .. } => *len as usize,
            Entries::Big { m, .. } => m.len(),
            Entries::Shaped { .. } => self.0.len(),
        }
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries the map has room for (tests).
    #[cfg(test)]
    fn capacity(&self) -> usize {
        match &self.head().e {
            Entries::Small { slots, .. } => slots.as_ref().map_or(0, |s| s.len()),
            Entries::Big { m, .. } => m.capacity().max(m.len()),
            Entries::Shaped { .. } => self.0.len(),
        }
    }

    /// Accounted size: a header and a size per unit of capacity, each layout its own
    /// (`ACCT_SMALL_MAP_*`, `ACCT_MAP_*`, `ACCT_SHAPED_MAP_*`), and the storage of the
    /// keys and values.
    #[inline(always)]
    pub fn acct(&self) -> usize {
        let h = self.head();
        h.heap
            + match &h.e {
                Entries::Small { slots, .. } => {
                    ACCT_SMALL_MAP_HEADER + slots.as_ref().map_or(0, |s| s.len()) * ACCT_SMALL_MAP_ENTRY
                }
                Entries::Big { m, .. } => ACCT_MAP_HEADER + m.capacity().max(m.len()) * ACCT_MAP_ENTRY,
                Entries::Shaped { .. } => ACCT_SHAPED_MAP_HEADER + self.0.len() * ACCT_SHAPED_MAP_ENTRY,
            }
    }

    #[inline(always)]
    pub fn get(&self, k: &[u8]) -> Option<&Value> {
        let (i, v) = self.find(k)?;
        self.hint().set(i as u32);
        Some(v)
    }

    /// Where key `k` is and its value: one look at the layout (`get`, `num_of`).
    #[inline(always)]
    fn find(&self, k: &[u8]) -> Option<(usize, &Value)> {
        match &self.head().e {
            Entries::Small { slots, .. } => {
                let e = slots_all(slots);
                let i = find_small(e, k)?;
                Some((i, small_at(e, i)?.1))
            }
            Entries::Big { m, .. } => {
                // (not `get_full`: a call less, as `index_of` and `get_index` inline)
                let i = m.get_index_of(&KeyRef(k))?;
                Some((i, m.get_index(i)?.1))
            }
            Entries::Shaped { shape, .. } => find_in_shape(shape, self.0.slice(), k),
        }
    }

    #[inline(always)]
    pub fn contains(&self, k: &[u8]) -> bool {
        match self.index_of(k) {
            Some(i) => {
                self.hint().set(i as u32);
                true
            }
            None => false,
        }
    }

    pub fn iter(&self) -> MapIter<'_> {
        iter_of(&self.head().e, self.0.slice())
    }

    pub fn keys(&self) -> impl Iterator<Item = &Bytes> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.iter().map(|(_, v)| v)
    }

    #[inline(always)]
    pub fn get_index(&self, i: usize) -> Option<(&Bytes, &Value)> {
        match &self.head().e {
            Entries::Shaped { shape, .. } => Some((&shape.keys.get(i)?.0, self.0.slice().get(i)?)),
            e => entry_at(e, &[], i),
        }
    }
}

impl Map {
    /// Insert or replace; returns the old value.
    pub fn insert(&mut self, k: Bytes, v: Value) -> Option<Value> {
        let hint = self.hint().get() as usize;
        let (h, vals) = self.parts_mut();
        h.heap += v.heap();
        // The key a `get` just found: replace its value without looking again.
        if let Some(slot) = slot_at_if(&mut h.e, vals, hint, k.as_slice()) {
            let old = std::mem::replace(slot, v);
            h.heap -= old.heap();
            return Some(old);
        }
        if let Entries::Shaped { shape, .. } = &h.e {
            if let Some(i) = find_shaped(&shape.keys, &k) {
                let old = std::mem::replace(&mut vals[i], v);
                h.heap -= old.heap();
                return Some(old);
            }
            // A new key: the map leaves its shape.
            let n = vals.len();
            self.unshape(n);
        }
        let (h, _) = self.parts_mut();
        if let Entries::Small { hint, len, slots } = &mut h.e {
            let e = small_of_mut(*len, slots);
            if let Some(i) = find_small(e, &k) {
                if let Some((_, slot)) = small_at_mut(e, i) {
                    let old = std::mem::replace(slot, v);
                    h.heap -= old.heap();
                    return Some(old);
                }
            }
            let limit = GROW_MAP.load(Relaxed);
            let n = *len as usize;
            let cap = slots.as_ref().map_or(0, |s| s.len());
            if n < MAP_SMALL {
                if n == cap {
                    let target = grown(cap, n + 1, GROW_DOUBLE_ITEMS, 4, limit);
                    *slots = slots_with(slots.take(), n, target);
                }
                let key = Key(k);
                h.heap += key.acct();
                if let Some(s) = slots {
                    if let Some(slot) = ThinRc::make_mut(s).1.get_mut(n) {
                        *slot = Some((key, v));
                        *len += 1;
                    }
                }
                return None;
            }
            // Past `MAP_SMALL`: move to the indexed layout, grown as the map would grow.
            let target = grown(cap, n + 1, GROW_DOUBLE_ITEMS, 4, limit);
            let mut m = MapInner::with_capacity_and_hasher(target, Default::default());
            m.extend(small_of_mut(*len, slots).iter_mut().filter_map(Option::take));
            h.e = Entries::Big { hint: hint.clone(), m: Box::new(m) };
        }
        let Entries::Big { m, .. } = &mut h.e else { unreachable!("a small map returned above") };
        if m.len() == m.capacity() && !m.contains_key(&KeyRef(k.as_slice())) {
            let cap = m.capacity();
            let target = grown(cap, m.len() + 1, GROW_DOUBLE_ITEMS, 4, GROW_MAP.load(Relaxed));
            m.reserve_exact(target - m.len());
        }
        match m.entry(Key(k)) {
            indexmap::map::Entry::Occupied(mut o) => {
                let old = std::mem::replace(o.get_mut(), v);
                h.heap -= old.heap();
                Some(old)
            }
            indexmap::map::Entry::Vacant(e) => {
                h.heap += e.key().acct();
                e.insert(v);
                None
            }
        }
    }

    /// Remove `k`, keeping the order of the others (later entries move up one place).
    pub fn remove(&mut self, k: &[u8]) -> Option<Value> {
        if let Entries::Shaped { shape, .. } = &self.head().e {
            find_shaped(&shape.keys, k)?;
            let n = self.0.len();
            self.unshape(n);
        } else {
            // (nothing to remove: the map is not copied)
            self.index_of(k)?;
        }
        let (h, _) = self.parts_mut();
        let (key, v) = match &mut h.e {
            Entries::Small { len, slots, .. } => {
                let e = small_of_mut(*len, slots);
                let i = find_small(e, k)?;
                e[i..].rotate_left(1);
                let last = e.last_mut()?.take()?;
                *len -= 1;
                last
            }
            Entries::Big { m, .. } => m.shift_remove_entry(&KeyRef(k))?,
            Entries::Shaped { .. } => return None,
        };
        h.heap -= key.acct() + v.heap();
        Some(v)
    }

    /// Where key `k` is (its index, for `set_num_at`).
    #[inline(always)]
    pub fn index_of(&self, k: &[u8]) -> Option<usize> {
        index_in(&self.head().e, k)
    }

    /// Where key `k` is and the number it holds (nothing when it holds another value):
    /// one look at the layout, for the counting idiom's in-place update.
    #[inline(always)]
    pub fn num_of(&self, k: &[u8]) -> Option<(usize, f64)> {
        let (i, v) = self.find(k)?;
        match v {
            Value::Num(x) => Some((i, *x)),
            _ => None,
        }
    }

    /// The value at index `i`.
    #[inline(always)]
    pub fn value_at(&self, i: usize) -> Option<&Value> {
        self.get_index(i).map(|(_, v)| v)
    }

    /// Replace the number at index `i` by `n` (a number for a number: the accounting
    /// does not change). False, and nothing done, when it holds something else.
    #[inline(always)]
    pub fn set_num_at(&mut self, i: usize, n: f64) -> bool {
        let (h, vals) = self.parts_mut();
        match slot_at(&mut h.e, vals, i) {
            Some(Value::Num(x)) => {
                *x = n;
                true
            }
            _ => false,
        }
    }

    /// The value of `k`, looked for first at index `site` (a call site's guess: an
    /// inline cache, kept up to date here), then by hashing. One compare when the site
    /// reads maps of one shape, as a field read in a loop does. (The same search as
    /// `cached_index`, kept here because it returns the value it compared: through
    /// `cached_index` and a second look at the index, nbody, bounce and list took 2 to
    /// 3% more instructions.)
    ///
    /// The site's hit is checked inline where this is called (a field read's whole
    /// cost when it hits); the rest is `get_missed`, out of line.
    #[inline(always)]
    pub fn get_cached(&self, k: &LStr, site: &Site) -> Option<&Value> {
        let c = site.get();
        // (The key's bytes are not read on a hit: a string's bytes are behind a test of
        // its layout; only a debug build's check reads them.)
        if let Some(i) = shaped_hit(&self.head().e, c, || k.as_slice()) {
            // (The index is the shape's: always in range.)
            if let Some(v) = self.0.slice().get(i) {
                return Some(v);
            }
        }
        let i = site_index(c);
        let k = k.as_slice();
        if let Some((key, v)) = self.get_index(i) {
            if bytes_eq(key.as_slice(), k) {
                self.hint().set(i as u32);
                // (A shaped map's shape learnt here too: a site starts at index 0,
                // where a record's first field is found by this compare, and without
                // it that field's site never took the shape.)
                learn(&self.head().e, site, i);
                return Some(v);
            }
        }
        self.get_missed(k, site)
    }

    /// `get_cached` past a miss at the site: the map's own last-found index, then the
    /// hash.
    #[inline(never)]
    fn get_missed(&self, k: &[u8], site: &Site) -> Option<&Value> {
        let i = site_index(site.get());
        let e = &self.head().e;
        // The key this map's last look-up found (a `get` or `in` of the same key just
        // before): no hash either.
        let h = self.hint().get() as usize;
        if h != i {
            if let Some((key, v)) = self.get_index(h) {
                if bytes_eq(key.as_slice(), k) {
                    learn(e, site, h);
                    return Some(v);
                }
            }
        }
        let i = self.index_of(k)?;
        self.hint().set(i as u32);
        learn(e, site, i);
        self.value_at(i)
    }

    /// The value of key `k`, looked for as `cached_index` does, with this map's
    /// accounted storage of its values: the caller changes the value in place and adds
    /// the change of its storage to that count itself (`value::in_place`, which walks
    /// a place down and back without a closure at each step).
    #[inline(always)]
    pub(crate) fn value_and_heap_cached(&mut self, k: &[u8], site: &Site) -> Option<(&mut Value, &mut usize)> {
        let (h, vals) = self.parts_mut();
        let i = cached_index(&h.e, vals, k, site)?;
        let Head { heap, e } = h;
        Some((slot_at(e, vals, i)?, heap))
    }

    /// The value of key `k`, looked for as `cached_index` does, changed in place by
    /// the caller without this map's accounting: only `plain_leaf` (value.rs) and the
    /// dispatch loop's plain writes (`map_entry_in_place`) call it, each on its way to
    /// a plain value it replaces by a plain value.
    ///
    /// The site's hit is checked inline where this is called (looked at, then taken:
    /// one look cannot both return its slot and go on to the miss); the rest is
    /// `value_missed_mut`, out of line. (nbody: 2.7% fewer instructions.)
    #[inline(always)]
    pub(crate) fn value_cached_mut(&mut self, k: &[u8], site: &Site) -> Option<&mut Value> {
        let c = site.get();
        if let Some(i) = shaped_hit(&self.head().e, c, || k) {
            return self.parts_mut().1.get_mut(i);
        }
        let i = site_index(c);
        if matches!(self.get_index(i), Some((key, _)) if bytes_eq(key.as_slice(), k)) {
            let (h, vals) = self.parts_mut();
            learn(&h.e, site, i);
            return slot_at(&mut h.e, vals, i);
        }
        self.value_missed_mut(k, site)
    }

    #[inline(never)]
    fn value_missed_mut(&mut self, k: &[u8], site: &Site) -> Option<&mut Value> {
        let (h, vals) = self.parts_mut();
        let i = cached_index(&h.e, vals, k, site)?;
        slot_at(&mut h.e, vals, i)
    }

    /// The value of key `k`, looked for first where this map's last look-up found a
    /// key, then by its hash, changed in place by the caller without this map's
    /// accounting, as `value_cached_mut`: only for a plain value replaced by a plain
    /// value (`map_entry_in_place`).
    #[inline(always)]
    pub(crate) fn value_hinted_mut(&mut self, k: &[u8]) -> Option<&mut Value> {
        let (h, vals) = self.parts_mut();
        let hint = hint_of(&h.e).get() as usize;
        if key_at(&h.e, vals, hint, k) {
            return slot_at(&mut h.e, vals, hint);
        }
        slot_of(&mut h.e, vals, k)
    }

    /// Change the value of `k` in place through `f`, keeping this map's accounting true.
    #[inline]
    pub fn with_value<R>(&mut self, k: &[u8], f: impl FnOnce(&mut Value) -> R) -> Option<R> {
        let (h, vals) = self.parts_mut();
        let slot = slot_of(&mut h.e, vals, k)?;
        Some(changed(&mut h.heap, slot, f))
    }
}

#[cfg(test)]
mod tests;
