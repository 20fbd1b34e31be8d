//! url.* on any bytes: encode/decode round trip, parse, parse_query and its round trip
//! through build_query.
#![no_main]
use libfuzzer_sys::fuzz_target;

const DRIVER: &str = r#"
s = args()[0]
if url.decode(url.encode(s)) != s
  print("encode/decode round trip: ", s)
  exit(99)
end
try
  d = url.decode(s)
catch e
end
try
  p = url.parse(s)
  for k, v in p
    if v != nil and k != "port" and k != "scheme" and not (v in s)
      print("url.parse part not in the text: ", k)
      exit(99)
    end
  end
catch e
end
try
  q = url.parse_query(s)
catch e
  exit(0)
end
b = url.build_query(q)
if url.parse_query(b) != q
  print("query round trip: ", b)
  exit(99)
end
"#;

fuzz_target!(|data: &[u8]| {
    leash_fuzz::run_driver(DRIVER, vec![data.to_vec()]);
});
