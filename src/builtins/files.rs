//! Files and directories (`file.*`, `dir.*`), behind `--allow-files`.

use super::Builtin;

/// Open streaming readers and their budget state.
#[derive(Debug, Default)]
pub struct FileState {}

pub const TABLE: &[Builtin] = &[];

impl FileState {
    /// Release every open reader (at the end of a run).
    pub fn close_all(&mut self) {}
}
