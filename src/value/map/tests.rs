//! Unit tests of maps: look-ups and hints, the layouts and their accounting, shaped
//! records. Child of `value::map`.

use super::*;
use leash_alloc::ThinRc;

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

    /// A key and a look-up by its bytes hash alike (`hash_key`): every word of up to three
    /// bytes over six byte values and keys of 4 to 40 bytes, under one hasher's seeds.
    #[test]
    fn a_key_and_its_bytes_hash_alike() {
        use std::hash::BuildHasher;
        let state = foldhash::fast::RandomState::default();
        let mut check = |k: Vec<u8>| {
            assert_eq!(state.hash_one(Key(bytes(&k))), state.hash_one(KeyRef(&k)), "{k:?}");
        };
        crate::test_support::all_words(&[0u8, 1, b'a', b'b', 127, 255], 3).for_each(&mut check);
        for n in 4..=40 {
            check((0..n).map(|i| (i * 37 % 251) as u8).collect());
        }
    }
}

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
        // A map is a one-word handle to its block: two counts and a 24-byte header (the
        // accounted heap; the entries, their variant, hint and a small map's length in
        // one word and a pointer in the other), one 48-byte chunk; a shaped map's values
        // follow in the same block. An entry of the small layout is a key pointer and a
        // value slot, its slot an `Option` of the same 24 bytes.
        assert_eq!(std::mem::size_of::<Value>(), 16);
        assert_eq!(std::mem::size_of::<Map>(), 8);
        assert_eq!(std::mem::size_of::<(Key, Value)>(), 24);
        assert_eq!(std::mem::size_of::<Option<(Key, Value)>>(), 24);
        assert_eq!(std::mem::size_of::<Entries>(), 16);
        assert_eq!(std::mem::size_of::<Head>(), 24);
        let block = |n| chunk(ThinRc::<Head, Value>::block_size(n));
        let slots = |cap| if cap == 0 { 0 } else { chunk(ThinRc::<(), Option<(Key, Value)>>::block_size(cap)) };
        let boxed = block(0);
        assert_eq!(boxed, 48);
        // Small: the block and one block of entry slots, below the accounted size.
        for cap in 0..=MAP_SMALL {
            let real = boxed + slots(cap);
            let m = Map::with_capacity(cap);
            assert!(m.is_small());
            assert_eq!(m.capacity(), cap);
            assert_eq!(m.acct(), ACCT_SMALL_MAP_HEADER + cap * ACCT_SMALL_MAP_ENTRY);
            assert!(real <= m.acct(), "small, capacity {cap}: {real} held, {} accounted", m.acct());
        }
        // Grown key by key: the same bound at each capacity reached.
        let mut m = Map::new();
        for i in 0..MAP_SMALL {
            m.insert(key(i), Value::Num(i as f64));
            let real = boxed + slots(m.capacity());
            assert!(real <= m.acct() - m.heap(), "small, {} entries: {real} held", i + 1);
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
        // What a 6-field record's map holds in the small layout (WORKLOG, issue 25):
        // 224 bytes, as with the `Rc<Map>` box and a vector (64 + 160).
        assert_eq!(boxed + slots(6), 224);
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
        assert_eq!(m.heap(), heap_of(&m));
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
        assert_eq!(m.heap(), heap_of(&m));
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
            assert_eq!(m.heap(), heap_of(&m));
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
                assert_eq!(m.heap(), heap_of(&m));
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
        // A shaped map is one block: two counts, the 24-byte header, its values.
        assert_eq!(std::mem::size_of::<Map>(), 8);
        let block = |n| chunk(ThinRc::<Head, Value>::block_size(n));
        assert_eq!(ThinRc::<Head, Value>::block_size(6), 16 + 24 + 6 * 16);
        for n in 1..=MAP_SHAPED {
            let shape = Shape::new(&keys(n)).unwrap();
            let m = shaped(&shape, 0.0);
            assert!(m.is_shaped());
            let real = block(n);
            assert_eq!(m.acct() - m.heap(), ACCT_SHAPED_MAP_HEADER + n * ACCT_SHAPED_MAP_ENTRY);
            assert!(real <= m.acct() - m.heap(), "shaped, {n} entries: {real} held, {} accounted", m.acct() - m.heap());
            // never accounted more than the small or indexed layout of the same entries
            let other = if n <= MAP_SMALL {
                ACCT_SMALL_MAP_HEADER + n * ACCT_SMALL_MAP_ENTRY
            } else {
                ACCT_MAP_HEADER + n * ACCT_MAP_ENTRY
            };
            assert!(m.acct() - m.heap() <= other);
            assert_eq!(m.heap(), heap_of(&m));
        }
        // A 6-field record's map (WORKLOG, issue 25): one 144-byte chunk; 176 in two
        // blocks (the `Rc<Map>` box and the values' box) before, 224 small.
        assert_eq!(block(6), 144);
    }

    #[test]
    fn shapes_refuse_what_a_shaped_map_cannot_take() {
        assert!(Shape::new(&[]).is_none());
        assert!(Shape::new(&keys(MAP_SHAPED + 1)).is_none());
        let mut k = keys(3);
        k.push(bytes(b"field1"));
        assert!(Shape::new(&k).is_none());
        assert_eq!(Shape::new(&keys(MAP_SHAPED)).unwrap().len(), MAP_SHAPED);
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
        assert_eq!(m.heap(), heap_of(&m));
        let site = Cell::new(0);
        assert!(m.get_cached(&LStr::from(&b"field4"[..]), &site).is_some());
        assert_eq!(site.get(), shape.site | 4);
        assert_eq!(site_index(site.get()), 4);
        // a site starts at index 0: the first key, found there by its bytes, gives
        // the site the shape too (read and write sites alike)
        let first = Cell::new(0);
        assert!(m.get_cached(&LStr::from(&b"field0"[..]), &first).is_some());
        assert_eq!(first.get(), shape.site);
        let first = Cell::new(0);
        assert!(matches!(m.value_cached_mut(b"field0", &first), Some(Value::Num(_))));
        assert_eq!(first.get(), shape.site);
        let first = Cell::new(0);
        assert!(m.value_and_heap_cached(b"field0", &first).is_some());
        assert_eq!(first.get(), shape.site);
        let slot = m.value_cached_mut(b"field4", &site).unwrap();
        assert_eq!(std::mem::replace(slot, Value::Num(1.0)).heap(), 0);
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
        assert_eq!(m.heap(), heap_of(&m));
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
        assert_eq!(m.heap(), heap_of(&m));
        let mut m = shaped(&shape, 0.0);
        assert!(m.insert(bytes(b"new"), Value::Num(-1.0)).is_none());
        assert!(m.is_small());
        assert_eq!(m.len(), 6);
        assert_eq!(m.get_index(5).map(|(k, _)| k.to_vec()), Some(b"new".to_vec()));
        // a shape of more keys than a small map takes: indexed on a new key or a
        // removal, in order, the accounting true
        let wide = Shape::new(&keys(12)).unwrap();
        let mut m = shaped(&wide, 0.0);
        m.with_value(b"field3", |v| *v = Value::string("a string longer than sixteen bytes"));
        assert!(m.insert(bytes(b"new"), Value::Num(-1.0)).is_none());
        assert!(!m.is_small() && !m.is_shaped());
        assert_eq!(m.len(), 13);
        assert_eq!(m.get_index(12).map(|(k, _)| k.to_vec()), Some(b"new".to_vec()));
        assert_eq!(m.heap(), heap_of(&m));
        let mut m = shaped(&wide, 0.0);
        assert!(matches!(m.remove(b"field4"), Some(Value::Num(n)) if n == 4.0));
        assert!(!m.is_small() && !m.is_shaped());
        assert_eq!(
            order(&m).iter().map(|(_, v)| *v).collect::<Vec<_>>(),
            [0., 1., 2., 3., 5., 6., 7., 8., 9., 10., 11.]
        );
        assert_eq!(m.heap(), heap_of(&m));
    }

    /// One site (one constant key) read and written in maps of every layout, of one
    /// shape, of another shape with the same keys, of the keys in another order: always
    /// the key's own value, whatever the site held from the map before.
    #[test]
    fn a_site_finds_its_key_in_maps_of_any_shape_or_layout() {
        let k = keys(5);
        let (a, b) = (Shape::new(&k).unwrap(), Shape::new(&k).unwrap());
        assert_ne!(a.site, b.site);
        let rev: Vec<Bytes> = k.iter().rev().cloned().collect();
        let r = Shape::new(&rev).unwrap();
        let mut maps = vec![shaped(&a, 0.0), shaped(&a, 100.0), shaped(&b, 200.0)];
        maps.push(Map::shaped(&r, (0..5).map(|i| Value::Num(300.0 + (4 - i) as f64))));
        let mut small = Map::new();
        for (i, key) in k.iter().enumerate().rev() {
            small.insert(key.clone(), Value::Num(400.0 + i as f64));
        }
        maps.push(small);
        let mut big = Map::new();
        for i in (0..20).rev() {
            big.insert(bytes(format!("field{i}").as_bytes()), Value::Num(500.0 + i as f64));
        }
        maps.push(big);
        let mut left = shaped(&a, 600.0);
        left.insert(bytes(b"other"), Value::Nil);
        assert!(!left.is_shaped());
        maps.push(left);
        let base = |m: &Map| match m.get(b"field0") {
            Some(Value::Num(n)) => *n,
            _ => unreachable!(),
        };
        // A site per key, as each instruction has one for its constant key.
        let sites = [Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0)];
        let missing = Cell::new(0);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for step in 0..3000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let m = &mut maps[(seed % 7) as usize];
            let f = (seed >> 8) % 5;
            let key = format!("field{f}");
            let site = &sites[f as usize];
            let want = base(m) + f as f64;
            assert!(
                matches!(m.get_cached(&LStr::from(key.as_bytes()), site), Some(Value::Num(n)) if *n == want),
                "{step}"
            );
            match (seed >> 16) % 3 {
                0 => {
                    let v = m.value_cached_mut(key.as_bytes(), site).unwrap();
                    assert!(matches!(v, Value::Num(n) if *n == want));
                    *v = Value::Num(want);
                }
                1 => {
                    let got = m.value_and_heap_cached(key.as_bytes(), site).map(|(v, _)| v.clone());
                    assert!(matches!(got, Some(Value::Num(n)) if n == want));
                }
                _ => assert!(m.get_cached(&LStr::from(&b"missing"[..]), &missing).is_none()),
            }
        }
    }

    #[test]
    fn copies_of_shaped_maps_are_shaped_and_independent() {
        let shape = Shape::new(&keys(3)).unwrap();
        let m = shaped(&shape, 0.0);
        let mut v = Value::Map(m.clone());
        if let Value::Map(r) = &mut v {
            assert!(Map::ptr_eq(r, &m));
            r.insert(bytes(b"field0"), Value::Num(5.0));
            assert!(!Map::ptr_eq(r, &m));
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
        assert_eq!(m.heap(), heap_of(&m));
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
        let many = keys(MAP_SHAPED + 1);
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
            let n = 1 + round % MAP_SHAPED;
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
                assert_eq!(m.heap(), heap_of(&m));
                assert_eq!(m.is_shaped(), !changed_keys);
                let c = m.clone();
                assert_eq!(order(&c), model);
                if m.is_small() || m.is_shaped() {
                    assert_eq!(c.acct(), m.acct());
                }
            }
        }
    }

    /// A key of up to 8 bytes is told by its signature and length alone: every key of up
    /// to 3 bytes over six byte values (0, 1, 'a', 'b', 127, 255) and 20,000 random keys
    /// of 4 to 8 bytes over the same values have distinct signatures unless equal. And a
    /// shape of 16 keys of 0 to 20 bytes sharing prefixes and suffixes finds each at its
    /// index and no other key, short or long.
    #[test]
    fn signatures_tell_short_keys_apart_and_shapes_find_by_them() {
        let vals = [0u8, 1, b'a', b'b', 127, 255];
        let mut seen: std::collections::HashMap<(u64, usize), Vec<u8>> = Default::default();
        let mut check = |k: Vec<u8>| {
            let sig = (key_sig(&k), k.len());
            if let Some(other) = seen.insert(sig, k.clone()) {
                assert_eq!(other, k, "two keys share a signature");
            }
        };
        crate::test_support::all_words(&vals, 3).for_each(&mut check);
        let mut rng = crate::test_support::XorShift(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let x = rng.next_u64();
            let n = 4 + (x % 5) as usize;
            check((0..n).map(|i| vals[((x >> (8 + 3 * i)) % 6) as usize]).collect());
        }
        let mut names: Vec<Vec<u8>> = vec![vec![], b"a".to_vec(), b"ab".to_vec(), b"ba".to_vec()];
        for n in [4, 5, 8, 9, 12, 20] {
            names.push(vec![b'a'; n]);
            let mut k = vec![b'a'; n];
            k[n / 2] = b'b';
            names.push(k);
        }
        names.truncate(MAP_SHAPED);
        let keys: Vec<Bytes> = names.iter().map(|k| bytes(k)).collect();
        let shape = Shape::new(&keys).expect("distinct keys");
        for (i, k) in names.iter().enumerate() {
            assert_eq!(find_by_sig(&shape, k), Some(i), "{k:?}");
        }
        // (The last two share a listed long key's signature: its ends.)
        for k in [
            &b"b"[..],
            b"abc",
            b"aaab",
            b"aaaaaaab",
            b"baaaaaaaa",
            b"aaaaaaaaaaab",
            &[b'a'; 21],
            b"aaaacaaaa",
            b"aaaabbbbaaaa",
        ] {
            assert_eq!(find_by_sig(&shape, k), None, "{k:?}");
        }
    }
}
