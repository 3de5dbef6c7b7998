//! `graph.redb`: every version of every node and edge, as a log of segments.
//!
//! Each commit (one per scan) writes the changed node and edge versions,
//! grouped by shard into one value per shard: `(commit_us, part, shard) ->
//! records`. Now and then a commit writes a checkpoint instead: every current
//! row. The state as of any time T is the latest checkpoint at or before T
//! with the later deltas up to T replayed over it, shard by shard in
//! parallel; `graph at T` keeps the rows live at T (`valid_from <= T` and
//! `valid_to` 0 or later than T), and `diff` compares two such states.
//! A restart replays from the last checkpoint. Writing a shard's changes as
//! one value keeps a commit of a million new rows to a few hundred inserts.
//!
//! A checkpoint is written when there is none yet, or when the rows written
//! as deltas since the last one exceed [`CHECKPOINT_FACTOR`] times the rows
//! of the graph, so replay never reads more than that many times a full
//! state. The interner's table is stored alongside, so symbols in stored
//! rows keep their meaning.
//!
//! The files: the store itself, its tables and commits
//! (`graph_store/store.rs`); what a commit writes
//! (`graph_store/versions.rs`); the segment format
//! (`graph_store/segments.rs`); replayed states and their sharing
//! (`graph_store/replays.rs`); questions about the past
//! (`graph_store/past.rs`); the history kept, and what is dropped before
//! a window (`graph_store/retention.rs`); errors (`graph_store/error.rs`).

mod error;
mod node_history;
mod past;
mod replays;
mod retention;
mod segments;
mod store;
mod versions;

#[cfg(test)]
pub(crate) mod tests;

pub use error::StoreError;
pub use node_history::NodeHistory;
pub use past::{DiffCounts, GraphAtPage, GraphDiff, edge_order};
pub use replays::{GraphAt, Replayed};
pub use retention::HistoryPruned;
pub(crate) use store::META;
pub use store::{CHECKPOINT_FACTOR, CommitMeta, GraphStore, Loaded, StoreStats};
pub use versions::{GraphVersions, Part, Sink, Stopped, Versions};
