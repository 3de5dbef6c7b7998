//! A standby that fell behind a compacted log catches up from a copy.
//!
//! The leader deletes from etcd and the shared store what every *live*
//! member has applied, so a node that was down meanwhile finds logs that
//! start past its files. It then asks the leader for a copy of that store:
//! it puts `<prefix>/resync/want/<node>/<store>` on its lease (`store` is
//! `graph` or `ledger`; the value is the seq it holds) and waits. The
//! leader, while it leads, answers each request: it writes the copy to the
//! shared store under `resync/<node>/<store>-<request revision>/`, in parts
//! of at most [`PART_BYTES`], and puts the manifest (the copy's seq, each
//! part's name, length and SHA-256, the request's revision) under
//! `<prefix>/resync/ready/<node>/<store>`, fenced by its leadership.
//!
//! The standby fetches each part, checks it against the manifest, and
//! installs the copy: the graph store's every table replaced in one
//! durable transaction; the ledger's events after its own imported, each
//! checked against the chain. It then deletes its request and follows the
//! log after the copy's seq. While it is behind it publishes its old seq,
//! which holds the leader's compaction back, so the log keeps every entry
//! after the copy. The leader deletes a manifest and its parts once their
//! request is gone (installed, or its node's lease lost).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use svc_cluster::{Etcd, KeyMap, Leadership, Lease, Mirror, ops};
use svc_engine::Engine;
use svc_engine::store::GraphStore;
use svc_engine::store::ledger::Ledger;
use tokio::sync::watch;
use tracing::{info, warn};

use super::shared::SharedStore;

/// The largest part of a copy in the shared store.
pub const PART_BYTES: usize = 32 << 20;
/// The events read from the ledger at a time while a copy is made.
const LEDGER_READ: usize = 4096;
/// The pause before a failed copy is asked for again.
const RETRY: Duration = Duration::from_secs(1);

/// Which store a copy is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Store {
    Graph,
    Ledger,
}

impl Store {
    fn name(self) -> &'static str {
        match self {
            Store::Graph => "graph",
            Store::Ledger => "ledger",
        }
    }

    fn parse(name: &str) -> Option<Store> {
        match name {
            "graph" => Some(Store::Graph),
            "ledger" => Some(Store::Ledger),
            _ => None,
        }
    }
}

/// What the leader puts under `ready/<node>/<store>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Manifest {
    /// The revision of the request it answers.
    request: i64,
    /// The seq the copy brings the store to.
    seq: u64,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Part {
    name: String,
    len: u64,
    /// Hex SHA-256 of the part.
    sha256: String,
}

/// The requests, copies and manifests of one cluster, for one node.
#[derive(Clone)]
pub struct Resync {
    etcd: Etcd,
    shared: SharedStore,
    /// `<prefix>/resync/`.
    dir: String,
    node: String,
}

impl Resync {
    pub fn new(etcd: &Etcd, shared: SharedStore, prefix: &str, node: &str) -> Resync {
        Resync {
            etcd: etcd.clone(),
            shared,
            dir: format!("{}/resync/", prefix.trim_end_matches('/')),
            node: node.to_owned(),
        }
    }

    fn want_key(&self, node: &str, store: Store) -> Vec<u8> {
        format!("{}want/{node}/{}", self.dir, store.name()).into_bytes()
    }

    fn ready_key(&self, node: &str, store: Store) -> Vec<u8> {
        format!("{}ready/{node}/{}", self.dir, store.name()).into_bytes()
    }

    /// As a standby behind the log: asks for a copy of the graph store,
    /// installs it and returns its seq; `None` when `stop` turned true
    /// before the leader answered.
    pub async fn graph(
        &self,
        store: &Arc<GraphStore>,
        lease: &Lease,
        stop: watch::Receiver<bool>,
    ) -> anyhow::Result<Option<u64>> {
        let held = super::follow::state_seq(store).await?;
        let Some(manifest) = self.ask(Store::Graph, held, lease, stop).await? else {
            return Ok(None);
        };
        let (seq, parts) = (manifest.seq, manifest.parts.len());
        let (this, store, manifest) = (self.clone(), store.clone(), manifest);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let mut records = manifest
                .parts
                .iter()
                .map(|part| runtime.block_on(this.fetch(part)).map_err(|e| format!("{e:#}")));
            store.install_copy(seq, &mut records)
        })
        .await
        .context("installing the graph store's copy was cancelled")?
        .context("cannot install the leader's copy of the graph store")?;
        self.done(Store::Graph).await;
        info!(seq, held, parts, "installed the leader's copy of the graph store");
        Ok(Some(seq))
    }

    /// As a standby behind the log: asks for the leader's ledger events
    /// after its own, imports them and returns its last seq then; `None`
    /// when `stop` turned true before the leader answered.
    pub async fn ledger(
        &self,
        ledger: &Arc<Ledger>,
        lease: &Lease,
        stop: watch::Receiver<bool>,
    ) -> anyhow::Result<Option<u64>> {
        let held = ledger.last_seq();
        let Some(manifest) = self.ask(Store::Ledger, held, lease, stop).await? else {
            return Ok(None);
        };
        for part in &manifest.parts {
            let events = decode_events(&self.fetch(part).await?)?;
            super::follow::import_events(ledger, events).await?;
        }
        let last = ledger.last_seq();
        if last < manifest.seq {
            bail!(
                "the leader's ledger copy ends at seq {last}, its manifest says {}",
                manifest.seq
            );
        }
        self.done(Store::Ledger).await;
        info!(seq = last, held, "imported the leader's copy of the ledger");
        Ok(Some(last))
    }

    /// Puts the request for `store` on `lease` and waits for the manifest
    /// answering it.
    async fn ask(
        &self,
        store: Store,
        held: u64,
        lease: &Lease,
        mut stop: watch::Receiver<bool>,
    ) -> anyhow::Result<Option<Manifest>> {
        let want = self.want_key(&self.node, store);
        let ready = self.ready_key(&self.node, store);
        // Watch first, so the answer cannot come before it is looked for.
        let answers = Mirror::start(&self.etcd, &ready);
        let mut answers = answers.subscribe();
        let request = self
            .etcd
            .put(want, held.to_string().into_bytes(), lease.id())
            .await
            .context("cannot ask the leader for a copy")?;
        info!(
            store = store.name(),
            held, "behind the compacted log: asked the leader for a copy"
        );
        loop {
            let answer = answers.borrow_and_update().get(&ready).map(|kv| kv.value.clone());
            if let Some(bytes) = answer {
                let manifest: Manifest = serde_json::from_slice(&bytes)
                    .with_context(|| format!("the leader's {} copy manifest does not parse", store.name()))?;
                if manifest.request >= request {
                    return Ok(Some(manifest));
                }
            }
            tokio::select! {
                changed = answers.changed() => if changed.is_err() {
                    bail!("the watch of the leader's answer stopped");
                },
                _ = stop.wait_for(|s| *s) => return Ok(None),
            }
        }
    }

    /// A part, checked against the manifest.
    async fn fetch(&self, part: &Part) -> anyhow::Result<Vec<u8>> {
        let bytes = self.shared.get(&part.name).await?;
        if bytes.len() as u64 != part.len || format!("{:x}", Sha256::digest(&bytes)) != part.sha256 {
            bail!("copy part {} does not match its manifest", part.name);
        }
        Ok(bytes)
    }

    /// Withdraws this node's request for `store` (the leader then deletes
    /// the copy).
    async fn done(&self, store: Store) {
        if let Err(e) = self.etcd.delete(self.want_key(&self.node, store)).await {
            warn!(error = %e, "cannot withdraw a request for a copy; it goes with the lease");
        }
    }

    /// As the leader, until dropped: answers every request for a copy and
    /// deletes the copies no request waits for any more.
    pub async fn serve(self, leadership: Arc<Leadership>, engine: Arc<Engine>) {
        let mirror = Mirror::start(&self.etcd, self.dir.as_bytes());
        let mut keys = mirror.subscribe();
        loop {
            let now = keys.borrow_and_update().clone();
            if let Err(e) = self.serve_once(&now, &leadership, &engine).await {
                warn!(
                    error = format!("{e:#}"),
                    "cannot answer a standby's request for a copy; trying again"
                );
                tokio::time::sleep(RETRY).await;
                continue;
            }
            if keys.changed().await.is_err() {
                return;
            }
        }
    }

    async fn serve_once(&self, keys: &KeyMap, leadership: &Leadership, engine: &Arc<Engine>) -> anyhow::Result<()> {
        let (want, ready) = self.requests(keys);
        // Copies no request waits for any more.
        for ((node, store), manifest) in &ready {
            if want
                .get(&(node.clone(), *store))
                .is_some_and(|(rev, _)| *rev == manifest.request)
            {
                continue;
            }
            self.etcd.delete(self.ready_key(node, *store)).await?;
            for name in self.shared.list(&parts_dir(node, *store, manifest.request)).await? {
                self.shared.delete(&name).await?;
            }
        }
        for ((node, store), (request, held)) in &want {
            if ready
                .get(&(node.clone(), *store))
                .is_some_and(|m| m.request == *request)
            {
                continue;
            }
            let started = std::time::Instant::now();
            let manifest = match store {
                Store::Graph => self.copy_graph(node, *request, engine).await?,
                Store::Ledger => self.copy_ledger(node, *request, *held, engine).await?,
            };
            let bytes = serde_json::to_vec(&manifest).context("cannot encode a copy's manifest")?;
            let put = ops::txn(
                vec![leadership.fence()],
                vec![ops::put(&self.ready_key(node, *store), bytes, 0)],
                Vec::new(),
            );
            if !self.etcd.txn(put).await?.succeeded {
                bail!("this node no longer leads the cluster");
            }
            info!(
                node = %node,
                store = store.name(),
                seq = manifest.seq,
                parts = manifest.parts.len(),
                ms = started.elapsed().as_millis() as u64,
                "a copy for a standby behind the log is ready"
            );
        }
        Ok(())
    }

    /// The requests (by node and store: revision and the seq held) and
    /// the manifests under the mirrored directory.
    #[allow(clippy::type_complexity, reason = "two maps by the same key")]
    fn requests(
        &self,
        keys: &KeyMap,
    ) -> (
        BTreeMap<(String, Store), (i64, u64)>,
        BTreeMap<(String, Store), Manifest>,
    ) {
        let (mut want, mut ready) = (BTreeMap::new(), BTreeMap::new());
        for (key, kv) in keys.iter() {
            let Some(rest) = key.strip_prefix(self.dir.as_bytes()) else {
                continue;
            };
            let rest = String::from_utf8_lossy(rest);
            let mut parts = rest.splitn(3, '/');
            let (Some(kind), Some(node), Some(store)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            let Some(store) = Store::parse(store) else { continue };
            let at = (node.to_owned(), store);
            match kind {
                "want" => {
                    let held = std::str::from_utf8(&kv.value)
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    want.insert(at, (kv.mod_revision, held));
                }
                "ready" => match serde_json::from_slice::<Manifest>(&kv.value) {
                    Ok(m) => {
                        ready.insert(at, m);
                    }
                    Err(e) => warn!(error = %e, node, "a copy's manifest does not parse; it is replaced"),
                },
                _ => {}
            }
        }
        (want, ready)
    }

    async fn put_part(
        &self,
        node: &str,
        store: Store,
        request: i64,
        bytes: Vec<u8>,
        parts: &mut Vec<Part>,
    ) -> anyhow::Result<()> {
        let name = format!("{}/{:06}", parts_dir(node, store, request), parts.len());
        let part = Part {
            name: name.clone(),
            len: bytes.len() as u64,
            sha256: format!("{:x}", Sha256::digest(&bytes)),
        };
        self.shared.put(&name, bytes).await?;
        parts.push(part);
        Ok(())
    }

    /// Writes a copy of the engine's whole graph store to the shared store.
    async fn copy_graph(&self, node: &str, request: i64, engine: &Arc<Engine>) -> anyhow::Result<Manifest> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(2);
        let engine = engine.clone();
        let copying = tokio::task::spawn_blocking(move || {
            engine.store().copy_out(PART_BYTES, &mut |record| {
                tx.blocking_send(record)
                    .map_err(|_| "the upload of the copy stopped".to_owned())
            })
        });
        let mut parts = Vec::new();
        let mut uploaded = Ok(());
        while let Some(record) = rx.recv().await {
            uploaded = self.put_part(node, Store::Graph, request, record, &mut parts).await;
            if uploaded.is_err() {
                break;
            }
        }
        drop(rx);
        let copied = copying.await.context("copying the graph store was cancelled")?;
        uploaded?;
        let seq = copied.context("cannot copy the graph store")?;
        Ok(Manifest { request, seq, parts })
    }

    /// Writes the engine's ledger events after `held` to the shared store.
    async fn copy_ledger(&self, node: &str, request: i64, held: u64, engine: &Arc<Engine>) -> anyhow::Result<Manifest> {
        let ledger = engine.ledger().clone();
        let through = ledger.last_seq();
        let mut parts = Vec::new();
        let (mut after, mut part) = (held, Vec::new());
        while after < through {
            let l = ledger.clone();
            let events = tokio::task::spawn_blocking(move || l.stored_after(after, LEDGER_READ))
                .await
                .context("reading the ledger was cancelled")??;
            let Some(&(last, _)) = events.last() else { break };
            for (seq, bytes) in events.into_iter().take_while(|(seq, _)| *seq <= through) {
                encode_event(&mut part, seq, &bytes);
                if part.len() >= PART_BYTES {
                    self.put_part(node, Store::Ledger, request, std::mem::take(&mut part), &mut parts)
                        .await?;
                }
            }
            after = last;
        }
        if !part.is_empty() {
            self.put_part(node, Store::Ledger, request, part, &mut parts).await?;
        }
        Ok(Manifest {
            request,
            seq: through,
            parts,
        })
    }
}

/// Where the parts of the copy answering `request` lie.
fn parts_dir(node: &str, store: Store, request: i64) -> String {
    format!("resync/{node}/{}-{request}", store.name())
}

/// A ledger part: events as (seq: u64 LE, length: u32 LE, stored bytes).
fn encode_event(out: &mut Vec<u8>, seq: u64, bytes: &[u8]) {
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn decode_events(mut part: &[u8]) -> anyhow::Result<Vec<(u64, Vec<u8>)>> {
    let mut out = Vec::new();
    while !part.is_empty() {
        let (Some(seq), Some(len)) = (part.get(..8), part.get(8..12)) else {
            bail!("a ledger copy part is cut short");
        };
        let seq = u64::from_le_bytes(seq.try_into().context("seq")?);
        let len = u32::from_le_bytes(len.try_into().context("length")?) as usize;
        let Some(bytes) = part.get(12..12 + len) else {
            bail!("a ledger copy part is cut short in event {seq}");
        };
        out.push((seq, bytes.to_vec()));
        part = &part[12 + len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_parts_read_back_and_cut_ones_are_refused() {
        let mut part = Vec::new();
        encode_event(&mut part, 7, b"seven");
        encode_event(&mut part, 8, b"");
        assert_eq!(decode_events(&part).unwrap(), [(7, b"seven".to_vec()), (8, Vec::new())]);
        for cut in [1, 11, 14] {
            assert!(decode_events(&part[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(Store::parse(Store::Graph.name()), Some(Store::Graph));
        assert_eq!(Store::parse("other"), None);
    }

    /// A part is taken only as the manifest describes it: one changed, cut
    /// short or missing in the shared store is an error naming it.
    #[tokio::test]
    async fn a_part_that_does_not_match_its_manifest_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let shared = SharedStore::open(&format!("file://{}", dir.path().display())).unwrap();
        // No etcd is dialled: only the shared store is read here.
        let etcd = Etcd::connect(&svc_cluster::EtcdConfig::new(["http://127.0.0.1:1"])).unwrap();
        let resync = Resync::new(&etcd, shared.clone(), "t", "n");
        let name = format!("{}/{:06}", parts_dir("n", Store::Graph, 7), 0);
        let part = Part {
            name: name.clone(),
            len: 8,
            sha256: format!("{:x}", Sha256::digest(b"the part")),
        };
        shared.put(&name, b"the part".to_vec()).await.unwrap();
        assert_eq!(resync.fetch(&part).await.unwrap(), b"the part");
        for changed in [&b"the parT"[..], b"the par", b""] {
            shared.put(&name, changed.to_vec()).await.unwrap();
            let e = resync.fetch(&part).await.unwrap_err();
            assert!(format!("{e:#}").contains("does not match its manifest"), "{e:#}");
        }
        shared.delete(&name).await.unwrap();
        let e = resync.fetch(&part).await.unwrap_err();
        assert!(format!("{e:#}").contains(&name), "{e:#}");
    }
}
