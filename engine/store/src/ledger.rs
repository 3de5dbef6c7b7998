//! The append-only audit ledger in `events.redb`.
//!
//! Every event gets a gap-free sequence number (from 1) and the SHA-256 of
//! its predecessor, so the file is a hash chain that [`Ledger::verify`] and
//! [`Ledger::verify_file`] walk. Timestamps come from the [`Clock`] but never
//! go below the previous event's, so time order is seq order, also across
//! restarts.
//!
//! Appends go through one writer thread that group-commits: it drains every
//! queued request into one write transaction, commits it durably, calls the
//! listeners in seq order and only then answers the callers. Readers use
//! read transactions and never wait for the writer.
//!
//! Layout of the file: `ledger/tables.rs`. Byte format and hash:
//! `ledger/codec.rs`.

/// The stored form of one event. Public for the fuzz targets only.
#[doc(hidden)]
pub mod codec;
pub mod events;
mod postings;
mod query;
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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use parking_lot::RwLock;
use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable, TableError};

use svc_graph::clock::Clock;

use crate::health::{Fault, Reopening};

pub use events::{EventKind, Payload};

/// The history type filter that stands for every kind whose
/// [`EventKind::is_sau_action`] holds.
pub const SAU_ACTION: &str = "s.a.u_ACTION";
/// Type of the event [`Ledger::prune`] appends to audit itself.
pub const HISTORY_PRUNED: &str = EventKind::HistoryPruned.as_str();
pub const HISTORY_MAX_LIMIT: usize = 500;
pub const HISTORY_DEFAULT_LIMIT: usize = 100;

/// History status of an event type ([`EventKind::status`]); OK for a type
/// no kind names.
pub fn status_of(event_type: &str) -> &'static str {
    EventKind::parse(event_type).map_or("OK", EventKind::status)
}

/// Every type the history filter `s.a.u_ACTION` matches.
pub fn sau_action_types() -> impl Iterator<Item = &'static str> {
    EventKind::ALL.iter().filter(|k| k.is_sau_action()).map(|k| k.as_str())
}

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

/// An event to append; the ledger adds seq, time, session and hashes.
#[derive(Clone, Debug)]
pub struct NewEvent {
    pub event_type: String,
    pub crn: Option<String>,
    pub actor: String,
    pub message: String,
    pub payload: serde_json::Value,
}

/// One stored ledger event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub seq: u64,
    pub ts_us: u64,
    pub event_type: String,
    /// Empty when the event concerns no resource.
    pub crn: String,
    pub actor: String,
    pub message: String,
    pub session_id: String,
    pub payload: serde_json::Value,
    pub prev_hash: [u8; 32],
    pub hash: [u8; 32],
}

/// The type of the stand-in a reader gets for a stored event that does not
/// decode ([`Event::unreadable`]); never stored.
pub const UNREADABLE: &str = "UNREADABLE";

impl Event {
    /// The stand-in for stored event `seq` whose bytes do not decode: type
    /// [`UNREADABLE`], the reason in its message, empty otherwise. Readers
    /// get it in place of the event, so damage shows where it is.
    pub fn unreadable(seq: u64, reason: &str) -> Event {
        Event {
            seq,
            ts_us: 0,
            event_type: UNREADABLE.to_owned(),
            crn: String::new(),
            actor: String::new(),
            message: format!(
                "event {seq} cannot be read ({reason}); the ledger is damaged here: run svc ledger verify"
            ),
            session_id: String::new(),
            payload: serde_json::Value::Object(serde_json::Map::new()),
            prev_hash: [0; 32],
            hash: [0; 32],
        }
    }

    pub fn status(&self) -> &'static str {
        status_of(&self.event_type)
    }
    pub fn hash_hex(&self) -> String {
        hex::encode(self.hash)
    }
}

/// Filters of the history endpoint. Each filter that is set must match.
#[derive(Clone, Debug, Default)]
pub struct HistoryQuery {
    /// An event type, or [`SAU_ACTION`] for every s.a.u decision.
    pub event_type: Option<String>,
    pub crn: Option<String>,
    /// A [`status_of`] value, compared ignoring ASCII case.
    pub status: Option<String>,
    /// Events at or after this time.
    pub since_us: Option<u64>,
    /// Events before this time.
    pub until_us: Option<u64>,
    /// Page size; values outside 1..=[`HISTORY_MAX_LIMIT`] are clamped.
    pub limit: usize,
    /// Cursor: only events with a smaller seq.
    pub before_seq: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HistoryPage {
    /// Newest first.
    pub events: Vec<Event>,
    /// Seq of the last returned event when more events match.
    pub next_cursor: Option<u64>,
    /// All events matching the filters, ignoring cursor and limit.
    pub total: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub total_events: u64,
    pub quarantined: u64,
    pub approved: u64,
    pub rejected: u64,
    pub session_count: u64,
    /// Sum of the numeric `savings_usd` payload fields of the stored events.
    pub total_savings_usd: f64,
    pub first_event_us: Option<u64>,
    pub last_event_us: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    pub session_id: String,
    pub first_event_us: u64,
    pub last_event_us: u64,
    pub event_count: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VerifyReport {
    /// First and last stored seq; both 0 when the ledger is empty.
    pub first_seq: u64,
    pub last_seq: u64,
    /// Events whose link and hash were checked and found right.
    pub checked: u64,
    pub ok: bool,
    /// The first problem found, e.g. "event 17: hash mismatch".
    pub problem: Option<String>,
    /// Where the chain first breaks: the seq of the first event that cannot
    /// be trusted and what is wrong with it.
    pub first_broken: Option<BrokenLink>,
    /// The prune checkpoint the walk starts from: the last pruned seq and
    /// its hash, to which the first stored event links (a `HISTORY_PRUNED`
    /// event records the same); `None` when nothing was ever pruned.
    pub checkpoint: Option<(u64, [u8; 32])>,
}

/// The first broken link of the chain.
#[derive(Clone, Debug, PartialEq)]
pub struct BrokenLink {
    /// The first seq that is missing, does not decode, does not link to its
    /// predecessor or does not hash to its stored hash.
    pub seq: u64,
    /// What is wrong, e.g. "hash mismatch: the stored event was altered".
    pub reason: String,
}

type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

/// State shared by the handle and the writer thread.
struct Shared {
    /// Opened again after an I/O failure ([`crate::health`]).
    db: Reopening,
    path: PathBuf,
    session_id: String,
    last_seq: AtomicU64,
    listeners: RwLock<Vec<Listener>>,
    /// Where verification found the chain broken; appends are refused.
    broken: parking_lot::Mutex<Option<BrokenLink>>,
}

impl Shared {
    /// The database and its generation, or why it cannot be used now.
    fn database(&self) -> Result<(Arc<Database>, u64), LedgerError> {
        self.db.get_at().map_err(LedgerError::Unavailable)
    }

    /// `e`, an error of the database of `generation`, as the callers see
    /// it: an I/O failure is recorded (the file is opened again on next use)
    /// and answered as [`LedgerError::Unavailable`].
    fn failed(&self, generation: u64, e: LedgerError) -> LedgerError {
        match &e {
            LedgerError::Storage(cause) => self
                .db
                .observe_at(generation, cause)
                .map_or(e, LedgerError::Unavailable),
            _ => e,
        }
    }

    /// Runs `f` on a read transaction, noticing I/O failures.
    fn read<T>(&self, f: impl FnOnce(&ReadTransaction) -> Result<T, LedgerError>) -> Result<T, LedgerError> {
        let (db, generation) = self.db.get_at().map_err(LedgerError::Unavailable)?;
        let txn = db.begin_read().map_err(|e| self.failed(generation, e.into()))?;
        f(&txn).map_err(|e| self.failed(generation, e))
    }
}

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
        let head_seq = init(&db).map_err(|e| match e {
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
    /// the same transaction, appends a [`HISTORY_PRUNED`] event by `actor`
    /// with payload `{"pruned", "cutoff_us", "through_seq"}`.
    pub fn prune(&self, cutoff_us: u64, actor: &str) -> Result<u64, LedgerError> {
        let work = writer::Work::Prune {
            cutoff_us,
            actor: actor.to_owned(),
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

/// Creates the tables of a new ledger, or checks an existing one: format,
/// all tables present, and the head record matching the last event.
/// Returns the last seq.
fn init(db: &Database) -> Result<u64, LedgerError> {
    let not_ledger = |reason: &str| LedgerError::Open {
        path: PathBuf::new(),
        reason: reason.to_owned(),
    };
    let txn = db.begin_read()?;
    let meta = match txn.open_table(tables::META) {
        Ok(meta) => meta,
        Err(TableError::TableDoesNotExist(_)) => {
            if txn.list_tables()?.next().is_some() {
                return Err(not_ledger("not a ledger file"));
            }
            drop(txn);
            create_tables(db)?;
            return Ok(0);
        }
        Err(e) => return Err(e.into()),
    };
    let upgrade = match tables::read_format(&meta)? {
        Some(tables::FORMAT_VERSION) => false,
        Some(tables::FORMAT_V1) => true,
        Some(v) => return Err(not_ledger(&format!("unsupported ledger format {v}"))),
        None => return Err(not_ledger("missing format record")),
    };
    let events = txn.open_table(tables::EVENTS)?;
    if !upgrade {
        txn.open_table(tables::BY_TYPE)?;
        txn.open_table(tables::CRN_RECENT)?;
        txn.open_table(tables::CRN_RUNS)?;
    }
    txn.open_table(tables::SESSIONS)?;
    let head = tables::read_head(&meta)?;
    let last = events.last()?.map(|(k, _)| k.value()).unwrap_or(0);
    if last != head.seq {
        return Err(not_ledger(&format!(
            "head records event {} but the last stored event is {last}",
            head.seq
        )));
    }
    if let Some(bytes) = events.get(head.seq)? {
        let stored = codec::decode(bytes.value()).map_err(|e| not_ledger(&format!("event {}: {e}", head.seq)))?;
        if stored.hash != head.hash || stored.compute_hash(head.seq) != head.hash {
            return Err(not_ledger(&format!(
                "event {}: hash does not match the head record",
                head.seq
            )));
        }
    }
    drop(events);
    drop(txn);
    if upgrade {
        upgrade_v1(db)?;
    }
    Ok(head.seq)
}

/// Upgrades a format 1 file: drops the indexes older versions kept (a time
/// index, the CRN index as `by_crn` or `crn_postings`, the type index with
/// a key per event), builds the type index and the CRN postings from
/// `events` in one pass, and marks the file format 2, all in one
/// transaction.
fn upgrade_v1(db: &Database) -> Result<(), LedgerError> {
    tracing::info!("rebuilding the ledger's indexes from its events (once, for the new file format)");
    let mut w = db.begin_write()?;
    w.set_durability(redb::Durability::Immediate)?;
    w.delete_table(tables::LEGACY_BY_TIME)?;
    w.delete_table(tables::LEGACY_BY_CRN)?;
    w.delete_table(tables::LEGACY_CRN_POSTINGS)?;
    w.delete_table(tables::LEGACY_BY_TYPE)?;
    w.delete_table(tables::BY_TYPE)?;
    w.delete_table(tables::CRN_RECENT)?;
    w.delete_table(tables::CRN_RUNS)?;
    {
        let events = w.open_table(tables::EVENTS)?;
        let mut by_type = w.open_table(tables::BY_TYPE)?;
        let mut runs = w.open_table(tables::CRN_RUNS)?;
        w.open_table(tables::CRN_RECENT)?;
        let mut types = type_index::Rebuild::new();
        let mut crns = postings::Rebuild::new();
        for item in events.iter()? {
            let (k, v) = item?;
            let seq = k.value();
            let s = codec::decode(v.value()).map_err(|e| LedgerError::Corrupt(format!("event {seq}: {e}")))?;
            types.add(&mut by_type, s.event_type, seq)?;
            if !s.crn.is_empty() {
                crns.add(&mut runs, s.crn, seq)?;
            }
        }
        types.finish(&mut by_type)?;
        crns.finish(&mut runs)?;
        let mut meta = w.open_table(tables::META)?;
        tables::write_crn_recent(&mut meta, 0)?;
        tables::write_format(&mut meta)?;
    }
    w.commit()?;
    Ok(())
}

fn create_tables(db: &Database) -> Result<(), LedgerError> {
    let mut txn = db.begin_write()?;
    txn.set_durability(redb::Durability::Immediate)?;
    {
        txn.open_table(tables::EVENTS)?;
        txn.open_table(tables::BY_TYPE)?;
        txn.open_table(tables::CRN_RECENT)?;
        txn.open_table(tables::CRN_RUNS)?;
        txn.open_table(tables::SESSIONS)?;
        let mut meta = txn.open_table(tables::META)?;
        tables::write_format(&mut meta)?;
        tables::write_head(&mut meta, &tables::Head::default())?;
        tables::write_anchor(&mut meta, &tables::Anchor::default())?;
        tables::write_savings(&mut meta, 0.0)?;
    }
    txn.commit()?;
    Ok(())
}
