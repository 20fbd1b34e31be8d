//! Unit tests of values: number text, `str` of containers, accounting, equality.

use super::*;

fn f(x: f64) -> String {
    num_to_string(x)
}

#[test]
fn number_formatting() {
    assert_eq!(f(3.0), "3");
    assert_eq!(f(-0.0), "0");
    assert_eq!(f(0.5), "0.5");
    assert_eq!(f(1e21), "1e+21");
    assert_eq!(f(1.5e-7), "1.5e-7");
    assert_eq!(f(1e-6), "0.000001");
    assert_eq!(f(1e-7), "1e-7");
    assert_eq!(f(123456789012345680000.0), "123456789012345680000");
    assert_eq!(f(9007199254740992.0), "9007199254740992");
    assert_eq!(f(2f64.powi(60)), "1152921504606847000");
    assert_eq!(f(0.1 + 0.2), "0.30000000000000004");
    assert_eq!(f(-1.25), "-1.25");
    assert_eq!(f(1.7976931348623157e308), "1.7976931348623157e+308");
    assert_eq!(f(5e-324), "5e-324");
    assert_eq!(f(100.0), "100");
    assert_eq!(f(-1e21), "-1e+21");
    assert_eq!(f(123.456), "123.456");
}

#[test]
fn str_of_containers_is_compact_json() {
    let mut m = Map::new();
    m.insert(bytes(b"a"), Value::Num(1.0));
    m.insert(bytes(b"b"), Value::list(vec![Value::Nil, Value::Bool(true), Value::string("x\"y")]));
    let mut out = Vec::new();
    write_str(&Value::map(m), &mut out, usize::MAX).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), r#"{"a":1,"b":[null,true,"x\"y"]}"#);
}

#[test]
fn invalid_utf8_in_container_is_refused() {
    let v = Value::list(vec![Value::str(vec![0xff])]);
    assert_eq!(write_str(&v, &mut Vec::new(), usize::MAX), Err(TextError::InvalidUtf8));
    let mut out = Vec::new();
    write_str(&Value::str(vec![0xff]), &mut out, usize::MAX).unwrap();
    assert_eq!(out, vec![0xff]);
}

#[test]
fn accounting_follows_changes() {
    let mut l = List::new();
    l.push(Value::string("abc"));
    let with = l.acct();
    l.pop();
    assert!(l.acct() < with);
    let mut m = Map::new();
    m.insert(bytes(b"k"), Value::string("v"));
    let before = m.acct();
    m.remove(b"k");
    assert!(m.acct() < before);
    assert_eq!(m.heap(), 0);
}

#[test]
fn equality_is_structural() {
    assert!(equals(&Value::list(vec![Value::Num(1.0)]), &Value::list(vec![Value::Num(1.0)])));
    assert!(!equals(&Value::Num(1.0), &Value::string("1")));
    assert!(equals(&Value::Num(0.0), &Value::Num(-0.0)));
}

/// The string layout: 24 bytes, so that a string's shared box (16 bytes of counts and
/// the `LStr`) is one 48-byte malloc chunk; up to `STR_INLINE` bytes in it; a longer
/// string's buffer is exactly its capacity, which is what it is accounted.
#[test]
fn strings_up_to_22_bytes_are_one_allocation() {
    assert_eq!(std::mem::size_of::<LStr>(), 24);
    assert_eq!(std::mem::size_of::<Value>(), 16);
    assert!(ACCT_STRING_HEADER >= 16 + std::mem::size_of::<LStr>());
    for n in 0..=200usize {
        let b: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
        for s in [LStr::from(&b[..]), LStr::from(b.clone()), LStr::from(Vec::with_capacity(n + 40)).tap(&b)] {
            assert_eq!(s.as_slice(), &b[..]);
            if n <= STR_INLINE {
                assert_eq!(s.capacity(), STR_INLINE, "{n} bytes inline");
                assert_eq!(s.acct_bytes(), n);
            } else {
                // One buffer of `capacity` bytes besides the box, all of it accounted.
                assert!(s.capacity() >= n);
                assert_eq!(s.acct_bytes(), s.capacity());
            }
            assert_eq!(str_heap(&s), ACCT_STRING_HEADER + s.acct_bytes());
        }
    }
    // A copy holds exactly its bytes.
    let mut s = LStr::with_capacity(100);
    s.extend_from_slice(b"0123456789012345678901234567890");
    assert_eq!(s.capacity(), 100);
    assert_eq!(s.clone().capacity(), 31);
    assert_eq!(LStr::from(&b"short"[..]).clone().capacity(), STR_INLINE);
}

trait Tap {
    fn tap(self, b: &[u8]) -> LStr;
}
impl Tap for LStr {
    /// `b` appended byte by byte (the string grows from inline to a heap buffer).
    fn tap(mut self, b: &[u8]) -> LStr {
        for &c in b {
            self.push(c);
        }
        self
    }
}

/// Random appends, pushes, reserves, copies and conversions against a plain vector:
/// same bytes, same order and hash as the bytes, growth as `SmallVec` grew (the next
/// power of two of the length needed; `reserve_exact` exactly), never below the length.
#[test]
fn strings_behave_as_byte_vectors() {
    use std::hash::BuildHasher;
    let hs = std::collections::hash_map::RandomState::new();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    for _ in 0..300 {
        let mut s = LStr::default();
        let mut model: Vec<u8> = Vec::new();
        for _ in 0..40 {
            match rnd(6) {
                0 => {
                    let n = rnd(30) as usize;
                    let b: Vec<u8> = (0..n).map(|_| rnd(256) as u8).collect();
                    let (len, cap) = (model.len(), s.capacity());
                    s.extend_from_slice(&b);
                    model.extend_from_slice(&b);
                    if len + n > cap {
                        assert_eq!(s.capacity(), (len + n).next_power_of_two().max(STR_INLINE));
                    } else {
                        assert_eq!(s.capacity(), cap);
                    }
                }
                1 => {
                    let c = rnd(256) as u8;
                    s.push(c);
                    model.push(c);
                }
                2 => {
                    let n = rnd(50) as usize;
                    let cap = s.capacity();
                    s.reserve_exact(n);
                    assert_eq!(s.capacity(), cap.max(model.len() + n));
                }
                3 => s = s.clone(),
                4 => s = LStr::from(s.into_vec()),
                _ => s = LStr::from(s.as_slice()),
            }
            assert_eq!(s.as_slice(), &model[..]);
            assert_eq!(&*s, &model[..]);
            assert!(s.capacity() >= s.len());
            assert_eq!(hs.hash_one(&s), hs.hash_one(&model[..]));
            let other = LStr::from(&model[..model.len() / 2]);
            assert_eq!(s.cmp(&other), model[..].cmp(&model[..model.len() / 2]));
            assert_eq!(s == other, model.len() < 2 && model.len() / 2 == model.len());
        }
        assert_eq!(s.into_vec(), model);
    }
}

#[test]
fn list_at_takes_whole_numbers_in_range_only() {
    assert_eq!(list_at(0.0, 3), Some(0));
    assert_eq!(list_at(-0.0, 3), Some(0));
    assert_eq!(list_at(2.0, 3), Some(2));
    assert_eq!(list_at(-1.0, 3), Some(2));
    assert_eq!(list_at(-3.0, 3), Some(0));
    for n in
        [3.0, -4.0, 0.5, -0.5, 2.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 9.223372036854776e18, -9.3e18, 1e300]
    {
        assert_eq!(list_at(n, 3), None, "{n}");
    }
    assert_eq!(list_at(0.0, 0), None);
    assert_eq!(list_at(-0.0, 0), None);
}

#[test]
fn plain_leaf_reaches_plain_values_of_unshared_containers_only() {
    let ics = [Cell::new(0), Cell::new(0)];
    let mut inner = Map::new();
    inner.insert(bytes(b"x"), Value::Num(1.0));
    inner.insert(bytes(b"s"), Value::string("t"));
    let mut v = Value::list(vec![Value::map(inner)]);
    let heap = v.heap();
    match plain_leaf(&mut v, &[PathKey::Num(0.0), PathKey::Str(b"x")], &ics) {
        Some(x) => *x = Value::Bool(true),
        None => panic!("a number in an unshared map in an unshared list"),
    }
    assert_eq!(v.heap(), heap);
    assert!(plain_leaf(&mut v, &[PathKey::Num(0.0), PathKey::Str(b"x")], &ics)
        .is_some_and(|x| matches!(x, Value::Bool(true))));
    // Not plain, missing, the wrong kind of key, out of range: none.
    assert!(plain_leaf(&mut v, &[PathKey::Num(0.0), PathKey::Str(b"s")], &ics).is_none());
    assert!(plain_leaf(&mut v, &[PathKey::Num(0.0), PathKey::Str(b"nope")], &ics).is_none());
    assert!(plain_leaf(&mut v, &[PathKey::Str(b"x"), PathKey::Str(b"x")], &ics).is_none());
    assert!(plain_leaf(&mut v, &[PathKey::Num(1.0), PathKey::Str(b"x")], &ics).is_none());
    // A shared container: none (the general path copies it first).
    let other = v.clone();
    assert!(plain_leaf(&mut v, &[PathKey::Num(0.0), PathKey::Str(b"x")], &ics).is_none());
    drop(other);
    assert!(plain_leaf(&mut v, &[PathKey::Num(0.0), PathKey::Str(b"x")], &ics).is_some());
}

#[test]
fn in_place_changes_unshared_containers_and_keeps_their_accounting() {
    let inner = Value::list(vec![Value::Num(1.0)]);
    let mut m = Map::new();
    m.insert(bytes(b"items"), inner);
    let mut v = Value::list(vec![Value::map(m)]);
    let ics = [Cell::new(0), Cell::new(0)];
    let keys = [PathKey::Num(0.0), PathKey::Str(b"items")];
    let push = |t: &mut Value| match t {
        Value::List(l) => {
            Rc::make_mut(l).push(Value::string("a string of some length"));
            true
        }
        _ => false,
    };
    // Every container on the way grows by what the list at the end grew (the same
    // change made to a list of its own measures it).
    let mut alone = Value::list(vec![Value::Num(1.0)]);
    let (alone_before, v_before) = (alone.heap(), v.heap());
    assert!(push(&mut alone));
    let d = (alone.heap() - alone_before) as isize;
    assert_eq!(in_place(&mut v, &keys, &ics, push), Some((true, d)));
    assert_eq!(v.heap(), v_before + (alone.heap() - alone_before));
    assert!(alone.heap() > alone_before);
    // A step that does not resolve, or a container shared on the way: nothing changed.
    let before = v.heap();
    assert!(in_place(&mut v, &[PathKey::Num(1.0), PathKey::Str(b"items")], &ics, push).is_none());
    assert!(in_place(&mut v, &[PathKey::Num(0.0), PathKey::Str(b"nope")], &ics, push).is_none());
    assert!(in_place(&mut v, &[PathKey::Str(b"x"), PathKey::Str(b"items")], &ics, push).is_none());
    let shared = match &v {
        Value::List(l) => l.items()[0].clone(),
        _ => unreachable!(),
    };
    assert!(in_place(&mut v, &keys, &ics, push).is_none());
    assert_eq!(v.heap(), before);
    drop(shared);
    let alone_before = alone.heap();
    assert!(push(&mut alone));
    let d = (alone.heap() - alone_before) as isize;
    assert_eq!(in_place(&mut v, &keys, &ics, push), Some((true, d)));
    assert_eq!(v.heap(), before + d as usize);
}

#[test]
fn short_copies_and_appends_keep_every_byte() {
    // Every length around the 4-, 8- and 16-byte moves, at every offset in a buffer.
    let src: Vec<u8> = (1..=40u8).collect();
    for n in 0..=40 {
        for off in 0..4 {
            let mut dst = vec![0u8; off + n + 3];
            copy_short(&mut dst[off..off + n], &src[..n]);
            assert_eq!(&dst[off..off + n], &src[..n], "length {n} at {off}");
            assert!(dst[..off].iter().chain(&dst[off + n..]).all(|&b| b == 0), "length {n} at {off}: outside");
        }
    }
    // An append within the buffer's room is the bytes in order.
    let mut s = LStr::from(&[b'x'; 40][..]);
    s.reserve_exact(300);
    let mut want = vec![b'x'; 40];
    for n in 0..=20 {
        let piece = &src[..n];
        assert!(s.append_within(piece), "room for {n} more bytes");
        want.extend_from_slice(piece);
        assert_eq!(s.as_slice(), &want[..]);
    }
}
