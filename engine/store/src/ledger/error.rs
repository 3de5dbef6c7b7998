//! The ledger's errors ([`LedgerError`]) and the first broken link of its
//! chain ([`BrokenLink`]), which stops appends once verification finds it.

use std::path::PathBuf;

use crate::health::Fault;

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The file could not be opened, is not a ledger, or is corrupt.
    #[error("cannot open ledger {}: {reason}", path.display())]
    Open { path: PathBuf, reason: String },
    #[error("ledger storage error: {0}")]
    Storage(#[from] redb::Error),
    /// Stored bytes that do not decode or records that contradict each other.
    #[error("ledger is corrupt: {0}")]
    Corrupt(String),
    /// The write transaction holding this append failed; nothing of it was stored.
    #[error("ledger write failed: {0}")]
    Write(String),
    /// A cluster's replicated log did not take the append (this node does
    /// not lead, or etcd is unreachable); nothing of it was stored.
    #[error("ledger write failed: not replicated: {0}")]
    NotReplicated(String),
    #[error("cannot encode event payload: {0}")]
    Payload(#[from] serde_json::Error),
    #[error("ledger writer has stopped")]
    Closed,
    /// The file failed (a full disk, an I/O error) and is not usable yet;
    /// it is opened again until it is.
    #[error("ledger {0}")]
    Unavailable(Fault),
    /// Verification found the chain broken: nothing is appended onto it.
    #[error(
        "the ledger's chain is broken at event {}: {}; nothing is appended until events.redb is restored (svc ledger verify)",
        .0.seq, .0.reason
    )]
    Broken(BrokenLink),
}

impl LedgerError {
    /// The storage fault behind this error, if the file failed.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            LedgerError::Unavailable(f) => Some(f),
            _ => None,
        }
    }
}

macro_rules! storage_from {
    ($($t:ty),*) => {$(
        impl From<$t> for LedgerError {
            fn from(e: $t) -> Self {
                LedgerError::Storage(e.into())
            }
        }
    )*};
}
storage_from!(
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError,
    redb::DatabaseError,
    redb::SetDurabilityError
);

/// The first broken link of the chain.
#[derive(Clone, Debug, PartialEq)]
pub struct BrokenLink {
    /// The first seq that is missing, does not decode, does not link to its
    /// predecessor or does not hash to its stored hash.
    pub seq: u64,
    /// What is wrong, e.g. "hash mismatch: the stored event was altered".
    pub reason: String,
}
