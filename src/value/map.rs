//! Maps: small maps in one vector, records of one shape sharing their keys (`Shape`,
//! `ShapeCache`), larger ones hash-indexed (`MapInner`); look-ups with inline caches
//! and the last-found hint; the drop that frees nested values from a work list. Child
//! of `value`.

use super::*;

/// As for lists: nested values a map alone holds are freed from a work list.
impl Drop for Map {
    fn drop(&mut self) {
        if self.values().any(|v| matches!(v, Value::List(_) | Value::Map(_))) {
            let work: Vec<Value> = self.entries.take_values();
            drain_nested(work);
        }
    }
}

/// Free `work` and every list and map only it holds, from the work list: a container
/// freed last (no other reference) gives its items to the list before it goes.
pub(super) fn drain_nested(mut work: Vec<Value>) {
    while let Some(v) = work.pop() {
        match v {
            Value::List(rc) => {
                if let Ok(mut l) = Rc::try_unwrap(rc) {
                    work.append(&mut l.items);
                }
            }
            Value::Map(rc) => {
                if let Ok(mut m) = Rc::try_unwrap(rc) {
                    work.extend(m.entries.take_values());
                }
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

/// The keys of maps built with one key sequence (`Map::shaped`): 1 to `MAP_SMALL`
/// distinct keys in order, shared by every map of that shape (issue 25: a parsed record
/// holds only its values, 16 bytes each, and a pointer to its shape).
#[derive(Debug)]
pub struct Shape {
    keys: Box<[Key]>,
}

impl Shape {
    /// The shape of maps with these keys in this order; nothing for a key list a shaped
    /// map cannot take (empty, more than `MAP_SMALL` keys, a key twice).
    pub fn new(keys: &[Bytes]) -> Option<Rc<Shape>> {
        if keys.is_empty() || keys.len() > MAP_SMALL {
            return None;
        }
        for (i, k) in keys.iter().enumerate() {
            if keys[..i].iter().any(|j| j.as_slice() == k.as_slice()) {
                return None;
            }
        }
        Some(Rc::new(Shape { keys: keys.iter().map(|k| Key(k.clone())).collect() }))
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

/// A shaped map's values (in one allocation with the pointer to their shape).
#[derive(Debug)]
struct ShapedVals<T: ?Sized> {
    shape: Rc<Shape>,
    vals: T,
}

type Shaped = ShapedVals<[Value]>;

/// A shaped map's look-ups, out of line: the other layouts' inlined paths stay as short
/// as they were.
impl ShapedVals<[Value]> {
    #[inline(never)]
    fn find(&self, k: &[u8]) -> Option<(usize, &Value)> {
        let i = find_shaped(&self.shape.keys, k)?;
        Some((i, self.vals.get(i)?))
    }

    #[inline(never)]
    fn find_mut(&mut self, k: &[u8]) -> Option<&mut Value> {
        let i = find_shaped(&self.shape.keys, k)?;
        self.vals.get_mut(i)
    }

    #[inline(never)]
    fn at(&self, i: usize) -> Option<(&Bytes, &Value)> {
        Some((&self.shape.keys.get(i)?.0, self.vals.get(i)?))
    }

    #[inline(never)]
    fn at_mut(&mut self, i: usize) -> Option<(&Key, &mut Value)> {
        Some((self.shape.keys.get(i)?, self.vals.get_mut(i)?))
    }
}

/// `N` values from `it` (which has exactly `N` left) beside `shape`.
fn shaped_n<const N: usize>(shape: Rc<Shape>, it: &mut impl Iterator<Item = Value>) -> Box<Shaped> {
    Box::new(ShapedVals { shape, vals: std::array::from_fn::<Value, N, _>(|_| it.next().unwrap_or(Value::Nil)) })
}

/// The values of a shaped map from `it` (exactly `shape.len()` of them, 1 to `MAP_SMALL`).
fn shaped_box(shape: Rc<Shape>, it: &mut impl Iterator<Item = Value>) -> Box<Shaped> {
    match shape.len() {
        1 => shaped_n::<1>(shape, it),
        2 => shaped_n::<2>(shape, it),
        3 => shaped_n::<3>(shape, it),
        4 => shaped_n::<4>(shape, it),
        5 => shaped_n::<5>(shape, it),
        6 => shaped_n::<6>(shape, it),
        7 => shaped_n::<7>(shape, it),
        _ => shaped_n::<8>(shape, it),
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
        if keys.len() == 0 || keys.len() > MAP_SMALL {
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

/// A map's entries in one of its three layouts.
#[derive(Debug)]
enum Entries {
    /// At most `MAP_SMALL` entries, in insertion order.
    Small(Vec<(Key, Value)>),
    /// Indexed (boxed, so that a small map's header stays one pointer-sized vector).
    Big(Box<MapInner>),
    /// The keys of a shared `Shape` and this map's values: made by `Map::shaped`; a new
    /// key or a removal first moves the map to `Small`.
    Shaped(Box<Shaped>),
}

impl Default for Entries {
    fn default() -> Self {
        Entries::Small(Vec::new())
    }
}

/// A copy keeps the capacity of the original (a small map's copy-on-write copy is
/// accounted as the original was).
impl Clone for Entries {
    fn clone(&self) -> Self {
        match self {
            Entries::Small(v) => {
                let mut c = Vec::with_capacity(v.capacity());
                c.extend(v.iter().cloned());
                Entries::Small(c)
            }
            Entries::Big(m) => Entries::Big(m.clone()),
            Entries::Shaped(b) => Entries::Shaped(shaped_box(b.shape.clone(), &mut b.vals.iter().cloned())),
        }
    }
}

impl Entries {
    /// Take every value out, leaving the map empty.
    fn take_values(&mut self) -> Vec<Value> {
        match self {
            Entries::Small(v) => v.drain(..).map(|(_, v)| v).collect(),
            Entries::Big(m) => m.drain(..).map(|(_, v)| v).collect(),
            Entries::Shaped(b) => {
                let vals = b.vals.iter_mut().map(std::mem::take).collect();
                *self = Entries::default();
                vals
            }
        }
    }
}

/// Where key `k` is among small-map entries. A key of another length, or whose last
/// byte differs, is passed over without a `memcmp` call; a key that is the very bytes
/// of `k` (the same string) is found without one.
#[inline(never)]
fn find_small(v: &[(Key, Value)], k: &[u8]) -> Option<usize> {
    let last = k.last().copied();
    v.iter().position(|(key, _)| {
        let b = key.0.as_slice();
        b.len() == k.len() && (b.as_ptr() == k.as_ptr() || (b.last().copied() == last && b == k))
    })
}

/// `find_small` over a shape's keys.
#[inline(never)]
fn find_shaped(keys: &[Key], k: &[u8]) -> Option<usize> {
    let last = k.last().copied();
    keys.iter().position(|key| {
        let b = key.0.as_slice();
        b.len() == k.len() && (b.as_ptr() == k.as_ptr() || (b.last().copied() == last && b == k))
    })
}

/// The value slot of key `k` among `e` (one look at the layout).
#[inline(always)]
fn slot_of<'a>(e: &'a mut Entries, k: &[u8]) -> Option<&'a mut Value> {
    match e {
        Entries::Small(e) => {
            let i = find_small(e, k)?;
            e.get_mut(i).map(|(_, v)| v)
        }
        Entries::Big(m) => m.get_mut(k),
        Entries::Shaped(b) => b.find_mut(k),
    }
}

/// The value slot at index `i`.
#[inline(always)]
fn slot_at(e: &mut Entries, i: usize) -> Option<&mut Value> {
    match e {
        Entries::Small(e) => e.get_mut(i).map(|(_, v)| v),
        Entries::Big(m) => m.get_index_mut(i).map(|(_, v)| v),
        Entries::Shaped(b) => b.at_mut(i).map(|(_, v)| v),
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
    Small(std::slice::Iter<'a, (Key, Value)>),
    Big(indexmap::map::Iter<'a, Key, Value>),
    Shaped(std::iter::Zip<std::slice::Iter<'a, Key>, std::slice::Iter<'a, Value>>),
}

impl<'a> Iterator for MapIter<'a> {
    type Item = (&'a Bytes, &'a Value);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            MapIterInner::Small(it) => it.next().map(|(k, v)| (&k.0, v)),
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

/// A map with string keys in insertion order, and the accounted storage of its entries.
#[derive(Clone, Debug, Default)]
pub struct Map {
    entries: Entries,
    /// (Visible to `value`'s tests, which check the accounting.)
    pub(super) heap: usize,
    /// Where the last successful `get` found its key: a guess for an `insert` of the
    /// same key that follows (`m[k] = get(m, k, 0) + 1` then looks once).
    /// Checked against the key before use, so a stale guess costs one compare.
    hint: Cell<usize>,
}

impl Map {
    pub fn new() -> Self {
        Map::default()
    }

    /// A map with room for exactly `n` entries (for maps built to a known size, so that
    /// small maps are not accounted at the default growth capacity).
    pub fn with_capacity(n: usize) -> Self {
        let n = n.min(GROW_MAP.load(Relaxed));
        let entries = if n <= MAP_SMALL {
            Entries::Small(Vec::with_capacity(n))
        } else {
            Entries::Big(Box::new(MapInner::with_capacity_and_hasher(n, Default::default())))
        };
        Map { entries, heap: 0, hint: Cell::new(0) }
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
        let mut it = vals.inspect(|v| heap += v.heap());
        let b = shaped_box(shape.clone(), &mut it);
        Map { entries: Entries::Shaped(b), heap, hint: Cell::new(0) }
    }

    /// A shaped map moves to the small layout (with room for `cap` entries), keeping its
    /// entries, their order and its accounted heap; other layouts stay.
    #[cold]
    fn unshape(&mut self, cap: usize) {
        if let Entries::Shaped(b) = &mut self.entries {
            let sv = &mut **b;
            let mut e = Vec::with_capacity(cap.max(sv.vals.len()));
            for (k, v) in sv.shape.keys.iter().zip(sv.vals.iter_mut()) {
                e.push((k.clone(), std::mem::take(v)));
            }
            self.entries = Entries::Small(e);
        }
    }

    /// Whether the map is in its small layout (tests).
    #[cfg(test)]
    fn is_small(&self) -> bool {
        matches!(self.entries, Entries::Small(_))
    }

    /// Whether the map is shaped (tests).
    #[cfg(test)]
    pub(crate) fn is_shaped(&self) -> bool {
        matches!(self.entries, Entries::Shaped(_))
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        match &self.entries {
            Entries::Small(v) => v.len(),
            Entries::Big(m) => m.len(),
            Entries::Shaped(b) => b.vals.len(),
        }
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries the map has room for (tests).
    #[cfg(test)]
    fn capacity(&self) -> usize {
        match &self.entries {
            Entries::Small(v) => v.capacity(),
            Entries::Big(m) => m.capacity().max(m.len()),
            Entries::Shaped(b) => b.vals.len(),
        }
    }

    /// Accounted size: a header and a size per unit of capacity, each layout its own
    /// (`ACCT_SMALL_MAP_*`, `ACCT_MAP_*`), and the storage of the keys and values.
    #[inline]
    pub fn acct(&self) -> usize {
        self.heap
            + match &self.entries {
                Entries::Small(v) => ACCT_SMALL_MAP_HEADER + v.capacity() * ACCT_SMALL_MAP_ENTRY,
                Entries::Big(m) => ACCT_MAP_HEADER + m.capacity().max(m.len()) * ACCT_MAP_ENTRY,
                Entries::Shaped(b) => ACCT_SHAPED_MAP_HEADER + b.vals.len() * ACCT_SHAPED_MAP_ENTRY,
            }
    }

    #[inline(always)]
    pub fn get(&self, k: &[u8]) -> Option<&Value> {
        let (i, v) = self.find(k)?;
        self.hint.set(i);
        Some(v)
    }

    /// Where key `k` is and its value: one look at the layout (`get`, `num_of`).
    #[inline(always)]
    fn find(&self, k: &[u8]) -> Option<(usize, &Value)> {
        match &self.entries {
            Entries::Small(e) => {
                let i = find_small(e, k)?;
                Some((i, &e[i].1))
            }
            Entries::Big(m) => {
                // (not `get_full`: a call less, as `index_of` and `get_index` inline)
                let i = m.get_index_of(k)?;
                Some((i, m.get_index(i)?.1))
            }
            Entries::Shaped(b) => b.find(k),
        }
    }

    #[inline(always)]
    pub fn contains(&self, k: &[u8]) -> bool {
        match self.index_of(k) {
            Some(i) => {
                self.hint.set(i);
                true
            }
            None => false,
        }
    }

    pub fn iter(&self) -> MapIter<'_> {
        MapIter(match &self.entries {
            Entries::Small(v) => MapIterInner::Small(v.iter()),
            Entries::Big(m) => MapIterInner::Big(m.iter()),
            Entries::Shaped(b) => MapIterInner::Shaped(b.shape.keys.iter().zip(b.vals.iter())),
        })
    }

    pub fn keys(&self) -> impl Iterator<Item = &Bytes> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.iter().map(|(_, v)| v)
    }

    #[inline(always)]
    pub fn get_index(&self, i: usize) -> Option<(&Bytes, &Value)> {
        match &self.entries {
            Entries::Small(v) => v.get(i).map(|(k, v)| (&k.0, v)),
            Entries::Big(m) => m.get_index(i).map(|(k, v)| (&k.0, v)),
            Entries::Shaped(b) => b.at(i),
        }
    }

    /// The value slot at index `i`, and whether its key is `k`.
    #[inline(always)]
    fn slot_at_if(&mut self, i: usize, k: &[u8]) -> Option<&mut Value> {
        slot_at_if(&mut self.entries, i, k)
    }
}

/// The value slot at index `i` of `e` if its key is `k` (one look at the layout).
#[inline(always)]
fn slot_at_if<'a>(e: &'a mut Entries, i: usize, k: &[u8]) -> Option<&'a mut Value> {
    {
        let (key, slot) = match e {
            Entries::Small(v) => {
                let (key, slot) = v.get_mut(i)?;
                (&*key, slot)
            }
            Entries::Big(m) => m.get_index_mut(i)?,
            Entries::Shaped(b) => b.at_mut(i)?,
        };
        (key.0.as_slice() == k).then_some(slot)
    }
}

impl Map {
    /// Insert or replace; returns the old value.
    pub fn insert(&mut self, k: Bytes, v: Value) -> Option<Value> {
        self.heap += v.heap();
        // The key a `get` just found: replace its value without looking again.
        if let Some(slot) = self.slot_at_if(self.hint.get(), k.as_slice()) {
            let old = std::mem::replace(slot, v);
            self.heap -= old.heap();
            return Some(old);
        }
        if let Entries::Shaped(b) = &mut self.entries {
            if let Some(i) = find_shaped(&b.shape.keys, &k) {
                let old = std::mem::replace(&mut b.vals[i], v);
                self.heap -= old.heap();
                return Some(old);
            }
            // A new key: the map leaves its shape.
            let n = b.vals.len();
            self.unshape(n);
        }
        if let Entries::Small(e) = &mut self.entries {
            if let Some(i) = find_small(e, &k) {
                let old = std::mem::replace(&mut e[i].1, v);
                self.heap -= old.heap();
                return Some(old);
            }
            let limit = GROW_MAP.load(Relaxed);
            if e.len() < MAP_SMALL {
                if e.len() == e.capacity() {
                    let target = grown(e.capacity(), e.len() + 1, GROW_DOUBLE_ITEMS, 4, limit);
                    e.reserve_exact(target - e.len());
                }
                let key = Key(k);
                self.heap += key.acct();
                e.push((key, v));
                return None;
            }
            // Past `MAP_SMALL`: move to the indexed layout, grown as the map would grow.
            let target = grown(e.capacity(), e.len() + 1, GROW_DOUBLE_ITEMS, 4, limit);
            let mut m = MapInner::with_capacity_and_hasher(target, Default::default());
            m.extend(e.drain(..));
            self.entries = Entries::Big(Box::new(m));
        }
        let Entries::Big(m) = &mut self.entries else { unreachable!("a small map returned above") };
        if m.len() == m.capacity() && !m.contains_key(k.as_slice()) {
            let cap = m.capacity();
            let target = grown(cap, m.len() + 1, GROW_DOUBLE_ITEMS, 4, GROW_MAP.load(Relaxed));
            m.reserve_exact(target - m.len());
        }
        match m.entry(Key(k)) {
            indexmap::map::Entry::Occupied(mut o) => {
                let old = std::mem::replace(o.get_mut(), v);
                self.heap -= old.heap();
                Some(old)
            }
            indexmap::map::Entry::Vacant(e) => {
                self.heap += e.key().acct();
                e.insert(v);
                None
            }
        }
    }

    /// Remove `k`, keeping the order of the others (later entries move up one place).
    pub fn remove(&mut self, k: &[u8]) -> Option<Value> {
        if let Entries::Shaped(b) = &self.entries {
            find_shaped(&b.shape.keys, k)?;
            let n = b.vals.len();
            self.unshape(n);
        }
        let (key, v) = match &mut self.entries {
            Entries::Small(e) => {
                let i = find_small(e, k)?;
                e.remove(i)
            }
            Entries::Big(m) => m.shift_remove_entry(k)?,
            Entries::Shaped(_) => return None,
        };
        self.heap -= key.acct() + v.heap();
        Some(v)
    }

    /// Where key `k` is (its index, for `set_num_at`).
    #[inline(always)]
    pub fn index_of(&self, k: &[u8]) -> Option<usize> {
        match &self.entries {
            Entries::Small(e) => find_small(e, k),
            Entries::Big(m) => m.get_index_of(k),
            Entries::Shaped(b) => find_shaped(&b.shape.keys, k),
        }
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
        match slot_at(&mut self.entries, i) {
            Some(Value::Num(x)) => {
                *x = n;
                true
            }
            _ => false,
        }
    }

    /// The value of `k`, looked for first at index `site` (a call site's guess: an
    /// inline cache, kept up to date here), then by hashing. One compare when the site
    /// reads maps of one shape, as a field read in a loop does.
    #[inline]
    pub fn get_cached(&self, k: &[u8], site: &Cell<u32>) -> Option<&Value> {
        let i = site.get() as usize;
        if let Some((key, v)) = self.get_index(i) {
            if key.as_slice() == k {
                self.hint.set(i);
                return Some(v);
            }
        }
        // The key this map's last look-up found (a `get` or `in` of the same key just
        // before): no hash either.
        let h = self.hint.get();
        if h != i {
            if let Some((key, v)) = self.get_index(h) {
                if key.as_slice() == k {
                    site.set(h as u32);
                    return Some(v);
                }
            }
        }
        let i = self.index_of(k)?;
        self.hint.set(i);
        site.set(i as u32);
        self.value_at(i)
    }

    /// `with_value`, looking for `k` first at index `site` (see `get_cached`).
    #[inline]
    pub fn with_value_cached<R>(&mut self, k: &[u8], site: &Cell<u32>, f: impl FnOnce(&mut Value) -> R) -> Option<R> {
        let guess = site.get() as usize;
        let slot = match slot_at_if(&mut self.entries, guess, k) {
            Some(slot) => slot,
            None => {
                // The key this map's last look-up found (`m[k] = get(m, k, 0) + 1`),
                // then the hash.
                let hint = self.hint.get();
                let i = if hint != guess && matches!(self.get_index(hint), Some((key, _)) if key.as_slice() == k) {
                    hint
                } else {
                    self.index_of(k)?
                };
                site.set(i as u32);
                slot_at(&mut self.entries, i)?
            }
        };
        Some(changed(&mut self.heap, slot, f))
    }

    /// `with_value`, looking for `k` first where this map's last look-up found a key
    /// (`m[k] = get(m, k, 0) + 1`: no hash the second time).
    #[inline(always)]
    pub fn with_value_hinted<R>(&mut self, k: &[u8], f: impl FnOnce(&mut Value) -> R) -> Option<R> {
        let slot = match slot_at_if(&mut self.entries, self.hint.get(), k) {
            Some(slot) => slot,
            None => slot_of(&mut self.entries, k)?,
        };
        Some(changed(&mut self.heap, slot, f))
    }

    /// Change the value of `k` in place through `f`, keeping this map's accounting true.
    #[inline]
    pub fn with_value<R>(&mut self, k: &[u8], f: impl FnOnce(&mut Value) -> R) -> Option<R> {
        let slot = slot_of(&mut self.entries, k)?;
        Some(changed(&mut self.heap, slot, f))
    }
}

#[cfg(test)]
mod tests;
