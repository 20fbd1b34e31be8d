//! json.parse on any bytes; when it parses, the round trip
//! json.parse(json.stringify(v)) == v (compact and indented).
#![no_main]
use libfuzzer_sys::fuzz_target;

const DRIVER: &str = r#"
s = args()[0]
try
  v = json.parse(s)
catch e
  exit(0)
end
try
  t = json.stringify(v)
  t2 = json.stringify(v, 2)
catch e
  print("stringify failed on what parse gave: ", e)
  exit(99)
end
if json.parse(t) != v
  print("compact round trip: ", t)
  exit(99)
end
if json.parse(t2) != v
  print("indented round trip: ", t2)
  exit(99)
end
if json.stringify(json.parse(t)) != t
  print("stringify not stable: ", t)
  exit(99)
end
"#;

fuzz_target!(|data: &[u8]| {
    leash_fuzz::run_driver(DRIVER, vec![data.to_vec()]);
});
