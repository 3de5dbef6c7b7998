//! The state the [`Ledger`](super::Ledger) handle shares with its writer
//! thread: the database (opened again after an I/O failure), the last seq,
//! the listeners and the broken link that stops appends.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use parking_lot::RwLock;
use redb::{Database, ReadTransaction, ReadableDatabase};

use super::error::{BrokenLink, LedgerError};
use super::events::Event;
use crate::health::Reopening;

pub(super) type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

/// Called by the writer with every event of a transaction, as `(seq,
/// stored bytes)`, before the transaction commits: an error aborts the
/// transaction (nothing of it is stored, its callers get the error). A
/// cluster leader replicates its appends through it before acknowledging.
pub type Replicator = Arc<dyn Fn(&[(u64, Vec<u8>)]) -> Result<(), String> + Send + Sync>;

/// State shared by the handle and the writer thread.
pub(super) struct Shared {
    /// Opened again after an I/O failure ([`crate::health`]).
    pub(super) db: Reopening,
    pub(super) path: PathBuf,
    pub(super) session_id: String,
    pub(super) last_seq: AtomicU64,
    pub(super) listeners: RwLock<Vec<Listener>>,
    /// Where verification found the chain broken; appends are refused.
    pub(super) broken: parking_lot::Mutex<Option<BrokenLink>>,
    /// Set while appends must be replicated before they commit.
    pub(super) replicator: RwLock<Option<Replicator>>,
}

impl Shared {
    /// The database and its generation, or why it cannot be used now.
    pub(super) fn database(&self) -> Result<(Arc<Database>, u64), LedgerError> {
        self.db.get_at().map_err(LedgerError::Unavailable)
    }

    /// `e`, an error of the database of `generation`, as the callers see
    /// it: an I/O failure is recorded (the file is opened again on next use)
    /// and answered as [`LedgerError::Unavailable`].
    pub(super) fn failed(&self, generation: u64, e: LedgerError) -> LedgerError {
        match &e {
            LedgerError::Storage(cause) => self
                .db
                .observe_at(generation, cause)
                .map_or(e, LedgerError::Unavailable),
            _ => e,
        }
    }

    /// Runs `f` on a read transaction, noticing I/O failures.
    pub(super) fn read<T>(&self, f: impl FnOnce(&ReadTransaction) -> Result<T, LedgerError>) -> Result<T, LedgerError> {
        let (db, generation) = self.db.get_at().map_err(LedgerError::Unavailable)?;
        let txn = db.begin_read().map_err(|e| self.failed(generation, e.into()))?;
        f(&txn).map_err(|e| self.failed(generation, e))
    }
}
