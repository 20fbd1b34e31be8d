//! The `fmt` builtin (printf-style formatting): a format and up to four arguments from
//! the bytes, each argument a string, a number, nil, a bool, a list or a map (chosen by a
//! type byte). Errors are `value` errors (caught), never anything else; the output is
//! deterministic; a format without `%` is its own output; `%s` is `str`; `%d` of an
//! integral number below 2^53 is `str`; a width pads to at least that many characters.
#![no_main]
use libfuzzer_sys::fuzz_target;

const DRIVER: &str = r#"
f = args()[0]
a = []
i = 1
while i < len(args())
  s = args()[i]
  t = ""
  if len(s) > 0
    t = s[0]
    s = slice(s, 1, len(s))
  end
  if t == "n"
    try
      v = num(s)
    catch e
      v = len(s) - 3.5
    end
  elif t == "i"
    v = len(s) * 1000003 - 7
  elif t == "z"
    v = nil
  elif t == "b"
    v = len(s) % 2 == 0
  elif t == "l"
    v = [s, len(s), nil]
  elif t == "m"
    v = {"k": s, "n": len(s)}
  else
    v = s
  end
  push(a, v)
  i += 1
end
n = len(a)
try
  if n == 0
    r = fmt(f)
    r2 = fmt(f)
  elif n == 1
    r = fmt(f, a[0])
    r2 = fmt(f, a[0])
  elif n == 2
    r = fmt(f, a[0], a[1])
    r2 = fmt(f, a[0], a[1])
  elif n == 3
    r = fmt(f, a[0], a[1], a[2])
    r2 = fmt(f, a[0], a[1], a[2])
  else
    r = fmt(f, a[0], a[1], a[2], a[3])
    r2 = fmt(f, a[0], a[1], a[2], a[3])
  end
  if r != r2
    print("fmt is not deterministic")
    exit(99)
  end
  if type(r) != "string"
    print("fmt gave a ", type(r))
    exit(99)
  end
catch e
  if e.kind != "value" and e.kind != "type"
    print("fmt raised kind ", e.kind, ": ", e.message)
    exit(99)
  end
end
if not ("%" in f) and n == 0 and fmt(f) != f
  print("a format without % changed")
  exit(99)
end
if n > 0
  x = a[0]
  if fmt("%s", x) != str(x)
    print("%s is not str")
    exit(99)
  end
  if type(x) == "number" and x == int(x) and abs(x) < 9007199254740992 and fmt("%d", x) != str(x)
    print("%d is not str for ", x)
    exit(99)
  end
  if type(x) == "string" and len(x) < 200
    w = len(chars(x)) + 3
    if len(chars(fmt("%" .. w .. "s", x))) != w or len(chars(fmt("%-" .. w .. "s", x))) != w
      print("width not honoured")
      exit(99)
    end
  end
end
"#;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&c| c == 0);
    let f = parts.next().unwrap_or_default().to_vec();
    let mut args = vec![f];
    args.extend(parts.take(4).map(|p| p.to_vec()));
    leash_fuzz::run_driver(DRIVER, args);
});
