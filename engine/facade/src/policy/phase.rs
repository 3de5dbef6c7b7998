//! The `engine.policy` phase of a scan, and the dry-run.
//!
//! Flagging goes through the findings, as a heuristic's verdict does: an
//! enforcing `flag` rule adds a waste finding (source `policy`, rule and
//! reason `policy:<id>`, risk 0, savings the node's cost) and the node's
//! verdict is joined again. A heuristic's waste finding still decides
//! first; a policy finding decides a node no heuristic calls waste. The
//! heuristics phase carries the previous scan's policy verdicts of rules
//! still in the book, so a node that stays flagged is not cleared and set
//! again (no new version each scan); this phase then drops what no longer
//! matches.

use std::collections::HashMap;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::book::{LastEvaluation, PolicyOutcome, RuleState};
use super::eval::{self, EvalOptions, EvalRule};
use super::{Action, Book, Mode, Policies, REASON_PREFIX, Rule};
use crate::engine::Engine;
use crate::findings::Findings;
use crate::graph::{Graph, Verdict};
use crate::graph_core::Core;
use crate::heuristics::{Finding, FindingSource};
use crate::ids::{NodeId, Sym};

/// Samples of matching CRNs kept per rule.
const SAMPLES: usize = 10;

/// The phase in numbers, for the scan report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyReport {
    pub rules: u64,
    /// Rules evaluated as column predicates.
    pub fast_rules: u64,
    pub nodes: u64,
    pub matches: u64,
    pub errors: u64,
    /// Nodes marked waste by an enforcing `flag` rule.
    pub flagged: u64,
    /// Nodes kept out of remediation by an enforcing `block` rule.
    pub blocked: u64,
    /// Verdicts the phase changed.
    pub verdicts_changed: u64,
    /// Pack rules added, changed or removed at the start of the phase.
    pub pack_changes: u64,
    pub duration_ms: u64,
    /// `(rule id, resource type, enforcement mode, matches)`, for
    /// `svc_policy_violations_total`.
    pub violations: Vec<(String, String, &'static str, u64)>,
}

impl PolicyReport {
    pub fn payload(&self) -> serde_json::Value {
        serde_json::json!({
            "rules": self.rules, "fast_rules": self.fast_rules, "nodes": self.nodes,
            "matches": self.matches, "errors": self.errors, "flagged": self.flagged,
            "blocked": self.blocked, "verdicts_changed": self.verdicts_changed,
            "pack_changes": self.pack_changes, "duration_ms": self.duration_ms,
        })
    }
}

/// Verdict symbols of the book's rules (`policy:<id>`), those ever interned.
pub(crate) fn policy_verdicts(graph: &Graph, rules: &[Rule]) -> FxHashSet<Sym> {
    let reader = graph.interner().reader();
    rules.iter().filter_map(|r| reader.get(&r.reason())).collect()
}

/// The policy findings the heuristics phase keeps: nodes visible now whose
/// verdict is a policy rule still in the book.
pub(crate) fn carried(core: &Core, book: &Book, now_us: u64) -> Vec<Finding> {
    let rules = book.rules();
    let graph = core.graph();
    let syms = policy_verdicts(&graph, &rules);
    if syms.is_empty() {
        return Vec::new();
    }
    let reader = graph.interner().reader();
    let mut out = Vec::new();
    for n in graph.nodes() {
        if let Some(v) = n.verdict()
            && n.is_waste()
            && syms.contains(&v)
            && n.is_visible(now_us)
        {
            out.push(policy_finding(
                n.id(),
                reader.resolve(v),
                f64::from(n.cost_usd_mo()),
                "",
            ));
        }
    }
    out
}

fn policy_finding(node: NodeId, reason: &str, cost: f64, message: &str) -> Finding {
    Finding {
        node,
        source: FindingSource::Policy,
        rule: reason.to_owned().into(),
        is_waste: true,
        risk_score: 0,
        reason: reason.to_owned(),
        suggested_action: Default::default(),
        projected_savings_usd_mo: cost,
        annotations: if message.is_empty() {
            Vec::new()
        } else {
            vec![("message".to_owned(), message.to_owned())]
        },
    }
}

/// Runs the phase: synchronises the packs, evaluates every rule over every
/// visible node, applies the enforcing `flag` and `block` rules (through
/// the findings, then the graph's verdicts).
pub(crate) fn run(
    core: &Core,
    policy: &Policies,
    findings: &Findings,
    scan_seq: u64,
    now_us: u64,
    as_of_s: u64,
) -> PolicyReport {
    let started = std::time::Instant::now();
    let mut report = PolicyReport::default();
    let book = policy.book();
    if let Some(source) = policy.pack_source() {
        let packs = source.packs();
        match book.sync_packs(&packs, now_us, core.store(), core.ledger()) {
            Ok(n) => report.pack_changes = n as u64,
            Err(e) => tracing::warn!(error = %e, "policy packs not synchronised"),
        }
    }
    let rules = book.rules();
    report.rules = rules.len() as u64;
    report.fast_rules = rules.iter().filter(|r| r.compiled.is_fast()).count() as u64;

    let evaluation = {
        let graph = core.graph();
        let syms = policy_verdicts(&graph, &rules);
        let opts = EvalOptions {
            now_us,
            as_of_s,
            policy_verdicts: syms,
            interpreter_only: false,
            hit_limit: usize::MAX,
        };
        let eval_rules: Vec<EvalRule<'_>> = rules
            .iter()
            .map(|r| EvalRule {
                compiled: &r.compiled,
                collect_hits: true,
            })
            .collect();
        eval::evaluate(&graph, &eval_rules, &opts)
    };
    report.nodes = evaluation.nodes;

    // Flags: the first enforcing flag rule in priority order decides.
    let mut flagged: HashMap<NodeId, usize> = HashMap::new();
    let mut blocked: HashMap<NodeId, Vec<Arc<str>>> = HashMap::new();
    for (i, (rule, tally)) in rules.iter().zip(&evaluation.rules).enumerate() {
        if rule.spec.mode != Mode::Enforcing {
            continue;
        }
        match rule.spec.action {
            Action::Flag => {
                for id in &tally.hits {
                    flagged.entry(*id).or_insert(i);
                }
            }
            Action::Block => {
                let rid: Arc<str> = Arc::from(rule.spec.id.as_str());
                for id in &tally.hits {
                    blocked.entry(*id).or_default().push(rid.clone());
                }
            }
            Action::Warn => {}
        }
    }
    report.flagged = flagged.len() as u64;
    report.blocked = blocked.len() as u64;
    report.verdicts_changed = apply_flags(core, findings, &rules, &flagged, now_us) as u64;

    // Counts, samples and the metric's labels.
    let mut last = LastEvaluation {
        duration_us: evaluation.duration_us,
        nodes: evaluation.nodes,
        ..LastEvaluation::default()
    };
    {
        let graph = core.graph();
        let reader = graph.interner().reader();
        for (rule, tally) in rules.iter().zip(&evaluation.rules) {
            report.matches += tally.matches;
            report.errors += tally.errors;
            let mode = rule.spec.mode.name();
            for (ty, n) in &tally.by_type {
                report
                    .violations
                    .push((rule.spec.id.clone(), reader.resolve(*ty).to_owned(), mode, *n));
            }
            let samples = tally
                .hits
                .iter()
                .take(SAMPLES)
                .map(|id| graph.crn_with(&reader, *id))
                .collect();
            let first_error = tally
                .first_error
                .as_ref()
                .map(|(id, m)| format!("{}: {m}", graph.crn_with(&reader, *id)))
                .unwrap_or_default();
            last.by_rule.insert(
                rule.spec.id.clone(),
                RuleState {
                    scan_seq,
                    at_us: now_us,
                    matches: tally.matches,
                    errors: tally.errors,
                    mode: mode.to_owned(),
                    first_error,
                    samples,
                    interpreted: tally.interpreted,
                },
            );
        }
    }
    book.set_last(last, core.store());
    let flagged = flagged
        .into_iter()
        .filter_map(|(id, i)| rules.get(i).map(|r| (id, Arc::from(r.spec.id.as_str()))))
        .collect();
    book.set_outcome(PolicyOutcome {
        scan_seq,
        blocked,
        flagged,
    });
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}

/// Replaces the policy findings with this scan's and joins the verdicts
/// of every node whose policy findings changed. Returns verdicts changed.
fn apply_flags(
    core: &Core,
    findings: &Findings,
    rules: &[Rule],
    flagged: &HashMap<NodeId, usize>,
    now_us: u64,
) -> usize {
    // Nothing flagged and no policy finding to take back: the findings stay
    // as they are, without copying them for a write.
    if flagged.is_empty()
        && !findings
            .last()
            .by_node
            .values()
            .flat_map(|l| l.iter())
            .any(|f| f.source == FindingSource::Policy)
    {
        return 0;
    }
    let interner = core.interner().clone();
    // Costs are read before the findings' write lock is taken: the graph
    // lock is never taken under the findings lock (ARCHITECTURE.md, lock order).
    let costs: HashMap<NodeId, f64> = {
        let graph = core.graph();
        flagged
            .keys()
            .map(|id| (*id, graph.node(*id).map_or(0.0, |n| f64::from(n.cost_usd_mo()))))
            .collect()
    };
    let mut touched: Vec<NodeId> = Vec::new();
    findings.update(|set| {
        let cleared = set.remove_where(|f| f.source == FindingSource::Policy);
        touched.extend(cleared.into_iter().filter(|id| !flagged.contains_key(id)));
        let flags = flagged.iter().filter_map(|(id, i)| {
            let rule = rules.get(*i)?;
            let cost = costs.get(id).copied().unwrap_or(0.0);
            Some(policy_finding(*id, &rule.reason(), cost, &rule.spec.message))
        });
        touched.extend(set.add(flags.collect()));
    });
    if touched.is_empty() {
        return 0;
    }
    let set = findings.last();
    // Interned before taking the graph lock (interning under a reader of
    // the graph is fine; under the interner's reader it would wait).
    let verdict_syms: HashMap<String, Sym> = set
        .by_node
        .values()
        .filter_map(|l| l.first())
        .filter(|f| f.source == FindingSource::Policy || f.rule.starts_with(REASON_PREFIX))
        .map(|f| (f.rule.to_string(), interner.intern(&f.rule)))
        .collect();
    let mut graph = core.graph_mut();
    let mut changed = 0;
    for id in touched {
        if !graph.is_node_visible(id, now_us) {
            continue;
        }
        let before = graph
            .node(id)
            .map(|n| (n.is_waste(), n.verdict(), n.waste_reason().to_owned()));
        match set.deciding(id) {
            Some(f) => {
                let rule = verdict_syms.get(&*f.rule).copied().or_else(|| interner.get(&f.rule));
                graph.set_verdict(
                    id,
                    &Verdict {
                        is_waste: f.is_waste,
                        reason: &f.reason,
                        rule,
                    },
                    now_us,
                );
            }
            None => {
                graph.set_verdict(id, &Verdict::CLEAR, now_us);
            }
        }
        let after = graph
            .node(id)
            .map(|n| (n.is_waste(), n.verdict(), n.waste_reason().to_owned()));
        changed += usize::from(before != after);
    }
    changed
}

/// What a dry-run found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DryRun {
    pub count: u64,
    /// Matching CRNs, up to the limit asked for, in graph order.
    pub crns: Vec<String>,
    pub errors: u64,
    /// The first evaluation error: CRN and message.
    pub error_samples: Vec<(String, String)>,
    pub nodes: u64,
    pub fast: bool,
    pub duration_us: u64,
    /// When the condition reads no binding of a node (`now` aside), its one
    /// value as CEL text, or the evaluation error; `None` otherwise.
    pub value: Option<Result<String, String>>,
}

/// Evaluates one condition against the live graph; changes nothing.
pub fn dry_run(engine: &Engine, compiled: &super::Compiled, limit: usize) -> DryRun {
    let rules = engine.policies().rules();
    let graph = engine.graph();
    let opts = EvalOptions {
        now_us: engine.now_us(),
        as_of_s: match engine.observed_s() {
            0 => engine.now_us() / 1_000_000,
            s => s,
        },
        policy_verdicts: policy_verdicts(&graph, &rules),
        interpreter_only: false,
        hit_limit: limit,
    };
    let e = eval::evaluate(
        &graph,
        &[EvalRule {
            compiled,
            collect_hits: true,
        }],
        &opts,
    );
    let reader = graph.interner().reader();
    let t = e.rules.into_iter().next().unwrap_or_default();
    let mut error_samples = Vec::new();
    if let Some((id, m)) = &t.first_error {
        error_samples.push((graph.crn_with(&reader, *id), m.clone()));
    }
    DryRun {
        count: t.matches,
        crns: t.hits.iter().map(|id| graph.crn_with(&reader, *id)).collect(),
        errors: t.errors,
        error_samples,
        nodes: e.nodes,
        fast: compiled.is_fast(),
        duration_us: e.duration_us,
        value: (!compiled.reads_node).then(|| svc_policy::interp::constant_value(compiled, opts.now_us)),
    }
}

/// The ids of the enforcing `block` rules that matched a node in the last
/// scan, in priority order.
pub fn blocked_by(engine: &Engine, id: NodeId) -> Vec<String> {
    engine.policy.blocked_by(id)
}
