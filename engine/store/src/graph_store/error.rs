//! The graph store's error: a file that cannot be opened, a database
//! error, a file that failed and is not usable yet, stored bytes that do
//! not decode, or a state record not shipped or not applied
//! ([`crate::replica`]); each names the store's path.

use std::path::PathBuf;

use thiserror::Error;

use crate::bytes::DecodeError;
use crate::health::Fault;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot open graph store {path}: {cause}")]
    Open { path: PathBuf, cause: Box<redb::Error> },
    #[error("graph store {path}: {cause}")]
    Db { path: PathBuf, cause: Box<redb::Error> },
    /// The file failed (a full disk, an I/O error) and is not usable yet.
    #[error("graph store {0}")]
    Unavailable(Fault),
    /// A time before the history the store keeps (`graph.history_retention`).
    #[error("time {at_us} us is before the graph history kept, which starts at {earliest_us} us")]
    BeforeRetention { at_us: u64, earliest_us: u64 },
    /// The write's record was not shipped to the standbys: nothing was written.
    #[error("graph store {path}: record {seq} not shipped, nothing written: {reason}")]
    NotShipped { path: PathBuf, seq: u64, reason: String },
    /// A record applied before the ones it follows.
    #[error("graph store {path}: record {seq} does not follow the last one applied, {state_seq}")]
    RecordGap { path: PathBuf, seq: u64, state_seq: u64 },
    /// A record that is malformed or does not fit the store's tables.
    #[error("graph store {path}: record {seq} cannot be applied: {what}")]
    BadRecord { path: PathBuf, seq: u64, what: String },
    #[error("graph store {path}: {what}: {cause}")]
    Corrupt {
        path: PathBuf,
        what: String,
        cause: DecodeError,
    },
}
