//! Retention: the daemon's task that prunes the ledger's events older than
//! `ledger.retention` and the graph history older than
//! `graph.history_retention`, at start, every [`RETENTION_CHECK`] and
//! whenever `PUT /api/v1/config` changes either setting. The graph's
//! history is also pruned behind each scan's commit (the engine does it).
//!
//! The ledger is pruned through the same path as `POST
//! /api/v1/history/prune`: one `HISTORY_PRUNED` record by the actor
//! [`ACTOR`], the setting in its message and payload, the chain verifiable
//! from the first event kept. Prunes run one at a time on the ledger's
//! writer, so this never overlaps an operator's. With `sau.audit_bucket`
//! set, an event not yet exported stays, as it does for a manual prune.

use std::sync::Arc;
use std::time::Duration;

use svc_api::export::Exporter;
use svc_engine::Engine;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::config::Retention;

/// How often the windows are applied while nothing changes them.
pub const RETENTION_CHECK: Duration = Duration::from_secs(3600);

/// The ledger actor of the prunes retention makes.
pub const ACTOR: &str = "retention";

/// Where the daemon reports the task stuck (`/readyz`).
pub const PART: &str = "retention";

/// Applies the windows at start, every [`RETENTION_CHECK`] and whenever
/// `settings` changes. A failure is logged and tried again at the next turn.
pub async fn enforce(
    engine: Arc<Engine>,
    exporter: Arc<Exporter>,
    state: svc_api::AppState,
    mut settings: watch::Receiver<Retention>,
) {
    let mut tick = tokio::time::interval(RETENTION_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            changed = settings.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let retention = settings.borrow_and_update().clone();
        let (e, x) = (engine.clone(), exporter.clone());
        match tokio::task::spawn_blocking(move || prune_once(&e, &x, &retention)).await {
            Ok(Ok(())) => state.clear_fault(PART),
            Ok(Err(e)) => warn!(error = %format!("{e:#}"), "retention: cannot prune now; trying again later"),
            Err(e) => warn!(error = %e, "retention: the prune did not finish"),
        }
    }
}

/// One application of both windows.
pub fn prune_once(engine: &Engine, exporter: &Exporter, retention: &Retention) -> anyhow::Result<()> {
    if let Some((window, text)) = &retention.ledger {
        let window_us = u64::try_from(window.as_micros()).unwrap_or(u64::MAX);
        let mut cutoff_us = engine.now_us().saturating_sub(window_us);
        if exporter.settings().bucket.is_some() {
            // Nothing leaves the ledger before it is in the bucket.
            let through = engine.ledger().exported_through()?;
            if let Some(first) = engine.ledger().events_after(through, 1)?.into_iter().next() {
                cutoff_us = cutoff_us.min(first.ts_us);
            }
        }
        let reason = format!("ledger.retention = {text}");
        let pruned = engine.ledger().prune_older(cutoff_us, ACTOR, &reason)?;
        if pruned > 0 {
            info!(pruned, cutoff_us, retention = %text, "ledger events older than the retention window pruned");
        }
    }
    engine.prune_graph_history()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use svc_api::export::{Bucket, ExportSettings, Exporter, Identity};
    use svc_engine::Engine;
    use svc_engine::clock::ManualClock;
    use svc_engine::store::ledger::NewEvent;

    use super::*;

    const T0: u64 = 1_800_000_000_000_000;
    const HOUR_US: u64 = 3_600_000_000;

    fn event(n: u64) -> NewEvent {
        NewEvent {
            event_type: "APPROVAL".into(),
            crn: None,
            actor: "operator".into(),
            message: format!("event {n}"),
            payload: serde_json::json!({}),
        }
    }

    /// With a bucket set, an event not yet exported stays however old it
    /// is; the events exported before it go.
    #[test]
    fn the_ledger_keeps_what_the_bucket_does_not_hold_yet() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(T0));
        let engine = Arc::new(Engine::open(dir.path(), "s", clock.clone()).unwrap());
        for n in 1..=4 {
            engine.ledger().append_one(event(n)).unwrap();
            clock.advance(HOUR_US);
        }
        clock.advance(10 * HOUR_US);
        let settings = ExportSettings {
            bucket: Some(Bucket::Dir(dir.path().join("audit"))),
            ..Default::default()
        };
        let exporter = Exporter::new(engine.clone(), settings, Identity::new("u".into()));
        engine.ledger().mark_exported(2).unwrap();
        let retention = Retention {
            ledger: Some((Duration::from_secs(3600), "1h".into())),
            graph: None,
        };
        prune_once(&engine, &exporter, &retention).unwrap();
        let left: Vec<u64> = engine
            .ledger()
            .events_after(0, 100)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(left, [3, 4, 5], "seqs 1 and 2 exported and pruned, 5 the record");
        let record = engine.ledger().get(5).unwrap().unwrap();
        assert_eq!(
            (record.actor.as_str(), record.payload["pruned"].as_u64()),
            (ACTOR, Some(2))
        );

        // Without a bucket, the window alone decides.
        let exporter = Exporter::new(engine.clone(), ExportSettings::default(), Identity::new("u".into()));
        prune_once(&engine, &exporter, &retention).unwrap();
        let left: Vec<u64> = engine
            .ledger()
            .events_after(0, 100)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(
            left,
            [5, 6],
            "the first record, younger than the window, and the new one"
        );
        assert!(engine.ledger().verify().unwrap().ok);
    }
}
