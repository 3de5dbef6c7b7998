//! Remediation state in `graph.redb`:
//!
//! - `remediation_items`: CRN -> item, a binary record ([`record`]): a
//!   large estate's pipeline holds millions, written by every scan and
//!   read back at every start.
//! - `remediation_payloads`: SHA-256 -> compensating payload.
//! - `remediation_sagas`: saga id -> saga, kept after it ends.
//! - `isolation`: CRN -> ignore entry.
//!
//! All but the items are JSON values (few, and JSON tolerates added fields).
//!
//! Every write is one durable transaction. Decoding never panics: a
//! malformed value is a `Corrupt` error naming the table.

use std::collections::BTreeMap;

use rayon::prelude::*;
use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError};
use serde_json::{Value, json};

use super::{Compensation, Isolation, Item, NoteBox, Notes, Override, Proof, Saga, SagaStep, stage_named};
use svc_store::DecodeError;
use svc_store::replica::Recorded;
use svc_store::{GraphStore, StoreError};

pub mod record;

const ITEMS: TableDefinition<&str, &[u8]> = TableDefinition::new("remediation_items");
const PAYLOADS: TableDefinition<&str, &[u8]> = TableDefinition::new("remediation_payloads");
const SAGAS: TableDefinition<&str, &[u8]> = TableDefinition::new("remediation_sagas");
const ISOLATION: TableDefinition<&str, &[u8]> = TableDefinition::new("isolation");

/// Changes to write in one transaction.
#[derive(Default)]
pub struct Batch<'a> {
    pub items: Vec<&'a Item>,
    pub removed_items: Vec<&'a str>,
    pub payloads: Vec<(&'a str, &'a Compensation)>,
    pub sagas: Vec<&'a Saga>,
    pub isolations: Vec<&'a Isolation>,
    pub removed_isolations: Vec<&'a str>,
}

fn s(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned()
}
fn u(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or_default()
}
fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or_default()
}
fn opt_s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}
fn map(v: &Value, k: &str) -> BTreeMap<String, String> {
    v.get(k)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// An item as the JSON object it was stored as before the binary record.
#[cfg(test)]
fn item_json(i: &Item) -> Value {
    json!({
        "crn": i.crn, "stage": i.stage.name(), "type": i.ty.as_str(), "state": i.state.as_str(),
        "rule": i.rule.as_str(), "action": i.action.as_str(), "reason": i.reason,
        "savings_usd_mo": i.savings_usd_mo, "risk_score": i.risk_score,
        "reachability": i.reachability.as_str(), "blast_radius": i.blast_radius,
        "proof": i.proof.as_ref().map(|p| json!({"safe": p.safe, "reason": p.reason, "source": p.source.as_str()})),
        "plan_hash": i.plan_hash, "blockers": i.notes().blockers, "held_by": i.notes().held_by,
        "override": i.notes().override_by.as_ref().map(|o| json!({"actor": o.actor, "reason": o.reason, "plan_hash": o.plan_hash})),
        "failure": i.notes().failure, "saga_id": i.notes().saga_id, "rejected": i.notes().rejected,
        "flagged_us": i.flagged_us, "stage_us": i.stage_us,
    })
}

/// Items encoded on every core, in key order (the order they insert fastest in).
fn encode_items(items: &[&Item]) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = items
        .par_iter()
        .map(|i| {
            let mut buf = Vec::with_capacity(256);
            record::encode(&mut buf, i);
            (i.crn.clone(), buf)
        })
        .collect();
    out.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out
}

/// An item written as JSON before the binary record existed.
fn item_from(v: &Value) -> Result<Item, DecodeError> {
    let stage = v
        .get("stage")
        .and_then(Value::as_str)
        .and_then(stage_named)
        .ok_or(DecodeError("item without a stage"))?;
    let crn = opt_s(v, "crn").ok_or(DecodeError("item without a crn"))?;
    Ok(Item {
        stage,
        ty: s(v, "type").into(),
        state: s(v, "state").into(),
        rule: s(v, "rule").into(),
        action: s(v, "action").into(),
        reason: s(v, "reason"),
        savings_usd_mo: f(v, "savings_usd_mo"),
        risk_score: f(v, "risk_score"),
        reachability: s(v, "reachability").into(),
        blast_radius: u(v, "blast_radius"),
        proof: v.get("proof").filter(|p| p.is_object()).map(|p| {
            Box::new(Proof {
                safe: p.get("safe").and_then(Value::as_bool).unwrap_or(false),
                reason: s(p, "reason"),
                source: s(p, "source").into(),
            })
        }),
        plan_hash: s(v, "plan_hash"),
        notes: NoteBox::of(Notes {
            blockers: v
                .get("blockers")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|b| b.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
            held_by: opt_s(v, "held_by"),
            override_by: v.get("override").filter(|o| o.is_object()).map(|o| Override {
                actor: s(o, "actor"),
                reason: s(o, "reason"),
                plan_hash: s(o, "plan_hash"),
            }),
            failure: opt_s(v, "failure"),
            saga_id: opt_s(v, "saga_id"),
            rejected: opt_s(v, "rejected"),
        }),
        flagged_us: u(v, "flagged_us"),
        stage_us: u(v, "stage_us"),
        crn,
    })
}

pub fn payload_json(c: &Compensation) -> Value {
    json!({
        "crn": c.crn, "kind": c.kind, "applied": c.applied, "inverse": c.inverse,
        "properties": c.properties, "saga_id": c.saga_id, "created_us": c.created_us,
        "reverted_us": c.reverted_us,
    })
}

/// The canonical bytes a payload's hash is taken over (everything but
/// whether it was reverted).
pub fn payload_canonical(c: &Compensation) -> Vec<u8> {
    let mut v = payload_json(c);
    if let Some(o) = v.as_object_mut() {
        o.remove("reverted_us");
    }
    serde_json::to_vec(&v).unwrap_or_default()
}

fn payload_from(v: &Value) -> Compensation {
    Compensation {
        crn: s(v, "crn"),
        kind: s(v, "kind"),
        applied: s(v, "applied"),
        inverse: s(v, "inverse"),
        properties: map(v, "properties"),
        saga_id: s(v, "saga_id"),
        created_us: u(v, "created_us"),
        reverted_us: u(v, "reverted_us"),
    }
}

fn saga_json(g: &Saga) -> Value {
    json!({
        "id": g.id, "crn": g.crn, "plan_hash": g.plan_hash, "intent": g.intent,
        "blast_radius": g.blast_radius, "status": g.status, "started_us": g.started_us,
        "steps": g.steps.iter().map(|s| json!({
            "action": s.action, "inverse": s.inverse, "status": s.status, "payload_hash": s.payload_hash,
        })).collect::<Vec<_>>(),
    })
}

fn saga_from(v: &Value) -> Saga {
    Saga {
        id: s(v, "id"),
        crn: s(v, "crn"),
        plan_hash: s(v, "plan_hash"),
        intent: s(v, "intent"),
        blast_radius: u(v, "blast_radius"),
        status: s(v, "status"),
        started_us: u(v, "started_us"),
        steps: v
            .get("steps")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|st| SagaStep {
                        action: s(st, "action"),
                        inverse: s(st, "inverse"),
                        status: s(st, "status"),
                        payload_hash: s(st, "payload_hash"),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn isolation_json(i: &Isolation) -> Value {
    json!({
        "crn": i.crn, "author": i.author, "reason_code": i.reason_code,
        "ttl_seconds": i.ttl_seconds, "created_us": i.created_us,
    })
}

fn isolation_from(v: &Value) -> Isolation {
    Isolation {
        crn: s(v, "crn"),
        author: s(v, "author"),
        reason_code: s(v, "reason_code"),
        ttl_seconds: u(v, "ttl_seconds"),
        created_us: u(v, "created_us"),
    }
}

/// Everything stored, as loaded at start.
#[derive(Default)]
pub struct Loaded {
    pub items: Vec<Item>,
    pub sagas: Vec<Saga>,
    pub isolations: Vec<Isolation>,
}

fn rem_corrupt(store: &GraphStore, what: &str, cause: DecodeError) -> StoreError {
    StoreError::Corrupt {
        path: store.path().to_owned(),
        what: what.to_owned(),
        cause,
    }
}

/// The remediation pipeline's items, payloads, sagas and ignore entries in `graph.redb`.
pub trait RemediationStore {
    /// Writes a batch of remediation changes durably.
    fn put_remediation(&self, b: &Batch<'_>) -> Result<(), StoreError>;

    /// Writes items and removes others ([`ItemsWrite`]) durably, in line.
    fn write_items(&self, w: ItemsWrite) -> Result<(), StoreError>;

    /// As [`RemediationStore::write_items`], without holding up the
    /// caller: the write transaction begins here, so every later write of
    /// `graph.redb` comes after this one; the inserts, the commit and its
    /// sync run on a thread of their own, whose handle gives the outcome.
    fn write_items_behind(&self, w: ItemsWrite) -> Result<std::thread::JoinHandle<Result<(), StoreError>>, StoreError>;

    /// Items, sagas and ignore entries, as stored.
    fn load_remediation(&self) -> Result<Loaded, StoreError>;

    /// The compensating payload stored under `hash`.
    fn load_payload(&self, hash: &str) -> Result<Option<Compensation>, StoreError>;
}

impl RemediationStore for GraphStore {
    /// Writes a batch of remediation changes durably.
    fn put_remediation(&self, b: &Batch<'_>) -> Result<(), StoreError> {
        let err = self.db_err();
        let items = encode_items(&b.items);
        let txn = self.begin_write()?;
        {
            let bytes = |v: Value| serde_json::to_vec(&v).unwrap_or_default();
            let mut t = txn.open_table(ITEMS).map_err(|e| err(e.into()))?;
            for (crn, bytes) in &items {
                t.insert(crn.as_str(), bytes.as_slice()).map_err(|e| err(e.into()))?;
            }
            for crn in &b.removed_items {
                t.remove(*crn).map_err(|e| err(e.into()))?;
            }
            let mut t = txn.open_table(PAYLOADS).map_err(|e| err(e.into()))?;
            for (hash, c) in &b.payloads {
                t.insert(*hash, bytes(payload_json(c)).as_slice())
                    .map_err(|e| err(e.into()))?;
            }
            let mut t = txn.open_table(SAGAS).map_err(|e| err(e.into()))?;
            for g in &b.sagas {
                t.insert(g.id.as_str(), bytes(saga_json(g)).as_slice())
                    .map_err(|e| err(e.into()))?;
            }
            let mut t = txn.open_table(ISOLATION).map_err(|e| err(e.into()))?;
            for i in &b.isolations {
                t.insert(i.crn.as_str(), bytes(isolation_json(i)).as_slice())
                    .map_err(|e| err(e.into()))?;
            }
            for crn in &b.removed_isolations {
                t.remove(*crn).map_err(|e| err(e.into()))?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn write_items(&self, w: ItemsWrite) -> Result<(), StoreError> {
        let txn = self.begin_write()?;
        w.write(&self.db_err(), txn)
    }

    fn write_items_behind(&self, w: ItemsWrite) -> Result<std::thread::JoinHandle<Result<(), StoreError>>, StoreError> {
        let txn = self.begin_write()?;
        let err = self.db_err();
        std::thread::Builder::new()
            .name("svc-items".into())
            .spawn(move || w.write(&err, txn))
            // The transaction went with the closure: nothing was written.
            .map_err(|e| StoreError::Db {
                path: self.path().to_owned(),
                cause: Box::new(redb::Error::Io(e)),
            })
    }

    /// Items, sagas and ignore entries, as stored.
    fn load_remediation(&self) -> Result<Loaded, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let mut out = Loaded::default();
        let each =
            |def: TableDefinition<&str, &[u8]>, what: &str, f: &mut dyn FnMut(Value) -> Result<(), DecodeError>| {
                let table = match txn.open_table(def) {
                    Ok(t) => t,
                    Err(TableError::TableDoesNotExist(_)) => return Ok(()),
                    Err(e) => return Err(err(e.into())),
                };
                for row in table.iter().map_err(|e| err(e.into()))? {
                    let (_, v) = row.map_err(|e| err(e.into()))?;
                    let value: Value = serde_json::from_slice(v.value())
                        .map_err(|_| rem_corrupt(self, what, DecodeError("not JSON")))?;
                    f(value).map_err(|e| rem_corrupt(self, what, e))?;
                }
                Ok(())
            };
        match txn.open_table(ITEMS) {
            Ok(table) => {
                // A run of rows at a time, each run decoded on every core
                // while the next is read: a large estate's pipeline holds
                // millions of items, and a start waits for them.
                let mut rows = table.iter().map_err(|e| err(e.into()))?;
                let mut next = Run::read(&mut rows).map_err(|e| err(e.into()))?;
                while !next.is_empty() {
                    let run = next;
                    let (decoded, read) = rayon::join(|| run.decode(), || Run::read(&mut rows));
                    out.items
                        .extend(decoded.map_err(|e| rem_corrupt(self, "remediation items", e))?);
                    next = read.map_err(|e| err(e.into()))?;
                }
            }
            Err(TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(err(e.into())),
        }
        each(SAGAS, "sagas", &mut |v| {
            out.sagas.push(saga_from(&v));
            Ok(())
        })?;
        each(ISOLATION, "ignore list", &mut |v| {
            out.isolations.push(isolation_from(&v));
            Ok(())
        })?;
        Ok(out)
    }

    /// The compensating payload stored under `hash`.
    fn load_payload(&self, hash: &str) -> Result<Option<Compensation>, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let table = match txn.open_table(PAYLOADS) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(err(e.into())),
        };
        let Some(v) = table.get(hash).map_err(|e| err(e.into()))? else {
            return Ok(None);
        };
        let value: Value = serde_json::from_slice(v.value())
            .map_err(|_| rem_corrupt(self, "compensating payloads", DecodeError("not JSON")))?;
        Ok(Some(payload_from(&value)))
    }
}

/// Rows of `remediation_items` read at once before they are decoded.
const RUN_ROWS: usize = 16_384;

/// A run of `remediation_items` rows, copied out of the table: each row's
/// CRN and value, end to end in one buffer.
#[derive(Default)]
struct Run {
    bytes: Vec<u8>,
    /// Per row: where its CRN starts, where its value starts.
    rows: Vec<(usize, usize)>,
}

impl Run {
    /// Up to [`RUN_ROWS`] rows from `rows`.
    fn read(rows: &mut redb::Range<'_, &'static str, &'static [u8]>) -> Result<Run, redb::StorageError> {
        let mut run = Run::default();
        for row in rows.by_ref().take(RUN_ROWS) {
            let (crn, value) = row?;
            let at = run.bytes.len();
            run.bytes.extend_from_slice(crn.value().as_bytes());
            let value_at = run.bytes.len();
            run.bytes.extend_from_slice(value.value());
            run.rows.push((at, value_at));
        }
        Ok(run)
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Every row's item, in order, decoded on every core.
    fn decode(&self) -> Result<Vec<Item>, DecodeError> {
        (0..self.rows.len())
            .into_par_iter()
            .map(|i| {
                let (at, value_at) = self.rows[i];
                let end = self.rows.get(i + 1).map_or(self.bytes.len(), |r| r.0);
                let crn = std::str::from_utf8(&self.bytes[at..value_at]).map_err(|_| DecodeError("item crn"))?;
                let value = &self.bytes[value_at..end];
                if record::is_json(value) {
                    serde_json::from_slice::<Value>(value)
                        .map_err(|_| DecodeError("not JSON"))
                        .and_then(|v| item_from(&v))
                } else {
                    record::decode(crn, value)
                }
            })
            .collect()
    }
}

/// A write of items not begun yet: the items encoded (on every core, in
/// key order), the CRNs to remove, and whether every other stored item
/// goes too. It owns what it writes, so it can wait for its turn (a scan's
/// `engine.sau` pass leaves one to be written after the scan's commit).
pub struct ItemsWrite {
    items: Vec<(String, Vec<u8>)>,
    removed: Vec<String>,
    /// Every stored item not among `items` is removed: after a write that
    /// failed, this puts the store back in step with memory.
    replace: bool,
}

impl ItemsWrite {
    /// Writes `items` and removes `removed`.
    pub fn put(items: &[&Item], removed: &[&str]) -> Self {
        ItemsWrite {
            items: encode_items(items),
            removed: removed.iter().map(|c| (*c).to_owned()).collect(),
            replace: false,
        }
    }

    /// Writes `items` and removes every other stored item.
    pub fn replace(items: &[&Item]) -> Self {
        ItemsWrite {
            items: encode_items(items),
            removed: Vec::new(),
            replace: true,
        }
    }

    fn write(self, err: &impl Fn(redb::Error) -> StoreError, txn: Recorded) -> Result<(), StoreError> {
        {
            let mut t = txn.open_table(ITEMS).map_err(|e| err(e.into()))?;
            if self.replace {
                let keep: std::collections::HashSet<&str> = self.items.iter().map(|(crn, _)| crn.as_str()).collect();
                t.retain(|crn, _| keep.contains(crn)).map_err(|e| err(e.into()))?;
            }
            for (crn, bytes) in &self.items {
                t.insert(crn.as_str(), bytes.as_slice()).map_err(|e| err(e.into()))?;
            }
            for crn in &self.removed {
                t.remove(crn.as_str()).map_err(|e| err(e.into()))?;
            }
        }
        txn.commit().map(|_| ())
    }
}

/// The stage names, for tests of the encoding.
#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use parking_lot::Mutex;
    use redb::{Database, StorageBackend};

    use super::*;
    use svc_graph::graph::Phase;

    /// A disk that keeps what was written up to the last `sync_data`: a
    /// crash is reopening from [`Disk::after_crash`].
    #[derive(Debug, Default)]
    struct Disk {
        live: Mutex<Vec<u8>>,
        synced: Arc<Mutex<Vec<u8>>>,
        /// Writes and syncs fail while set.
        full: std::sync::atomic::AtomicBool,
    }

    impl Disk {
        fn fail_if_full(&self) -> Result<(), std::io::Error> {
            if self.full.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(std::io::Error::from(std::io::ErrorKind::StorageFull));
            }
            Ok(())
        }

        fn after_crash(&self) -> Disk {
            let synced = self.synced.lock().clone();
            Disk {
                live: Mutex::new(synced.clone()),
                synced: Arc::new(Mutex::new(synced)),
                full: Default::default(),
            }
        }
    }

    /// The same disk, shared with the test while a database has it.
    #[derive(Debug)]
    struct Shared(Arc<Disk>);

    impl StorageBackend for Shared {
        fn len(&self) -> Result<u64, std::io::Error> {
            Ok(self.0.live.lock().len() as u64)
        }
        fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
            let live = self.0.live.lock();
            let at = offset as usize;
            let src = live
                .get(at..at + out.len())
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "read past the end"))?;
            out.copy_from_slice(src);
            Ok(())
        }
        fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
            self.0.live.lock().resize(len as usize, 0);
            Ok(())
        }
        fn sync_data(&self) -> Result<(), std::io::Error> {
            self.0.fail_if_full()?;
            let live = self.0.live.lock().clone();
            *self.0.synced.lock() = live;
            Ok(())
        }
        fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
            self.0.fail_if_full()?;
            let mut live = self.0.live.lock();
            let at = offset as usize;
            if live.len() < at + data.len() {
                live.resize(at + data.len(), 0);
            }
            live[at..at + data.len()].copy_from_slice(data);
            Ok(())
        }
    }

    fn store_on(disk: &Arc<Disk>) -> GraphStore {
        let open = {
            let disk = disk.clone();
            move |_: &Path| {
                Database::builder()
                    .create_with_backend(Shared(disk.clone()))
                    .map_err(redb::Error::from)
            }
        };
        let db = open(Path::new("graph.redb")).unwrap();
        GraphStore::on(db, Path::new("graph.redb"), open).unwrap()
    }

    fn stored_crns(store: &GraphStore) -> Vec<String> {
        store
            .load_remediation()
            .unwrap()
            .items
            .into_iter()
            .map(|i| i.crn)
            .collect()
    }

    /// Items written behind the caller survive a crash once their write is
    /// done, and a write begun after them comes after them.
    #[test]
    fn items_written_behind_are_durable_once_done_and_before_later_writes() {
        let item = |n: u32| Item::new(format!("crn:svc:aws:us-east-1:ec2:volume:1:vol-{n}"), 7);
        let (a, b, c) = (item(1), item(2), item(3));
        let disk = Arc::new(Disk::default());
        let store = store_on(&disk);
        store
            .put_remediation(&Batch {
                items: vec![&a],
                ..Batch::default()
            })
            .unwrap();
        let crns = |disk: &Disk| {
            let mut crns = stored_crns(&store_on(&Arc::new(disk.after_crash())));
            crns.sort();
            crns
        };

        store
            .write_items_behind(ItemsWrite::put(&[&b, &c], &[]))
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(crns(&disk), [a.crn.clone(), b.crn.clone(), c.crn.clone()]);

        // A removal behind, then at once a write of the same item: the
        // write waits for the removal, so the item is back.
        let removal = store.write_items_behind(ItemsWrite::put(&[], &[&a.crn])).unwrap();
        store
            .put_remediation(&Batch {
                items: vec![&a],
                ..Batch::default()
            })
            .unwrap();
        removal.join().unwrap().unwrap();
        assert_eq!(crns(&disk), [a.crn.clone(), b.crn.clone(), c.crn.clone()]);
        store
            .write_items_behind(ItemsWrite::put(&[], &[&b.crn]))
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(crns(&disk), [a.crn.clone(), c.crn.clone()]);
    }

    /// A write behind the caller that the disk refuses reports the error
    /// through its handle, and what was durable before stays.
    #[test]
    fn a_refused_write_behind_reports_its_error_and_loses_nothing_earlier() {
        let item = |n: u32| Item::new(format!("crn:svc:aws:us-east-1:ec2:volume:1:vol-{n}"), 7);
        let (a, b) = (item(1), item(2));
        let disk = Arc::new(Disk::default());
        let store = store_on(&disk);
        store
            .write_items_behind(ItemsWrite::put(&[&a], &[]))
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        disk.full.store(true, std::sync::atomic::Ordering::Relaxed);
        let refused = store
            .write_items_behind(ItemsWrite::put(&[&b], &[&a.crn]))
            .unwrap()
            .join()
            .unwrap();
        assert!(
            matches!(&refused, Err(StoreError::Unavailable(f)) if f.disk_full),
            "{refused:?}"
        );
        assert_eq!(
            stored_crns(&store_on(&Arc::new(disk.after_crash()))),
            std::slice::from_ref(&a.crn)
        );
    }

    /// A pass's write waits in the state until its scan begins it; a write
    /// already running is left to run by a scan that has none waiting, and
    /// a refused one makes the next pass write every item.
    #[test]
    fn a_pass_write_waits_runs_behind_and_a_refused_one_asks_for_a_rewrite() {
        use crate::state::{Behind, State};
        let item = |n: u32| Item::new(format!("crn:svc:aws:us-east-1:ec2:volume:1:vol-{n}"), 7);
        let (a, b) = (item(1), item(2));
        let disk = Arc::new(Disk::default());
        let store = store_on(&disk);
        let mut st = State {
            behind: Some(Behind::Waiting(ItemsWrite::put(&[&a], &[]))),
            ..State::default()
        };
        st.write_behind(&store);
        assert!(matches!(st.behind, Some(Behind::Running(_))));
        // A scan that failed before its pass: the running write stays to be joined.
        st.write_behind(&store);
        assert!(matches!(st.behind, Some(Behind::Running(_))));
        st.settle(&store);
        assert!(st.behind.is_none() && !st.rewrite);
        assert_eq!(
            stored_crns(&store_on(&Arc::new(disk.after_crash()))),
            std::slice::from_ref(&a.crn)
        );

        disk.full.store(true, std::sync::atomic::Ordering::Relaxed);
        st.behind = Some(Behind::Waiting(ItemsWrite::put(&[&b], &[])));
        st.settle(&store);
        assert!(st.behind.is_none());
        assert!(st.rewrite, "a refused write in line asks the next pass for every item");
    }

    /// After a refused write, the store answers the fault until the disk
    /// has room, then opens again by itself; a replacing write then stores
    /// exactly what memory holds, removing what memory no longer has.
    #[test]
    fn a_store_refused_by_a_full_disk_comes_back_and_a_replace_puts_it_in_step() {
        let item = |n: u32| Item::new(format!("crn:svc:aws:us-east-1:ec2:volume:1:vol-{n}"), 7);
        let (a, b, c) = (item(1), item(2), item(3));
        let disk = Arc::new(Disk::default());
        let store = store_on(&disk);
        store
            .write_items_behind(ItemsWrite::put(&[&a, &b], &[]))
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        disk.full.store(true, std::sync::atomic::Ordering::Relaxed);
        let refused = store
            .write_items_behind(ItemsWrite::put(&[&c], &[&a.crn]))
            .unwrap()
            .join()
            .unwrap();
        assert!(refused.is_err());
        assert!(store.fault().is_some_and(|f| f.disk_full));
        assert!(matches!(store.probe(), Err(StoreError::Unavailable(_))), "still full");

        disk.full.store(false, std::sync::atomic::Ordering::Relaxed);
        store.probe().unwrap();
        assert!(store.fault().is_none());
        // Memory holds b and c (a was removed, c added, by the refused write).
        store
            .write_items_behind(ItemsWrite::replace(&[&b, &c]))
            .unwrap()
            .join()
            .unwrap()
            .unwrap();
        let mut crns = stored_crns(&store_on(&Arc::new(disk.after_crash())));
        crns.sort();
        assert_eq!(crns, [b.crn.clone(), c.crn.clone()]);
    }

    #[test]
    fn items_over_several_runs_load_in_order_and_a_bad_one_names_the_table() {
        let store = store_on(&Arc::new(Disk::default()));
        let n = 2 * RUN_ROWS + 7;
        let items: Vec<Item> = (0..n)
            .map(|k| {
                let mut i = Item::new(format!("crn:svc:aws:us-east-1:ec2:volume:1:vol-{k:06}"), k as u64);
                i.reason = format!("reason {k}");
                i
            })
            .collect();
        store
            .put_remediation(&Batch {
                items: items.iter().collect(),
                ..Batch::default()
            })
            .unwrap();
        assert_eq!(store.load_remediation().unwrap().items, items);

        // One value in the last run cut short: the load fails, naming the table.
        let txn = store.begin_write().unwrap();
        {
            let mut t = txn.open_table(ITEMS).unwrap();
            t.insert(items[n - 1].crn.as_str(), &[1u8, 0][..]).unwrap();
        }
        txn.commit().unwrap();
        let e = store.load_remediation().err().unwrap();
        assert!(e.to_string().contains("remediation items"), "{e}");
    }

    #[test]
    fn an_item_stored_as_json_before_the_record_still_reads() {
        let mut i = Item::new("crn:svc:aws:us-east-1:ec2:volume:1:vol-1".into(), 7);
        i.stage = Phase::SauGate;
        i.proof = Some(Box::new(Proof {
            safe: false,
            reason: "deletion protection".into(),
            source: "plugin".into(),
        }));
        i.notes_mut().blockers = vec!["policy:keep-prod".into()];
        i.notes_mut().override_by = Some(Override {
            actor: "ops".into(),
            reason: "ticket 7".into(),
            plan_hash: "ab".into(),
        });
        i.savings_usd_mo = 12.5;
        i.reason = "a \"quoted\" reason\nwith a line break and é".into();
        assert_eq!(item_from(&item_json(&i)).unwrap(), i);
        assert!(item_from(&json!({"crn": "x"})).is_err());

        // In a store: one item as the old JSON, one as a record; both load.
        let store = store_on(&Arc::new(Disk::default()));
        let mut j = i.clone();
        j.crn = "crn:svc:aws:us-east-1:ec2:volume:1:vol-2".into();
        store
            .put_remediation(&Batch {
                items: vec![&j],
                ..Batch::default()
            })
            .unwrap();
        let txn = store.begin_write().unwrap();
        {
            let mut t = txn.open_table(ITEMS).unwrap();
            let old = serde_json::to_vec(&item_json(&i)).unwrap();
            t.insert(i.crn.as_str(), old.as_slice()).unwrap();
        }
        txn.commit().unwrap();
        let mut loaded = store.load_remediation().unwrap().items;
        loaded.sort_by(|a, b| a.crn.cmp(&b.crn));
        assert_eq!(loaded, [i, j]);
    }
}
