//! `graph.redb` replicated: every write transaction of the leader's graph
//! store (scan commits, remediation items and sagas, policies, signal
//! history, sources) is a record (`svc_engine::store::replica`). The
//! leader puts the record in the shared store, appends a reference to it
//! to etcd's replicated log `P/state` (fenced by its leadership), and only
//! then commits it locally, so nothing the leader acknowledged is missing
//! from the log. Standbys apply the records in seq order to their own
//! `graph.redb`; a new leader applies what it has not seen yet before it
//! opens its engine.
//!
//! An entry of the log is a reference: a format byte (1), the record's
//! length (u64, little-endian), its SHA-256 and the object's name. The
//! object's name carries the seq and the leader's election revision, so
//! a deposed leader's late put never overwrites the record a newer leader
//! wrote for the same seq (only the reference in etcd is authoritative).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};
use svc_cluster::{Entry, Leadership, Lease, ReplicatedLog};
use svc_engine::store::GraphStore;
use svc_engine::store::replica::Shipper;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::follow::state_seq;
use super::shared::SharedStore;

/// Where the records lie in the shared store.
const OBJECTS: &str = "state";
/// The format byte of a log entry.
const FORMAT: u8 = 1;
/// Bytes before the object's name: format, length and digest.
const HEADER: usize = 1 + 8 + 32;

/// The replicated log of `graph.redb` and the shared store holding the records.
#[derive(Clone)]
pub struct StateReplica {
    log: ReplicatedLog,
    shared: SharedStore,
    /// This node's id, under which it publishes what it has applied.
    node: String,
    /// Turned true when the log holds a record this store does not (a
    /// local commit failed after its record was shipped).
    diverged: Arc<watch::Sender<bool>>,
}

fn object_name(seq: u64, revision: i64) -> String {
    format!("{OBJECTS}/{seq:020}-{revision}")
}

/// The seq an object of the shared store holds, from its name.
fn seq_of(name: &str) -> Option<u64> {
    let file = name.rsplit('/').next()?;
    file.split('-').next()?.parse().ok()
}

fn reference(record: &[u8], name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + name.len());
    out.push(FORMAT);
    out.extend_from_slice(&(record.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(record));
    out.extend_from_slice(name.as_bytes());
    out
}

/// The length, digest and object name of an entry.
fn parse_reference(seq: u64, bytes: &[u8]) -> anyhow::Result<(u64, [u8; 32], String)> {
    let malformed = |why: &str| anyhow::anyhow!("state log entry {seq} is malformed: {why}");
    if bytes.len() <= HEADER || bytes[0] != FORMAT {
        return Err(malformed("not a format 1 reference"));
    }
    let len = u64::from_le_bytes(bytes[1..9].try_into().map_err(|_| malformed("length"))?);
    let digest: [u8; 32] = bytes[9..HEADER].try_into().map_err(|_| malformed("digest"))?;
    let name = std::str::from_utf8(&bytes[HEADER..]).map_err(|_| malformed("object name"))?;
    if seq_of(name) != Some(seq) {
        return Err(malformed("the object's name does not carry the entry's seq"));
    }
    Ok((len, digest, name.to_owned()))
}

impl StateReplica {
    /// `diverged` is turned true when the log is found ahead of this
    /// node's store.
    pub fn new(
        log: ReplicatedLog,
        shared: SharedStore,
        node: &str,
        diverged: Arc<watch::Sender<bool>>,
    ) -> StateReplica {
        StateReplica {
            log,
            shared,
            node: node.to_owned(),
            diverged,
        }
    }

    pub fn log(&self) -> &ReplicatedLog {
        &self.log
    }

    /// As the leader: puts record `seq` in the shared store and appends
    /// its reference to the log. Returns once both hold it.
    pub async fn ship(&self, leader: &Leadership, seq: u64, record: Vec<u8>) -> anyhow::Result<()> {
        let name = object_name(seq, leader.revision());
        let entry = Entry {
            seq,
            bytes: reference(&record, &name),
        };
        self.shared.put(&name, record).await?;
        let appended = self.log.append(leader, &[entry]).await;
        if let Err(svc_cluster::Error::LogConflict { .. }) = &appended {
            self.diverged.send_replace(true);
        }
        appended.with_context(|| format!("cannot append state record {seq} to the replicated log"))
    }

    /// The record an entry names, checked against its length and digest.
    async fn fetch(&self, entry: &Entry) -> anyhow::Result<Vec<u8>> {
        let (len, digest, name) = parse_reference(entry.seq, &entry.bytes)?;
        let record = self.shared.get(&name).await?;
        if record.len() as u64 != len || Sha256::digest(&record).as_slice() != digest {
            bail!(
                "state record {} ({name}) does not match its reference in etcd",
                entry.seq
            );
        }
        Ok(record)
    }

    /// Applies the records `entries` name to `store`, in order (those
    /// already applied are skipped).
    pub async fn apply(&self, store: &Arc<GraphStore>, entries: Vec<Entry>) -> anyhow::Result<()> {
        for entry in entries {
            let record = self.fetch(&entry).await?;
            let (store, seq) = (store.clone(), entry.seq);
            tokio::task::spawn_blocking(move || store.apply_record(seq, &record))
                .await
                .context("applying a state record was cancelled")?
                .with_context(|| format!("cannot apply state record {seq}"))?;
        }
        Ok(())
    }

    /// Applies everything the log holds beyond `store`.
    pub async fn catch_up(&self, store: &Arc<GraphStore>) -> anyhow::Result<()> {
        let seq = state_seq(store).await?;
        let tail = self.log.read_after(seq).await?;
        self.apply(store, tail).await
    }

    /// Follows the log into `store` until `stop` turns true (or the log
    /// cannot be followed), publishing on `lease` how far it has applied,
    /// and on `applied` too.
    /// Behind the compacted log, it installs a copy of the leader's
    /// store through `resync`.
    pub async fn follow(
        self,
        store: Arc<GraphStore>,
        lease: Lease,
        applied: watch::Sender<u64>,
        stop: watch::Receiver<bool>,
        resync: super::resync::Resync,
    ) {
        let from = match state_seq(&store).await {
            Ok(seq) => seq,
            Err(e) => {
                warn!(error = format!("{e:#}"), "this standby cannot read its graph store");
                return;
            }
        };
        let this = self.clone();
        let (into, told) = (store.clone(), applied.clone());
        let apply = move |entries: Vec<Entry>| {
            let (this, store, applied) = (this.clone(), into.clone(), told.clone());
            async move {
                this.apply(&store, entries).await?;
                let seq = state_seq(&store).await?;
                applied.send_replace(seq);
                Ok(seq)
            }
        };
        let held = lease.clone();
        let copy = move |stop: watch::Receiver<bool>| {
            let (resync, store, lease, applied) = (resync.clone(), store.clone(), held.clone(), applied.clone());
            async move {
                let seq = resync.graph(&store, &lease, stop).await?;
                if let Some(seq) = seq {
                    applied.send_replace(seq);
                }
                Ok(seq)
            }
        };
        super::follow::follow_log(&self.log, &self.node, &lease, from, stop, "graph store", apply, copy).await;
    }

    pub async fn publish_applied(&self, lease: &Lease, seq: u64) {
        if let Err(e) = self.log.publish_applied(&self.node, lease, seq).await {
            debug!(error = %e, "cannot publish the state seq applied here");
        }
    }

    /// As the leader: deletes from etcd the entries every live member has
    /// applied, and from the shared store the records they name.
    pub async fn compact(&self, leader: &Leadership) -> anyhow::Result<()> {
        let Some(first_kept) = self.log.compact(leader).await? else {
            return Ok(());
        };
        for name in self.shared.list(OBJECTS).await? {
            if seq_of(&name).is_some_and(|seq| seq < first_kept) {
                self.shared.delete(&name).await?;
            }
        }
        Ok(())
    }

    /// What the leader's graph store calls inside each write transaction:
    /// ships the record on `runtime` and waits for it. The store's
    /// writers run on blocking threads, never on the runtime's own.
    pub fn shipper(&self, leader: Arc<Leadership>, runtime: tokio::runtime::Handle) -> Shipper {
        let replica = self.clone();
        Arc::new(move |seq: u64, record: &[u8]| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            let (replica, leader, record) = (replica.clone(), leader.clone(), record.to_vec());
            runtime.spawn(async move {
                let _ = tx.send(replica.ship(&leader, seq, record).await);
            });
            rx.recv()
                .map_err(|_| "the daemon is stopping".to_owned())?
                .map_err(|e| format!("{e:#}"))
        })
    }
}

/// Keeps `data_dir`'s `graph.snap` matching the followed `store` as
/// records are `applied`, so the engine this node opens once elected maps
/// its graph instead of replaying it. One snapshot at a time; records
/// applied meanwhile are covered by the next. Returns when `stop` turns
/// true, after the snapshot being written, if any.
pub async fn keep_snapshot(
    store: Arc<GraphStore>,
    data_dir: PathBuf,
    mut applied: watch::Receiver<u64>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            changed = applied.changed() => if changed.is_err() { return },
            _ = stop.wait_for(|s| *s) => return,
        }
        let (store, dir) = (store.clone(), data_dir.clone());
        let started = std::time::Instant::now();
        match tokio::task::spawn_blocking(move || svc_engine::engine::write_snapshot_of(&store, &dir)).await {
            Ok(Ok(true)) => info!(
                ms = started.elapsed().as_millis() as u64,
                "snapshot of the followed graph store written"
            ),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => {
                warn!(error = %e, "cannot write the snapshot of the followed graph store; the engine replays it when this node leads")
            }
            Err(e) => warn!(error = %e, "the snapshot of the followed graph store was cancelled"),
        }
    }
}

/// A write on a node that does not lead is refused.
pub fn refuse_writes() -> Shipper {
    Arc::new(|_, _: &[u8]| Err("this node is a cluster standby: only the leader writes".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_reads_back_and_names_its_seq() {
        let name = object_name(42, 7);
        assert_eq!(name, "state/00000000000000000042-7");
        let bytes = reference(b"record", &name);
        let (len, digest, back) = parse_reference(42, &bytes).unwrap();
        assert_eq!((len, back.as_str()), (6, name.as_str()));
        assert_eq!(digest.as_slice(), Sha256::digest(b"record").as_slice());
        // Another seq's object, a truncated entry and arbitrary bytes are refused.
        assert!(parse_reference(43, &bytes).is_err());
        assert!(parse_reference(42, &bytes[..HEADER]).is_err());
        assert!(parse_reference(42, b"\x02whatever").is_err());
        assert_eq!(seq_of("prefix/state/00000000000000000042-7"), Some(42));
    }

    /// A record is taken only as its reference in etcd describes it: an
    /// object changed, cut short or missing in the shared store is an
    /// error naming it, never applied.
    #[tokio::test]
    async fn a_record_that_does_not_match_its_reference_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let shared = SharedStore::open(&format!("file://{}", dir.path().display())).unwrap();
        // No etcd is dialled: only the shared store is read here.
        let etcd = svc_cluster::Etcd::connect(&svc_cluster::EtcdConfig::new(["http://127.0.0.1:1"])).unwrap();
        let (diverged, _) = watch::channel(false);
        let replica = StateReplica::new(
            ReplicatedLog::new(&etcd, "t/state"),
            shared.clone(),
            "n",
            Arc::new(diverged),
        );
        let name = object_name(3, 1);
        let entry = Entry {
            seq: 3,
            bytes: reference(b"the record", &name),
        };

        shared.put(&name, b"the record".to_vec()).await.unwrap();
        assert_eq!(replica.fetch(&entry).await.unwrap(), b"the record");
        for changed in [&b"the recorD"[..], b"the reco", b""] {
            shared.put(&name, changed.to_vec()).await.unwrap();
            let e = replica.fetch(&entry).await.unwrap_err();
            assert!(format!("{e:#}").contains("does not match its reference"), "{e:#}");
        }
        shared.delete(&name).await.unwrap();
        let e = replica.fetch(&entry).await.unwrap_err();
        assert!(format!("{e:#}").contains(&name), "{e:#}");
    }
}
