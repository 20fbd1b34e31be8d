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
    assert_eq!(m.heap, 0);
}

#[test]
fn equality_is_structural() {
    assert!(equals(&Value::list(vec![Value::Num(1.0)]), &Value::list(vec![Value::Num(1.0)])));
    assert!(!equals(&Value::Num(1.0), &Value::string("1")));
    assert!(equals(&Value::Num(0.0), &Value::Num(-0.0)));
}
