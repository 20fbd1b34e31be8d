//! The standard library of Leash modules (`stdlib/*.lsh`), embedded at build time.

const MODULES: &[(&str, &str)] = &[
    ("args", include_str!("../stdlib/args.lsh")),
    ("cgi", include_str!("../stdlib/cgi.lsh")),
    ("path", include_str!("../stdlib/path.lsh")),
];

/// The source of stdlib module `name`.
pub fn module(name: &str) -> Option<&'static str> {
    MODULES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Names of all modules.
pub fn names() -> impl Iterator<Item = &'static str> {
    MODULES.iter().map(|(n, _)| *n)
}
