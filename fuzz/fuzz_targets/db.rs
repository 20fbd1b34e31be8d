//! SQL text and parameters through the `db.*` builtins of an in-memory SQLite under the
//! leash (`--allow-db`, `:memory:` only): the fuzzed SQL runs as a query and as a batch,
//! with list and named parameters, over a small seeded table. Never a panic, an abort, a
//! hang past the deadline or an internal error; a caught error is `db`, `value` or `type`;
//! after any statement the connection still answers `SELECT 1`; nothing is created in
//! the working directory (ATTACH, temporary files and the pragmas that reach outside are
//! refused).
#![no_main]
use std::collections::BTreeSet;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

const DRIVER: &str = r#"
sql = args()[0]
ps = []
named = {}
names = ["a", "b", "c", "d"]
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
  elif t == "r"
    v = repeat(s, 4096)
  elif t == "l"
    v = [s]
  else
    v = s
  end
  push(ps, v)
  if i <= 4
    named[names[i - 1]] = v
  end
  i += 1
end
d = db.open(":memory:")
db.exec(d, "CREATE TABLE t (a, b TEXT, c BLOB, k INTEGER PRIMARY KEY)")
db.exec(d, "CREATE INDEX ti ON t (b)")
db.exec(d, "INSERT INTO t VALUES (1, 'one', x'00ff', 1), (2.5, 'two', NULL, 2), (NULL, '', x'', 3)")
fn check(where, e)
  if e.kind != "db" and e.kind != "value" and e.kind != "type"
    print(where, " raised kind ", e.kind, ": ", e.message)
    exit(99)
  end
end
fn alive(d, where)
  r = db.query(d, "SELECT 1 AS one")
  if len(r) != 1 or r[0]["one"] != 1
    print("after ", where, ": SELECT 1 gave ", r)
    exit(99)
  end
end
try
  rows = db.query(d, sql, ps)
  if type(rows) != "list"
    print("db.query gave a ", type(rows))
    exit(99)
  end
  for row in rows
    if type(row) != "map"
      print("db.query gave a row of type ", type(row))
      exit(99)
    end
  end
catch e
  check("db.query", e)
end
alive(d, "db.query")
try
  n = db.query(d, sql, named)
catch e
  check("db.query (named)", e)
end
alive(d, "db.query (named)")
try
  n = db.exec(d, sql, ps)
  if type(n) != "number" or n < 0
    print("db.exec gave ", n)
    exit(99)
  end
catch e
  check("db.exec", e)
end
alive(d, "db.exec")
try
  n = db.exec(d, sql)
catch e
  check("db.exec (batch)", e)
end
alive(d, "db.exec (batch)")
db.close(d)
"#;

/// The working directory's names when the first input ran: a run must add none.
fn names_here() -> BTreeSet<std::ffi::OsString> {
    std::fs::read_dir(".").map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect()).unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    static FIRST: OnceLock<BTreeSet<std::ffi::OsString>> = OnceLock::new();
    let first = FIRST.get_or_init(names_here);
    // SQL NUL then parameters separated by NUL, each led by a type byte (`n` number, `i`
    // integer, `z` nil, `b` bool, `r` the text repeated 4,096 times, `l` a list: a type
    // error, else a string); at most 8.
    let mut parts = data.split(|&c| c == 0);
    let sql = parts.next().unwrap_or_default().to_vec();
    let mut args = vec![sql];
    args.extend(parts.take(8).map(|p| p.to_vec()));
    let caps = leash::program::Caps::of(&[leash::caps::Cap::Db]);
    leash_fuzz::run_driver_with(DRIVER, args, caps);
    let now = names_here();
    let new: Vec<_> = now.difference(first).collect();
    assert!(new.is_empty(), "the run created {new:?} in the working directory");
});
