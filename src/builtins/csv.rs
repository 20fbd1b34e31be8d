use super::Builtin;
pub const TABLE: &[Builtin] = &[];
