//! The failures every stage shares: a runtime error (`RtError`), why evaluation stopped
//! early (`Unwind`: an error, a limit, `exit`), and how a failure gets its line and
//! column (`located`, `spotted`). The bottom layer of the evaluator: it imports only
//! the kinds (`diag::ErrKind`, `limits::LimitKind`), positions (`ast`) and values a
//! failure carries, never the evaluator (issue 24, "error types at the bottom").

use crate::ast::Pos;
use crate::diag::ErrKind;
use crate::limits::LimitKind;
use crate::value::Value;

/// A recoverable runtime error.
#[derive(Debug, Clone)]
pub struct RtError {
    pub kind: ErrKind,
    pub message: String,
    pub pos: Pos,
    /// Where within the line (`ast::Spot`; 0 when not known): the operator, index,
    /// name or call that raised it.
    pub spot: crate::ast::Spot,
    /// A likely fix, for the diagnostic's `help:` line.
    pub help: Option<String>,
    /// For `throw v`: the thrown value.
    pub value: Option<Value>,
}

/// Why evaluation stopped early.
#[derive(Debug)]
pub enum Unwind {
    /// Catchable by `try`.
    Error(RtError),
    /// Never catchable: the run ends with status 4.
    Limit { kind: LimitKind, message: String, pos: Pos },
    /// `exit(n)`.
    Exit(i32),
}

pub type Fail = Box<Unwind>;
pub type R<T> = Result<T, Fail>;

/// The position of a failure not located yet.
pub const NO_POS: Pos = u32::MAX;

/// A runtime error of `kind`, not located yet (its line and spot are given on the way
/// out: `located`, `spotted`).
#[cold]
pub fn error(kind: ErrKind, message: String) -> Fail {
    Box::new(Unwind::Error(RtError { kind, message, pos: NO_POS, spot: 0, help: None, value: None }))
}

/// A limit of `kind` reached, not located yet.
#[cold]
pub fn limit(kind: LimitKind, message: String) -> Fail {
    Box::new(Unwind::Limit { kind, message, pos: NO_POS })
}

/// Give a runtime error the spot `sp` within its line unless it already has a position
/// or a spot (the innermost node that raised it wins).
#[cold]
pub fn spotted(mut e: Fail, sp: crate::ast::Spot) -> Fail {
    if let Unwind::Error(r) = &mut *e {
        if r.pos == NO_POS && r.spot == 0 {
            r.spot = sp;
        }
    }
    e
}

/// Give a failure the position `pos` unless it already has one (the innermost line that
/// was running when it was raised).
#[cold]
pub fn located(mut e: Fail, pos: Pos) -> Fail {
    match &mut *e {
        Unwind::Error(RtError { pos: p, .. }) | Unwind::Limit { pos: p, .. } if *p == NO_POS => *p = pos,
        _ => {}
    }
    e
}
