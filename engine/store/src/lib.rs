//! Persistent stores under the data directory: `graph.redb` (every node and
//! edge version) and `events.redb` (the audit ledger).

pub mod atomic;
pub mod bytes;
pub mod codec;
pub mod graph_store;
pub mod health;
mod kinds;
pub mod ledger;
mod policy_store;
pub mod replica;
pub mod snapshot;
mod source_store;

pub use bytes::DecodeError;
pub use graph_store::{
    CHECKPOINT_FACTOR, CommitMeta, DiffCounts, GraphAt, GraphAtPage, GraphDiff, GraphStore, GraphVersions, Loaded,
    Replayed, StoreError, StoreStats, Versions,
};
pub use health::Fault;
pub use policy_store::{StoredEvaluation, StoredRule};
