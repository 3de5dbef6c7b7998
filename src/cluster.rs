//! This node's part in a cluster (`[cluster]`): it campaigns for the
//! leadership on a lease in etcd, follows who leads, and tells the rest of
//! the daemon whether it leads. Only the leader scans, runs sagas and
//! appends to the ledger (the tasks doing so run under [`while_leading`]);
//! a standby answers reads and refuses writes naming the leader
//! ([`AppState::set_standby`]).
//!
//! A leader whose lease is lost (etcd unreachable beyond the lease TTL, or
//! the lease expired) stops leading at once and campaigns again.

use std::time::Duration;

use anyhow::Context;
use svc_api::AppState;
use svc_api::state::Standby;
use svc_cluster::{Election, Etcd, EtcdConfig, LeaderInfo, Lease, LiveMembers, Membership, TlsFiles};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::config::ClusterSettings;

/// The pause after a failed campaign before the next.
const RETRY: Duration = Duration::from_secs(1);

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
pub fn join(settings: &ClusterSettings, state: &AppState) -> anyhow::Result<(Leading, Node)> {
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
    info!(node = %me.id, endpoints = ?settings.endpoints, "joining the cluster as a standby");

    let (leading_tx, leading) = watch::channel(false);
    let campaign = tokio::spawn(campaign(
        etcd,
        election.clone(),
        me.clone(),
        settings.lease_ttl,
        leading_tx,
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

/// Campaigns, leads until the leadership is lost, and campaigns again.
async fn campaign(etcd: Etcd, election: Election, me: LeaderInfo, ttl: Duration, leading: watch::Sender<bool>) {
    loop {
        let lease = match Lease::grant(&etcd, ttl).await {
            Ok(lease) => lease,
            Err(e) => {
                warn!(error = %e, "cannot get a lease from etcd; trying again");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let leadership = match election.campaign(&lease, &me).await {
            Ok(l) => l,
            Err(e) => {
                warn!(error = %e, "campaign for the leadership failed; trying again");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        info!(node = %me.id, revision = leadership.revision(), "this node leads the cluster");
        leading.send_replace(true);
        leadership.lost().await;
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
