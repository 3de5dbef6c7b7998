//! What the heuristics phase found, summarised: `GET /api/v1/waste-ledger`
//! (per resource type: count, monthly waste, projected savings, top
//! resources) and `GET /api/v1/heuristics/status` (counts, verdicts, and
//! which engine or plugin flagged what). Both read the findings of the last
//! scan and the live graph; a node's deciding finding is what counts, so no
//! saving is counted twice.

use std::collections::{BTreeMap, HashMap};

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use svc_engine::analysis::pattern::PatternReport;
use svc_engine::heuristics::builtin::{self, RuleKind};
use svc_engine::heuristics::{AnalyzerOutcome, Finding, FindingSet};
use svc_engine::{Graph, NodeId};

use super::ApiQuery;
use super::graph::{blocking, crn_with, limit_param, round2};
use crate::error::ApiResult;
use crate::state::AppState;

#[derive(Deserialize, Default)]
pub struct LedgerQuery {
    /// Top resources listed per type (default 5, at most 100).
    top: Option<String>,
    /// Only this provider's types.
    provider: Option<String>,
}

/// One resource type's line in the ledger.
#[derive(Default)]
struct Line<'f> {
    provider: String,
    count: u64,
    waste_count: u64,
    optimize_count: u64,
    waste_usd_mo: f64,
    savings_usd_mo: f64,
    /// Deciding findings, for the top resources.
    top: Vec<(NodeId, &'f Finding)>,
}

/// `GET /api/v1/waste-ledger`.
pub async fn ledger(State(state): State<AppState>, ApiQuery(q): ApiQuery<LedgerQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let top = limit_param(q.top.as_deref(), 5, 100)?;
    blocking(move || {
        let now = engine.now_us();
        let findings = engine.findings();
        let g = engine.graph();
        let r = g.interner().reader();
        let mut lines: BTreeMap<String, Line<'_>> = BTreeMap::new();
        for n in g.nodes().filter(|n| n.is_visible(now)) {
            let provider = r.resolve(n.provider());
            if q.provider.as_deref().is_some_and(|p| p != provider) {
                continue;
            }
            let line = lines.entry(r.resolve(n.ty()).to_owned()).or_default();
            line.provider = provider.to_owned();
            line.count += 1;
            let Some(f) = findings.deciding(n.id()) else {
                continue;
            };
            line.savings_usd_mo += f.projected_savings_usd_mo;
            if f.is_waste {
                line.waste_count += 1;
                line.waste_usd_mo += f.projected_savings_usd_mo;
            } else {
                line.optimize_count += 1;
            }
            line.top.push((n.id(), f));
        }
        let (mut waste, mut savings, mut flagged) = (0.0, 0.0, 0u64);
        let mut types: Vec<(String, Line<'_>)> = lines.into_iter().filter(|(_, l)| !l.top.is_empty()).collect();
        types.sort_by(|a, b| b.1.savings_usd_mo.total_cmp(&a.1.savings_usd_mo).then(a.0.cmp(&b.0)));
        let types: Vec<Value> = types
            .into_iter()
            .map(|(ty, mut l)| {
                waste += l.waste_usd_mo;
                savings += l.savings_usd_mo;
                flagged += l.waste_count + l.optimize_count;
                l.top.sort_by(|a, b| {
                    b.1.projected_savings_usd_mo
                        .total_cmp(&a.1.projected_savings_usd_mo)
                        .then(a.0.cmp(&b.0))
                });
                let top: Vec<Value> = l.top.iter().take(top).map(|(id, f)| resource(&g, &r, *id, f)).collect();
                json!({
                    "type": ty,
                    "provider": l.provider,
                    "count": l.count,
                    "waste_count": l.waste_count,
                    "optimize_count": l.optimize_count,
                    "waste_usd_mo": round2(l.waste_usd_mo),
                    "projected_savings_usd_mo": round2(l.savings_usd_mo),
                    "top": top,
                })
            })
            .collect();
        Ok(json!({
            "scan_seq": findings.scan_seq,
            "observed_at": findings.as_of_s,
            "price_table": svc_engine::prices::VERSION,
            "totals": {
                "flagged": flagged,
                "waste_usd_mo": round2(waste),
                "projected_savings_usd_mo": round2(savings),
            },
            "types": types,
        }))
    })
    .await
}

fn resource(g: &Graph, r: &svc_engine::intern::InternerReader<'_>, id: NodeId, f: &Finding) -> Value {
    json!({
        "crn": crn_with(g, r, id),
        "rule": f.rule,
        "source": f.source.label(),
        "is_waste": f.is_waste,
        "reason": f.reason,
        "suggested_action": f.suggested_action,
        "risk_score": f.risk_score,
        "projected_savings_usd_mo": f.projected_savings_usd_mo,
    })
}

/// Counts per rule (and per source).
#[derive(Default)]
struct Tally {
    findings: u64,
    waste: u64,
    decided: u64,
    savings: f64,
}

/// `GET /api/v1/heuristics/status`.
pub async fn status(State(state): State<AppState>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let now = engine.now_us();
        let findings = engine.findings();
        let g = engine.graph();
        let r = g.interner().reader();
        let (mut rules, mut sources): (HashMap<&str, Tally>, BTreeMap<String, Tally>) = Default::default();
        let mut kinds: HashMap<&str, (String, bool)> = HashMap::new();
        for (id, list) in &findings.by_node {
            let deciding = findings.deciding(*id);
            for f in list {
                let decided = deciding.is_some_and(|d| std::ptr::eq(d, f));
                for t in [
                    rules.entry(&*f.rule).or_default(),
                    sources.entry(f.source.label()).or_default(),
                ] {
                    t.findings += 1;
                    t.waste += u64::from(f.is_waste);
                    if decided {
                        t.decided += 1;
                        t.savings += f.projected_savings_usd_mo;
                    }
                }
                kinds.entry(&*f.rule).or_insert((f.source.label(), f.is_waste));
            }
        }
        let (mut waste, mut optimize, mut clear) = (0u64, 0u64, 0u64);
        for n in g.nodes().filter(|n| n.is_visible(now)) {
            match findings.deciding(n.id()) {
                Some(f) if f.is_waste => waste += 1,
                Some(_) => optimize += 1,
                None => clear += 1,
            }
        }
        let mut rule_rows: Vec<Value> = builtin::rules()
            .map(|rule| {
                let t = rules.remove(rule.name).unwrap_or_default();
                json!({
                    "name": rule.name,
                    "source": "builtin",
                    "provider": rule.provider,
                    "types": rule.types,
                    "kind": rule.kind.label(),
                    "risk_score": rule.risk,
                    "action": rule.action,
                    "condition": rule.condition,
                    "suggested_action": rule.suggestion,
                    "findings": t.findings,
                    "waste": t.waste,
                    "decided": t.decided,
                    "projected_savings_usd_mo": round2(t.savings),
                })
            })
            .collect();
        // Rules named by heuristic plugins.
        let mut plugin_rules: Vec<(&str, Tally)> = rules.into_iter().collect();
        plugin_rules.sort_by(|a, b| a.0.cmp(b.0));
        for (name, t) in plugin_rules {
            let (source, is_waste) = kinds.get(name).cloned().unwrap_or_default();
            rule_rows.push(json!({
                "name": name,
                "source": source,
                "kind": if is_waste { RuleKind::Waste.label() } else { RuleKind::Optimize.label() },
                "findings": t.findings,
                "waste": t.waste,
                "decided": t.decided,
                "projected_savings_usd_mo": round2(t.savings),
            }));
        }
        let engines: Vec<Value> = sources
            .into_iter()
            .map(|(source, t)| {
                json!({
                    "source": source,
                    "findings": t.findings,
                    "waste": t.waste,
                    "decided": t.decided,
                    "projected_savings_usd_mo": round2(t.savings),
                })
            })
            .collect();
        let mut ignored: Vec<(String, String)> = findings
            .ignored
            .iter()
            .map(|(id, why)| (crn_with(&g, &r, *id), why.describe()))
            .collect();
        ignored.sort();
        let ignored: Vec<Value> = ignored
            .into_iter()
            .take(IGNORED_LISTED)
            .map(|(crn, reason)| json!({"crn": crn, "reason": reason}))
            .collect();
        let (waste_usd, savings) = findings.totals();
        Ok(json!({
            "scan_seq": findings.scan_seq,
            "observed_at": findings.as_of_s,
            "price_table": svc_engine::prices::VERSION,
            "counts": {
                "findings": findings.len(),
                "nodes_flagged": findings.by_node.len(),
                "ignored": findings.ignored.len(),
                "waste_usd_mo": round2(waste_usd),
                "projected_savings_usd_mo": round2(savings),
            },
            "verdicts": {"waste": waste, "optimize": optimize, "clear": clear},
            "builtin": findings.builtin.payload(),
            "engines": engines,
            "plugins": plugins(&findings),
            "rules": rule_rows,
            "ignored": ignored,
            "pattern": pattern(&engine.pattern(), &g, &r),
        }))
    })
    .await
}

/// Ignored resources listed in the status (the count covers all).
const IGNORED_LISTED: usize = 100;

fn plugins(findings: &FindingSet) -> Vec<Value> {
    findings.analyzers.iter().map(AnalyzerOutcome::payload).collect()
}

/// Grouped findings and outliers listed in the status (the counts cover all).
const PATTERN_LISTED: usize = 100;

/// The `pattern` object of the status: the last scan's `engine.pattern` phase.
fn pattern(p: &PatternReport, g: &Graph, r: &svc_engine::intern::InternerReader<'_>) -> Value {
    let grouped: Vec<Value> = p
        .grouped
        .iter()
        .take(PATTERN_LISTED)
        .map(|f| {
            json!({
                "signature": format!("{:016x}", f.signature),
                "rule": f.rule,
                "type": f.ty,
                "members": f.members,
                "group_size": f.group_size,
                "savings_usd_mo": round2(f.savings_usd_mo),
                "samples": f.samples.iter().map(|id| crn_with(g, r, *id)).collect::<Vec<_>>(),
                "summary": f.summary,
            })
        })
        .collect();
    let outliers: Vec<Value> = p
        .outliers
        .iter()
        .take(PATTERN_LISTED)
        .map(|o| {
            json!({
                "crn": crn_with(g, r, o.node),
                "signature": format!("{:016x}", o.signature),
                "group_size": o.group_size,
                "group_waste": o.group_waste,
                "direction": o.direction.label(),
                "reason": o.reason,
            })
        })
        .collect();
    json!({
        "scan_seq": p.scan_seq,
        "rounds": p.rounds,
        "min_group": p.min_group,
        "majority": p.majority,
        "signatures": p.signatures,
        "distinct_signatures": p.distinct_signatures,
        "groups": p.groups,
        "grouped_nodes": p.grouped_nodes,
        "outliers_total": p.outliers_total,
        "grouped_total": p.grouped_total,
        "duration_ms": p.duration_ms,
        "grouped": grouped,
        "outliers": outliers,
    })
}
