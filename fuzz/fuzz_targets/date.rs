//! date.parse (RFC 3339 and with a format) and date.format / date.parts (a time from the
//! bytes, a format, an offset); the RFC 3339 text of a time reads back to the same text.
#![no_main]
use libfuzzer_sys::fuzz_target;

const DRIVER: &str = r#"
s = args()[0]
f = args()[1]
t = num(args()[2])
off = num(args()[3])
try
  u = date.parse(s)
  x = date.format(u)
  if date.format(date.parse(x)) != x
    print("RFC 3339 round trip: ", s, " -> ", x)
    exit(99)
  end
catch e
end
try
  u = date.parse(s, f)
  x = date.format(u, f)
catch e
end
try
  x = date.format(t)
  if date.format(date.parse(x)) != x
    print("RFC 3339 round trip of ", t, ": ", x)
    exit(99)
  end
  p = date.parts(t)
catch e
end
try
  x = date.format(t, f, off)
  p = date.parts(t, off)
catch e
end
try
  x = date.format(t, nil, off)
catch e
end
"#;

fuzz_target!(|data: &[u8]| {
    // text NUL format NUL then 16 bytes: a time (f64 bits or an integer) and an offset.
    let mut parts = data.splitn(3, |&c| c == 0);
    let s = parts.next().unwrap_or_default().to_vec();
    let f = parts.next().unwrap_or_default().to_vec();
    let rest = parts.next().unwrap_or_default();
    let mut w = [0u8; 16];
    for (i, c) in rest.iter().take(16).enumerate() {
        w[i] = *c;
    }
    let a = u64::from_le_bytes(w[..8].try_into().unwrap());
    let b = i64::from_le_bytes(w[8..].try_into().unwrap());
    // Half the times are integers in range, half any finite binary64.
    let t = if a & 1 == 0 {
        ((a >> 1) as i64 % 8_334_601_228_801) as f64
    } else {
        let x = f64::from_bits(a);
        if x.is_finite() {
            x
        } else {
            0.0
        }
    };
    let off = b % 90_000;
    let num = |x: f64| format!("{x:e}").into_bytes();
    leash_fuzz::run_driver(DRIVER, vec![s, f, num(t), num(off as f64)]);
});
