//! The tools of SPEC 13 around the interpreter: the formatter (`leash fmt`), the
//! interactive session (`leash repl`) and the shell completions and man page generated
//! from the option table (`leash completions`). The profiler (`--profile`), which the
//! evaluator feeds during the run, is the top-level module `profile`.

pub mod completions;
pub mod fmt;
pub mod repl;
