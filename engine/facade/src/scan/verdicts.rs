//! `engine.heuristics`: the built-in rules, then heuristic plugins, joined
//! into each node's verdict.

use std::collections::HashSet;
use std::time::Instant;

use tracing::{debug, warn};

use super::context::Scan;
use super::report::SourceOutcome;
use crate::engine::EngineError;
use crate::findings::Findings;
use crate::graph_core::Core;
use crate::heuristics::{self, AnalyzerOutcome, BuiltinStats, Finding, FindingSet, FindingSource};
use crate::ids::{NodeId, Sym};

/// `engine.heuristics`.
pub(super) fn heuristics(cx: &mut Scan<'_>) -> Result<(), EngineError> {
    let (core, findings) = (cx.core, cx.findings);
    let now_us = cx.now_us;
    let analyzers = &mut *cx.analyzers;
    let limits = cx.limits;
    let report = &mut cx.report;
    // The estate was observed now, unless every source that scanned
    // keeps its own clock; when none scanned, it is as last observed.
    let scanned: Vec<&SourceOutcome> = report.sources.iter().filter(|s| s.ok).collect();
    report.observed_at = match scanned.iter().filter_map(|s| s.observed_at).max() {
        Some(t) => t,
        None if scanned.is_empty() && cx.scans.observed_s() > 0 => cx.scans.observed_s(),
        None => now_us / 1_000_000,
    };
    let started = Instant::now();
    let selection = findings.rule_selection();
    // Node and edge rows changed since the last pass (the adjacency
    // index is current): whose answers, and whose ends', may differ.
    let changes = core.graph_mut().take_row_changes();
    let mut rules = findings.lock_rule_cache();
    let pass = rules.run(&core.graph(), &changes, now_us, report.observed_at, &selection);
    drop(changes);
    let builtin_ms = started.elapsed().as_millis() as u64;
    // Plugins run after the built-in rules.
    let (mut others, mut outcomes) = {
        let graph = core.graph();
        heuristics::analyzer::run_analyzers(&graph, analyzers, now_us, limits.timeout)
    };
    let stats = BuiltinStats {
        rules: heuristics::builtin::rules().filter(|r| selection.allows(r)).count() as u64,
        evaluated: pass.evaluated,
        checks: pass.checks,
        kept: pass.kept,
        findings: pass.findings,
        ignored: pass.ignored,
        duration_ms: builtin_ms,
    };
    carry_over(core, findings, now_us, &mut others, &mut outcomes);
    // Policy verdicts of rules still in the book stand until the
    // policy phase decides again.
    others.extend(crate::policy::phase::carried(core, cx.policy.book(), now_us));
    let t = Instant::now();
    if pass.full {
        let mut set = FindingSet::grouped(report.scan_seq, rules.findings_by_node(), others, outcomes);
        set.ignored = rules.ignored().map(|(id, why)| (id, why.clone())).collect();
        drop(rules);
        set.builtin = stats.clone();
        set.as_of_s = report.observed_at;
        report.findings = set.len() as u64;
        report.verdicts_changed = heuristics::join::apply(&mut core.graph_mut(), &set, now_us) as u64;
        report.heuristics = set.analyzers.clone();
        findings.set_last(set);
    } else {
        // The last scan's findings, changed where this scan's differ:
        // the built-in answers worked out again, and every plugin and
        // carried policy finding replaced.
        let builtin_touched = pass.touched;
        let mut touched = builtin_touched.clone();
        findings.update(|set| {
            touched.extend(set.remove_where(|f| f.source != FindingSource::Builtin));
            for id in &builtin_touched {
                match rules.finding_list(*id) {
                    Some(list) => set.by_node.insert(*id, list),
                    None => set.by_node.remove(id),
                };
                match rules.ignored_of(*id) {
                    Some(why) => set.ignored.insert(*id, why.clone()),
                    None => set.ignored.remove(id),
                };
            }
            touched.extend(set.add(others));
            touched.sort_unstable();
            touched.dedup();
            set.scan_seq = report.scan_seq;
            set.analyzers = outcomes;
            set.builtin = stats.clone();
            set.as_of_s = report.observed_at;
            report.findings = set.len() as u64;
            report.heuristics = set.analyzers.clone();
        });
        drop(rules);
        let set = findings.last();
        report.verdicts_changed = heuristics::join::apply_to(&mut core.graph_mut(), &set, now_us, &touched) as u64;
    }
    debug!(
        join_ms = t.elapsed().as_millis() as u64,
        heuristics_ms = started.elapsed().as_millis() as u64,
        "joined"
    );
    report.builtin = stats;
    debug!(
        findings = report.findings,
        changed = report.verdicts_changed,
        builtin_ms,
        evaluated = report.builtin.evaluated,
        kept = report.builtin.kept,
        "verdicts joined"
    );
    Ok(())
}

/// Keeps the verdicts of each analyzer that failed this scan, for nodes
/// still visible: a plugin that crashes or hangs leaves the verdicts it gave
/// as they were, as a failed provider leaves its resources. Its findings of
/// the previous scan are kept whole; a waste verdict in the graph named by
/// its rule (after a restart, when no findings are in memory) is kept as a
/// finding rebuilt from the node.
fn carry_over(
    core: &Core,
    last: &Findings,
    now_us: u64,
    findings: &mut Vec<Finding>,
    outcomes: &mut [AnalyzerOutcome],
) {
    let previous = last.last();
    let graph = core.graph();
    let interner = core.interner();
    for o in outcomes.iter_mut().filter(|o| !o.ok) {
        let source = FindingSource::Plugin(o.name.clone());
        let before = findings.len();
        let mut kept: HashSet<NodeId> = HashSet::new();
        let mut rules: HashSet<Sym> = interner.get(&o.rule).into_iter().collect();
        for (id, list) in &previous.by_node {
            for f in list.iter().filter(|f| f.source == source) {
                rules.extend(interner.get(&f.rule));
                if graph.is_node_visible(*id, now_us) && kept.insert(*id) {
                    findings.push(f.clone());
                }
            }
        }
        if !rules.is_empty() {
            for n in graph.nodes() {
                let named = n.verdict().is_some_and(|v| rules.contains(&v));
                if named && n.is_waste() && n.is_visible(now_us) && !kept.contains(&n.id()) {
                    findings.push(Finding {
                        node: n.id(),
                        source: source.clone(),
                        rule: n
                            .verdict()
                            .map(|v| interner.resolve(v).to_string())
                            .unwrap_or_default()
                            .into(),
                        is_waste: true,
                        // The finding's own risk is not kept in the graph; a plugin's
                        // is capped at 79.
                        risk_score: 79,
                        reason: n.waste_reason().to_owned(),
                        suggested_action: Default::default(),
                        projected_savings_usd_mo: f64::from(n.cost_usd_mo()),
                        annotations: Vec::new(),
                    });
                }
            }
        }
        o.carried_over = (findings.len() - before) as u64;
        if o.carried_over > 0 {
            warn!(plugin = %o.name, kept = o.carried_over, "heuristic plugin failed; the verdicts it gave are kept");
        }
    }
}
