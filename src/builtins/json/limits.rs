//! The JSON limits of a run (`json`, `json_depth`, `json_nodes`), one struct for both
//! directions: the parser (`parse`, `stream`) and the writer (`write`) stop at the same
//! three bounds with the same messages, so whatever `json.stringify` writes,
//! `json.parse` reads back.

use crate::limits::*;

/// The JSON limits of a run (`json`, `json_depth`, `json_nodes`).
#[derive(Clone, Copy, Debug)]
pub struct JsonLimits {
    pub bytes: usize,
    pub depth: usize,
    pub nodes: usize,
}

impl JsonLimits {
    pub fn of(l: &Limits) -> Self {
        JsonLimits { bytes: l.n(L::Json), depth: l.n(L::JsonDepth), nodes: l.n(L::JsonNodes) }
    }

    /// A text past `bytes`.
    pub(super) fn too_long(&self) -> String {
        format!("JSON text of more than {} bytes", self.bytes)
    }

    /// Nesting past `depth`.
    pub(super) fn too_deep(&self) -> String {
        format!("JSON nested more than {} deep", self.depth)
    }

    /// More values than `nodes`.
    pub(super) fn too_many(&self) -> String {
        format!("JSON document of more than {} values", self.nodes)
    }
}

impl Default for JsonLimits {
    fn default() -> Self {
        JsonLimits::of(&Limits::default())
    }
}
