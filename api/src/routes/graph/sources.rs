//! Where the graph came from, for `graph/stats`: the sources that filled
//! it, what each answered for, how each did in the last scan, and whether
//! any of it is simulated.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use svc_engine::Engine;
use svc_engine::store::ledger::{EventKind, HistoryQuery};

use super::body::{GraphSource, SourceScan};
use crate::routes::rfc3339;
use crate::state::AppState;

/// The sources of the graph and whether any active node is simulated.
/// `with_nodes` are the providers that have active nodes.
pub(super) fn graph_sources(
    state: &AppState,
    engine: &Engine,
    with_nodes: &BTreeSet<String>,
) -> (bool, Vec<GraphSource>) {
    let answered = engine.sources_answered().unwrap_or_default();
    let last = last_scan(engine);
    let mut names: BTreeSet<&str> = answered.keys().map(String::as_str).collect();
    names.extend(last.keys().map(String::as_str));
    let sources: Vec<GraphSource> = names
        .into_iter()
        .map(|name| {
            let (scan, declared) = match last.get(name) {
                Some((scan, declared)) => (Some(scan.clone()), declared.clone()),
                None => (None, Vec::new()),
            };
            let providers = answered
                .get(name)
                .map(|p| p.iter().cloned().collect())
                .unwrap_or(declared);
            GraphSource {
                last_scan: scan,
                name: name.to_owned(),
                providers,
                simulated: state.is_simulated(name),
            }
        })
        .collect();
    // A provider a real source answered for was retired and refilled by it:
    // its nodes are real, whichever simulated source reported it before.
    let real: BTreeSet<&str> = answered
        .iter()
        .filter(|(name, _)| !state.is_simulated(name))
        .flat_map(|(_, providers)| providers.iter().map(String::as_str))
        .collect();
    let simulated = answered
        .iter()
        .filter(|(name, _)| state.is_simulated(name))
        .flat_map(|(_, providers)| providers)
        .any(|p| with_nodes.contains(p) && !real.contains(p.as_str()));
    (simulated, sources)
}

/// Each source of the last scan: how it did, and the providers it declared.
/// From this run's last report, else (after a restart, before the first
/// scan) from the last SCAN_COMPLETED in the ledger.
fn last_scan(engine: &Engine) -> BTreeMap<String, (SourceScan, Vec<String>)> {
    if let Some(report) = engine.last_report() {
        let finished_at = rfc3339(report.started_us + report.duration_ms * 1000);
        return report
            .sources
            .iter()
            .map(|s| {
                let scan = SourceScan {
                    error: s.error.clone().unwrap_or_default(),
                    finished_at: finished_at.clone(),
                    nodes: s.nodes,
                    ok: s.ok,
                    scan_seq: report.scan_seq,
                };
                (s.name.clone(), (scan, s.providers.clone()))
            })
            .collect();
    }
    let query = HistoryQuery {
        event_type: Some(EventKind::ScanCompleted.as_str().to_owned()),
        limit: 1,
        ..HistoryQuery::default()
    };
    let Ok(page) = engine.ledger().query(&query) else {
        return BTreeMap::new();
    };
    let Some(event) = page.events.first() else {
        return BTreeMap::new();
    };
    let p = &event.payload;
    let scan_seq = p["scan_seq"].as_u64().unwrap_or(0);
    let finished_at = rfc3339(event.ts_us);
    p["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let name = s["name"].as_str()?.to_owned();
            let providers = s["providers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            let scan = SourceScan {
                error: s["error"].as_str().unwrap_or_default().to_owned(),
                finished_at: finished_at.clone(),
                nodes: s["nodes"].as_u64().unwrap_or(0),
                ok: s["ok"].as_bool().unwrap_or(false),
                scan_seq,
            };
            Some((name, (scan, providers)))
        })
        .collect()
}
