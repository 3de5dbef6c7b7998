//! The policy subsystem: the book of rules and where installed packs are read.

use std::sync::Arc;

use svc_graph::sync::RwLock;

use super::{Book, PackSource};
use crate::ids::NodeId;
use crate::ranks;

/// The book (its own locks, leaves) and the pack source (`packs`, a leaf).
pub(crate) struct Policies {
    book: Book,
    /// Installed policy packs, read at each scan.
    packs: RwLock<Option<Arc<dyn PackSource>>>,
}

impl Policies {
    pub(crate) fn new(book: Book) -> Policies {
        Policies {
            book,
            packs: RwLock::new(ranks::PACKS, None),
        }
    }

    pub(crate) fn book(&self) -> &Book {
        &self.book
    }

    pub(crate) fn set_pack_source(&self, source: Arc<dyn PackSource>) {
        *self.packs.write() = Some(source);
    }

    pub(crate) fn pack_source(&self) -> Option<Arc<dyn PackSource>> {
        self.packs.read().clone()
    }

    /// The ids of the enforcing `block` rules that matched `id` in the last
    /// scan, in priority order.
    pub(crate) fn blocked_by(&self, id: NodeId) -> Vec<String> {
        self.book
            .outcome()
            .blocked
            .get(&id)
            .map(|v| v.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default()
    }
}
