//! Following a replicated log into a local store, as a standby does for
//! the ledger and for the graph store, and the two stores' reads and
//! writes that following (and catching up from a copy) make.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use svc_cluster::{Entry, Lease, ReplicatedLog};
use svc_engine::store::GraphStore;
use svc_engine::store::ledger::Ledger;
use tokio::sync::watch;
use tracing::warn;

/// The pause before a failed copy is asked for again.
const RETRY: Duration = Duration::from_secs(1);

/// The seq of the last state record `store` wrote or applied.
pub async fn state_seq(store: &Arc<GraphStore>) -> anyhow::Result<u64> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || store.state_seq())
        .await
        .context("reading the state seq was cancelled")?
        .context("cannot read the graph store's state seq")
}

/// Imports the leader's `events` (seq and stored bytes, in order) that
/// `ledger` does not hold yet.
pub async fn import_events(ledger: &Arc<Ledger>, events: Vec<(u64, Vec<u8>)>) -> anyhow::Result<()> {
    let ledger = ledger.clone();
    tokio::task::spawn_blocking(move || {
        let last = ledger.last_seq();
        ledger.import(events.into_iter().filter(|(seq, _)| *seq > last).collect())
    })
    .await
    .context("ledger import was cancelled")?
    .context("cannot import the leader's ledger events")?;
    Ok(())
}

/// Follows `log` from the entry after `from` until `stop` turns true (or
/// the log cannot be followed): `apply` stores each batch's entries and
/// returns the seq then applied, which is published as `node`'s on `lease`
/// (so the leader may compact). When the log no longer holds the entries
/// this store needs, `copy` brings the store up to a copy of the leader's
/// (`resync.rs`) and returns its seq, `None` when `stop` turned true first;
/// following goes on from there. `what` names the store in warnings.
#[allow(
    clippy::too_many_arguments,
    reason = "the log, its follower's identity, and the two ways to catch up"
)]
pub async fn follow_log<F, Fut, C, CFut>(
    log: &ReplicatedLog,
    node: &str,
    lease: &Lease,
    from: u64,
    mut stop: watch::Receiver<bool>,
    what: &str,
    mut apply: F,
    mut copy: C,
) where
    F: FnMut(Vec<Entry>) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<u64>>,
    C: FnMut(watch::Receiver<bool>) -> CFut,
    CFut: std::future::Future<Output = anyhow::Result<Option<u64>>>,
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
            Err(e @ svc_cluster::Error::Compacted(_)) => {
                warn!(error = %e, what, "this standby is behind the compacted log; it asks the leader for a copy");
                // Until the copy is in, the seq published stays the old one,
                // which keeps the log from being compacted past the copy.
                let seq = loop {
                    match copy(stop.clone()).await {
                        Ok(Some(seq)) => break seq,
                        Ok(None) => return,
                        Err(e) => warn!(
                            error = format!("{e:#}"),
                            what, "cannot take the leader's copy; asking again"
                        ),
                    }
                    tokio::select! {
                        () = tokio::time::sleep(RETRY) => {}
                        _ = stop.wait_for(|s| *s) => return,
                    }
                };
                follower = log.follow(seq);
                Ok(seq)
            }
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
