//! The tools of SPEC 13 around the interpreter: the formatter (`leash fmt`), the profiler
//! (`--profile`), the interactive session (`leash repl`) and the shell completions and man
//! page generated from the option table (`leash completions`).

pub mod completions;
pub mod fmt;
pub mod profile;
pub mod repl;
