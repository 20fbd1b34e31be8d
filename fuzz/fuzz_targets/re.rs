//! re.* with a pattern and a subject from the bytes: errors are values, matching is
//! bounded, and the builtins agree with one another.
#![no_main]
use libfuzzer_sys::fuzz_target;

const DRIVER: &str = r#"
p = args()[0]
s = args()[1]
w = args()[2]
try
  t = re.test(p, s)
catch e
  exit(0)
end
m = re.match(p, s)
if t != (m != nil)
  print("re.test and re.match disagree")
  exit(99)
end
all = re.find_all(p, s)
if t != (len(all) > 0)
  print("re.test and re.find_all disagree")
  exit(99)
end
if t and all[0] != m[0]
  print("first match differs")
  exit(99)
end
r = re.replace(p, s, w)
parts = re.split(p, s)
"#;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&c| c == 0);
    let p = parts.next().unwrap_or_default().to_vec();
    let s = parts.next().unwrap_or_default().to_vec();
    let w = parts.next().unwrap_or_default().to_vec();
    leash_fuzz::run_driver(DRIVER, vec![p, s, w]);
});
