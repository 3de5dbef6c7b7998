//! This node's part in a cluster (`[cluster]`): it campaigns for the
//! leadership on a lease in etcd, follows who leads, and tells the rest of
//! the daemon whether it leads.
//!
//! A node starts as a standby ([`standby`]): it opens no engine, follows
//! the leader's ledger and graph store into its own files, and its API
//! refuses requests, naming the leader ([`AppState::set_standby`]). Once
//! elected, it applies what the cluster acknowledged and it has not seen,
//! opens its engine on the caught-up files, and leads ([`lead`]): only the
//! leader scans, runs sagas, appends to the ledger and writes its graph
//! store (the tasks doing so run under [`while_leading`]).
//!
//! Both stores go through etcd's replicated logs before they commit (so
//! before anything is acknowledged): the ledger's events as they are, the
//! graph store's write transactions as records in the shared object store
//! ([`state`]). Sagas lock their CRN in etcd too, on the leader's lease: a
//! saga step never runs twice across a failover, and a lock not acquired
//! in 30 s is a `LOCK_TIMEOUT`. The named API tokens are the cluster's,
//! under one key in etcd ([`tokens`]).
//!
//! A leader whose lease is lost (etcd unreachable beyond the lease TTL, or
//! the lease expired) stops acting at once and campaigns again; re-elected
//! with nothing written meanwhile, it acts again. Once another node leads,
//! or wrote, its engine no longer holds the cluster's state: it starts
//! again as a standby ([`Node::demoted`]).

mod follow;
mod resync;
mod shared;
pub mod state;
mod tokens;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use svc_api::AppState;
use svc_api::state::Standby;
use svc_cluster::{
    Election, Entry, Etcd, EtcdConfig, LeaderInfo, Leadership, Lease, LiveMembers, LockGuard, Locks, Membership,
    ReplicatedLog, TlsFiles,
};
use svc_engine::Engine;
use svc_engine::clock::SystemClock;
use svc_engine::engine::Replication;
use svc_engine::engine::{EVENTS_FILE, GRAPH_FILE};
use svc_engine::remediation::{SharedGuard, SharedLocks};
use svc_engine::store::GraphStore;
use svc_engine::store::ledger::{Ledger, Replicator};
use tokio::sync::watch;
use tracing::{info, warn};

use self::resync::Resync;
use self::shared::SharedStore;
use self::state::StateReplica;
use crate::config::ClusterSettings;

/// The pause after a failed campaign before the next.
const RETRY: Duration = Duration::from_secs(1);
/// How often the leader compacts the replicated logs (at least twice the
/// lease TTL).
const COMPACT_EVERY: Duration = Duration::from_secs(3);

/// Whether this node leads, as it changes.
pub type Leading = watch::Receiver<bool>;

/// A node alone: it always leads.
pub fn alone() -> (Leading, Node) {
    let (tx, rx) = watch::channel(true);
    (
        rx,
        Node {
            _alone: Some(tx),
            demoted: None,
            _tasks: Vec::new(),
        },
    )
}

/// The running membership; dropping it stops campaigning and following.
pub struct Node {
    /// Alone: the sender of a leadership that never changes.
    _alone: Option<watch::Sender<bool>>,
    /// In a cluster: turns true once this node must start again as a standby.
    demoted: Option<watch::Receiver<bool>>,
    _tasks: Vec<AbortOnDrop>,
}

impl Node {
    /// Resolves once another node leads (or wrote) and this one's engine
    /// no longer holds the cluster's state; never for a node alone.
    pub async fn demoted(&mut self) {
        match &mut self.demoted {
            Some(rx) => {
                if rx.wait_for(|d| *d).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending().await,
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// etcd's client configuration from `[cluster]`.
fn etcd_config(settings: &ClusterSettings) -> EtcdConfig {
    let mut config = EtcdConfig::new(settings.endpoints.clone());
    config.tls = settings.tls.as_ref().map(|t| TlsFiles {
        ca: t.ca.clone(),
        cert: t.cert.clone(),
        key: t.key.clone(),
        server_name: t.server_name.clone(),
    });
    config
}

/// A node elected leader, with its stores caught up with the cluster's:
/// what [`lead`] needs once the engine is open on them.
pub struct Elected {
    etcd: Etcd,
    election: Election,
    me: LeaderInfo,
    ttl: Duration,
    lease: Lease,
    leadership: Arc<Leadership>,
    ledger_log: LedgerLog,
    state: StateReplica,
    locks: String,
    /// The cluster's etcd prefix.
    prefix: String,
    /// The API's state: its token store follows the cluster's.
    api: AppState,
    /// Copies for standbys behind the compacted logs.
    resync: Resync,
    leading: watch::Sender<bool>,
    /// Turned true when a log holds what this node's stores do not.
    diverged: Arc<watch::Sender<bool>>,
    tasks: Vec<AbortOnDrop>,
}

/// Joins the cluster as a standby: follows the leader's ledger and graph
/// store into this node's files (its API refuses requests, naming the
/// leader) and campaigns, until elected. Returns with both files caught up
/// with everything the cluster acknowledged and closed again, for the
/// engine to open.
pub async fn standby(
    settings: &ClusterSettings,
    state: &AppState,
    data_dir: &Path,
    session_id: &str,
) -> anyhow::Result<Elected> {
    let etcd = Etcd::connect(&etcd_config(settings)).context("cannot set up the etcd client of [cluster]")?;
    let shared = SharedStore::open(&settings.shared_store)?;
    let election = Election::new(&etcd, &format!("{}/leader", settings.prefix));
    let me = LeaderInfo {
        id: settings.node_id.clone(),
        url: settings.advertise_url.clone(),
    };
    state.set_standby(Some(Standby {
        node_id: me.id.clone(),
        leader: None,
    }));
    info!(node = %me.id, endpoints = ?settings.endpoints, "joining the cluster as a standby");
    state.inner.auth.tokens.set_publisher(Some(tokens::refuse()));
    let shared_tokens = AbortOnDrop(tokio::spawn(tokens::follow(
        etcd.clone(),
        settings.prefix.clone(),
        state.clone(),
    )));
    let (leading_tx, leading) = watch::channel(false);
    let view = AbortOnDrop(tokio::spawn(follow_leader(
        election.clone(),
        me.clone(),
        leading,
        state.clone(),
    )));
    let ledger_log = LedgerLog {
        log: ReplicatedLog::new(&etcd, &format!("{}/ledger", settings.prefix)),
        node: settings.node_id.clone(),
    };
    let diverged = Arc::new(watch::channel(false).0);
    let resync = Resync::new(&etcd, shared.clone(), &settings.prefix, &settings.node_id);
    let replica = StateReplica::new(
        ReplicatedLog::new(&etcd, &format!("{}/state", settings.prefix)),
        shared,
        &settings.node_id,
        diverged.clone(),
    );

    let (ledger_path, graph_path) = (data_dir.join(EVENTS_FILE), data_dir.join(GRAPH_FILE));
    let sid = session_id.to_owned();
    let (ledger, store) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let ledger = Ledger::open(&ledger_path, &sid, Arc::new(SystemClock::default()))
            .with_context(|| format!("cannot open {}", ledger_path.display()))?;
        let store = GraphStore::open(&graph_path).with_context(|| format!("cannot open {}", graph_path.display()))?;
        Ok((Arc::new(ledger), Arc::new(store)))
    })
    .await
    .context("opening the stores was cancelled")??;
    ledger.set_replicator(Some(refuse_appends()));
    store.set_shipper(Some(state::refuse_writes()));

    let (lease, leadership) = loop {
        let lease = match Lease::grant(&etcd, settings.lease_ttl).await {
            Ok(lease) => lease,
            Err(e) => {
                warn!(error = %e, "cannot get a lease from etcd; trying again");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let (stop, stopped) = watch::channel(false);
        let (applied, applied_rx) = watch::channel(0);
        let following = [
            tokio::spawn(
                ledger_log
                    .clone()
                    .follow(ledger.clone(), lease.clone(), stopped.clone(), resync.clone()),
            ),
            tokio::spawn(replica.clone().follow(
                store.clone(),
                lease.clone(),
                applied,
                stopped.clone(),
                resync.clone(),
            )),
            tokio::spawn(state::keep_snapshot(
                store.clone(),
                data_dir.to_owned(),
                applied_rx,
                stopped,
            )),
        ];
        let campaign = election.campaign(&lease, &me).await;
        // The followers finish what they apply (and the snapshot being
        // written) and let the files go.
        stop.send_replace(true);
        for task in following {
            let _ = task.await;
        }
        let leadership = match campaign {
            Ok(l) => Arc::new(l),
            Err(e) => {
                warn!(error = %e, "campaign for the leadership failed; trying again");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        // Everything the cluster acknowledged is applied before this node
        // acts on it.
        // The logs go on from the stores' last seqs (when they are empty).
        let caught_up = async {
            ledger_log
                .import(&ledger, ledger_log.log.read_after(ledger.last_seq()).await?)
                .await?;
            replica.catch_up(&store).await?;
            let last = ledger.last_seq();
            if last > 0 {
                ledger_log.log.start_at(&leadership, last).await?;
            }
            let seq = follow::state_seq(&store).await?;
            if seq > 0 {
                replica.log().start_at(&leadership, seq).await?;
            }
            anyhow::Ok(())
        };
        if let Err(e) = caught_up.await {
            warn!(error = format!("{e:#}"), "cannot catch up with the cluster; resigning");
            if let Ok(l) = Arc::try_unwrap(leadership) {
                let _ = l.resign().await;
            }
            let _ = lease.revoke().await;
            tokio::time::sleep(RETRY).await;
            continue;
        }
        break (lease, leadership);
    };
    // The engine opens both files again: these handles close them first.
    drop(store);
    drop(ledger);
    info!(node = %me.id, revision = leadership.revision(), "elected; opening the engine on the caught-up stores");
    Ok(Elected {
        etcd,
        election,
        me,
        ttl: settings.lease_ttl,
        lease,
        leadership,
        ledger_log,
        state: replica,
        locks: format!("{}/locks", settings.prefix),
        prefix: settings.prefix.clone(),
        api: state.clone(),
        resync,
        leading: leading_tx,
        diverged,
        tasks: vec![view, shared_tokens],
    })
}

impl Elected {
    /// The replication the engine opens its stores with: whatever opening
    /// writes already goes through the logs.
    pub fn replication(&self) -> Replication {
        let runtime = tokio::runtime::Handle::current();
        Replication {
            shipper: Some(self.state.shipper(self.leadership.clone(), runtime.clone())),
            replicator: Some(ledger_replicator(
                self.ledger_log.log.clone(),
                self.leadership.clone(),
                runtime,
                self.diverged.clone(),
            )),
        }
    }
}

/// Appends each ledger transaction's events to the replicated log before
/// it commits; turns `diverged` true when the log is ahead of the ledger.
fn ledger_replicator(
    log: ReplicatedLog,
    leadership: Arc<Leadership>,
    runtime: tokio::runtime::Handle,
    diverged: Arc<watch::Sender<bool>>,
) -> Replicator {
    Arc::new(move |events: &[(u64, Vec<u8>)]| {
        let entries: Vec<Entry> = events
            .iter()
            .map(|(seq, bytes)| Entry {
                seq: *seq,
                bytes: bytes.clone(),
            })
            .collect();
        // The ledger's writer thread is not a runtime thread: it may block.
        let appended = runtime.block_on(log.append(&leadership, &entries));
        if let Err(svc_cluster::Error::LogConflict { .. }) = &appended {
            diverged.send_replace(true);
        }
        appended.map_err(|e| e.to_string())
    })
}

/// Leads with `engine` (opened on the caught-up stores): replicates its
/// ledger appends and graph store writes, locks sagas' CRNs in etcd, and
/// acts while the leadership holds. A lost leadership stops the acting;
/// the node campaigns again, and acts again when re-elected with nothing
/// written meanwhile. When another node was elected (or wrote) meanwhile,
/// this one's engine no longer holds the cluster's state: [`Node::demoted`]
/// says so, and the daemon starts again as a standby.
pub fn lead(elected: Elected, engine: Arc<Engine>) -> (Leading, Node) {
    let leading = elected.leading.subscribe();
    let (demoted_tx, demoted) = watch::channel(false);
    let mut tasks = elected.tasks;
    let lead = Lead {
        etcd: elected.etcd,
        election: elected.election,
        me: elected.me,
        ttl: elected.ttl,
        ledger_log: elected.ledger_log,
        state: elected.state,
        locks: elected.locks,
        prefix: elected.prefix,
        api: elected.api,
        resync: elected.resync,
        engine,
        leading: elected.leading,
        diverged: elected.diverged,
        demoted: demoted_tx,
    };
    tasks.push(AbortOnDrop(tokio::spawn(lead.run(elected.lease, elected.leadership))));
    (
        leading,
        Node {
            _alone: None,
            demoted: Some(demoted),
            _tasks: tasks,
        },
    )
}

/// The ledger's replicated log.
#[derive(Clone)]
struct LedgerLog {
    log: ReplicatedLog,
    /// This node's id, under which it publishes what it has applied.
    node: String,
}

/// What the leader acts with.
struct Lead {
    etcd: Etcd,
    election: Election,
    me: LeaderInfo,
    ttl: Duration,
    ledger_log: LedgerLog,
    state: StateReplica,
    locks: String,
    prefix: String,
    api: AppState,
    resync: Resync,
    engine: Arc<Engine>,
    leading: watch::Sender<bool>,
    diverged: Arc<watch::Sender<bool>>,
    demoted: watch::Sender<bool>,
}

/// A node that does not lead runs no saga.
struct NotLeading;

impl SharedLocks for NotLeading {
    fn lock(&self, _: &str, _: Duration) -> Result<Box<dyn SharedGuard>, String> {
        Err("this node does not lead the cluster".to_owned())
    }
}

/// The leader's per-CRN saga locks in etcd, on its lease.
struct EtcdLocks {
    locks: Locks,
    runtime: tokio::runtime::Handle,
}

/// A held etcd lock, released (in the background) when dropped.
struct Held(Option<LockGuard>, tokio::runtime::Handle);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(guard) = self.0.take() {
            self.1.spawn(async move {
                if let Err(e) = guard.release().await {
                    warn!(error = %e, "cannot release a saga lock; it goes with the lease");
                }
            });
        }
    }
}

impl SharedGuard for Held {
    fn check(&self) -> Result<(), String> {
        let Some(guard) = &self.0 else {
            return Err("the lock was released".to_owned());
        };
        // Called from the saga's blocking thread.
        self.1.block_on(guard.check()).map_err(|e| e.to_string())
    }
}

impl SharedLocks for EtcdLocks {
    fn lock(&self, crn: &str, wait: Duration) -> Result<Box<dyn SharedGuard>, String> {
        // Sagas run on blocking threads, never on the runtime's own.
        let guard = self
            .runtime
            .block_on(self.locks.acquire(crn, wait))
            .map_err(|e| e.to_string())?;
        Ok(Box::new(Held(Some(guard), self.runtime.clone())))
    }
}

/// What a node that does not lead answers its own appends with.
fn refuse_appends() -> Replicator {
    Arc::new(|_: &[(u64, Vec<u8>)]| Err("this node is a cluster standby: only the leader appends".to_owned()))
}

impl LedgerLog {
    /// Imports `entries` the ledger does not hold yet, in order.
    async fn import(&self, ledger: &Arc<Ledger>, entries: Vec<Entry>) -> anyhow::Result<()> {
        follow::import_events(ledger, entries.into_iter().map(|e| (e.seq, e.bytes)).collect()).await
    }

    /// Follows the log into the ledger until `stop` turns true, publishing
    /// on `lease` how far it has applied (so the leader may compact);
    /// behind the compacted log, it imports the leader's events through
    /// `resync`.
    async fn follow(self, ledger: Arc<Ledger>, lease: Lease, stop: watch::Receiver<bool>, resync: Resync) {
        let from = ledger.last_seq();
        let this = self.clone();
        let into = ledger.clone();
        let apply = move |entries: Vec<Entry>| {
            let (this, ledger) = (this.clone(), into.clone());
            async move {
                this.import(&ledger, entries).await?;
                Ok(ledger.last_seq())
            }
        };
        let held = lease.clone();
        let copy = move |stop: watch::Receiver<bool>| {
            let (resync, ledger, lease) = (resync.clone(), ledger.clone(), held.clone());
            async move { resync.ledger(&ledger, &lease, stop).await }
        };
        follow::follow_log(&self.log, &self.node, &lease, from, stop, "ledger", apply, copy).await;
    }

    async fn publish_applied(&self, lease: &Lease, seq: u64) {
        if let Err(e) = self.log.publish_applied(&self.node, lease, seq).await {
            tracing::debug!(error = %e, "cannot publish the ledger seq applied here");
        }
    }
}

/// The seq of the last state record `engine`'s graph store wrote or applied.
async fn engine_state_seq(engine: &Arc<Engine>) -> anyhow::Result<u64> {
    let engine = engine.clone();
    Ok(tokio::task::spawn_blocking(move || engine.state_seq())
        .await
        .context("reading the state seq was cancelled")??)
}

impl Lead {
    /// Acts while `leadership` holds; campaigns again when it is lost.
    async fn run(self, mut lease: Lease, mut leadership: Arc<Leadership>) {
        loop {
            if let Err(e) = self.take_over(&leadership).await {
                warn!(
                    error = format!("{e:#}"),
                    "cannot take the cluster's logs over; resigning"
                );
                self.stop_acting();
                if let Ok(l) = Arc::try_unwrap(leadership) {
                    let _ = l.resign().await;
                }
                let _ = lease.revoke().await;
                tokio::time::sleep(RETRY).await;
            } else {
                info!(node = %self.me.id, revision = leadership.revision(), "this node leads the cluster");
                self.leading.send_replace(true);
                let compacting = AbortOnDrop(tokio::spawn(compact(
                    self.ledger_log.clone(),
                    self.state.clone(),
                    lease.clone(),
                    leadership.clone(),
                    self.engine.clone(),
                    COMPACT_EVERY.max(self.ttl * 2),
                )));
                let copying = AbortOnDrop(tokio::spawn(
                    self.resync.clone().serve(leadership.clone(), self.engine.clone()),
                ));
                let mut diverged = self.diverged.subscribe();
                let lost = tokio::select! {
                    () = leadership.lost() => true,
                    _ = diverged.wait_for(|d| *d) => false,
                };
                drop(compacting);
                drop(copying);
                self.stop_acting();
                if !lost {
                    // A local commit failed after the logs took it: the
                    // cluster holds a write this node's stores do not.
                    warn!(node = %self.me.id, "a replicated log is ahead of this node's stores: it resigns and starts again as a standby");
                    if let Ok(l) = Arc::try_unwrap(leadership) {
                        let _ = l.resign().await;
                    }
                    let _ = lease.revoke().await;
                    self.demoted.send_replace(true);
                    return;
                }
                warn!(node = %self.me.id, "this node lost the leadership; it stops acting and campaigns again");
                // The old lease may still live (the key was deleted): end
                // it, so nothing else hangs on it.
                let _ = lease.revoke().await;
            }
            let Some((l, elected)) = self.campaign_again().await else {
                warn!(node = %self.me.id, "another node leads the cluster: this one starts again as a standby");
                self.demoted.send_replace(true);
                return;
            };
            (lease, leadership) = (l, elected);
            // Re-elected: acting goes on only if no one wrote meanwhile.
            match self.written_elsewhere().await {
                Ok(false) => {}
                Ok(true) => {
                    warn!(node = %self.me.id, "the cluster's state moved on while this node did not lead: it starts again as a standby");
                    if let Ok(l) = Arc::try_unwrap(leadership) {
                        let _ = l.resign().await;
                    }
                    let _ = lease.revoke().await;
                    self.demoted.send_replace(true);
                    return;
                }
                Err(e) => warn!(
                    error = format!("{e:#}"),
                    "cannot compare the logs with this node's stores"
                ),
            }
        }
    }

    /// Campaigns until elected (`Some`), or until another node is seen
    /// leading (`None`).
    async fn campaign_again(&self) -> Option<(Lease, Arc<Leadership>)> {
        let observer = self.election.observe();
        let mut leader = observer.subscribe();
        loop {
            let lease = loop {
                match Lease::grant(&self.etcd, self.ttl).await {
                    Ok(lease) => break lease,
                    Err(e) => {
                        warn!(error = %e, "cannot get a lease from etcd; trying again");
                        tokio::time::sleep(RETRY).await;
                    }
                }
            };
            let someone_else = async {
                loop {
                    if leader.borrow_and_update().as_ref().is_some_and(|l| l.id != self.me.id) {
                        return;
                    }
                    if leader.changed().await.is_err() {
                        return std::future::pending().await;
                    }
                }
            };
            tokio::select! {
                campaign = self.election.campaign(&lease, &self.me) => match campaign {
                    Ok(l) => return Some((lease, Arc::new(l))),
                    Err(e) => {
                        warn!(error = %e, "campaign for the leadership failed; trying again");
                        let _ = lease.revoke().await;
                        tokio::time::sleep(RETRY).await;
                    }
                },
                () = someone_else => {
                    let _ = lease.revoke().await;
                    return None;
                }
            }
        }
    }

    /// Whether either log holds more than this node's stores.
    async fn written_elsewhere(&self) -> anyhow::Result<bool> {
        let ledger = self.ledger_log.log.head().await? > self.engine.ledger().last_seq();
        let seq = engine_state_seq(&self.engine).await?;
        Ok(ledger || self.state.log().head().await? > seq)
    }

    /// Starts both logs after this node's stores (when they are empty),
    /// replicates every ledger append and graph store write through them,
    /// and shares token changes.
    async fn take_over(&self, leadership: &Arc<Leadership>) -> anyhow::Result<()> {
        let ledger = self.engine.ledger().clone();
        let last = ledger.last_seq();
        if last > 0 {
            self.ledger_log.log.start_at(leadership, last).await?;
        }
        let seq = engine_state_seq(&self.engine).await?;
        if seq > 0 {
            self.state.log().start_at(leadership, seq).await?;
        }
        let head = self.state.log().head().await?;
        if head != seq {
            bail!("the replicated graph store log is at {head}, this node's graph store at {seq}");
        }
        tokens::take_over(&self.etcd, &self.prefix, leadership, &self.api).await?;
        self.api.inner.auth.tokens.set_publisher(Some(tokens::publisher(
            self.etcd.clone(),
            &self.prefix,
            leadership.clone(),
            tokio::runtime::Handle::current(),
        )));
        self.engine.set_shared_locks(Some(Arc::new(EtcdLocks {
            locks: Locks::new(&self.etcd, &self.locks, leadership.lease()),
            runtime: tokio::runtime::Handle::current(),
        })));
        let runtime = tokio::runtime::Handle::current();
        self.engine
            .set_state_shipper(Some(self.state.shipper(leadership.clone(), runtime.clone())));
        ledger.set_replicator(Some(ledger_replicator(
            self.ledger_log.log.clone(),
            leadership.clone(),
            runtime,
            self.diverged.clone(),
        )));
        Ok(())
    }

    /// Refuses ledger appends, graph store writes, saga locks and token
    /// changes.
    fn stop_acting(&self) {
        self.engine.ledger().set_replicator(Some(refuse_appends()));
        self.engine.set_state_shipper(Some(state::refuse_writes()));
        self.engine.set_shared_locks(Some(Arc::new(NotLeading)));
        self.api.inner.auth.tokens.set_publisher(Some(tokens::refuse()));
        self.leading.send_replace(false);
    }
}

/// As the leader, every `every`: deletes from etcd (and the shared store)
/// what every live member has applied of both logs.
async fn compact(
    ledger_log: LedgerLog,
    state: StateReplica,
    lease: Lease,
    leadership: Arc<Leadership>,
    engine: Arc<Engine>,
    every: Duration,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        ledger_log.publish_applied(&lease, engine.ledger().last_seq()).await;
        if let Err(e) = ledger_log.log.compact(&leadership).await {
            tracing::debug!(error = %e, "cannot compact the replicated ledger log");
        }
        if let Ok(seq) = engine_state_seq(&engine).await {
            state.publish_applied(&lease, seq).await;
        }
        if let Err(e) = state.compact(&leadership).await {
            tracing::debug!(
                error = format!("{e:#}"),
                "cannot compact the replicated graph store log"
            );
        }
    }
}

/// The etcd prefix under which scan workers register, below a cluster's
/// prefix.
pub fn members_prefix(cluster_prefix: &str) -> String {
    format!("{}/workers", cluster_prefix.trim_end_matches('/'))
}

/// The scan workers registered in the cluster's etcd (`svc worker
/// --join`), as they come and go.
pub fn live_workers(settings: &ClusterSettings) -> anyhow::Result<LiveMembers> {
    let etcd = Etcd::connect(&etcd_config(settings)).context("cannot set up the etcd client of [cluster]")?;
    let membership = Membership::new(&etcd, &members_prefix(&settings.prefix));
    Ok(membership.watch())
}

/// Keeps the API's view (standby or not, and of which leader) current.
async fn follow_leader(election: Election, me: LeaderInfo, mut leading: Leading, state: AppState) {
    let observer = election.observe();
    let mut leader = observer.subscribe();
    loop {
        let standby = if *leading.borrow_and_update() {
            None
        } else {
            let known = leader.borrow_and_update().clone().filter(|l| l.id != me.id);
            Some(Standby {
                node_id: me.id.clone(),
                leader: known.map(|l| (l.id, l.url)),
            })
        };
        state.set_standby(standby);
        let open = tokio::select! {
            r = leading.changed() => r.is_ok(),
            r = leader.changed() => r.is_ok(),
        };
        if !open {
            return;
        }
    }
}

/// Runs `task` while this node leads: starts it when leadership comes,
/// drops it (at its next await) when leadership goes.
pub async fn while_leading<F, Fut>(mut leading: Leading, task: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    loop {
        if leading.wait_for(|l| *l).await.is_err() {
            return std::future::pending::<()>().await;
        }
        tokio::select! {
            () = task() => return,
            _ = leading.wait_for(|l| !*l) => {}
        }
    }
}
