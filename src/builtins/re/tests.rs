//! The regex builtins' unit tests: the pattern cache and the warm patterns, the bounds,
//! and the engines checked against the PikeVM (the NFA simulation, the ASCII form, the
//! capture engine) over fixed and random patterns.

use std::rc::Rc;

use regex_automata::util::iter::Searcher;
use regex_automata::{Anchored, Input, Match};

use super::cache::*;
use super::capture;
use super::engine::*;
use super::search::*;
use crate::limits::*;

#[test]
fn warm_patterns_are_taken_once_and_charged_as_compiled() {
    // On a thread of its own: the tables are per thread.
    std::thread::spawn(|| {
        forget_patterns();
        let pats = ["^[A-Z0-9_]+$", "[\\x00-\\x08\\x0a-\\x1f\\x7f]", "(", "\\p{Greek}+"];
        let cold: Vec<_> = pats.iter().map(|p| compile_charged(p).1).collect();
        forget_patterns();
        warm_patterns(pats);
        // The one that does not compile is left out.
        assert_eq!(warm_count(), 3);
        let warm: Vec<_> = pats.iter().map(|p| compile_charged(p).1).collect();
        assert_eq!(warm, cold);
        assert_eq!(warm_count(), 0);
        // Taken: the same engine, and its ASCII form given as a compile (charged).
        let re = compile("^[A-Z0-9_]+$").unwrap();
        assert!(re.warm_ascii.is_some());
        let (e, fresh) = re.engine(b"ABC");
        assert!(fresh && e.is_ok());
        let (_, fresh) = re.engine(b"ABC");
        assert!(!fresh);
        // Unicode-only: the ASCII form was refused in the warm process too.
        let g = compile("\\p{Greek}+").unwrap();
        assert!(matches!(g.warm_ascii, Some(None)));
        // Gone from the per-run cache, compiled anew: not warm any more.
        forget_patterns();
        assert!(compile("^[A-Z0-9_]+$").unwrap().warm_ascii.is_none());
    })
    .join()
    .unwrap();
}

#[test]
fn bounds() {
    let at = "a".repeat(MAX_REGEX_PATTERN);
    assert!(compile(&at).is_ok());
    let over = "a".repeat(MAX_REGEX_PATTERN + 1);
    assert!(matches!(compile(&over), Err(PatternError::TooLong(_))));
    // Unicode \w is large: 41 fit in the program bound, 42 do not.
    assert!(compile(r"\w{41}").is_ok());
    assert!(matches!(compile(r"\w{42}"), Err(PatternError::TooBig)));
    assert!(compile(r"(?-u:\w){1000}").is_ok());
    assert!(matches!(compile("("), Err(PatternError::Syntax(_))));
}

#[test]
fn forgetting_empties_the_cache() {
    compile("abc").unwrap();
    forget_patterns();
    CACHE.with(|c| {
        assert!(c.borrow().map.is_empty());
        assert!(c.borrow().last.is_none());
    });
    let mut work = 0;
    compile_entry("abc", &mut work).unwrap();
    assert!(work > 0, "compiled again after forgetting, and charged for it");
}

#[test]
fn cache_evicts_least_recent() {
    for i in 0..(CACHE_ENTRIES * 2) {
        compile(&format!("x{i}")).unwrap();
    }
    CACHE.with(|c| assert_eq!(c.borrow().map.len(), CACHE_ENTRIES));
}

#[test]
fn empty_matches_keep_utf8_whole() {
    let re = compile("").unwrap();
    // The text engine never splits a character with an empty match (the split
    // around it is ["", "é", ""]); the bytes engine matches anywhere.
    let e = re.engine("é".as_bytes()).0.unwrap();
    let mut c = e.pike.create_cache();
    let at: Vec<_> = e.pike.find_iter(&mut c, "é").map(|m| m.start()).collect();
    assert_eq!(at, [0, 2]);
    let hy = e.hy.as_ref().unwrap();
    let mut hc = hy.create_cache();
    let at: Vec<_> = hy.find_iter(&mut hc, "é").map(|m| m.start()).collect();
    assert_eq!(at, [0, 2]);
    let b = re.engine(b"\xff").0.unwrap();
    let mut c = b.pike.create_cache();
    assert_eq!(b.pike.find_iter(&mut c, &b"\xc3\xa9"[..]).count(), 3);
}

/// The resumable NFA simulation finds exactly the matches the PikeVM finds (every
/// match of an iteration, and `is_match`), with text, byte and ASCII engines, over
/// patterns with empty matches, assertions, priorities and Unicode classes.
#[test]
fn simulation_agrees_with_pikevm() {
    let pats = [
        "",
        "a*",
        "x*",
        r"[ab]*c|a",
        r"a[ab]{20}[^ab]",
        r"(a|ab)(c|bcd)(d*)",
        r"\b\w+\b",
        r"\B",
        r"\w+",
        r"(?m)^\w*$",
        r"(?m)^",
        r"$",
        r"^abc",
        r"(?i)é|e",
        r".*",
        r"(?s).",
        r"\s+",
        r"[^a-z]",
        r"a|b|c|abc",
        r"(?:ab)*?b",
        r"\d{3}-\d+",
        r#"^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)"#,
    ];
    let subjects: [&[u8]; 10] = [
        b"",
        b"abc",
        b"aaaa",
        b"abababababababababababababx abc",
        "héllo wörld Été e".as_bytes(),
        b"hello, world!\n  foo_bar 123-4567\tx\n\n",
        b"1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] \"GET /a/b?q=1 HTTP/1.1\" 200 512 \"-\" \"x\"",
        b"\xff\xfeab\xc3\xa9c\xc3",
        b"abcd abcbcd ac",
        "éé".as_bytes(),
    ];
    let mut compared = 0;
    for p in pats {
        let re = compile(p).unwrap();
        for s in subjects {
            let e = re.engine(s).0.unwrap();
            let mut c = e.pike.create_cache();
            let want: Vec<_> = e.pike.find_iter(&mut c, s).map(|m| m.range()).collect();
            let mut got = Vec::new();
            let mut searcher = Searcher::new(Input::new(s));
            while let Some(m) = searcher.advance(|input| Ok(sim_find(&e, input, |_| Ok(())).ok().flatten())) {
                got.push(m.range());
            }
            assert_eq!(got, want, "pattern {p:?} on {s:?}");
            let input = Input::new(s).earliest(true);
            let yes = sim_find(&e, &input, |_| Ok(())).ok().flatten().is_some();
            assert_eq!(yes, e.pike.is_match(&mut c, input.clone()), "is_match {p:?} on {s:?}");
            compared += 1;
        }
    }
    assert!(compared >= 200);
}

/// The ASCII form finds exactly what the Unicode text form finds on ASCII subjects:
/// every capture group's span of every match, with the PikeVM and with the
/// backtracker, over patterns using each kind of class and assertion.
#[test]
fn ascii_form_agrees_on_ascii_subjects() {
    let pats = [
        r"\S+",
        r"\w+",
        r"\b\w+\b",
        r"\B",
        r"(?i)kelvin|s",
        r"(?i)[a-z]+",
        r"[^\]]+",
        r".",
        r"(?s).",
        r"\s+",
        r"\d{3}",
        r"[[:alpha:]]+",
        r"(?m)^\w*$",
        "",
        "a*",
        r"(?P<w>\w)(\W)?",
        r"[^a-z]",
        r"\W+",
        r"[\w--\d]+",
        r#"^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)"#,
        r"(\w+)@(\w+)\.com",
        "é|e",
        r"\x7f|\x00",
        r"[\x00-\x7f]+",
        r"(?u:\w)+",
        r"\b",
        r"(?-u:\b)x",
    ];
    let subjects = [
        "",
        "abc",
        "Kelvin kelvin KELVIN s S",
        "hello, world!\n  foo_bar 123 4567\tx",
        "1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] \"GET /a/b?q=1 HTTP/1.1\" 200 512 \"-\" \"x\"",
        "\x00\x01\x7f ]]] [x] \r\n\r\n",
        "a@b.com c@d.com",
        "aaa",
        "_ _ __ 9_9",
    ];
    let spans = |e: &Engine, s: &str| -> Vec<Vec<Option<(usize, usize)>>> {
        let mut c = e.pike.create_cache();
        e.pike
            .captures_iter(&mut c, s.as_bytes())
            .map(|caps| (0..caps.group_len()).map(|g| caps.get_group(g).map(|m| (m.start, m.end))).collect::<Vec<_>>())
            .collect()
    };
    let mut compared = 0;
    for p in pats {
        let re = compile(p).unwrap();
        let Some(a) = build(p, false, false).ok() else { continue };
        for s in subjects {
            assert_eq!(spans(&re.text, s), spans(&a, s), "pattern {p:?} on {s:?}");
            // The backtracker (captures of a match's span) agrees with the PikeVM.
            let (Some(bt), mut bc) = (a.bt.as_ref(), a.bt.as_ref().map(|b| b.create_cache())) else { continue };
            let mut c1 = bt.create_captures();
            let mut c2 = a.pike.create_captures();
            let input = Input::new(s.as_bytes());
            bt.try_search(bc.as_mut().unwrap(), &input, &mut c1).unwrap();
            a.pike.search(&mut a.pike.create_cache(), &input, &mut c2);
            assert_eq!(format!("{c1:?}"), format!("{c2:?}"), "pattern {p:?} on {s:?}");
            compared += 1;
        }
    }
    assert!(compared > 200);
    // A pattern that needs Unicode mode has no ASCII form and keeps the text form.
    assert!(build(r"\p{Greek}", false, false).is_err());
    let re = compile(r"\p{Greek}").unwrap();
    let (e, _) = re.engine(b"abc");
    assert!(Rc::ptr_eq(&e.unwrap(), &re.text));
}

/// A random pattern from a small grammar (fixed-seed generator).
fn random_pattern(rng: &mut u64, depth: u32) -> String {
    let mut next = |n: u64| {
        *rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*rng >> 33) % n
    };
    let atoms = [
        "a", "b", "c", "ab", " ", "[ab]", "[^a]", r"\s", r"\S", r"\w", r"\d", ".", "é", r"[^ \]]", "^", "$", r"\b",
        r"\B", "", "(?m:^)", "(?m:$)", "(?i:B)",
    ];
    if depth == 0 {
        return atoms[next(atoms.len() as u64) as usize].to_string();
    }
    let k = next(10);
    let sub = |rng: &mut u64| random_pattern(rng, depth - 1);
    match k {
        0 | 1 => format!("{}{}", sub(rng), sub(rng)),
        2 => format!("({})", sub(rng)),
        3 => format!("(?:{}|{})", sub(rng), sub(rng)),
        4 => format!("({}|{}|{})", sub(rng), sub(rng), sub(rng)),
        5 => {
            let q = ["*", "+", "?", "{1,3}", "{2}", "*?", "+?", "??", "{0,2}", "{2,}"];
            let mut r2 = *rng;
            r2 = r2.wrapping_mul(6364136223846793005).wrapping_add(1);
            *rng = r2;
            format!("(?:{}){}", sub(rng), q[((r2 >> 33) % q.len() as u64) as usize])
        }
        6 => format!("({})*", sub(rng)),
        7 => format!("{}+", atoms[5 + (depth as usize % 9)]),
        _ => sub(rng),
    }
}

/// The specialised capture engine reports exactly the groups the PikeVM reports
/// (anchored on each match's span), over fixed and random patterns and subjects:
/// ASCII, non-ASCII and invalid UTF-8, empty matches, alternations, nested and
/// repeated groups, groups that do not participate.
#[test]
fn capture_engine_agrees_with_pikevm() {
    let mut pats: Vec<String> = [
        r#"^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)"#,
        r"(a|ab)(c|bcd)(d*)",
        r"(a*)(a*)(a+)b?",
        r"(\w+)@(\w+)\.com",
        r"(a)|(b)|(c)",
        r"((a)|b)+",
        r"(?:(a)|b)+",
        r"(a+?)(a*)",
        r"(\d{1,3})(\d*)",
        r"(\S*)(\S*)(x?)",
        r"(a|)(b|)",
        r"()",
        r"(\b\w+\b)\s*(\w*)",
        r"(?m)^(\w*)$",
        r"([ab]{2,4})([ab]{0,2}?)(b)?",
        r"(.)(.)?",
        r"(é+)(e?)",
        r"([^a]+)(a)",
        r"(?i)(K)(s+)",
        r"((a)(b)?)*c",
        // Runs that keep no shorter candidates (what follows cannot take a byte of
        // theirs) and runs that must keep them.
        r"(a+)a",
        r"(a+)(b)",
        r"([ab]+)(b)",
        r"(\S+)(\s)(\S*)",
        r#"([^"]*)"(.*)"#,
        r"(a+)$",
        r"(a+)()b",
        r"(\d+)(\d)",
        r"(\d+)([a-c]+)(a)?",
        r"(a{1,3})(a{0,2})(b)",
        r"([^ ]+) ([^ ]*) ?(.*)",
        r"(a+)(?:b|a)",
        r"(a+)\b(b)?",
        r"([^ab]+)(c|a)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rng = 0x5eed_u64;
    for i in 0..400 {
        pats.push(random_pattern(&mut rng, 1 + i % 4));
    }
    let mut subjects: Vec<Vec<u8>> = [
        &b""[..],
        b"a",
        b"ab",
        b"abcd abcbcd ac",
        b"aaaab",
        b"x@y.com and a_b@cd.com",
        b"1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] \"GET /a/b?q=1 HTTP/1.1\" 200 512 \"-\" \"x\"",
        b"12345 67",
        b"abcabcab c\nb a\n\n",
        "éé e é a".as_bytes(),
        b"\xff\xfeab\xc3\xa9c\xc3",
        b"kKs S ss",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    for _ in 0..30 {
        let alpha: [&[u8]; 8] = [b"a", b"b", b"c", b" ", "é".as_bytes(), b"\n", b"1", b"]"];
        let mut s = Vec::new();
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        for _ in 0..((rng >> 33) % 12) {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            s.extend_from_slice(alpha[((rng >> 33) % 8) as usize]);
        }
        subjects.push(s);
    }
    let (mut compared, mut modelled, mut gave_up) = (0, 0, 0);
    for p in &pats {
        let Ok(re) = compile(p) else { continue };
        for s in &subjects {
            let e = re.engine(s).0.unwrap();
            let Some(prog) = e.cap.as_ref() else { continue };
            modelled += 1;
            let mut c = e.pike.create_cache();
            let mut cc = capture::Cache::default();
            let matches: Vec<Match> = e.pike.find_iter(&mut c, s.as_slice()).collect();
            for m in matches {
                let input = Input::new(s.as_slice()).span(m.range()).anchored(Anchored::Yes);
                let mut want = e.pike.create_captures();
                e.pike.search(&mut c, &input, &mut want);
                let mut got = e.pike.create_captures();
                got.set_pattern(Some(regex_automata::PatternID::ZERO));
                match prog.try_captures(&mut cc, s, m.start(), m.end(), got.slots_mut()) {
                    Some(true) => {}
                    Some(false) => panic!("pattern {p:?} on {s:?} at {m:?}: no path found, {want:?} exists"),
                    None => {
                        // Over its step budget: the caller falls back to the PikeVM.
                        gave_up += 1;
                        continue;
                    }
                }
                assert_eq!(format!("{got:?}"), format!("{want:?}"), "pattern {p:?} on {s:?} at {m:?}");
                compared += 1;
            }
        }
    }
    assert!(modelled > 3000, "{modelled}");
    assert!(compared > 5000, "{compared}");
    assert!(gave_up * 100 < compared, "{gave_up} of {compared}");
    // Runs backing off into runs with no path to the end: quadratic candidates, so the
    // engine gives up at its budget (the caller falls back to regex-automata's).
    let q = compile(r"(a*)(a*)(a*)c|(a*)b").unwrap();
    let s = format!("{}b", "a".repeat(200));
    let e = q.engine(s.as_bytes()).0.unwrap();
    let mut got = e.pike.create_captures();
    let prog = e.cap.as_ref().unwrap();
    assert_eq!(prog.try_captures(&mut capture::Cache::default(), s.as_bytes(), 0, s.len(), got.slots_mut()), None);
    // Anchored at the start, the engine finds the match itself (re.match without the
    // DFA pass): the same match and groups as the PikeVM's, or no match when it has
    // none, on every pattern above anchored with `^`.
    let (mut found, mut none, mut quick_gave_up) = (0, 0, 0);
    for p in &pats {
        let Ok(re) = compile(&format!("^(?:{p})")) else { continue };
        for s in &subjects {
            let e = re.engine(s).0.unwrap();
            let Some(prog) = e.cap.as_ref() else { continue };
            assert!(e.anchored, "{p}");
            let mut c = e.pike.create_cache();
            let mut want = e.pike.create_captures();
            e.pike.search(&mut c, &Input::new(s.as_slice()), &mut want);
            let mut got = e.pike.create_captures();
            got.set_pattern(Some(regex_automata::PatternID::ZERO));
            match prog.quick(&mut capture::Cache::default(), s, 0, s.len(), false, got.slots_mut()).0 {
                Some(true) => {
                    assert_eq!(format!("{got:?}"), format!("{want:?}"), "pattern ^(?:{p}) on {s:?}");
                    found += 1;
                }
                Some(false) => {
                    assert!(!want.is_match(), "pattern ^(?:{p}) on {s:?}: no match found, {want:?} exists");
                    none += 1;
                }
                None => quick_gave_up += 1,
            }
        }
    }
    assert!(found > 3000 && none > 1000, "{found} {none}");
    assert!(quick_gave_up * 20 < found, "{quick_gave_up} of {found}");
    assert!(!compile("(?m)^(a)").unwrap().text.anchored);
    // The log pattern is modelled in its ASCII form, not in its Unicode form.
    let log = compile(&pats[0]).unwrap();
    assert!(log.engine(b"x").0.unwrap().cap.is_some());
    assert!(log.text.cap.is_none());
}
