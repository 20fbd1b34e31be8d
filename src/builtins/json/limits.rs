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
    /// The heap's ceiling in live bytes (`--max-memory` above the run's base), which the
    /// writer looks at as its text grows (`with_heap`); `usize::MAX`: not looked at.
    pub heap: usize,
}

impl JsonLimits {
    pub fn of(l: &Limits) -> Self {
        JsonLimits { bytes: l.n(L::Json), depth: l.n(L::JsonDepth), nodes: l.n(L::JsonNodes), heap: usize::MAX }
    }

    /// These limits, with the heap's ceiling for a writer that holds its text.
    pub fn with_heap(self, heap: &crate::memory::HeapMeter) -> Self {
        JsonLimits { heap: heap.ceiling(), ..self }
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
