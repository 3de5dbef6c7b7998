//! The writer thread: group commit of appends, and prune.
//!
//! One thread owns every write transaction. It takes the first queued
//! request, drains whatever else is queued (up to [`MAX_BATCH_EVENTS`];
//! when the previous group came from several callers, it waits up to
//! [`GATHER_WAIT`] for as many),
//! applies all of it in one transaction committed with
//! `Durability::Immediate`, calls the listeners in seq order, then answers
//! each caller. When the transaction fails nothing of the batch is stored and
//! every caller in it gets the error.

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use redb::{Durability, ReadableTable, ReadableTableMetadata, Table, WriteTransaction};
use serde_json::Value;

use super::codec::{self, Stored};
use super::error::LedgerError;
use super::events::{Event, HistoryPruned, NewEvent, SCAN_RECORDS};
use super::postings::Postings;
use super::shared::{Listener, Shared};
use super::tables::{self, Anchor, Head, SessionRow};
use super::type_index::Types;
use svc_graph::clock::Clock;

/// Upper bound on events per transaction, to bound commit latency.
const MAX_BATCH_EVENTS: usize = 65_536;
/// Longest wait for the callers of the previous group to append again (a
/// fraction of one fsync, which takes 0.5-2 ms here).
const GATHER_WAIT: Duration = Duration::from_micros(300);
/// Events read per step while pruning.
const PRUNE_CHUNK: usize = 4096;

/// An event prepared by the appending thread: the payload is already JSON
/// text, so the writer only hashes and stores.
pub struct Pending {
    event_type: String,
    crn: String,
    actor: String,
    message: String,
    payload: Value,
    payload_text: String,
    savings: f64,
}

impl Pending {
    pub fn new(e: NewEvent) -> Result<Pending, LedgerError> {
        Ok(Pending {
            payload_text: serde_json::to_string(&e.payload)?,
            savings: savings_of(&e.payload),
            event_type: e.event_type,
            crn: e.crn.unwrap_or_default(),
            actor: e.actor,
            message: e.message,
            payload: e.payload,
        })
    }
}

/// The `savings_usd` number of a payload, 0 when absent or not finite.
fn savings_of(payload: &Value) -> f64 {
    payload
        .get("savings_usd")
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

pub enum Work {
    Append(Vec<Pending>),
    Prune {
        cutoff_us: u64,
        actor: String,
        /// Said in the record's message and payload (a retention setting).
        reason: Option<String>,
        /// Records nothing when nothing is old enough to remove.
        only_if_old: bool,
    },
    /// Records that the compliance export holds every event through this seq.
    MarkExported(u64),
    /// Writes nothing: whether a durable commit succeeds.
    Probe,
    /// Stores events another node appended: `(seq, stored bytes)`.
    Import(Vec<(u64, Vec<u8>)>),
}

/// What one request produced: the events it appended and, for a prune, how
/// many events it removed.
pub struct Done {
    pub events: Vec<Event>,
    pub pruned: u64,
}

pub struct Request {
    pub work: Work,
    pub reply: Sender<Result<Done, LedgerError>>,
}

impl Request {
    fn weight(&self) -> usize {
        match &self.work {
            Work::Append(p) => p.len(),
            Work::Import(e) => e.len(),
            Work::Prune { .. } => PRUNE_CHUNK,
            Work::MarkExported(_) | Work::Probe => 1,
        }
    }
}

pub(super) fn run(shared: &Shared, rx: &Receiver<Request>, clock: &dyn Clock) {
    // Requests in the previous group: when several callers append
    // concurrently, the ones just answered are about to send again, so the
    // next group waits a moment for them instead of committing (and
    // fsyncing) for the first one alone.
    let mut expect = 1usize;
    while let Ok(first) = rx.recv() {
        let mut weight = first.weight();
        let mut batch = vec![first];
        while weight < MAX_BATCH_EVENTS {
            match rx.try_recv() {
                Ok(r) => {
                    weight += r.weight();
                    batch.push(r);
                }
                Err(_) => break,
            }
        }
        if expect > 1 && batch.len() < expect {
            let deadline = Instant::now() + GATHER_WAIT;
            while batch.len() < expect && weight < MAX_BATCH_EVENTS {
                match rx.recv_deadline(deadline) {
                    Ok(r) => {
                        weight += r.weight();
                        batch.push(r);
                    }
                    Err(_) => break,
                }
            }
        }
        expect = batch.len();
        commit_batch(shared, clock, batch);
    }
}

fn commit_batch(shared: &Shared, clock: &dyn Clock, mut batch: Vec<Request>) {
    let mut generation = shared.db.generation();
    match write(shared, clock, &mut batch, &mut generation) {
        Ok(done) => {
            shared.db.wrote(generation);
            if let Some(last) = done.iter().flat_map(|d| d.events.last()).last() {
                shared.last_seq.store(last.seq, Ordering::Release);
            }
            notify(shared, &done);
            for (d, req) in done.into_iter().zip(batch) {
                // A caller that went away no longer needs its answer.
                let _ = req.reply.send(Ok(d));
            }
        }
        Err(e) => {
            let e = shared.failed(generation, e);
            tracing::error!(path = %shared.path.display(), error = %e, "ledger commit failed");
            for req in batch {
                let answer = match &e {
                    LedgerError::Unavailable(f) => LedgerError::Unavailable(f.clone()),
                    LedgerError::Broken(b) => LedgerError::Broken(b.clone()),
                    LedgerError::Write(m) => LedgerError::Write(m.clone()),
                    LedgerError::NotReplicated(m) => LedgerError::NotReplicated(m.clone()),
                    other => LedgerError::Write(other.to_string()),
                };
                let _ = req.reply.send(Err(answer));
            }
        }
    }
}

fn notify(shared: &Shared, done: &[Done]) {
    let listeners: Vec<Listener> = shared.listeners.read().clone();
    if listeners.is_empty() {
        return;
    }
    for ev in done.iter().flat_map(|d| &d.events) {
        for l in &listeners {
            if catch_unwind(AssertUnwindSafe(|| l(ev))).is_err() {
                tracing::error!(seq = ev.seq, "ledger listener panicked");
            }
        }
    }
}

/// Applies the batch in one durable transaction; `generation` is set to
/// that of the database written to.
fn write(
    shared: &Shared,
    clock: &dyn Clock,
    batch: &mut [Request],
    generation: &mut u64,
) -> Result<Vec<Done>, LedgerError> {
    let changes = batch
        .iter()
        .any(|r| matches!(r.work, Work::Append(_) | Work::Prune { .. } | Work::Import(_)));
    if changes && let Some(b) = shared.broken.lock().clone() {
        return Err(LedgerError::Broken(b));
    }
    let (db, opened) = shared.database()?;
    *generation = opened;
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate)?;
    let replicator = shared.replicator.read().clone();
    let (done, appended) = {
        let mut ctx = Ctx::open(&txn, &shared.session_id)?;
        ctx.capture = replicator.is_some();
        let mut done = Vec::with_capacity(batch.len());
        for req in batch.iter_mut() {
            let now = clock.now_us();
            let d = match &mut req.work {
                Work::Append(pending) => Done {
                    events: pending
                        .drain(..)
                        .map(|p| ctx.append(p, now))
                        .collect::<Result<_, _>>()?,
                    pruned: 0,
                },
                Work::Probe => Done {
                    events: Vec::new(),
                    pruned: 0,
                },
                Work::Import(events) => Done {
                    events: events
                        .drain(..)
                        .map(|(seq, bytes)| ctx.import(seq, &bytes))
                        .collect::<Result<_, _>>()?,
                    pruned: 0,
                },
                Work::MarkExported(seq) => {
                    mark_exported(&txn, *seq, ctx.head.seq)?;
                    Done {
                        events: Vec::new(),
                        pruned: 0,
                    }
                }
                Work::Prune {
                    cutoff_us,
                    actor,
                    reason,
                    only_if_old,
                } => {
                    let p = ctx.prune(*cutoff_us)?;
                    let pruned = p.pruned;
                    if pruned == 0 && *only_if_old {
                        done.push(Done {
                            events: Vec::new(),
                            pruned,
                        });
                        continue;
                    }
                    let message = match reason {
                        Some(r) => format!("pruned {pruned} events older than {cutoff_us} us ({r})"),
                        None => format!("pruned {pruned} events older than {cutoff_us} us"),
                    };
                    let audit = Pending::new(NewEvent::of(
                        None,
                        actor,
                        message,
                        &HistoryPruned {
                            pruned,
                            cutoff_us: *cutoff_us,
                            first_seq: p.first_seq,
                            through_seq: p.through_seq,
                            last_hash: p.last_hash.iter().map(|b| format!("{b:02x}")).collect(),
                            reason: reason.clone(),
                        },
                    ))?;
                    Done {
                        events: vec![ctx.append(audit, now)?],
                        pruned,
                    }
                }
            };
            done.push(d);
        }
        let appended = std::mem::take(&mut ctx.captured);
        ctx.finish()?;
        (done, appended)
    };
    // Replicated before the commit: an event is acknowledged only once the
    // cluster holds it; a refusal stores nothing of the transaction.
    if let Some(replicate) = replicator
        && !appended.is_empty()
    {
        replicate(&appended).map_err(LedgerError::NotReplicated)?;
    }
    txn.commit()?;
    Ok(done)
}

/// What a prune removed: how many events, the first and last seq, and the
/// hash of the last one, from which the chain continues (when nothing was
/// removed: no first seq, and the last event and hash of an earlier prune).
struct Pruned {
    pruned: u64,
    first_seq: u64,
    through_seq: u64,
    last_hash: [u8; 32],
}

/// The open tables and running state of one write transaction.
struct Ctx<'t> {
    events: Table<'t, u64, &'static [u8]>,
    by_type: Types<'t>,
    postings: Postings<'t>,
    /// Postings held in `crn_recent` (`meta`).
    crn_recent: u64,
    sessions: Table<'t, &'static str, (u64, u64, u64, u64, u64)>,
    meta: Table<'t, &'static str, &'static [u8]>,
    session_id: &'t str,
    head: Head,
    savings: f64,
    savings_dirty: bool,
    /// This run's row in `sessions`, written back by `finish`.
    session: Option<SessionRow>,
    session_dirty: bool,
    /// The highest scan seq a scan event of this transaction records.
    scans: Option<u64>,
    /// Whether appended events are kept in `captured` (for the replicator).
    capture: bool,
    /// `(seq, stored bytes)` of the events this transaction appended.
    captured: Vec<(u64, Vec<u8>)>,
}

impl<'t> Ctx<'t> {
    fn open(txn: &'t WriteTransaction, session_id: &'t str) -> Result<Ctx<'t>, LedgerError> {
        let meta = txn.open_table(tables::META)?;
        let sessions = txn.open_table(tables::SESSIONS)?;
        let session = load_session(&sessions, session_id)?;
        Ok(Ctx {
            events: txn.open_table(tables::EVENTS)?,
            by_type: Types::open(txn)?,
            postings: Postings::open(txn)?,
            crn_recent: tables::read_crn_recent(&meta)?,
            head: tables::read_head(&meta)?,
            savings: tables::read_savings(&meta)?,
            savings_dirty: false,
            sessions,
            meta,
            session_id,
            session,
            session_dirty: false,
            scans: None,
            capture: false,
            captured: Vec::new(),
        })
    }

    fn append(&mut self, p: Pending, now_us: u64) -> Result<Event, LedgerError> {
        let seq = self.head.seq + 1;
        let ts_us = now_us.max(self.head.ts_us);
        let mut stored = Stored {
            ts_us,
            event_type: &p.event_type,
            crn: &p.crn,
            actor: &p.actor,
            message: &p.message,
            session_id: self.session_id,
            payload: &p.payload_text,
            prev_hash: self.head.hash,
            hash: [0; 32],
        };
        stored.hash = stored.compute_hash(seq);
        let hash = stored.hash;
        let bytes = stored.encode();
        self.events.insert(seq, bytes.as_slice())?;
        if self.capture {
            self.captured.push((seq, bytes));
        }
        self.by_type.add(&p.event_type, seq)?;
        if !p.crn.is_empty() {
            self.postings.add(&p.crn, seq);
        }
        if p.savings != 0.0 {
            self.savings += p.savings;
            self.savings_dirty = true;
        }
        if SCAN_RECORDS.iter().any(|k| k.as_str() == p.event_type)
            && let Some(n) = p.payload.get("scan_seq").and_then(Value::as_u64)
        {
            self.scans = Some(self.scans.map_or(n, |m| m.max(n)));
        }
        self.session = Some(SessionRow::grown(self.session, ts_us, seq));
        self.session_dirty = true;
        let prev_hash = self.head.hash;
        self.head = Head { seq, ts_us, hash };
        Ok(Event {
            seq,
            ts_us,
            event_type: p.event_type,
            crn: p.crn,
            actor: p.actor,
            message: p.message,
            session_id: self.session_id.to_owned(),
            payload: p.payload,
            prev_hash,
            hash,
        })
    }

    /// Stores an event another node appended, after checking it continues
    /// this chain: the next seq, the head's hash as its predecessor, and
    /// its own hash right.
    fn import(&mut self, seq: u64, bytes: &[u8]) -> Result<Event, LedgerError> {
        let refuse = |why: String| LedgerError::Write(format!("cannot import event {seq}: {why}"));
        if seq != self.head.seq + 1 {
            return Err(refuse(format!("the ledger's last event is {}", self.head.seq)));
        }
        let stored = codec::decode(bytes).map_err(refuse)?;
        if stored.prev_hash != self.head.hash {
            return Err(refuse(
                "it does not follow this ledger's last event (previous hash differs)".into(),
            ));
        }
        if stored.compute_hash(seq) != stored.hash {
            return Err(refuse("its hash is wrong".into()));
        }
        let event = stored.to_event(seq).map_err(refuse)?;
        self.events.insert(seq, bytes)?;
        self.by_type.add(&event.event_type, seq)?;
        if !event.crn.is_empty() {
            self.postings.add(&event.crn, seq);
        }
        let savings = savings_of(&event.payload);
        if savings != 0.0 {
            self.savings += savings;
            self.savings_dirty = true;
        }
        if SCAN_RECORDS.iter().any(|k| k.as_str() == event.event_type)
            && let Some(n) = event.payload.get("scan_seq").and_then(Value::as_u64)
        {
            self.scans = Some(self.scans.map_or(n, |m| m.max(n)));
        }
        let (ts_us, session) = (event.ts_us, event.session_id.as_str());
        let grow = |row: Option<SessionRow>| SessionRow::grown(row, ts_us, seq);
        if session == self.session_id {
            self.session = Some(grow(self.session));
            self.session_dirty = true;
        } else {
            let row = grow(load_session(&self.sessions, session)?);
            self.sessions.insert(session, row.to_tuple())?;
        }
        self.head = Head {
            seq,
            ts_us: ts_us.max(self.head.ts_us),
            hash: event.hash,
        };
        Ok(event)
    }

    /// Removes every event with `ts_us < cutoff_us` with its index entries,
    /// moves the anchor past them and corrects sessions and savings.
    /// Returns what was removed ([`Pruned`]).
    fn prune(&mut self, cutoff_us: u64) -> Result<Pruned, LedgerError> {
        self.flush_session()?;
        let anchor = tables::read_anchor(&self.meta)?;
        let nothing = Ok(Pruned {
            pruned: 0,
            first_seq: 0,
            through_seq: anchor.seq.saturating_sub(1),
            last_hash: anchor.prev_hash,
        });
        let Some((first, last)) = tables::seq_bounds(&self.events)? else {
            return nothing;
        };
        let through = match tables::seq_at_or_after(&self.events, cutoff_us)? {
            None => last,
            Some(s) if s > first => s - 1,
            Some(_) => return nothing,
        };
        let mut pruned = 0u64;
        let mut removed_savings = 0.0;
        let mut per_session: HashMap<String, u64> = HashMap::new();
        let mut last_hash = anchor.prev_hash;
        let mut pruned_types: HashSet<String> = HashSet::new();
        loop {
            let chunk = self
                .events
                .range(..=through)?
                .take(PRUNE_CHUNK)
                .map(|item| item.map(|(k, v)| (k.value(), v.value().to_vec())))
                .collect::<Result<Vec<_>, _>>()?;
            if chunk.is_empty() {
                break;
            }
            for (seq, bytes) in &chunk {
                let s = codec::decode(bytes).map_err(|e| LedgerError::Corrupt(format!("event {seq}: {e}")))?;
                if !pruned_types.contains(s.event_type) {
                    pruned_types.insert(s.event_type.to_owned());
                }
                removed_savings += serde_json::from_str::<Value>(s.payload)
                    .map(|v| savings_of(&v))
                    .unwrap_or(0.0);
                *per_session.entry(s.session_id.to_owned()).or_default() += 1;
                last_hash = s.hash;
                self.events.remove(*seq)?;
                pruned += 1;
            }
        }
        self.prune_sessions(per_session, through)?;
        self.by_type.prune(pruned_types.iter().map(String::as_str), through)?;
        self.crn_recent = self.postings.prune(through, self.crn_recent)?;
        tables::write_crn_recent(&mut self.meta, self.crn_recent)?;
        tables::write_anchor(
            &mut self.meta,
            &Anchor {
                seq: through + 1,
                prev_hash: last_hash,
            },
        )?;
        self.savings = if self.events.is_empty()? {
            0.0
        } else {
            self.savings - removed_savings
        };
        self.savings_dirty = true;
        self.session = load_session(&self.sessions, self.session_id)?;
        Ok(Pruned {
            pruned,
            first_seq: first,
            through_seq: through,
            last_hash,
        })
    }

    /// Lowers the counts of sessions that lost events; drops the ones left
    /// empty and moves the start of the others to their first remaining event.
    fn prune_sessions(&mut self, removed: HashMap<String, u64>, through: u64) -> Result<(), LedgerError> {
        let mut restart: HashMap<String, SessionRow> = HashMap::new();
        for (sid, n) in removed {
            let Some(mut row) = load_session(&self.sessions, &sid)? else {
                continue;
            };
            row.count = row.count.saturating_sub(n);
            if row.count == 0 {
                self.sessions.remove(sid.as_str())?;
            } else {
                restart.insert(sid, row);
            }
        }
        if restart.is_empty() {
            return Ok(());
        }
        for item in self.events.range(through + 1..)? {
            let (k, v) = item?;
            let seq = k.value();
            let s = codec::decode(v.value()).map_err(|e| LedgerError::Corrupt(format!("event {seq}: {e}")))?;
            if let Some(mut row) = restart.remove(s.session_id) {
                row.first_us = s.ts_us;
                row.first_seq = seq;
                self.sessions.insert(s.session_id, row.to_tuple())?;
                if restart.is_empty() {
                    break;
                }
            }
        }
        // A count that promised events the table does not hold.
        for sid in restart.keys() {
            self.sessions.remove(sid.as_str())?;
        }
        Ok(())
    }

    fn flush_session(&mut self) -> Result<(), LedgerError> {
        if self.session_dirty
            && let Some(row) = self.session
        {
            self.sessions.insert(self.session_id, row.to_tuple())?;
        }
        self.session_dirty = false;
        Ok(())
    }

    fn finish(mut self) -> Result<(), LedgerError> {
        self.flush_session()?;
        self.by_type.flush()?;
        let recent = self.postings.flush(self.crn_recent)?;
        if recent != self.crn_recent {
            self.crn_recent = recent;
            tables::write_crn_recent(&mut self.meta, recent)?;
        }
        tables::write_head(&mut self.meta, &self.head)?;
        if let Some(n) = self.scans
            && tables::read_scans(&self.meta)?.is_none_or(|stored| n > stored)
        {
            tables::write_scans(&mut self.meta, n)?;
        }
        if self.savings_dirty {
            tables::write_savings(&mut self.meta, self.savings)?;
        }
        Ok(())
    }
}

/// Moves the export mark forward to `seq`; never back, never past the head.
/// (The caller checked `seq` against the head, so clamping changes nothing
/// there; it keeps one bad request from failing the appends batched with it.)
fn mark_exported(txn: &WriteTransaction, seq: u64, head_seq: u64) -> Result<(), LedgerError> {
    let seq = seq.min(head_seq);
    let mut table = txn.open_table(tables::EXPORT)?;
    let current = table.get(tables::EXPORTED_THROUGH)?.map(|g| g.value()).unwrap_or(0);
    if seq > current {
        table.insert(tables::EXPORTED_THROUGH, seq)?;
    }
    Ok(())
}

fn load_session<T: ReadableTable<&'static str, (u64, u64, u64, u64, u64)>>(
    sessions: &T,
    session_id: &str,
) -> Result<Option<SessionRow>, LedgerError> {
    Ok(sessions.get(session_id)?.map(|g| SessionRow::from_tuple(g.value())))
}
