//! When the compliance export runs: at start and every interval, with each
//! run's outcome in the metrics.

use std::sync::Arc;

use tracing::error;

use super::{ExportError, ExportRun, Exporter};
use crate::state::AppState;

/// Records a run's outcome in the metrics.
pub fn observe(state: &AppState, result: &Result<ExportRun, ExportError>) {
    let m = &state.inner.metrics;
    match result {
        Ok(run) => {
            m.ledger_exports.with_label_values(&["success"]).inc();
            m.ledger_exported_events
                .inc_by(run.files.iter().map(|f| f.events).sum());
            m.ledger_exported_seq
                .set(i64::try_from(run.exported_through).unwrap_or(i64::MAX));
        }
        Err(ExportError::NotConfigured) => {}
        Err(_) => m.ledger_exports.with_label_values(&["failure"]).inc(),
    }
}

/// The schedule: one run at start (to flush what a previous run left, e.g.
/// after a crash), then one every interval. A settings change restarts the
/// wait with the new interval. A failed run is logged and retried at the
/// next interval; nothing is lost, the mark stays.
pub async fn schedule(state: AppState, exporter: Arc<Exporter>) {
    let mut due = true;
    loop {
        if due && exporter.settings().bucket.is_some() {
            let result = exporter.export_now().await;
            observe(&state, &result);
            if let Err(e) = result {
                error!(error = %e, "compliance export failed; retrying at the next interval");
            }
        }
        let interval = exporter.settings().interval;
        due = tokio::select! {
            () = tokio::time::sleep(interval) => true,
            () = exporter.changed.notified() => false,
        };
    }
}
