//! The capability table (SPEC 9): every capability a script can be granted, in one place.
//!
//! Each row says what the capability is called in every place it shows, so that they
//! cannot drift apart:
//!
//! | reader                                   | reads                                   |
//! |------------------------------------------|-----------------------------------------|
//! | `cli` (flag parsing, `--help`, the shell completions and man page, which come from `cli::OPTIONS`) | `flag`, `help`, `scope`, `needs` |
//! | the builtin tables (`builtins::Cap`, re-exported from here) and `leash --builtins` | `Cap`, `flag` |
//! | `leash check` (text and `--json`)         | `name`, `implies` (`Caps::describe`), `needs` (`Caps::add_used`) |
//! | the run-time check of a gated call (`needs --allow-...`) | `implies` (`Caps::allows`), `wanted` |
//! | the audit log (`--audit`)                 | `name`                                  |
//! | the gateway's `allow = [...]` (`gateway.rs`), its error for an unknown name, the worker's argv | `name`, `scope`, `needs`, `flag` |
//! | the gate (`gate.rs`): scope messages      | `flag`                                  |
//!
//! A set of capabilities (granted by the operator, or reached by a program's calls) is a
//! `Caps`, a bitset indexed by `Cap`.
//!
//! To add a capability: add a `Cap` variant and its row in `TABLE` (same position as the
//! variant's number; the unit test below checks it), an option line in `cli::OPTIONS`
//! (`cap_opt`), its scope in `gate::Specs` (indexed by `Cap`, nothing to add) and where the
//! gate checks it (`gate.rs`), then mark the builtins that need it in their area's table.
//! Everything else (parsing, `--help`, completions, `leash check`, the gateway, the audit
//! log, the refusal's text) follows from the row.
//!
//! This module imports nothing of the crate: everything may import it.

/// A capability a builtin needs (SPEC 9). Its number is its row in `TABLE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Cap {
    /// Reading files and directories: `--allow-read` or `--allow-files`.
    Read = 0,
    Files = 1,
    Network = 2,
    Listen = 3,
    Db = 4,
}

/// What the items of a capability's scope list (`--allow-X=A,B`, `"X=A,B"`) are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    /// The capability takes no list.
    None,
    /// Paths (directories, or files), opened beneath by the gate; relative to the root in
    /// the gateway's configuration.
    Path,
    /// `HOST[:PORT]` items, checked against the address a connection really goes to.
    Host,
    /// Paths (SQLite files) or `postgresql://HOST[:PORT]/DB` server items.
    PathOrPg,
}

/// One row of the table.
#[derive(Debug)]
pub struct CapInfo {
    pub cap: Cap,
    /// The name in the gateway's `allow = [...]`, `leash check`, the audit log.
    pub name: &'static str,
    /// The command-line flag.
    pub flag: &'static str,
    pub scope: ScopeKind,
    /// Capabilities a grant of this one grants too (`files` grants `read`); `leash check`
    /// names only the larger one.
    pub implies: &'static [Cap],
    /// Capabilities that must be granted with this one (`listen` needs `network`); a
    /// program that calls one of its builtins is reported as needing them too.
    pub needs: &'static [Cap],
    /// What a refused call's diagnostic says it needs (`file.read needs ...`): the flag,
    /// and the flags of the capabilities that imply it.
    pub wanted: &'static str,
    /// The `--help` text of the flag.
    pub help: &'static str,
}

/// Every capability, in `Cap` order (which is the order everything lists them in).
pub const TABLE: [CapInfo; 5] = [
    CapInfo {
        cap: Cap::Read,
        name: "read",
        flag: "--allow-read",
        scope: ScopeKind::Path,
        implies: &[],
        needs: &[],
        wanted: "--allow-read or --allow-files",
        help: "[=PATH,...] grant the reading file and directory builtins, csv.open (only beneath PATHs)",
    },
    CapInfo {
        cap: Cap::Files,
        name: "files",
        flag: "--allow-files",
        scope: ScopeKind::Path,
        implies: &[Cap::Read],
        needs: &[],
        wanted: "--allow-files",
        help: "[=PATH,...] grant file and directory builtins, readers, csv.open (only beneath PATHs)",
    },
    CapInfo {
        cap: Cap::Network,
        name: "network",
        flag: "--allow-network",
        scope: ScopeKind::Host,
        implies: &[],
        needs: &[],
        wanted: "--allow-network",
        help: "[=HOST[:PORT],...] grant http.*, net.connect, net.resolve (only to those hosts)",
    },
    CapInfo {
        cap: Cap::Listen,
        name: "listen",
        flag: "--allow-listen",
        scope: ScopeKind::Host,
        implies: &[],
        needs: &[Cap::Network],
        wanted: "--allow-listen",
        help: "[=ADDR:PORT,...] grant net.listen, net.accept (needs --allow-network)",
    },
    CapInfo {
        cap: Cap::Db,
        name: "db",
        flag: "--allow-db",
        scope: ScopeKind::PathOrPg,
        implies: &[],
        needs: &[],
        wanted: "--allow-db",
        help:
            "[=PATH|postgresql://HOST[:PORT]/DB,...] grant db.*: SQLite files beneath PATHs, PostgreSQL servers named",
    },
];

/// The table as a static (rows borrowed for the whole run).
static ROWS: [CapInfo; 5] = TABLE;

impl Cap {
    /// Every capability, in table order.
    pub const ALL: [Cap; 5] = [Cap::Read, Cap::Files, Cap::Network, Cap::Listen, Cap::Db];

    pub fn info(self) -> &'static CapInfo {
        &ROWS[self as usize]
    }
    /// The command-line flag: `--allow-read`.
    pub const fn flag(self) -> &'static str {
        TABLE[self as usize].flag
    }
    /// The name in the gateway's `allow`, `leash check` and the audit log: `read`.
    pub const fn name(self) -> &'static str {
        TABLE[self as usize].name
    }
    pub const fn help(self) -> &'static str {
        TABLE[self as usize].help
    }
    pub const fn scope(self) -> ScopeKind {
        TABLE[self as usize].scope
    }
    /// The capability of a name (`"files"`), as the gateway's `allow` writes it.
    pub fn by_name(name: &str) -> Option<Cap> {
        ROWS.iter().find(|r| r.name == name).map(|r| r.cap)
    }
    /// The capability of a flag (`"--allow-files"`).
    pub fn by_flag(flag: &str) -> Option<Cap> {
        ROWS.iter().find(|r| r.flag == flag).map(|r| r.cap)
    }
    /// `read, files, network, listen, db`: the names, for a message listing them.
    pub fn names_listed() -> String {
        ROWS.iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
    }
}

/// A set of capabilities: granted (the operator's flags) or used (a program's calls).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps(u8);

impl Caps {
    pub const NONE: Caps = Caps(0);

    pub const fn of(caps: &[Cap]) -> Caps {
        let mut bits = 0u8;
        let mut i = 0;
        while i < caps.len() {
            bits |= 1 << caps[i] as u8;
            i += 1;
        }
        Caps(bits)
    }
    /// Is `c` itself in the set?
    pub fn has(self, c: Cap) -> bool {
        self.0 & (1 << c as u8) != 0
    }
    pub fn insert(&mut self, c: Cap) {
        self.0 |= 1 << c as u8;
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// Does this grant allow a call that needs `c`: `c` itself, or a capability that
    /// implies it (`files` for `read`)?
    pub fn allows(self, c: Cap) -> bool {
        self.has(c) || ROWS.iter().any(|r| self.has(r.cap) && r.implies.contains(&c))
    }
    /// Note that a program calls a builtin gated by `c`: it needs `c` and what `c` needs.
    pub fn add_used(&mut self, c: Cap) {
        self.insert(c);
        for n in c.info().needs {
            self.insert(*n);
        }
    }
    /// The first capability in the set whose `needs` are not all in it, with the one
    /// missing (`--allow-listen` without `--allow-network`).
    pub fn missing_need(self) -> Option<(Cap, Cap)> {
        ROWS.iter()
            .filter(|r| self.has(r.cap))
            .find_map(|r| r.needs.iter().find(|n| !self.has(**n)).map(|n| (r.cap, *n)))
    }
    /// The names of the set in table order, without those a larger one implies.
    pub fn names(self) -> Vec<&'static str> {
        ROWS.iter()
            .filter(|r| self.has(r.cap))
            .filter(|r| !ROWS.iter().any(|o| self.has(o.cap) && o.implies.contains(&r.cap)))
            .map(|r| r.name)
            .collect()
    }
    /// `files network`, or `none` (`leash check`).
    pub fn describe(self) -> String {
        let v = self.names();
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(" ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_in_cap_order_and_consistent() {
        for (i, r) in TABLE.iter().enumerate() {
            assert_eq!(r.cap as usize, i, "{}", r.name);
            assert_eq!(Cap::ALL[i], r.cap);
            assert_eq!(r.flag, format!("--allow-{}", r.name));
            assert_eq!(Cap::by_name(r.name), Some(r.cap));
            assert_eq!(Cap::by_flag(r.flag), Some(r.cap));
            // The refusal names the flag, then the flags that imply it.
            let mut wanted = vec![r.flag];
            wanted.extend(TABLE.iter().filter(|o| o.implies.contains(&r.cap)).map(|o| o.flag));
            assert_eq!(r.wanted, wanted.join(" or "), "{}", r.name);
            // The help of a flag that needs another says so.
            for n in r.needs {
                assert!(r.help.contains(&format!("needs {}", n.flag())), "{}", r.name);
            }
            assert!(!r.implies.contains(&r.cap) && !r.needs.contains(&r.cap));
        }
        assert_eq!(Cap::names_listed(), "read, files, network, listen, db");
    }

    #[test]
    fn sets() {
        let files = Caps::of(&[Cap::Files]);
        assert!(files.allows(Cap::Read) && files.allows(Cap::Files) && !files.has(Cap::Read));
        assert!(!Caps::of(&[Cap::Read]).allows(Cap::Files));
        assert_eq!(Caps::of(&[Cap::Read, Cap::Files]).describe(), "files");
        assert_eq!(Caps::NONE.describe(), "none");
        let mut used = Caps::NONE;
        used.add_used(Cap::Listen);
        assert_eq!(used.describe(), "network listen");
        assert_eq!(Caps::of(&[Cap::Listen]).missing_need(), Some((Cap::Listen, Cap::Network)));
        assert_eq!(used.missing_need(), None);
        let all = Caps::of(&Cap::ALL);
        assert_eq!(all.describe(), "files network listen db");
    }
}
