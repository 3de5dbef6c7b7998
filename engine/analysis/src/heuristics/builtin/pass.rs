//! The built-in pass: the selected rules run over the visible nodes in
//! parallel, node shard by node shard, each node checked against the rules
//! of its type and provider ([`run`]); or first only which nodes they fire
//! on ([`decide`]), their reasons written later ([`render`]).

use std::borrow::Cow;

use rayon::prelude::*;

use super::catalogue::rules;
use super::ignore::{self, Ignore};
use super::rule::{Rule, RuleKind, Selection, Why};
use super::view::{self, Index, Keys, Machines, Node};
use crate::heuristics::finding::{Finding, FindingSource};
use svc_graph::graph::{Graph, visible};
use svc_graph::ids::{NodeId, Sym};

/// One rule that fired on one node, before its reason is rendered.
#[derive(Copy, Clone, Debug)]
pub struct RuleHit {
    pub node: NodeId,
    pub rule: &'static Rule,
    /// USD a month.
    pub savings: f64,
}

/// Which nodes the built-in rules found, without reasons.
#[derive(Debug, Default)]
pub struct Decided {
    pub hits: Vec<RuleHit>,
    /// The reason of each hit, in order, when the pass wrote them.
    pub reasons: Vec<String>,
    /// Nodes the `svc:ignore` tag kept out, with why.
    pub ignored: Vec<(NodeId, Ignore)>,
    /// Nodes evaluated (of a type some rule reads), and rules run on them.
    pub evaluated: u64,
    pub checks: u64,
}

/// What the built-in pass produced.
#[derive(Debug, Default)]
pub struct BuiltinOutcome {
    pub findings: Vec<Finding>,
    /// Nodes the `svc:ignore` tag kept out, with why.
    pub ignored: Vec<(NodeId, Ignore)>,
    /// Nodes evaluated (of a type some rule reads), and rules run on them.
    pub evaluated: u64,
    pub checks: u64,
}

/// Runs the selected built-in rules over the nodes visible at `now_us`. `as_of_s`
/// is when the estate was observed (Unix seconds), for ages such as
/// "stopped for 43 days". A rule formats its reason only when it fires;
/// [`decide`] skips even that, and [`render`] writes the reasons of its
/// hits later.
pub fn run(graph: &Graph, now_us: u64, as_of_s: u64, selection: &Selection) -> BuiltinOutcome {
    with_pass(graph, now_us, as_of_s, selection, |ctx, by_type| {
        let decided = decide_in(graph, ctx, by_type, true);
        BuiltinOutcome {
            findings: decided
                .hits
                .iter()
                .zip(decided.reasons)
                .map(|(hit, reason)| finding(hit, reason))
                .collect(),
            ignored: decided.ignored,
            evaluated: decided.evaluated,
            checks: decided.checks,
        }
    })
    .unwrap_or_default()
}

/// Which nodes the selected rules fire on, with what each saves; the
/// reasons are left to [`render`].
pub fn decide(graph: &Graph, now_us: u64, as_of_s: u64, selection: &Selection) -> Decided {
    with_pass(graph, now_us, as_of_s, selection, |ctx, by_type| {
        decide_in(graph, ctx, by_type, false)
    })
    .unwrap_or_default()
}

/// The findings of `hits` (from [`decide`] over the same graph, at the
/// same times), each with its reason; a hit whose rule no longer fires
/// there is left out.
pub fn render(graph: &Graph, now_us: u64, as_of_s: u64, hits: &[RuleHit]) -> Vec<Finding> {
    with_pass(graph, now_us, as_of_s, &Selection::default(), |ctx, _| {
        render_in(ctx, hits)
    })
    .unwrap_or_default()
}

/// Calls `f` with what every rule of one pass shares; `None` when no
/// selected rule reads a type the graph holds.
fn with_pass<R>(
    graph: &Graph,
    now_us: u64,
    as_of_s: u64,
    selection: &Selection,
    f: impl FnOnce(&view::Ctx<'_>, &[Vec<(Sym, &'static Rule)>]) -> R,
) -> Option<R> {
    let reader = graph.interner().reader();
    let by_type = rules_by_type(&reader, selection);
    if by_type.iter().all(Vec::is_empty) {
        return None;
    }
    let keys = Keys::new(&reader);
    let index = Index::build(graph, &reader, &keys, now_us);
    let none = Machines::default();
    let first = view::Ctx {
        graph,
        reader: &reader,
        keys: &keys,
        index: &index,
        machines: &none,
        now_us,
        as_of_s,
    };
    let machines = Machines::build(&first);
    let ctx = view::Ctx {
        machines: &machines,
        ..first
    };
    Some(f(&ctx, &by_type))
}

/// One pass of the selected rules over the visible nodes. With `reasons`,
/// each hit's rule writes its reason as it fires (into `Decided::reasons`,
/// in the order of the hits); without, nothing is formatted.
fn decide_in(graph: &Graph, ctx: &view::Ctx<'_>, by_type: &[Vec<(Sym, &'static Rule)>], reasons: bool) -> Decided {
    let now_us = ctx.now_us;
    let parts: Vec<Decided> = graph
        .node_shards()
        .par_iter()
        .enumerate()
        .map(|(s, shard)| {
            let mut out = Decided::default();
            let mut reason = String::new();
            for r in 0..shard.len() {
                if !visible(shard.valid_to[r], now_us) {
                    continue;
                }
                let rules = match by_type.get(shard.ty[r].index()) {
                    Some(rules) if !rules.is_empty() => rules,
                    _ => continue,
                };
                let id = NodeId::new(s, r as u32, shard.generation);
                let node = Node::new(ctx, id);
                out.evaluated += 1;
                if let Some(why) = ignore::check(&node) {
                    out.ignored.push((id, why));
                    continue;
                }
                // Types such as `compute:disk` exist on several providers.
                let provider = shard.key[r][0];
                for (_, rule) in rules.iter().filter(|(p, _)| *p == provider) {
                    out.checks += 1;
                    let mut why = if reasons { Why::to(&mut reason) } else { Why::silent() };
                    if let Some(hit) = (rule.check)(&node, &mut why) {
                        out.hits.push(RuleHit {
                            node: id,
                            rule,
                            savings: hit.savings,
                        });
                        if reasons {
                            // One allocation of the exact size; the buffer is reused.
                            out.reasons.push(reason.as_str().to_owned());
                        }
                    }
                    reason.clear();
                }
            }
            out
        })
        .collect();
    let mut all = Decided::default();
    all.hits.reserve(parts.iter().map(|p| p.hits.len()).sum());
    all.reasons.reserve(parts.iter().map(|p| p.reasons.len()).sum());
    for mut p in parts {
        all.hits.append(&mut p.hits);
        all.reasons.append(&mut p.reasons);
        all.ignored.append(&mut p.ignored);
        all.evaluated += p.evaluated;
        all.checks += p.checks;
    }
    all
}

/// Renders each hit's reason by running its rule again on its node, this
/// time writing what it found.
fn render_in(ctx: &view::Ctx<'_>, hits: &[RuleHit]) -> Vec<Finding> {
    hits.par_iter()
        .with_min_len(1024)
        .filter_map(|hit| {
            // Most reasons fit; the rest grow once.
            let mut reason = String::with_capacity(96);
            let node = Node::find(ctx, hit.node)?;
            // A hit from another graph or time that no longer fires is dropped.
            let again = (hit.rule.check)(&node, &mut Why::to(&mut reason))?;
            Some(finding(
                &RuleHit {
                    savings: again.savings,
                    ..*hit
                },
                reason,
            ))
        })
        .collect()
}

pub(super) fn finding(hit: &RuleHit, reason: String) -> Finding {
    let rule = hit.rule;
    Finding {
        node: hit.node,
        source: FindingSource::Builtin,
        rule: Cow::Borrowed(rule.name),
        is_waste: rule.kind == RuleKind::Waste,
        risk_score: rule.risk,
        reason,
        suggested_action: Cow::Borrowed(rule.suggestion),
        projected_savings_usd_mo: (hit.savings.max(0.0) * 100.0).round() / 100.0,
        annotations: Vec::new(),
    }
}

/// The selected rules of each node type present in the graph, with the
/// provider symbol each applies to, indexed by the type's symbol (a dense
/// table: one lookup per node). A rule whose provider the graph never saw
/// matches nothing and is left out.
pub(super) fn rules_by_type(
    reader: &svc_graph::intern::InternerReader<'_>,
    selection: &Selection,
) -> Vec<Vec<(Sym, &'static Rule)>> {
    let mut table: Vec<Vec<(Sym, &'static Rule)>> = Vec::new();
    for rule in rules().filter(|r| selection.allows(r)) {
        let Some(provider) = reader.get(rule.provider) else {
            continue;
        };
        for ty in rule.types {
            if let Some(sym) = reader.get(ty) {
                if table.len() <= sym.index() {
                    table.resize(sym.index() + 1, Vec::new());
                }
                table[sym.index()].push((provider, rule));
            }
        }
    }
    table
}
