//! The passes after the verdicts: alike resources, cross-provider links,
//! reachability, the remediation pipeline, policies and cost signals.

use tracing::{debug, warn};

use super::context::Scan;
use crate::analysis::linker;
use crate::analysis::reach::{self, Assessment};
use crate::analysis::traffic;
use crate::engine::EngineError;
use crate::ids::{NodeId, Sym};
use crate::remediation::ops::Pipeline;

/// `engine.pattern`.
pub(super) fn pattern(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let now_us = cx.now_us;
    let report = &mut cx.report;
    // Verdicts are in the graph now; the deciding findings price them.
    let findings = cx.findings.last();
    let savings = |id: NodeId| findings.deciding(id).map(|f| f.projected_savings_usd_mo);
    let mut pattern = crate::analysis::pattern::run(&cx.core.graph(), now_us, &savings);
    pattern.scan_seq = report.scan_seq;
    debug!(
        groups = pattern.groups,
        outliers = pattern.outliers_total,
        grouped = pattern.grouped_total,
        duration_ms = pattern.duration_ms,
        "patterns found"
    );
    report.pattern = pattern.payload();
    cx.findings.set_pattern(pattern);
    Ok(())
}

/// `engine.ghost_linker`.
pub(super) fn ghost_linker(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let now_us = cx.now_us;
    let report = &mut cx.report;
    let mut graph = cx.core.graph_mut();
    let mut cache = cx.findings.lock_link_cache();
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
    cx.findings.set_links(links);
    Ok(())
}

/// `engine.formal_verify`.
pub(super) fn formal_verify(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let (core, findings) = (cx.core, cx.findings);
    let now_us = cx.now_us;
    let report = &mut cx.report;
    // Nodes of a provider whose scan failed may be missing edges.
    let failed: Vec<Sym> = report
        .sources
        .iter()
        .filter(|s| !s.ok)
        .flat_map(|s| s.providers.iter())
        .filter_map(|p| core.interner().get(p))
        .collect();
    let mut assessment = if findings.oracle_enabled() {
        reach::run(&core.graph(), now_us, report.scan_seq, &failed)
    } else {
        Assessment::disabled(report.scan_seq, now_us)
    };
    let changed = core.graph_mut().apply_assessment(now_us, |id| assessment.verdict(id));
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
    findings.set_assessment(assessment);
    Ok(())
}

/// `engine.sau`.
pub(super) fn sau(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let now_us = cx.now_us;
    let sources = &mut *cx.sources;
    let report = &mut cx.report;
    // Enforcing `block` rules as the last policy pass left them; what
    // this scan's pass adds holds items from the next one, and approve
    // checks again.
    // Read once: the pass asks for every item.
    let outcome = cx.policy.book().outcome();
    let blocked = |id: NodeId| {
        outcome
            .blocked
            .get(&id)
            .map(|rules| rules.iter().map(|rule| format!("policy:{rule}")).collect())
            .unwrap_or_default()
    };
    let pipeline = Pipeline {
        core: cx.core,
        sources: cx.registry,
        findings: cx.findings,
        policy: cx.policy,
        remediation: cx.remediation,
    };
    match pipeline.sau_pass(sources, now_us, &blocked) {
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
    let now_us = cx.now_us;
    let report = &mut cx.report;
    report.policy = crate::policy::phase::run(
        cx.core,
        cx.policy,
        cx.findings,
        report.scan_seq,
        now_us,
        report.observed_at,
    );
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
    let (core, findings) = (cx.core, cx.findings);
    let now_us = cx.now_us;
    let report = &mut cx.report;
    let graph = core.graph();
    let stats = graph.stats(now_us);
    let reader = core.interner().reader();
    report.nodes = stats.active_nodes;
    report.edges = stats.total_edges;
    report.logically_deleted = stats.logically_deleted;
    report.waste = stats.waste_nodes;
    report.cost_usd_mo = stats.total_cost_usd_mo;
    (report.waste_usd_mo, report.projected_savings_usd_mo) = findings.last().totals();
    report.providers = stats
        .providers
        .iter()
        .map(|(p, n)| (reader.resolve(*p).to_owned(), *n))
        .collect();
    drop(reader);
    let signal = cx.costs.analyze(&graph, &findings.last(), now_us, report.scan_seq);
    cx.signal = Some(signal);
    Ok(())
}
