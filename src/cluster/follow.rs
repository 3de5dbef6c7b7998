//! Following a replicated log into a local store, as a standby does for
//! the ledger and for the graph store.

use svc_cluster::{Entry, Lease, ReplicatedLog};
use tokio::sync::watch;
use tracing::warn;

/// Follows `log` from the entry after `from` until `stop` turns true (or
/// the log cannot be followed): `apply` stores each batch's entries and
/// returns the seq then applied, which is published as `node`'s on `lease`
/// (so the leader may compact). `what` names the store in warnings.
pub async fn follow_log<F, Fut>(
    log: &ReplicatedLog,
    node: &str,
    lease: &Lease,
    from: u64,
    mut stop: watch::Receiver<bool>,
    what: &str,
    mut apply: F,
) where
    F: FnMut(Vec<Entry>) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<u64>>,
{
    let publish = |seq: u64| async move {
        if let Err(e) = log.publish_applied(node, lease, seq).await {
            tracing::debug!(error = %e, what, "cannot publish the seq applied here");
        }
    };
    let mut follower = log.follow(from);
    publish(from).await;
    loop {
        let batch = tokio::select! {
            b = follower.next() => b,
            _ = stop.wait_for(|s| *s) => return,
        };
        let Some(batch) = batch else { return };
        let applied = match batch {
            Ok(batch) => apply(batch.entries).await,
            Err(e) => Err(anyhow::Error::new(e)),
        };
        match applied {
            Ok(seq) => publish(seq).await,
            Err(e) => {
                warn!(
                    error = format!("{e:#}"),
                    what, "this standby cannot follow the leader's store"
                );
                return;
            }
        }
    }
}
