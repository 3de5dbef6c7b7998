//! Which live worker runs each source. The daemon reads it from a
//! `tokio::sync::watch` channel at the start of each source's scan, so a
//! change (a worker joined or died, a source moved) counts from the next
//! scan. Whatever keeps the live set (etcd's membership, or the static
//! `[workers]` of `config.toml`) sends a new [`Assignment`] on it.

use std::collections::BTreeMap;
use std::sync::Arc;

/// A worker as the daemon dials it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WorkerAddr {
    /// The worker's id (`svc worker --id`).
    pub id: String,
    /// `host:port` it serves on (`svc worker --advertise`).
    pub addr: String,
}

/// Source name to the live worker that runs it; a source not in the map
/// has no live worker, and its scans fail (its resources are kept).
pub type Assignment = BTreeMap<String, WorkerAddr>;

/// The receiving end every remote source holds.
pub type AssignmentRx = tokio::sync::watch::Receiver<Arc<Assignment>>;

/// A channel for assignments, starting with `first`.
pub fn channel(first: Assignment) -> (tokio::sync::watch::Sender<Arc<Assignment>>, AssignmentRx) {
    tokio::sync::watch::channel(Arc::new(first))
}
