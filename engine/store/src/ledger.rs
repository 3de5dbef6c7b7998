//! The append-only audit ledger in `events.redb`.
//!
//! Every event gets a gap-free sequence number (from 1) and the SHA-256 of
//! its predecessor, so the file is a hash chain that [`Ledger::verify`] and
//! [`Ledger::verify_file`] walk. Timestamps come from the
//! [`Clock`](svc_graph::clock::Clock) but never go below the previous
//! event's, so time order is seq order, also across restarts.
//!
//! Appends go through one writer thread that group-commits: it drains every
//! queued request into one write transaction, commits it durably, calls the
//! listeners in seq order and only then answers the callers. Readers use
//! read transactions and never wait for the writer.
//!
//! The files: the handle (`ledger/handle.rs`) and the state it shares with
//! the writer thread (`ledger/shared.rs`, `ledger/writer.rs`); events and
//! their kinds (`ledger/events.rs`); errors (`ledger/error.rs`); opening a
//! file (`ledger/open.rs`); reads (`ledger/query.rs`) and the chain walk
//! (`ledger/verify.rs`). Layout of the file: `ledger/tables.rs`, with its
//! indexes in `ledger/type_index.rs` and `ledger/postings.rs`. Byte format
//! and hash: `ledger/codec.rs`.

/// The stored form of one event. Public for the fuzz targets only.
#[doc(hidden)]
pub mod codec;
mod error;
pub mod events;
mod handle;
mod open;
mod postings;
mod query;
mod shared;
mod tables;
mod type_index;
mod verify;
mod writer;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_integrity;
#[cfg(test)]
mod tests_model;
#[cfg(test)]
mod tests_postings;
#[cfg(test)]
mod tests_query;
#[cfg(test)]
mod tests_replica;

pub use error::{BrokenLink, LedgerError};
pub use events::{
    Event, EventKind, HISTORY_PRUNED, NewEvent, Payload, SAU_ACTION, UNREADABLE, sau_action_types, status_of,
};
pub use handle::Ledger;
pub use query::{HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT, HistoryPage, HistoryQuery, SessionInfo, Summary};
pub use shared::Replicator;
pub use verify::VerifyReport;
