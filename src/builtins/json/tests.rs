//! The JSON unit tests: the parser, the writer, their round trips, sharing in large
//! documents, and streams in any pieces against the whole text.

const MAX_JSON_BYTES: usize = LIMITS[L::Json as usize].default as usize;
const MAX_JSON_DEPTH: usize = LIMITS[L::JsonDepth as usize].default as usize;
const MAX_JSON_NODES: usize = LIMITS[L::JsonNodes as usize].default as usize;

use std::rc::Rc;

use super::*;

#[test]
fn long_parses_and_writes_look_at_the_deadline() {
    let doc = format!("[{}0]", "0,".repeat(10_000));
    let past = Some(crate::meter::now());
    assert!(matches!(parse_until(doc.as_bytes(), past, JsonLimits::default()), Err(ParseError::Time)));
    let v = parse(doc.as_bytes()).unwrap();
    assert!(matches!(stringify_until(&v, b"", past, JsonLimits::default()), Err(WriteError::Time)));
    // Below one check interval, the clock is not looked at.
    assert!(parse_until(b"[1,2,3]", past, JsonLimits::default()).is_ok());
}

#[test]
fn a_growing_text_looks_at_the_heap() {
    // The live count is the process's, and the other unit tests allocate in threads
    // beside this one: each refusal below needs many MiB more than its ceiling allows,
    // and each success has a ceiling far above what it needs, so that what the other
    // tests hold or free meanwhile cannot turn either (an 8 MiB margin for a 2 MiB
    // string failed once under CI's two cores, on 2026-12-07).
    //
    // A text of about 23 MiB (indented lists of nils): with the ceiling at what is live
    // now plus 1 MiB, the writer stops at a look (every `HEAP_LOOK` bytes); a ceiling
    // well above it lets it finish.
    let v = Value::list((0..8).map(|_| Value::list(vec![Value::Nil; 262_144])).collect());
    let lim = |heap| JsonLimits { bytes: usize::MAX, depth: 64, nodes: usize::MAX, heap };
    let now = crate::memory::live();
    assert!(matches!(stringify_until(&v, b"  ", None, lim(now + (1 << 20))), Err(WriteError::Memory)));
    let t = stringify_until(&v, b"  ", None, lim(now + (512 << 20))).unwrap();
    assert!(t.len() > 16 << 20);
    drop(t);
    // One string of 16 MiB is found room for before it is written.
    let big = Value::list(vec![Value::str(vec![b'x'; 16 << 20])]);
    let now = crate::memory::live();
    assert!(matches!(stringify_until(&big, b"", None, lim(now + (1 << 20))), Err(WriteError::Memory)));
    assert!(stringify_until(&big, b"", None, lim(now + (512 << 20))).is_ok());
}

fn ok(s: &str) -> Value {
    parse(s.as_bytes()).unwrap_or_else(|e| panic!("{s:?}: {e:?}"))
}

fn round(s: &str) -> String {
    String::from_utf8(stringify(&ok(s), b"").unwrap()).unwrap()
}

fn syntax(s: &[u8]) -> bool {
    matches!(parse(s), Err(ParseError::Syntax(..)))
}

fn limit(s: &[u8]) -> bool {
    matches!(parse(s), Err(ParseError::Limit(..)))
}

#[test]
fn scalars_and_containers() {
    assert_eq!(round(" [1, -0, 2.5e3, true, false, null, \"x\"] "), r#"[1,0,2500,true,false,null,"x"]"#);
    assert_eq!(round(r#"{"b":1,"a":{"c":[]},"b":2}"#), r#"{"b":2,"a":{"c":[]}}"#);
    assert_eq!(round("123456789012345678901234567890"), "1.2345678901234568e+29");
    assert_eq!(round("9007199254740993"), "9007199254740992");
    assert_eq!(round("0.1"), "0.1");
    assert_eq!(round("1E-7"), "1e-7");
    assert_eq!(round("-123"), "-123");
}

#[test]
fn strings_and_escapes() {
    assert_eq!(round(r#""a\"b\\c\/d\b\f\n\r\t""#), r#""a\"b\\c/d\b\f\n\r\t""#);
    assert_eq!(round(r#""\u0041\u00e9\u20AC""#), "\"Aé€\"");
    assert_eq!(round(r#""\ud83d\ude00""#), "\"😀\"");
    assert_eq!(round(r#""\u0000\u001f""#), r#""\u0000\u001f""#);
    assert_eq!(round("\"é😀\""), "\"é😀\"");
    assert!(syntax(br#""\ud83d""#));
    assert!(syntax(br#""\ud83dx""#));
    assert!(syntax(br#""\ud83d\u0041""#));
    assert!(syntax(br#""\ude00""#));
    assert!(syntax(br#""\x""#));
    assert!(syntax(br#""\u12""#));
    assert!(syntax(b"\"a\tb\""));
    assert!(syntax(b"\"abc"));
    assert!(syntax(b"\"\xff\""));
}

#[test]
fn strictness() {
    for bad in [
        "",
        " ",
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "01",
        "-",
        "1.",
        ".5",
        "+1",
        "1e",
        "1e+",
        "NaN",
        "Infinity",
        "-Infinity",
        "[1]x",
        "[1] [2]",
        "/* c */ 1",
        "1 // c",
        "{'a':1}",
        "{a:1}",
        "tru",
        "nul",
        "[",
        "{",
        "{\"a\"}",
        "{\"a\":}",
        "\u{feff}1",
        "1e400",
        "-1e400",
        "0x10",
        "[\u{0c}]",
    ] {
        assert!(syntax(bad.as_bytes()), "{bad:?} should be a syntax error");
    }
    assert_eq!(round("1e-400"), "0");
}

#[test]
fn depth_bound() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(parse(deep(MAX_JSON_DEPTH).as_bytes()).is_ok());
    assert!(limit(deep(MAX_JSON_DEPTH + 1).as_bytes()));
    assert!(limit("[".repeat(100_000).as_bytes()));
    let obj = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
    assert!(parse(obj(MAX_JSON_DEPTH).as_bytes()).is_ok());
    assert!(limit(obj(MAX_JSON_DEPTH + 1).as_bytes()));
    // Writing: the same bound.
    let mut v = Value::list(vec![]);
    for _ in 1..MAX_JSON_DEPTH {
        v = Value::list(vec![v]);
    }
    assert!(stringify(&v, b"").is_ok());
    let v = Value::list(vec![v]);
    assert!(matches!(stringify(&v, b""), Err(WriteError::Limit(_))));
}

#[test]
fn node_bound() {
    let list = |n: usize| format!("[{}]", vec!["0"; n].join(","));
    assert!(parse(list(MAX_JSON_NODES - 1).as_bytes()).is_ok());
    assert!(limit(list(MAX_JSON_NODES).as_bytes()));
    let v = Value::list(vec![Value::Nil; MAX_JSON_NODES - 1]);
    assert!(stringify(&v, b"").is_ok());
    let v = Value::list(vec![Value::Nil; MAX_JSON_NODES]);
    assert!(matches!(stringify(&v, b""), Err(WriteError::Limit(_))));
}

#[test]
fn byte_bound() {
    let s = format!("\"{}\"", "a".repeat(MAX_JSON_BYTES - 2));
    assert!(parse(s.as_bytes()).is_ok());
    let s = format!("\"{}\"", "a".repeat(MAX_JSON_BYTES - 1));
    assert!(limit(s.as_bytes()));
    let v = Value::str(vec![b'a'; MAX_JSON_BYTES - 2]);
    assert_eq!(stringify(&v, b"").unwrap().len(), MAX_JSON_BYTES);
    let v = Value::str(vec![b'a'; MAX_JSON_BYTES - 1]);
    assert!(matches!(stringify(&v, b""), Err(WriteError::Limit(_))));
    let v = Value::str(vec![b'\n'; MAX_JSON_BYTES / 2 - 1]);
    assert_eq!(stringify(&v, b"").unwrap().len(), MAX_JSON_BYTES);
    let v = Value::str(vec![b'\n'; MAX_JSON_BYTES / 2]);
    assert!(matches!(stringify(&v, b""), Err(WriteError::Limit(_))));
}

#[test]
fn indented_layout() {
    let v = ok(r#"{"a":[1,{"b":null}],"c":{},"d":[]}"#);
    let out = String::from_utf8(stringify(&v, b"  ").unwrap()).unwrap();
    assert_eq!(out, "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {},\n  \"d\": []\n}");
    let out = String::from_utf8(stringify(&ok("[1,2]"), b"\t").unwrap()).unwrap();
    assert_eq!(out, "[\n\t1,\n\t2\n]");
}

#[test]
fn refused_values() {
    assert!(matches!(stringify(&Value::str(vec![0xff]), b""), Err(WriteError::Value(_))));
    let mut m = Map::new();
    m.insert(crate::value::bytes(&[0xc3]), Value::Nil);
    assert!(matches!(stringify(&Value::map(m), b""), Err(WriteError::Value(_))));
    let h = Value::Handle(Handle { kind: HandleKind::File, id: 1 });
    assert!(matches!(stringify(&Value::list(vec![h]), b""), Err(WriteError::Value(_))));
}

#[test]
fn mutations_never_panic_and_round_trip() {
    let seeds: [&[u8]; 5] = [
        br#"{"a":[1,2.5e-3,-0,true,false,null],"b":{"c":"\u00e9\ud83d\ude00\n"}}"#,
        b"[[[[[]]]],{},\"x\",123456789012345678901234567890]",
        "{\"\u{e9}\":\"\u{1F600}\",\"k\":[1e308,-1E-308]}".as_bytes(),
        b"  [ 1 , [ 2 , [ 3 ] ] , { \"a\" : { \"b\" : null } } ]  ",
        b"\"\\\"\\/\\b\\f\\t\"",
    ];
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let alphabet = b"[]{},:\"\\/0123456789.eE+-tfnulrsaxu \t\n\r\x00\x1f\xc3\xa9\xff";
    for seed in seeds {
        for _ in 0..3000 {
            let mut doc = seed.to_vec();
            for _ in 0..(next() % 4 + 1) {
                let i = (next() as usize) % (doc.len() + 1);
                match next() % 3 {
                    0 if i < doc.len() => {
                        doc.remove(i);
                    }
                    1 => doc.insert(i, alphabet[(next() as usize) % alphabet.len()]),
                    _ => doc.truncate(i),
                }
            }
            if let Ok(v) = parse(&doc) {
                let text = stringify(&v, b"").expect("a parsed value can be written");
                let back = parse(&text).expect("written text parses");
                assert!(equals(&v, &back), "{:?}", String::from_utf8_lossy(&doc));
            }
        }
    }
}

#[test]
fn objects_of_one_key_sequence_share_a_shape_in_large_documents() {
    // records of two sequences in turn, nested ones, one with a key twice (the last
    // value wins, as before), ones of nine keys (shaped from the second) and of
    // seventeen (past `MAP_SHAPED`: never shaped), empty ones
    let mut parts = Vec::new();
    for i in 0..3000 {
        parts.push(match i % 5 {
            0 => format!(r#"{{"a":{i},"b":{{"x":1,"y":[{i}]}}}}"#),
            1 => format!(r#"{{"b":{i},"a":"s"}}"#),
            2 => format!(r#"{{"a":{i},"a":2}}"#),
            3 if i % 10 == 3 => r#"{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9}"#.to_string(),
            3 => format!("{{{}}}", (1..=17).map(|k| format!(r#""{k}":{k}"#)).collect::<Vec<_>>().join(",")),
            _ => "{}".to_string(),
        });
    }
    let doc = format!("[{}]", parts.join(","));
    assert!(doc.len() >= INTERN_MIN_TEXT);
    let v = ok(&doc);
    let Value::List(l) = &v else { panic!() };
    let m = |i: usize| match &l.items()[i] {
        Value::Map(m) => m.clone(),
        _ => panic!(),
    };
    for i in [0, 1, 2, 3, 4, 13, 2995, 2996, 2997, 2998, 2999] {
        let r = m(i);
        let keys: Vec<Vec<u8>> = r.keys().map(|k| k.to_vec()).collect();
        match i % 5 {
            0 => {
                assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
                assert!(matches!(r.get(b"a"), Some(Value::Num(n)) if *n == i as f64));
                let Some(Value::Map(inner)) = r.get(b"b") else { panic!() };
                assert_eq!(inner.is_shaped(), i > 0);
                assert_eq!(r.is_shaped(), i > 0);
            }
            1 => {
                assert_eq!(keys, [b"b".to_vec(), b"a".to_vec()]);
                assert_eq!(r.is_shaped(), i > 1);
            }
            2 => {
                assert_eq!(keys, [b"a".to_vec()]);
                assert!(matches!(r.get(b"a"), Some(Value::Num(n)) if *n == 2.0));
                assert!(!r.is_shaped());
            }
            3 if i % 10 == 3 => {
                assert_eq!(r.len(), 9);
                assert_eq!(r.is_shaped(), i > 3);
                assert!(matches!(r.get(b"9"), Some(Value::Num(n)) if *n == 9.0));
            }
            3 => {
                assert_eq!(r.len(), 17);
                assert!(!r.is_shaped());
                assert!(matches!(r.get(b"17"), Some(Value::Num(n)) if *n == 17.0));
            }
            _ => assert!(r.is_empty() && !r.is_shaped()),
        }
    }
    // Equal to the same text parsed small (no shapes below `INTERN_MIN_TEXT`).
    for i in [5, 6, 7, 8, 9] {
        let one = ok(&parts[i]);
        assert!(equals(&one, &l.items()[i]), "{}", parts[i]);
    }
}

#[test]
fn equal_small_arrays_of_scalars_share_one_list_in_large_documents() {
    let mut parts = Vec::new();
    for i in 0..3000 {
        parts.push(match i % 6 {
            0 => r#"["a","bb",1,true,null]"#.to_string(),
            1 => "[0]".to_string(),
            2 => "[-0]".to_string(),
            3 => format!("[{i},[1]]"),
            4 => "[1,2,3,4,5,6,7,8,9]".to_string(),
            _ => "[]".to_string(),
        });
    }
    let doc = format!("[{},\"{}\"]", parts.join(","), "x".repeat(INTERN_MIN_TEXT));
    let v = ok(&doc);
    let Value::List(l) = &v else { panic!() };
    let list = |i: usize| match &l.items()[i] {
        Value::List(x) => x.clone(),
        _ => panic!(),
    };
    let distinct = |k: usize| {
        let mut p: Vec<*const List> = (0..500).map(|j| Rc::as_ptr(&list(6 * j + k))).collect();
        p.sort();
        p.dedup();
        p.len()
    };
    // shared: scalars and short strings, `[0]`, `[-0]` (apart from `[0]`), `[]`
    assert_eq!(distinct(0), 1);
    assert_eq!(distinct(1), 1);
    assert_eq!(distinct(2), 1);
    assert!(!Rc::ptr_eq(&list(1), &list(2)));
    assert_eq!(distinct(5), 1);
    // not shared: an array holding an array (its inner `[1]` is), nine items
    assert_eq!(distinct(3), 500);
    assert_eq!(distinct(4), 500);
    let inner = |i: usize| match &list(i).items()[1] {
        Value::List(x) => x.clone(),
        _ => panic!(),
    };
    assert!(Rc::ptr_eq(&inner(3), &inner(9)));
    // the same values as the text parsed without the cache
    for i in 0..12 {
        assert!(equals(&ok(&parts[i]), &l.items()[i]), "{}", parts[i]);
    }
    let Value::Num(z) = list(2).items()[0] else { panic!() };
    assert!(z.is_sign_negative());
}

#[test]
fn repeated_strings_share_one_box_in_large_documents() {
    let rec = r#"{"tag":"active","city":"S\u00e3o Paulo","id":"#;
    let doc: String = format!("[{}]", (0..4000).map(|i| format!("{rec}\"u{i}\"}}")).collect::<Vec<_>>().join(","));
    assert!(doc.len() >= INTERN_MIN_TEXT);
    let v = ok(&doc);
    let Value::List(l) = &v else { panic!() };
    let field = |i: usize, k: &str| match &l.items()[i] {
        Value::Map(m) => match m.get(k.as_bytes()) {
            Some(Value::Str(s)) => s.clone(),
            _ => panic!(),
        },
        _ => panic!(),
    };
    // Equal short values (escaped or not) share, up to a rare eviction from their
    // slot by a distinct value hashed to it; distinct ones stay distinct.
    let boxes = |k: &str| {
        let mut p: Vec<*const LStr> = (0..4000).map(|i| Rc::as_ptr(&field(i, k))).collect();
        p.sort();
        p.dedup();
        p.len()
    };
    assert!(boxes("tag") <= 20, "{}", boxes("tag"));
    assert!(boxes("city") <= 20, "{}", boxes("city"));
    assert_eq!(boxes("id"), 4000);
    assert_eq!(field(0, "city").as_slice(), "São Paulo".as_bytes());
    assert_eq!(field(17, "id").as_slice(), b"u17");
    // Accounting still counts every reference in full (a bound above what is held).
    // The first record is a small map, the others share its key sequence's shape.
    for i in [0, 1, 3999] {
        let Value::Map(m) = &l.items()[i] else { panic!() };
        let strs: usize = ["tag", "city", "id"].iter().map(|k| str_heap(&field(i, k))).sum();
        assert_eq!(m.is_shaped(), i > 0);
        let header = if i == 0 {
            ACCT_SMALL_MAP_HEADER + 3 * ACCT_SMALL_MAP_ENTRY
        } else {
            ACCT_SHAPED_MAP_HEADER + 3 * ACCT_SHAPED_MAP_ENTRY
        };
        assert!(m.acct() >= header + strs);
    }
    // Small documents parse without the cache.
    let Value::List(small) = ok(r#"[{"t":"x"},{"t":"x"}]"#) else { panic!() };
    let t = |i: usize| match &small.items()[i] {
        Value::Map(m) => match m.get(b"t") {
            Some(Value::Str(s)) => s.clone(),
            _ => panic!(),
        },
        _ => panic!(),
    };
    assert!(!Rc::ptr_eq(&t(0), &t(1)));
}

#[test]
fn lists_are_built_at_their_length() {
    let cap = |v: &Value| match v {
        Value::List(l) => (l.acct() - ACCT_LIST_HEADER - l.items().iter().map(Value::heap).sum::<usize>()) / ACCT_SLOT,
        _ => panic!(),
    };
    let doc = format!("[[1,2,3],[{}],[]]", vec!["[4,5,6,7,8]"; 1000].join(","));
    let v = ok(&doc);
    assert_eq!(cap(&v), 3);
    let Value::List(l) = &v else { panic!() };
    assert_eq!(cap(&l.items()[0]), 3);
    assert_eq!(cap(&l.items()[1]), 1000);
    let Value::List(inner) = &l.items()[1] else { panic!() };
    assert_eq!(cap(&inner.items()[999]), 5);
    assert_eq!(cap(&l.items()[2]), 0);
    assert_eq!(cap(&ok("[1,2,3,4,5,6,7,8,9]")), 9);
    // A syntax error part way leaves nothing behind.
    assert!(syntax(b"[[1,2],[3,"));
}

#[test]
fn positions() {
    assert_eq!(line_col(b"[1,\n 2,]", 7), (2, 4));
    assert_eq!(line_col(b"x", 0), (1, 1));
    match parse(b"[1,\n  ]") {
        Err(ParseError::Syntax(_, at)) => assert_eq!(line_col(b"[1,\n  ]", at), (2, 3)),
        other => panic!("{other:?}"),
    }
}

/// `text` read as a stream in pieces of `n` bytes.
fn streamed(text: &[u8], n: usize, lim: JsonLimits) -> String {
    let mut feed = Pieces(text.chunks(n.max(1)).map(|c| c.to_vec()).collect());
    outcome(read_stream(&mut feed, None, lim), None)
}

fn whole(text: &[u8], lim: JsonLimits) -> String {
    outcome(parse_until(text, None, lim), Some(text))
}

#[test]
fn a_stream_in_any_pieces_parses_as_the_whole_text() {
    let mut docs: Vec<Vec<u8>> = [
        " [1, -0, 2.5e3, true, false, null, \"x\"] ",
        r#"{"b":1,"a":{"c":[]},"b":2}"#,
        "123456789012345678901234567890",
        "\n\n  [1,\n 2,]",
        r#"["a\u00e9\ud83d\ude00\n\t\"\\", "\ud800", "\udc00x"]"#,
        r#"{"k\u0041": "v", "é": "日本"}"#,
        "[1 2]",
        "[1,,2]",
        "tru",
        "nul",
        "[true, fals]",
        "-",
        "1.",
        "1e",
        "01",
        "\"abc",
        "\"ab\\",
        "\"\\u12\"",
        "{\"a\" 1}",
        "[1] x",
        "[\"日本語\" x]",
        "[\"a\u{1}\"]",
        "",
        "   ",
        "[[[[[[[[[[]]]]]]]]]]",
        "1e400",
    ]
    .iter()
    .map(|d| d.as_bytes().to_vec())
    .collect();
    docs.push(b"[\"\xff\"]".to_vec());
    docs.push(b"[1,,2, \"\xe2\x82\"]".to_vec());
    docs.push(b"\"\xe6\x97\xa5".to_vec());
    docs.push(b"[\"x\"]\xe6".to_vec());
    let lim = JsonLimits::default();
    for d in &docs {
        let want = whole(d, lim);
        for n in 1..=9 {
            assert_eq!(streamed(d, n, lim), want, "{:?} in pieces of {n}", String::from_utf8_lossy(d));
        }
    }
    // The limits: bytes (whatever the text holds), depth, nodes.
    let small = JsonLimits { bytes: 20, depth: 3, nodes: 6, heap: usize::MAX };
    for d in [
        &b"[1,2,3,4,5,6,7,8,9,10,11]"[..],
        b"[[[[1]]]]",
        b"[1,2,3,4,5,6]",
        b"[1,2,3,4,5]",
        b"[[[1]]]",
        b"[1,,2,3,4,5,6,7,8,9,10]",
        b"[[[[\xff]]]]",
    ] {
        for n in 1..=5 {
            assert_eq!(streamed(d, n, small), whole(d, small), "{:?}", String::from_utf8_lossy(d));
        }
    }
}

#[test]
fn a_large_stream_shares_as_the_whole_text_does() {
    let mut d = String::from("[\n");
    for i in 0..3000 {
        d.push_str(&format!(
            "  {{\"id\": {i}, \"name\": \"n{}\", \"tags\": [\"a\", \"bb\"], \"s\": \"x\\ty{}\", \"f\": {}.5}},\n",
            i % 7,
            "z".repeat(i % 90),
            i
        ));
    }
    d.push_str("  {}\n]");
    assert!(d.len() > INTERN_MIN_TEXT);
    let lim = JsonLimits { bytes: 1 << 24, depth: 64, nodes: 1 << 20, heap: usize::MAX };
    let v = parse_until(d.as_bytes(), None, lim).unwrap();
    for n in [1, 7, 4096, 65536, 1 << 20] {
        let mut feed = Pieces(d.as_bytes().chunks(n).map(|c| c.to_vec()).collect());
        let w = read_stream(&mut feed, None, lim).unwrap();
        assert_eq!(outcome(Ok(w.clone()), None), outcome(Ok(v.clone()), None));
        assert_eq!(w.acct(), v.acct(), "the same sharing, so the same accounted size");
    }
    // An error far in: its line and column.
    let bad = d.replacen("\"id\": 2999", "\"id\": 2999,", 1);
    for n in [3, 4096, 65536] {
        assert_eq!(streamed(bad.as_bytes(), n, lim), whole(bad.as_bytes(), lim));
    }
}
