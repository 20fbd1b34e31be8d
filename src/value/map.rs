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
        let (i, v) = match &self.entries {
            Entries::Small(e) => {
                let i = find_small(e, k)?;
                (i, &e[i].1)
            }
            Entries::Big(m) => {
                // (not `get_full`: a call less, as `index_of` and `get_index` inline)
                let i = m.get_index_of(k)?;
                (i, m.get_index(i)?.1)
            }
            Entries::Shaped(b) => b.find(k)?,
        };
        self.hint.set(i);
        Some(v)
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
        let (i, v) = match &self.entries {
            Entries::Small(e) => {
                let i = find_small(e, k)?;
                (i, &e[i].1)
            }
            Entries::Big(m) => {
                let i = m.get_index_of(k)?;
                (i, m.get_index(i)?.1)
            }
            Entries::Shaped(b) => b.find(k)?,
        };
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

    /// The value slot at index `i`.
    #[inline(always)]
    fn slot_at(&mut self, i: usize) -> Option<&mut Value> {
        match &mut self.entries {
            Entries::Small(e) => e.get_mut(i).map(|(_, v)| v),
            Entries::Big(m) => m.get_index_mut(i).map(|(_, v)| v),
            Entries::Shaped(b) => b.at_mut(i).map(|(_, v)| v),
        }
    }

    /// Replace the number at index `i` by `n` (a number for a number: the accounting
    /// does not change). False, and nothing done, when it holds something else.
    #[inline(always)]
    pub fn set_num_at(&mut self, i: usize, n: f64) -> bool {
        match self.slot_at(i) {
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
                self.slot_at(i)?
            }
        };
        let before = slot.heap();
        let r = f(slot);
        let after = slot.heap();
        self.heap = self.heap + after - before;
        Some(r)
    }

    /// Change the value of `k` in place through `f`, keeping this map's accounting true.
    #[inline]
    pub fn with_value<R>(&mut self, k: &[u8], f: impl FnOnce(&mut Value) -> R) -> Option<R> {
        let slot = slot_of(&mut self.entries, k)?;
        let before = slot.heap();
        let r = f(slot);
        let after = slot.heap();
        self.heap = self.heap + after - before;
        Some(r)
    }
}

#[cfg(test)]
mod map_tests {
    use super::*;

    /// Keys of many lengths sharing prefixes, with 0 and 255 bytes: a look-up finds
    /// exactly its own key, also through the insert-after-get hint.
    #[test]
    fn keys_find_only_themselves() {
        let mut keys: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![255], vec![0; 15], vec![0; 16]];
        for n in 1..=34 {
            keys.push(vec![b'a'; n]);
            let mut k = vec![b'a'; n];
            k[n - 1] = b'b';
            keys.push(k);
            let mut k = vec![b'a'; n];
            k[n - 1] = 0;
            keys.push(k);
        }
        keys.push("é".repeat(8).into_bytes());
        keys.push("é".repeat(7).into_bytes());
        keys.sort();
        keys.dedup();
        let mut m = Map::new();
        for (i, k) in keys.iter().enumerate() {
            assert!(m.insert(bytes(k), Value::Num(i as f64)).is_none(), "{k:?} inserted twice");
        }
        assert_eq!(m.len(), keys.len());
        for (i, k) in keys.iter().enumerate() {
            assert!(matches!(m.get(k), Some(Value::Num(n)) if *n == i as f64), "{k:?}");
            assert!(m.contains(k));
            // insert after get (the hint), and insert without one
            assert!(m.insert(bytes(k), Value::Num(i as f64)).is_some());
        }
        assert!(m.get(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").is_none());
        assert!(m.get(b"c").is_none());
        for k in &keys {
            assert!(m.remove(k).is_some(), "{k:?}");
            assert!(m.get(k).is_none());
        }
        assert!(m.is_empty());
    }
}

#[cfg(test)]
mod map_layout_tests {
    use super::*;

    /// The chunk glibc malloc uses for a request of `n` bytes on 64-bit (what the
    /// counting allocator counts): the request and an 8-byte header, rounded up to 16.
    fn chunk(n: usize) -> usize {
        if n == 0 {
            0
        } else {
            ((n + 8 + 15) & !15).max(32)
        }
    }

    fn key(i: usize) -> Bytes {
        bytes(format!("k{i}").as_bytes())
    }

    pub(super) fn order(m: &Map) -> Vec<(Vec<u8>, f64)> {
        m.iter()
            .map(|(k, v)| match v {
                Value::Num(n) => (k.to_vec(), *n),
                _ => panic!("numbers only"),
            })
            .collect()
    }

    pub(super) fn heap_of(m: &Map) -> usize {
        m.iter().map(|(k, v)| k.acct_bytes() + v.heap()).sum()
    }

    #[test]
    fn sizes_and_accounting_bound_both_layouts() {
        // A map's shared box (two counts and the header) is one 64-byte chunk; an entry
        // of the small layout is a key pointer and a value slot.
        assert_eq!(std::mem::size_of::<Value>(), 16);
        assert_eq!(std::mem::size_of::<(Key, Value)>(), 24);
        assert!(std::mem::size_of::<Map>() <= 40, "{}", std::mem::size_of::<Map>());
        let boxed = chunk(16 + std::mem::size_of::<Map>());
        assert_eq!(boxed, 64);
        // Small: the box and one vector of entries, below the accounted size.
        for cap in 0..=MAP_SMALL {
            let real = boxed + chunk(cap * 24);
            let m = Map::with_capacity(cap);
            assert!(m.is_small());
            assert_eq!(m.acct(), ACCT_SMALL_MAP_HEADER + cap * ACCT_SMALL_MAP_ENTRY);
            assert!(real <= m.acct(), "small, capacity {cap}: {real} held, {} accounted", m.acct());
        }
        // Indexed: the box, the boxed `IndexMap`, its entries (hash, key, value: 32
        // bytes) and its hash index (a bucket of 8 bytes and a control byte per bucket,
        // 16 control bytes more; buckets a power of two at most 8/7 full).
        for asked in MAP_SMALL + 1..=20_000 {
            let m = Map::with_capacity(asked);
            let cap = m.capacity(); // at most the map limit
            assert!(!m.is_small());
            assert_eq!(m.acct(), ACCT_MAP_HEADER + cap * ACCT_MAP_ENTRY);
            let buckets = (cap * 8 / 7 + 1).next_power_of_two();
            let real = boxed + chunk(std::mem::size_of::<MapInner>()) + chunk(cap * 32) + chunk(buckets * 9 + 16);
            assert!(real <= m.acct(), "indexed, capacity {cap}: {real} held, {} accounted", m.acct());
        }
        // What a 6-field record's map holds in each layout (WORKLOG, issue 25).
        assert_eq!(boxed + chunk(6 * 24), 224);
    }

    #[test]
    fn small_maps_move_to_the_indexed_layout_past_the_threshold_and_stay() {
        let mut m = Map::new();
        for i in 0..MAP_SMALL {
            assert!(m.insert(key(i), Value::Num(i as f64)).is_none());
            assert!(m.is_small());
        }
        // Replacing an existing key never moves it.
        assert!(m.insert(key(3), Value::Num(30.0)).is_some());
        assert!(m.is_small());
        assert_eq!(m.capacity(), MAP_SMALL);
        assert!(m.insert(key(MAP_SMALL), Value::Num(MAP_SMALL as f64)).is_none());
        assert!(!m.is_small());
        // Grown as the indexed layout grows (doubling while small).
        assert_eq!(m.capacity(), 2 * MAP_SMALL);
        let want: Vec<(Vec<u8>, f64)> =
            (0..=MAP_SMALL).map(|i| (key(i).to_vec(), if i == 3 { 30.0 } else { i as f64 })).collect();
        assert_eq!(order(&m), want);
        // Removal shifts (order kept); below the threshold the map keeps its index.
        for i in [0, 4, 8, 2, 7, 6] {
            assert!(matches!(m.remove(&key(i)), Some(Value::Num(_))));
        }
        assert!(!m.is_small());
        assert_eq!(order(&m), vec![(key(1).to_vec(), 1.0), (key(3).to_vec(), 30.0), (key(5).to_vec(), 5.0)]);
        // Re-inserted keys go to the end; every key is found where it is.
        for i in [8, 0, 4] {
            assert!(m.insert(key(i), Value::Num(100.0 + i as f64)).is_none());
        }
        let keys: Vec<Vec<u8>> = m.keys().map(|k| k.to_vec()).collect();
        assert_eq!(keys, [1, 3, 5, 8, 0, 4].iter().map(|&i| key(i).to_vec()).collect::<Vec<_>>());
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(m.index_of(k), Some(i));
        }
        assert_eq!(m.heap, heap_of(&m));
    }

    #[test]
    fn removal_and_reinsertion_in_the_small_layout_keep_insertion_order() {
        let mut m = Map::new();
        for i in 0..5 {
            m.insert(key(i), Value::Num(i as f64));
        }
        assert_eq!(m.capacity(), 8);
        assert!(matches!(m.remove(&key(1)), Some(Value::Num(n)) if n == 1.0));
        assert!(m.remove(&key(1)).is_none());
        assert!(m.insert(key(1), Value::Num(11.0)).is_none());
        let keys: Vec<Vec<u8>> = m.keys().map(|k| k.to_vec()).collect();
        assert_eq!(keys, [0, 2, 3, 4, 1].iter().map(|&i| key(i).to_vec()).collect::<Vec<_>>());
        // Up to the threshold again after removals: still small, then indexed.
        for i in 5..MAP_SMALL {
            m.insert(key(i), Value::Num(i as f64));
        }
        assert!(m.is_small() && m.len() == MAP_SMALL);
        m.remove(&key(0));
        m.insert(key(0), Value::Num(0.0));
        assert!(m.is_small());
        m.insert(key(99), Value::Num(99.0));
        assert!(!m.is_small());
        assert_eq!(m.get_index(0).map(|(k, _)| k.to_vec()), Some(key(2).to_vec()));
        assert_eq!(m.get_index(MAP_SMALL).map(|(k, _)| k.to_vec()), Some(key(99).to_vec()));
        assert_eq!(m.heap, heap_of(&m));
    }

    #[test]
    fn in_place_changes_and_the_hint_in_both_layouts() {
        for n in [3, MAP_SMALL, MAP_SMALL + 1, 40] {
            let mut m = Map::new();
            for i in 0..n {
                m.insert(key(i), Value::Num(0.0));
            }
            for _ in 0..3 {
                for i in (0..n).rev() {
                    // the counting idiom: get, then insert of the same key
                    let c = match m.get(&key(i)) {
                        Some(Value::Num(c)) => *c,
                        _ => panic!(),
                    };
                    assert!(m.insert(key(i), Value::Num(c + 1.0)).is_some());
                    let at = m.index_of(&key(i)).unwrap();
                    assert_eq!(at, i);
                    assert!(m.set_num_at(at, c + 1.0));
                }
            }
            assert!(order(&m).iter().all(|(_, c)| *c == 3.0));
            // a string in place, through with_value: the accounting follows
            m.with_value(&key(0), |v| *v = Value::string("a string longer than the inline sixteen"));
            assert!(!m.set_num_at(0, 1.0));
            assert_eq!(m.heap, heap_of(&m));
            assert!(m.with_value(b"missing", |_| ()).is_none());
        }
    }

    /// Random operations on maps of 0 to 30 keys against a plain model (a vector of
    /// pairs, removal shifting): the same entries in the same order after every step,
    /// the accounting true, the layout small exactly while the map never held more
    /// than `MAP_SMALL` entries.
    #[test]
    fn random_operations_match_a_model() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let mut m = Map::new();
            let mut model: Vec<(Vec<u8>, f64)> = Vec::new();
            let mut most = 0;
            let keys = 4 + (next() % 27) as usize;
            for step in 0..300 {
                let k = key((next() % keys as u64) as usize);
                match next() % 4 {
                    0 | 1 => {
                        let v = step as f64;
                        let had = m.insert(k.clone(), Value::Num(v)).is_some();
                        match model.iter_mut().find(|(mk, _)| mk[..] == k[..]) {
                            Some(e) => {
                                assert!(had);
                                e.1 = v;
                            }
                            None => {
                                assert!(!had);
                                model.push((k.to_vec(), v));
                            }
                        }
                    }
                    2 => {
                        let got = m.remove(&k).is_some();
                        let at = model.iter().position(|(mk, _)| mk[..] == k[..]);
                        assert_eq!(got, at.is_some());
                        if let Some(i) = at {
                            model.remove(i);
                        }
                    }
                    _ => {
                        let got = m.get(&k).map(|v| match v {
                            Value::Num(n) => *n,
                            _ => panic!(),
                        });
                        assert_eq!(got, model.iter().find(|(mk, _)| mk[..] == k[..]).map(|e| e.1));
                    }
                }
                most = most.max(model.len());
                assert_eq!(order(&m), model);
                assert_eq!(m.len(), model.len());
                assert_eq!(m.heap, heap_of(&m));
                assert_eq!(m.is_small(), most <= MAP_SMALL);
                assert!(m.capacity() >= m.len());
            }
            // A copy (copy-on-write) has the same entries and the same accounted size.
            let c = m.clone();
            assert_eq!(order(&c), model);
            if m.is_small() {
                assert_eq!(c.acct(), m.acct());
            }
        }
    }

    /// Keys of equal length that differ in one byte, empty and 0/255 keys: a small
    /// map's look-up by bytes finds exactly its own key, also through the hint.
    #[test]
    fn small_map_keys_find_only_themselves() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![255],
            b"name".to_vec(),
            b"namf".to_vec(),
            b"nam".to_vec(),
            b"aaaaaaaaaaaaaaaaa".to_vec(),
            b"aaaaaaaaaaaaaaaab".to_vec(),
        ];
        let mut m = Map::new();
        for (i, k) in keys.iter().enumerate() {
            assert!(m.insert(bytes(k), Value::Num(i as f64)).is_none());
        }
        assert!(m.is_small());
        for (i, k) in keys.iter().enumerate() {
            assert!(matches!(m.get(k), Some(Value::Num(n)) if *n == i as f64), "{k:?}");
            assert!(m.insert(bytes(k), Value::Num(i as f64)).is_some());
        }
        for k in [&b"names"[..], b"nbme", b"aaaaaaaaaaaaaaaac", &[0, 0], &[1]] {
            assert!(m.get(k).is_none() && !m.contains(k));
        }
        assert!(m.is_small() && m.len() == keys.len());
    }

    #[test]
    fn deep_nests_of_small_maps_drop_without_recursion() {
        let mut v = Value::Nil;
        for _ in 0..300_000 {
            let mut m = Map::with_capacity(1);
            m.insert(bytes(b"a"), v);
            v = Value::map(m);
        }
        drop(v);
    }
}

#[cfg(test)]
mod shaped_map_tests {
    use super::map_layout_tests::{heap_of, order};
    use super::*;

    fn chunk(n: usize) -> usize {
        if n == 0 {
            0
        } else {
            ((n + 8 + 15) & !15).max(32)
        }
    }

    fn keys(n: usize) -> Vec<Bytes> {
        (0..n).map(|i| bytes(format!("field{i}").as_bytes())).collect()
    }

    fn shaped(shape: &Rc<Shape>, base: f64) -> Map {
        Map::shaped(shape, (0..shape.len()).map(|i| Value::Num(base + i as f64)))
    }

    #[test]
    fn sizes_and_accounting_bound_the_shaped_layout() {
        // The third layout keeps a map's header at 40 bytes (its box one 64-byte chunk).
        assert!(std::mem::size_of::<Map>() <= 40, "{}", std::mem::size_of::<Map>());
        let boxed = chunk(16 + std::mem::size_of::<Map>());
        assert_eq!(boxed, 64);
        for n in 1..=MAP_SMALL {
            let shape = Shape::new(&keys(n)).unwrap();
            let m = shaped(&shape, 0.0);
            assert!(m.is_shaped());
            // the box, and the values beside the shape pointer
            let real = boxed + chunk(8 + n * 16);
            assert_eq!(m.acct() - m.heap, ACCT_SHAPED_MAP_HEADER + n * ACCT_SHAPED_MAP_ENTRY);
            assert!(real <= m.acct() - m.heap, "shaped, {n} entries: {real} held, {} accounted", m.acct() - m.heap);
            // never accounted more than the small layout of the same entries
            assert!(m.acct() - m.heap <= ACCT_SMALL_MAP_HEADER + n * ACCT_SMALL_MAP_ENTRY);
            assert_eq!(m.heap, heap_of(&m));
        }
        // A 6-field record's map (WORKLOG, issue 25): 176 bytes, was 224 small.
        assert_eq!(boxed + chunk(8 + 6 * 16), 176);
    }

    #[test]
    fn shapes_refuse_what_a_shaped_map_cannot_take() {
        assert!(Shape::new(&[]).is_none());
        assert!(Shape::new(&keys(MAP_SMALL + 1)).is_none());
        let mut k = keys(3);
        k.push(bytes(b"field1"));
        assert!(Shape::new(&k).is_none());
        assert_eq!(Shape::new(&keys(MAP_SMALL)).unwrap().len(), MAP_SMALL);
    }

    #[test]
    fn shaped_maps_read_write_and_leave_their_shape_on_a_new_key_or_a_removal() {
        let shape = Shape::new(&keys(5)).unwrap();
        let mut m = shaped(&shape, 10.0);
        let other = shaped(&shape, 20.0);
        assert_eq!(m.len(), 5);
        assert!(matches!(m.get(b"field3"), Some(Value::Num(n)) if *n == 13.0));
        assert!(m.get(b"field5").is_none() && !m.contains(b"fieldx"));
        assert_eq!(m.index_of(b"field4"), Some(4));
        assert_eq!(m.num_of(b"field2"), Some((2, 12.0)));
        // replacing a value keeps the shape (also through the hint and in place)
        assert!(m.insert(bytes(b"field3"), Value::Num(99.0)).is_some());
        assert!(m.set_num_at(0, 7.0));
        m.with_value(b"field1", |v| *v = Value::string("a string longer than sixteen bytes"));
        assert!(m.is_shaped());
        assert_eq!(m.heap, heap_of(&m));
        let site = Cell::new(0);
        assert!(m.get_cached(b"field4", &site).is_some());
        assert_eq!(site.get(), 4);
        assert_eq!(
            m.with_value_cached(b"field4", &site, |v| std::mem::replace(v, Value::Num(1.0))).map(|v| v.heap()),
            Some(0)
        );
        // a missing key removed: nothing changes
        assert!(m.remove(b"nope").is_none());
        assert!(m.is_shaped());
        // a removal: small, in order, the accounting true
        assert!(m.remove(b"field1").is_some());
        assert!(m.is_small());
        assert_eq!(
            order(&m),
            vec![
                (b"field0".to_vec(), 7.0),
                (b"field2".to_vec(), 12.0),
                (b"field3".to_vec(), 99.0),
                (b"field4".to_vec(), 1.0)
            ]
        );
        assert_eq!(m.heap, heap_of(&m));
        // the other map of the shape did not change
        assert_eq!(
            order(&other),
            (0..5).map(|i| (format!("field{i}").into_bytes(), 20.0 + i as f64)).collect::<Vec<_>>()
        );
        // a new key: small, appended; the ninth: indexed
        let mut m = shaped(&Shape::new(&keys(MAP_SMALL)).unwrap(), 0.0);
        assert!(m.insert(bytes(b"new"), Value::Num(-1.0)).is_none());
        assert!(!m.is_small() && !m.is_shaped());
        assert_eq!(m.get_index(MAP_SMALL).map(|(k, _)| k.to_vec()), Some(b"new".to_vec()));
        assert_eq!(m.heap, heap_of(&m));
        let mut m = shaped(&shape, 0.0);
        assert!(m.insert(bytes(b"new"), Value::Num(-1.0)).is_none());
        assert!(m.is_small());
        assert_eq!(m.len(), 6);
        assert_eq!(m.get_index(5).map(|(k, _)| k.to_vec()), Some(b"new".to_vec()));
    }

    #[test]
    fn copies_of_shaped_maps_are_shaped_and_independent() {
        let shape = Shape::new(&keys(3)).unwrap();
        let m = Rc::new(shaped(&shape, 0.0));
        let mut v = Value::Map(m.clone());
        if let Value::Map(r) = &mut v {
            Rc::make_mut(r).insert(bytes(b"field0"), Value::Num(5.0));
            assert!(r.is_shaped());
            assert_eq!(r.acct(), m.acct());
        }
        assert_eq!(order(&m)[0].1, 0.0);
        assert!(!equals(&v, &Value::Map(m.clone())));
        assert!(equals(&Value::map(shaped(&shape, 0.0)), &Value::Map(m.clone())));
        // equal to a map of the same entries built key by key
        let mut plain = Map::new();
        for (i, k) in keys(3).into_iter().enumerate() {
            plain.insert(k, Value::Num(i as f64));
        }
        assert!(equals(&Value::map(plain), &Value::Map(m)));
    }

    #[test]
    fn a_wrong_number_of_values_builds_an_ordinary_map() {
        let shape = Shape::new(&keys(4)).unwrap();
        let m = Map::shaped(&shape, (0..3).map(|i| Value::Num(i as f64)));
        assert!(m.is_small());
        assert_eq!(m.len(), 3);
        assert_eq!(m.heap, heap_of(&m));
    }

    #[test]
    fn the_cache_shapes_a_key_sequence_from_its_second_map() {
        let mut c = ShapeCache::new();
        let k = keys(4);
        assert!(c.get(k.iter()).is_none());
        let s1 = c.get(k.iter()).unwrap();
        let s2 = c.get(k.iter()).unwrap();
        assert!(Rc::ptr_eq(&s1, &s2));
        // equal bytes in other strings: the same shape
        let copy: Vec<Bytes> = k.iter().map(|b| bytes(b)).collect();
        assert!(Rc::ptr_eq(&c.get(copy.iter()).unwrap(), &s1));
        // another order, a prefix, a key twice, none, too many: not that shape
        let rev: Vec<Bytes> = k.iter().rev().cloned().collect();
        assert!(c.get(rev.iter()).is_none());
        assert!(c.get(rev.iter()).is_some_and(|s| !Rc::ptr_eq(&s, &s1)));
        assert!(c.get(k[..3].iter()).is_none());
        let twice = [k[0].clone(), k[0].clone()];
        assert!(c.get(twice.iter()).is_none() && c.get(twice.iter()).is_none());
        assert!(c.get([].iter()).is_none());
        let many = keys(MAP_SMALL + 1);
        assert!(c.get(many.iter()).is_none() && c.get(many.iter()).is_none());
        // many sequences in turn: each found again after its first two, or missed (a
        // collision), never a wrong shape
        let seqs: Vec<Vec<Bytes>> = (0..2000).map(|i| vec![bytes(format!("a{i}").as_bytes()), bytes(b"b")]).collect();
        for _ in 0..3 {
            for s in &seqs {
                if let Some(sh) = c.get(s.iter()) {
                    assert!(sh.is(s.iter()));
                }
            }
        }
    }

    /// Random operations on shaped maps against a plain model, as for the other layouts.
    #[test]
    fn random_operations_on_shaped_maps_match_a_model() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..200 {
            let n = 1 + round % MAP_SMALL;
            let shape = Shape::new(&keys(n)).unwrap();
            let mut m = shaped(&shape, 0.0);
            let mut model: Vec<(Vec<u8>, f64)> = (0..n).map(|i| (format!("field{i}").into_bytes(), i as f64)).collect();
            let mut changed_keys = false;
            for step in 0..100 {
                let k = bytes(format!("field{}", next() % (n as u64 + 3)).as_bytes());
                match next() % 5 {
                    0 | 1 => {
                        let v = step as f64;
                        let had = m.insert(k.clone(), Value::Num(v)).is_some();
                        match model.iter_mut().find(|(mk, _)| mk[..] == k[..]) {
                            Some(e) => {
                                assert!(had);
                                e.1 = v;
                            }
                            None => {
                                assert!(!had);
                                changed_keys = true;
                                model.push((k.to_vec(), v));
                            }
                        }
                    }
                    2 => {
                        let got = m.remove(&k).is_some();
                        let at = model.iter().position(|(mk, _)| mk[..] == k[..]);
                        assert_eq!(got, at.is_some());
                        if let Some(i) = at {
                            changed_keys = true;
                            model.remove(i);
                        }
                    }
                    3 => {
                        if let Some((i, x)) = m.num_of(&k) {
                            assert!(m.set_num_at(i, x + 1.0));
                            model.iter_mut().find(|(mk, _)| mk[..] == k[..]).unwrap().1 += 1.0;
                        }
                    }
                    _ => {
                        let got = m.get(&k).map(|v| match v {
                            Value::Num(n) => *n,
                            _ => panic!(),
                        });
                        assert_eq!(got, model.iter().find(|(mk, _)| mk[..] == k[..]).map(|e| e.1));
                    }
                }
                assert_eq!(order(&m), model);
                assert_eq!(m.heap, heap_of(&m));
                assert_eq!(m.is_shaped(), !changed_keys);
                let c = m.clone();
                assert_eq!(order(&c), model);
                if m.is_small() || m.is_shaped() {
                    assert_eq!(c.acct(), m.acct());
                }
            }
        }
    }
}
