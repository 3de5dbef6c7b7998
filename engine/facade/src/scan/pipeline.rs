//! One scan, phase by phase (DESIGN.md section 4): the phases of SPEC 4.9
//! listed in order in [`PHASES`], each a function of the scan's
//! [`Scan`] context, and the runner that owns their spans, timing and
//! errors, then commits.

use std::collections::BTreeMap;
use std::time::Instant;

use tracing::{debug, info, info_span};

use super::context::Scan;
use super::progress::Finished;
use super::report::{ScanReport, spans};
use super::{ingest, passes, verdicts};
use crate::engine::{Engine, EngineError};
use crate::heuristics::Analyzer;
use crate::store::CommitMeta;
use crate::store::ledger::{Ledger, NewEvent};
use svc_graph::source::{ScanLimits, Source};

/// One phase: its span name (SPEC 4.9), the span, and what it does.
struct Phase {
    name: &'static str,
    span: fn() -> tracing::Span,
    run: fn(&mut Scan<'_>) -> Result<(), EngineError>,
}

macro_rules! phase {
    ($name:path, $run:path) => {
        Phase {
            name: $name,
            span: || info_span!($name),
            run: $run,
        }
    };
}

/// The phases, in the order they run.
const PHASES: [Phase; 10] = [
    phase!(spans::INIT, ingest::init),
    phase!(spans::TIME_TRAVEL, ingest::time_travel),
    phase!(spans::PLUGIN_SCAN, ingest::plugin_scan),
    phase!(spans::HEURISTICS, verdicts::heuristics),
    phase!(spans::PATTERN, passes::pattern),
    phase!(spans::GHOST_LINKER, passes::ghost_linker),
    phase!(spans::FORMAL_VERIFY, passes::formal_verify),
    phase!(spans::SAU, passes::sau),
    phase!(spans::POLICY, passes::policy),
    phase!(spans::SIGNAL_ANALYSIS, passes::signal_analysis),
];

/// Runs every phase once over the engine's subsystems, then commits. The
/// caller holds the scan permit.
pub(crate) fn run(
    engine: &Engine,
    sources: &mut [Box<dyn Source>],
    analyzers: &mut [Box<dyn Analyzer>],
    configs: &BTreeMap<String, BTreeMap<String, String>>,
    only: Option<&[String]>,
    limits: ScanLimits,
) -> Result<ScanReport, EngineError> {
    // The root of the scan's own trace, whoever asked for the scan; the
    // phases are entered on this thread, so each is a child of it.
    let root = info_span!(parent: None, spans::RUN, scan_seq = tracing::field::Empty);
    let _root = root.enter();
    let mut cx = Scan {
        core: &engine.core,
        registry: &engine.sources,
        findings: &engine.findings,
        policy: &engine.policy,
        scans: &engine.scans,
        costs: &engine.signal,
        remediation: &engine.remediation,
        sources,
        analyzers,
        configs,
        only,
        limits,
        root: &root,
        started: Instant::now(),
        now_us: 0,
        report: ScanReport::default(),
        signal: None,
    };
    let progress = &engine.scans.progress;
    progress.start();
    let ran = run_phases(&mut cx);
    // The items the `engine.sau` pass changed, written after the scan's
    // own writes (or, when the scan failed, after what it wrote).
    cx.remediation.write_behind(engine.core.store());
    progress.finish(match &ran {
        Ok(()) => Finished {
            scan_seq: cx.report.scan_seq,
            error: None,
            duration_ms: cx.report.duration_ms,
            nodes: cx.report.nodes,
            edges: cx.report.edges,
        },
        Err(e) => Finished {
            scan_seq: cx.report.scan_seq,
            error: Some(e.to_string()),
            duration_ms: cx.started.elapsed().as_millis() as u64,
            nodes: 0,
            edges: 0,
        },
    });
    ran?;
    Ok(cx.report)
}

/// The phases in order, then the commit, each announced to the scan's
/// progress as it starts.
fn run_phases(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let progress = &cx.scans.progress;
    for (i, phase) in PHASES.iter().enumerate() {
        progress.phase(i, cx.report.scan_seq);
        let _span = (phase.span)().entered();
        let t = Instant::now();
        (phase.run)(cx)?;
        let ms = t.elapsed().as_millis() as u64;
        cx.report.phases.push((phase.name, ms));
        debug!(phase = phase.name, ms, "phase done");
    }
    progress.phase(PHASES.len(), cx.report.scan_seq);
    commit(cx)
}

/// Commit: the changed rows as versions to graph.redb in one transaction,
/// then the cost history; SCAN_COMPLETED follows in [`announce`].
fn commit(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let (core, now_us, report) = (cx.core, cx.now_us, &mut cx.report);
    let commit_started = Instant::now();
    let rows = core.graph_mut().take_dirty_rows();
    let (nodes, edges) = rows.counts();
    report.versions_written = (nodes + edges) as u64;
    report.generation = core.graph().generation();
    cx.scans.commit(
        core,
        rows,
        CommitMeta {
            generation: report.generation,
            scan_seq: report.scan_seq,
            commit_us: now_us,
            rows: 0,
            observed_s: report.observed_at,
        },
    )?;
    let t = Instant::now();
    if let Some(signal) = cx.signal.take() {
        cx.costs.install(core.store(), core.interner(), signal);
    }
    debug!(ms = t.elapsed().as_millis() as u64, "cost history stored");
    report.duration_ms = cx.started.elapsed().as_millis() as u64;
    report.commit_ms = commit_started.elapsed().as_millis() as u64;
    info!(
        scan_seq = report.scan_seq,
        nodes = report.nodes,
        edges = report.edges,
        versions = report.versions_written,
        commit_ms = report.commit_ms,
        duration_ms = report.duration_ms,
        "scan committed"
    );
    // The scan's staged batches, messages and commit pages are freed by
    // now, most of them under rows that stay.
    let t = Instant::now();
    let released = crate::malloc::release();
    debug!(
        ms = t.elapsed().as_millis() as u64,
        released, "freed memory handed back"
    );
    Ok(())
}

/// Appends SCAN_COMPLETED for a committed scan. Runs after the scan permit
/// is released, so whoever hears the event can start the next scan. `late`:
/// the first append failed, and this one comes after the ledger recovered.
pub(crate) fn announce(ledger: &Ledger, report: &mut ScanReport, late: bool) -> Result<(), EngineError> {
    let mut message = format!(
        "scan {} completed: {} nodes, {} edges, {} waste (${:.2}/mo)",
        report.scan_seq, report.nodes, report.edges, report.waste, report.waste_usd_mo
    );
    if late {
        message.push_str(" (recorded late: the ledger could not be written when the scan committed)");
    }
    let event = ledger.append_one(NewEvent::of(None, "engine", message, &report.payload()))?;
    report.event_seq = event.seq;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table runs the phases SPEC 4.9 names, in its order.
    #[test]
    fn the_table_lists_the_spec_phases_in_order() {
        let names: Vec<&str> = PHASES.iter().map(|p| p.name).collect();
        assert_eq!(names, spans::PHASES.to_vec());
    }
}
