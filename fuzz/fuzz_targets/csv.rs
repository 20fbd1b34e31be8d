//! csv.parse on any bytes, with options chosen by the first byte; when it parses, the
//! round trip csv.parse(csv.stringify(rows, opts), opts) == rows.
#![no_main]
use libfuzzer_sys::fuzz_target;

const DRIVER: &str = r#"
sel = ord(args()[0])
s = args()[1]
opts = {}
if sel % 2 == 1
  opts.header = true
end
if sel % 8 >= 4
  opts.delimiter = ";"
elif sel % 4 >= 2
  opts.delimiter = "\t"
end
if sel >= 128
  opts.quote = "'"
end
try
  rows = csv.parse(s, opts)
catch e
  exit(0)
end
try
  t = csv.stringify(rows, opts)
catch e
  print("stringify failed on what parse gave: ", e)
  exit(99)
end
back = csv.parse(t, opts)
if back != rows
  print("round trip: ", json.stringify(rows), " -> ", t)
  exit(99)
end
"#;

fuzz_target!(|data: &[u8]| {
    let (sel, rest) = match data.split_first() {
        Some((s, r)) => (*s, r),
        None => (0, data),
    };
    leash_fuzz::run_driver(DRIVER, vec![vec![sel.max(1)], rest.to_vec()]);
});
