//! The passes after the verdicts: alike resources, cross-provider links,
//! reachability, the remediation pipeline, policies and cost signals.

use tracing::{debug, warn};

use super::context::Scan;
use crate::analysis::linker;
use crate::analysis::reach::{self, Assessment};
use crate::analysis::traffic;
use crate::engine::EngineError;
use crate::ids::{NodeId, Sym};

/// `engine.pattern`.
pub(super) fn pattern(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let engine = cx.engine;
    let now_us = cx.now_us;
    let report = &mut cx.report;
    // Verdicts are in the graph now; the deciding findings price them.
    let findings = engine.findings();
    let savings = |id: NodeId| findings.deciding(id).map(|f| f.projected_savings_usd_mo);
    let mut pattern = crate::analysis::pattern::run(&engine.graph(), now_us, &savings);
    pattern.scan_seq = report.scan_seq;
    debug!(
        groups = pattern.groups,
        outliers = pattern.outliers_total,
        grouped = pattern.grouped_total,
        duration_ms = pattern.duration_ms,
        "patterns found"
    );
    report.pattern = pattern.payload();
    engine.set_pattern(pattern);
    Ok(())
}

/// `engine.ghost_linker`.
pub(super) fn ghost_linker(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let engine = cx.engine;
    let now_us = cx.now_us;
    let report = &mut cx.report;
    let mut graph = engine.graph_mut();
    let mut cache = engine.link_cache.lock();
    let mut links = linker::run_with(&mut cache, &mut graph, now_us, report.scan_seq as u32);
    let facts_read = cache.read;
    drop(cache);
    links.expired_flows = traffic::expire(&mut graph, now_us, report.scan_seq as u32) as u64;
    if links.added + links.retired + links.expired_flows > 0 {
        graph.rebuild_adjacency(now_us);
    }
    debug!(
        matched = links.matched(),
        added = links.added,
        retired = links.retired,
        facts_read,
        ms = links.duration_ms,
        "linked"
    );
    report.links = links.clone();
    engine.set_links(links);
    Ok(())
}

/// `engine.formal_verify`.
pub(super) fn formal_verify(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let engine = cx.engine;
    let now_us = cx.now_us;
    let report = &mut cx.report;
    // Nodes of a provider whose scan failed may be missing edges.
    let failed: Vec<Sym> = report
        .sources
        .iter()
        .filter(|s| !s.ok)
        .flat_map(|s| s.providers.iter())
        .filter_map(|p| engine.interner().get(p))
        .collect();
    let mut assessment = if engine.oracle_enabled() {
        reach::run(&engine.graph(), now_us, report.scan_seq, &failed)
    } else {
        Assessment::disabled(report.scan_seq, now_us)
    };
    let changed = engine.graph_mut().apply_assessment(now_us, |id| assessment.verdict(id));
    assessment.release_verdicts();
    debug!(
        reachable = assessment.reachable,
        unreachable = assessment.unreachable,
        unknown = assessment.unknown,
        changed,
        ms = assessment.duration_ms,
        "verified"
    );
    report.reachability = [assessment.reachable, assessment.unreachable, assessment.unknown];
    report.assessments_changed = changed as u64;
    engine.set_assessment(assessment);
    Ok(())
}

/// `engine.sau`.
pub(super) fn sau(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let engine = cx.engine;
    let now_us = cx.now_us;
    let sources = &mut *cx.sources;
    let report = &mut cx.report;
    // Enforcing `block` rules as the last policy pass left them; what
    // this scan's pass adds holds items from the next one, and approve
    // checks again.
    // Read once: the pass asks for every item.
    let outcome = engine.policies().outcome();
    let blocked = |id: NodeId| {
        outcome
            .blocked
            .get(&id)
            .map(|rules| rules.iter().map(|rule| format!("policy:{rule}")).collect())
            .unwrap_or_default()
    };
    match engine.sau_pass(sources, now_us, &blocked) {
        Ok(sau) => {
            debug!(
                entered = sau.entered,
                left = sau.left,
                analyzed = sau.analyzed,
                held = sau.held,
                "remediation pipeline advanced"
            );
            report.sau = Some(sau);
        }
        Err(e) => warn!(error = %e, "the remediation pipeline did not advance"),
    }
    Ok(())
}

/// `engine.policy`.
pub(super) fn policy(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let engine = cx.engine;
    let now_us = cx.now_us;
    let report = &mut cx.report;
    report.policy = crate::policy::phase::run(engine, report.scan_seq, now_us, report.observed_at);
    debug!(
        rules = report.policy.rules,
        fast = report.policy.fast_rules,
        matches = report.policy.matches,
        errors = report.policy.errors,
        flagged = report.policy.flagged,
        blocked = report.policy.blocked,
        ms = report.policy.duration_ms,
        "policies evaluated"
    );
    Ok(())
}

/// `engine.signal_analysis`.
pub(super) fn signal_analysis(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let engine = cx.engine;
    let now_us = cx.now_us;
    let report = &mut cx.report;
    let graph = engine.graph();
    let stats = graph.stats(now_us);
    let reader = engine.interner().reader();
    report.nodes = stats.active_nodes;
    report.edges = stats.total_edges;
    report.logically_deleted = stats.logically_deleted;
    report.waste = stats.waste_nodes;
    report.cost_usd_mo = stats.total_cost_usd_mo;
    (report.waste_usd_mo, report.projected_savings_usd_mo) = engine.findings().totals();
    report.providers = stats
        .providers
        .iter()
        .map(|(p, n)| (reader.resolve(*p).to_owned(), *n))
        .collect();
    drop(reader);
    let signal = engine
        .signal()
        .analyze(&graph, &engine.findings(), now_us, report.scan_seq);
    cx.signal = Some(signal);
    Ok(())
}
