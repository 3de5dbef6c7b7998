//! This node's part in a cluster (`[cluster]`): it campaigns for the
//! leadership on a lease in etcd, follows who leads, and tells the rest of
//! the daemon whether it leads. Only the leader scans, runs sagas and
//! appends to the ledger (the tasks doing so run under [`while_leading`]);
//! a standby answers reads and refuses writes naming the leader
//! ([`AppState::set_standby`]).
//!
//! Sagas lock their CRN in etcd too, on the leader's lease: a saga step
//! never runs twice across a failover, and a lock not acquired in 30 s is
//! a `LOCK_TIMEOUT`.
//!
//! A leader whose lease is lost (etcd unreachable beyond the lease TTL, or
//! the lease expired) stops leading at once and campaigns again.
//!
//! The ledger goes through etcd's replicated log: the leader's appends are
//! replicated before they commit (so before they are acknowledged), a
//! standby imports every batch into its own `events.redb`, and a node that
//! is elected first imports what it has not seen yet. A node that does not
//! lead refuses appends of its own.

use std::time::Duration;

use std::sync::Arc;

use anyhow::Context;
use svc_api::AppState;
use svc_api::state::Standby;
use svc_cluster::{
    Election, Entry, Etcd, EtcdConfig, LeaderInfo, Leadership, Lease, LiveMembers, LockGuard, Locks, Membership,
    ReplicatedLog, TlsFiles,
};
use svc_engine::Engine;
use svc_engine::remediation::SharedLocks;
use svc_engine::store::ledger::{Ledger, Replicator};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::config::ClusterSettings;

/// The pause after a failed campaign before the next.
const RETRY: Duration = Duration::from_secs(1);
/// How often the leader compacts the replicated ledger log (at least
/// twice the lease TTL).
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
            _tasks: Vec::new(),
        },
    )
}

/// The running membership; dropping it stops campaigning and following.
pub struct Node {
    /// Alone: the sender of a leadership that never changes.
    _alone: Option<watch::Sender<bool>>,
    _tasks: Vec<AbortOnDrop>,
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

/// Joins the cluster: starts as a standby, campaigns in the background.
pub fn join(settings: &ClusterSettings, state: &AppState, engine: Arc<Engine>) -> anyhow::Result<(Leading, Node)> {
    let ledger = engine.ledger().clone();
    let etcd = Etcd::connect(&etcd_config(settings)).context("cannot set up the etcd client of [cluster]")?;
    let election = Election::new(&etcd, &format!("{}/leader", settings.prefix));
    let me = LeaderInfo {
        id: settings.node_id.clone(),
        url: settings.advertise_url.clone(),
    };
    state.set_standby(Some(Standby {
        node_id: me.id.clone(),
        leader: None,
    }));
    ledger.set_replicator(Some(refuse_appends()));
    engine.set_shared_locks(Some(Arc::new(NotLeading)));
    info!(node = %me.id, endpoints = ?settings.endpoints, "joining the cluster as a standby");

    let (leading_tx, leading) = watch::channel(false);
    let replica = Replica {
        log: ReplicatedLog::new(&etcd, &format!("{}/ledger", settings.prefix)),
        ledger,
        node: settings.node_id.clone(),
        engine,
        etcd: etcd.clone(),
        locks: format!("{}/locks", settings.prefix),
    };
    let campaign = tokio::spawn(campaign(
        etcd,
        election.clone(),
        me.clone(),
        settings.lease_ttl,
        leading_tx,
        replica,
    ));
    let follow = tokio::spawn(follow(election, me, leading.clone(), state.clone()));
    Ok((
        leading,
        Node {
            _alone: None,
            _tasks: vec![AbortOnDrop(campaign), AbortOnDrop(follow)],
        },
    ))
}

/// The local ledger and etcd's replicated log of it.
#[derive(Clone)]
struct Replica {
    log: ReplicatedLog,
    ledger: Arc<Ledger>,
    /// This node's id, under which it publishes what it has applied.
    node: String,
    engine: Arc<Engine>,
    etcd: Etcd,
    /// The prefix of the per-CRN saga locks.
    locks: String,
}

/// A node that does not lead runs no saga.
struct NotLeading;

impl SharedLocks for NotLeading {
    fn lock(&self, _: &str, _: Duration) -> Result<Box<dyn std::any::Any + Send>, String> {
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

impl SharedLocks for EtcdLocks {
    fn lock(&self, crn: &str, wait: Duration) -> Result<Box<dyn std::any::Any + Send>, String> {
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

impl Replica {
    /// Imports `entries` the ledger does not hold yet, in order.
    async fn import(&self, entries: Vec<Entry>) -> anyhow::Result<()> {
        let ledger = self.ledger.clone();
        tokio::task::spawn_blocking(move || {
            let last = ledger.last_seq();
            let new: Vec<(u64, Vec<u8>)> = entries
                .into_iter()
                .filter(|e| e.seq > last)
                .map(|e| (e.seq, e.bytes))
                .collect();
            ledger.import(new).map(|_| ())
        })
        .await
        .context("ledger import was cancelled")?
        .context("cannot import the leader's ledger events")
    }

    /// Follows the log into the ledger until dropped, publishing on
    /// `lease` how far it has applied (so the leader may compact).
    async fn follow(self, lease: Lease) {
        let mut follower = self.log.follow(self.ledger.last_seq());
        while let Some(batch) = follower.next().await {
            let result = match batch {
                Ok(batch) => self.import(batch.entries).await,
                Err(e) => Err(anyhow::Error::new(e)),
            };
            if let Err(e) = result {
                warn!(
                    error = format!("{e:#}"),
                    "this standby cannot follow the leader's ledger"
                );
                return;
            }
            self.publish_applied(&lease).await;
        }
    }

    async fn publish_applied(&self, lease: &Lease) {
        if let Err(e) = self
            .log
            .publish_applied(&self.node, lease, self.ledger.last_seq())
            .await
        {
            tracing::debug!(error = %e, "cannot publish the ledger seq applied here");
        }
    }

    /// As the leader, every `every`: deletes from etcd the batches every
    /// live member has applied.
    async fn compact(self, lease: Lease, leadership: Arc<Leadership>, every: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.publish_applied(&lease).await;
            if let Err(e) = self.log.compact(&leadership).await {
                tracing::debug!(error = %e, "cannot compact the replicated ledger log");
            }
        }
    }

    /// As the new leader: imports what the log holds beyond this ledger,
    /// starts an empty log after this ledger's events, then replicates
    /// every append through the log.
    async fn take_over(&self, leadership: &Arc<Leadership>) -> anyhow::Result<()> {
        let tail = self.log.read_after(self.ledger.last_seq()).await?;
        self.import(tail).await?;
        let last = self.ledger.last_seq();
        if last > 0 {
            self.log.start_at(leadership, last).await?;
        }
        self.engine.set_shared_locks(Some(Arc::new(EtcdLocks {
            locks: Locks::new(&self.etcd, &self.locks, leadership.lease()),
            runtime: tokio::runtime::Handle::current(),
        })));
        let (log, lead) = (self.log.clone(), leadership.clone());
        let runtime = tokio::runtime::Handle::current();
        self.ledger
            .set_replicator(Some(Arc::new(move |events: &[(u64, Vec<u8>)]| {
                let entries: Vec<Entry> = events
                    .iter()
                    .map(|(seq, bytes)| Entry {
                        seq: *seq,
                        bytes: bytes.clone(),
                    })
                    .collect();
                // The ledger's writer thread is not a runtime thread: it may block.
                runtime.block_on(log.append(&lead, &entries)).map_err(|e| e.to_string())
            })));
        Ok(())
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

/// Campaigns, leads until the leadership is lost, and campaigns again;
/// follows the leader's ledger while it does not lead.
async fn campaign(
    etcd: Etcd,
    election: Election,
    me: LeaderInfo,
    ttl: Duration,
    leading: watch::Sender<bool>,
    replica: Replica,
) {
    loop {
        let lease = match Lease::grant(&etcd, ttl).await {
            Ok(lease) => lease,
            Err(e) => {
                warn!(error = %e, "cannot get a lease from etcd; trying again");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let following = AbortOnDrop(tokio::spawn(replica.clone().follow(lease.clone())));
        let leadership = match election.campaign(&lease, &me).await {
            Ok(l) => l,
            Err(e) => {
                warn!(error = %e, "campaign for the leadership failed; trying again");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        drop(following);
        let leadership = Arc::new(leadership);
        if let Err(e) = replica.take_over(&leadership).await {
            warn!(error = format!("{e:#}"), "cannot take the ledger over; resigning");
            replica.ledger.set_replicator(Some(refuse_appends()));
            replica.engine.set_shared_locks(Some(Arc::new(NotLeading)));
            if let Ok(l) = Arc::try_unwrap(leadership) {
                let _ = l.resign().await;
            }
            let _ = lease.revoke().await;
            tokio::time::sleep(RETRY).await;
            continue;
        }
        info!(node = %me.id, revision = leadership.revision(), "this node leads the cluster");
        leading.send_replace(true);
        let compacting = AbortOnDrop(tokio::spawn(replica.clone().compact(
            lease.clone(),
            leadership.clone(),
            COMPACT_EVERY.max(ttl * 2),
        )));
        leadership.lost().await;
        drop(compacting);
        replica.ledger.set_replicator(Some(refuse_appends()));
        replica.engine.set_shared_locks(Some(Arc::new(NotLeading)));
        leading.send_replace(false);
        warn!(node = %me.id, "this node lost the leadership; it stops acting and campaigns again");
        // The old lease may still live (the key was deleted): end it, so
        // nothing else hangs on it.
        let _ = lease.revoke().await;
    }
}

/// Keeps the API's view (standby or not, and of which leader) current.
async fn follow(election: Election, me: LeaderInfo, mut leading: Leading, state: AppState) {
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
