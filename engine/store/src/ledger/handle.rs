//! The [`Ledger`] handle: opening a file, appends and prunes handed to the
//! writer thread, reads on their own transactions, verification.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use parking_lot::RwLock;
use redb::{Database, ReadableDatabase, TableError};

use svc_graph::clock::Clock;

use super::error::{BrokenLink, LedgerError};
use super::events::{self, Event, NewEvent};
use super::query::{self, HistoryPage, HistoryQuery, SessionInfo, Summary};
use super::shared::{Replicator, Shared};
use super::verify::{self, VerifyReport};
use super::{open, tables, writer};
use crate::health::{Fault, Reopening};

/// The audit ledger. Share it as `Arc<Ledger>`; dropping the last handle
/// stops the writer thread after it has answered every queued append.
pub struct Ledger {
    shared: Arc<Shared>,
    /// `None` only while dropping.
    requests: Option<Sender<writer::Request>>,
    writer: Option<JoinHandle<()>>,
}

impl Ledger {
    /// Opens `path`, creating an empty ledger when the file does not exist.
    /// An existing file that is not a readable ledger is an error; it is
    /// never replaced.
    pub fn open(path: &Path, session_id: &str, clock: Arc<dyn Clock>) -> Result<Ledger, LedgerError> {
        let open_err = |reason: String| LedgerError::Open {
            path: path.to_path_buf(),
            reason,
        };
        let db = if path.exists() {
            Database::open(path)
        } else {
            Database::create(path)
        }
        .map_err(|e| open_err(e.to_string()))?;
        let reopen = |p: &Path| Database::open(p).map_err(redb::Error::from);
        let head_seq = open::init(&db).map_err(|e| match e {
            LedgerError::Open { reason, .. } => open_err(reason),
            other => open_err(other.to_string()),
        })?;
        let shared = Arc::new(Shared {
            db: Reopening::new(db, path, reopen),
            path: path.to_path_buf(),
            session_id: session_id.to_owned(),
            last_seq: AtomicU64::new(head_seq),
            listeners: RwLock::new(Vec::new()),
            broken: parking_lot::Mutex::new(None),
            replicator: RwLock::new(None),
        });
        let (tx, rx) = crossbeam_channel::unbounded();
        let thread_shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("svc-ledger-writer".to_owned())
            .spawn(move || writer::run(&thread_shared, &rx, clock.as_ref()))
            .map_err(|e| open_err(format!("cannot start writer thread: {e}")))?;
        Ok(Ledger {
            shared,
            requests: Some(tx),
            writer: Some(handle),
        })
    }

    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    pub fn session_id(&self) -> &str {
        &self.shared.session_id
    }

    /// Appends `events` in order, with consecutive seqs, and returns them as
    /// stored once they are durable. Concurrent calls share one commit.
    pub fn append(&self, events: Vec<NewEvent>) -> Result<Vec<Event>, LedgerError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let pending = events
            .into_iter()
            .map(writer::Pending::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.request(writer::Work::Append(pending))?.events)
    }

    pub fn append_one(&self, event: NewEvent) -> Result<Event, LedgerError> {
        self.append(vec![event])?
            .pop()
            .ok_or_else(|| LedgerError::Write("append returned no event".to_owned()))
    }

    /// Registers `f` to be called from the writer thread, after each commit,
    /// for every committed event in seq order. It runs before the appending
    /// caller gets its answer, so it should hand work off rather than block.
    /// A panicking listener is logged and does not stop the ledger.
    pub fn add_listener(&self, f: Box<dyn Fn(&Event) + Send + Sync>) {
        self.shared.listeners.write().push(Arc::from(f));
    }

    /// Sets (or, with `None`, clears) the hook every append passes through
    /// before it commits ([`Replicator`]).
    pub fn set_replicator(&self, replicator: Option<Replicator>) {
        *self.shared.replicator.write() = replicator;
    }

    /// Stores events another node appended, given as `(seq, stored bytes)`
    /// in seq order from the one after [`Ledger::last_seq`]: each must
    /// decode, carry the hash of the event before it and its own correct
    /// hash. They keep their timestamps, sessions and hashes, so the chain
    /// is the other node's, byte for byte. Listeners see them as appends.
    pub fn import(&self, events: Vec<(u64, Vec<u8>)>) -> Result<Vec<Event>, LedgerError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self.request(writer::Work::Import(events))?.events)
    }

    /// Seq of the newest event; 0 when nothing was ever appended.
    pub fn last_seq(&self) -> u64 {
        self.shared.last_seq.load(Ordering::Acquire)
    }

    pub fn get(&self, seq: u64) -> Result<Option<Event>, LedgerError> {
        self.shared.read(|t| query::get(t, seq))
    }

    /// Events with seq > `after`, oldest first, at most `limit`.
    pub fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>, LedgerError> {
        self.shared.read(|t| query::events_after(t, after, limit))
    }

    /// Events with seq > `after` as stored, `(seq, bytes)`, oldest first,
    /// at most `limit`: what [`Ledger::import`] takes on another node.
    pub fn stored_after(&self, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, LedgerError> {
        self.shared.read(|t| query::stored_after(t, after, limit))
    }

    pub fn query(&self, q: &HistoryQuery) -> Result<HistoryPage, LedgerError> {
        self.shared.read(|t| query::history(t, q))
    }

    /// Lifecycle of one resource, newest first, at most `limit`, plus the
    /// number of its stored events.
    pub fn resource(&self, crn: &str, limit: usize) -> Result<(Vec<Event>, u64), LedgerError> {
        self.shared.read(|t| query::resource(t, crn, limit))
    }

    pub fn summary(&self) -> Result<Summary, LedgerError> {
        self.shared.read(query::summary)
    }

    /// Every session with stored events, ordered by its first event.
    pub fn sessions(&self) -> Result<Vec<SessionInfo>, LedgerError> {
        self.shared.read(query::sessions)
    }

    /// Removes every event with `ts_us < cutoff_us` and returns how many.
    /// The chain stays verifiable from the first remaining event. Then, in
    /// the same transaction, appends a
    /// [`HISTORY_PRUNED`](events::HISTORY_PRUNED) event by `actor` with
    /// payload `{"pruned", "cutoff_us", "through_seq"}`.
    pub fn prune(&self, cutoff_us: u64, actor: &str) -> Result<u64, LedgerError> {
        let work = writer::Work::Prune {
            cutoff_us,
            actor: actor.to_owned(),
            reason: None,
            only_if_old: false,
        };
        Ok(self.request(work)?.pruned)
    }

    /// [`Ledger::prune`] the daemon makes itself, saying why (`reason`, in
    /// the record's message and payload): the same removal and record,
    /// except that nothing is recorded when no event is older than
    /// `cutoff_us`. Prunes run one at a time on the writer, so this never
    /// overlaps an operator's.
    pub fn prune_older(&self, cutoff_us: u64, actor: &str, reason: &str) -> Result<u64, LedgerError> {
        let work = writer::Work::Prune {
            cutoff_us,
            actor: actor.to_owned(),
            reason: Some(reason.to_owned()),
            only_if_old: true,
        };
        Ok(self.request(work)?.pruned)
    }

    /// The highest scan seq that a `SCAN_COMPLETED` or `SCAN_RECOVERED`
    /// event records; 0 when none does. A file written before the ledger
    /// kept this record is answered from its newest such event.
    pub fn recorded_scan_seq(&self) -> Result<u64, LedgerError> {
        self.shared.read(|txn| {
            let meta = txn.open_table(tables::META)?;
            if let Some(n) = tables::read_scans(&meta)? {
                return Ok(n);
            }
            let mut newest = 0;
            for kind in events::SCAN_RECORDS {
                let q = HistoryQuery {
                    event_type: Some(kind.as_str().to_owned()),
                    limit: 1,
                    ..HistoryQuery::default()
                };
                if let Some(e) = query::history(txn, &q)?.events.first() {
                    newest = newest.max(
                        e.payload
                            .get("scan_seq")
                            .and_then(serde_json::Value::as_u64)
                            .unwrap_or(0),
                    );
                }
            }
            Ok(newest)
        })
    }

    /// The last seq the compliance export has written to its bucket; 0 when
    /// nothing was exported yet.
    pub fn exported_through(&self) -> Result<u64, LedgerError> {
        self.shared.read(|txn| match txn.open_table(tables::EXPORT) {
            Ok(t) => Ok(t.get(tables::EXPORTED_THROUGH)?.map(|g| g.value()).unwrap_or(0)),
            Err(TableError::TableDoesNotExist(_)) => Ok(0),
            Err(e) => Err(e.into()),
        })
    }

    /// Durably records that every event through `seq` is in the export
    /// bucket. Call it only after the object holding them is written. The
    /// mark never moves back; a seq beyond the last event is an error.
    pub fn mark_exported(&self, seq: u64) -> Result<(), LedgerError> {
        let last = self.last_seq();
        if seq > last {
            return Err(LedgerError::Write(format!(
                "cannot mark event {seq} exported: the ledger ends at event {last}"
            )));
        }
        self.request(writer::Work::MarkExported(seq)).map(|_| ())
    }

    /// Walks the whole chain from its anchor. A break found stops appends
    /// ([`Ledger::broken`]) until the file is restored and opened again.
    pub fn verify(&self) -> Result<VerifyReport, LedgerError> {
        let report = self.shared.read(verify::verify)?;
        if let Some(b) = &report.first_broken {
            let mut broken = self.shared.broken.lock();
            if broken.is_none() {
                tracing::error!(
                    path = %self.shared.path.display(),
                    seq = b.seq,
                    reason = %b.reason,
                    "the ledger's chain is broken; appends are stopped"
                );
            }
            *broken = Some(b.clone());
        }
        Ok(report)
    }

    /// Where verification found the chain broken, if it did: nothing is
    /// appended while it is.
    pub fn broken(&self) -> Option<BrokenLink> {
        self.shared.broken.lock().clone()
    }

    /// Why the file cannot be used now, if it failed and is not open again.
    pub fn fault(&self) -> Option<Fault> {
        self.shared.db.fault()
    }

    /// Opens the file again now if it failed (without waiting for the
    /// retry interval) and commits an empty durable transaction: whether
    /// the ledger can be written. A health check's probe.
    pub fn probe(&self) -> Result<(), LedgerError> {
        self.shared.db.recover().map_err(LedgerError::Unavailable)?;
        self.request(writer::Work::Probe).map(|_| ())
    }

    /// Opens a ledger file read-only (no daemon may hold it) and verifies it.
    pub fn verify_file(path: &Path) -> Result<VerifyReport, LedgerError> {
        let open_err = |reason: String| LedgerError::Open {
            path: path.to_path_buf(),
            reason,
        };
        let db = redb::ReadOnlyDatabase::open(path).map_err(|e| match e {
            redb::DatabaseError::RepairAborted => {
                open_err("the file was not closed cleanly; open it with the daemon once to recover it".to_owned())
            }
            other => open_err(other.to_string()),
        })?;
        let txn = db.begin_read().map_err(|e| open_err(e.to_string()))?;
        match txn.open_table(tables::META) {
            Ok(_) => {}
            Err(TableError::TableDoesNotExist(_)) => {
                return Err(open_err("not a ledger file".to_owned()));
            }
            Err(e) => return Err(open_err(e.to_string())),
        }
        verify::verify(&txn)
    }

    /// Hands `work` to the writer thread and waits for its answer.
    fn request(&self, work: writer::Work) -> Result<writer::Done, LedgerError> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let tx = self.requests.as_ref().ok_or(LedgerError::Closed)?;
        tx.send(writer::Request { work, reply })
            .map_err(|_| LedgerError::Closed)?;
        answer.recv().map_err(|_| LedgerError::Closed)?
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish the queue and exit.
        self.requests.take();
        let Some(handle) = self.writer.take() else {
            return;
        };
        // The last handle may be dropped by a listener, on the writer thread
        // itself; that thread then ends on its own once the queue is empty.
        if handle.thread().id() != std::thread::current().id() && handle.join().is_err() {
            tracing::error!(path = %self.shared.path.display(), "ledger writer thread panicked");
        }
    }
}
