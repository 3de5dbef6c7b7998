//! What the heuristics phase found, summarised: `GET /api/v1/waste-ledger`
//! (per resource type: count, monthly waste, projected savings, top
//! resources) and `GET /api/v1/heuristics/status` (counts, verdicts, and
//! which engine or plugin flagged what). Both read the findings of the last
//! scan and the live graph; a node's deciding finding is what counts, so no
//! saving is counted twice.

mod body;

use std::collections::HashMap;

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use svc_engine::analysis::pattern::PatternReport;
use svc_engine::heuristics::builtin;
use svc_engine::heuristics::{AnalyzerOutcome, Finding, FindingSet, FindingSource};
use svc_engine::{Graph, NodeId, Sym};

pub use body::*;

use super::ApiQuery;
use super::graph::{blocking, crn_with, round2};
use super::query::Limit;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::wire::Crn;

/// Query parameters of `GET /api/v1/waste-ledger`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LedgerQuery {
    /// Resources listed per type, largest saving first.
    #[serde(default)]
    #[param(inline)]
    top: Limit<5, 100>,
    /// Only nodes of this provider (a provider the graph never saw matches nothing).
    provider: Option<String>,
}

/// One resource type's line in the ledger.
#[derive(Default)]
struct Line<'f> {
    /// The provider of the type's last node (a type belongs to one).
    provider: Option<Sym>,
    count: u64,
    waste_count: u64,
    optimize_count: u64,
    waste_usd_mo: f64,
    savings_usd_mo: f64,
    /// Deciding findings, for the top resources.
    top: Vec<(NodeId, &'f Finding)>,
}

/// `GET /api/v1/waste-ledger`.
#[utoipa::path(
    get,
    path = "/waste-ledger",
    operation_id = "getWasteLedger",
    tag = "heuristics",
    summary = "Waste and projected savings per resource type, with the top resources.",
    description = "Built from the last scan's findings, one deciding finding per resource (so no saving is counted twice). Types with no finding are left out; types are ordered by projected savings, largest first.",
    params(LedgerQuery),
    responses(
        (status = 200, description = "The ledger.", body = crate::routes::waste::WasteLedger, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn ledger(State(state): State<AppState>, ApiQuery(q): ApiQuery<LedgerQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let top = q.top.0;
    blocking(move || {
        let now = engine.now_us();
        let findings = engine.findings();
        let g = engine.graph();
        let at = crate::derived::State::of(&engine, &findings);
        let key = format!("waste-ledger top={top} provider={:?}", q.provider);
        let kept = state.inner.derived.get_or_make(&key, &at, || {
            waste_ledger(&g, &findings, now, top, q.provider.as_deref())
        });
        Ok(crate::derived::Kept(kept))
    })
    .await
}

/// The waste ledger of the graph and its findings, as seen at `now`: each
/// type's lines, with its `top` resources; only `provider`'s nodes when given.
fn waste_ledger(g: &Graph, findings: &FindingSet, now: u64, top: usize, provider: Option<&str>) -> WasteLedger {
    let r = g.interner().reader();
    let decided = Decided::new(findings);
    // By type symbol: every visible node is counted, and naming its
    // type for each would be an allocation a node.
    let mut lines: HashMap<Sym, Line<'_>> = HashMap::new();
    for n in g.nodes().filter(|n| n.is_visible(now)) {
        if provider.is_some_and(|p| p != r.resolve(n.provider())) {
            continue;
        }
        let line = lines.entry(n.ty()).or_default();
        line.provider = Some(n.provider());
        line.count += 1;
        let Some(f) = decided.deciding(findings, n.id()) else {
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
    let mut types: Vec<(&str, Line<'_>)> = lines
        .into_iter()
        .filter(|(_, l)| !l.top.is_empty())
        .map(|(ty, l)| (r.resolve(ty), l))
        .collect();
    types.sort_by(|a, b| b.1.savings_usd_mo.total_cmp(&a.1.savings_usd_mo).then(a.0.cmp(b.0)));
    let types: Vec<WasteLedgerType> = types
        .into_iter()
        .map(|(ty, mut l)| {
            waste += l.waste_usd_mo;
            savings += l.savings_usd_mo;
            flagged += l.waste_count + l.optimize_count;
            // The `top` first, in order: a type can have a hundred
            // thousand flagged resources.
            let first = |a: &(NodeId, &Finding), b: &(NodeId, &Finding)| {
                b.1.projected_savings_usd_mo
                    .total_cmp(&a.1.projected_savings_usd_mo)
                    .then(a.0.cmp(&b.0))
            };
            if l.top.len() > top && top > 0 {
                l.top.select_nth_unstable_by(top - 1, first);
            }
            l.top.truncate(top);
            l.top.sort_unstable_by(first);
            WasteLedgerType {
                count: l.count,
                optimize_count: l.optimize_count,
                projected_savings_usd_mo: round2(l.savings_usd_mo),
                provider: l.provider.map_or("", |p| r.resolve(p)).to_owned(),
                top: l.top.iter().map(|(id, f)| resource(g, &r, *id, f)).collect(),
                ty: ty.to_owned(),
                waste_count: l.waste_count,
                waste_usd_mo: round2(l.waste_usd_mo),
            }
        })
        .collect();
    WasteLedger {
        observed_at: findings.as_of_s,
        price_table: svc_engine::prices::VERSION,
        scan_seq: findings.scan_seq,
        totals: WasteTotals {
            flagged,
            projected_savings_usd_mo: round2(savings),
            waste_usd_mo: round2(waste),
        },
        types,
    }
}

/// The nodes a finding decides (those with findings and not ignored), a
/// bit per row of each node shard. A pass over every node asks it first and
/// looks the finding up ([`FindingSet::deciding`]: two hash lookups) only
/// for the nodes that have one, about one in five of the mock estate's;
/// the lookups for every node were most of a 1M-node request's time.
struct Decided(Vec<Vec<u64>>);

impl Decided {
    fn new(findings: &FindingSet) -> Decided {
        let mut shards: Vec<Vec<u64>> = Vec::new();
        for (id, list) in &findings.by_node {
            if list.is_empty() || findings.ignored.contains_key(id) {
                continue;
            }
            let (shard, row) = (id.shard(), id.row() as usize);
            if shards.len() <= shard {
                shards.resize_with(shard + 1, Vec::new);
            }
            let words = &mut shards[shard];
            if words.len() <= row / 64 {
                words.resize(row / 64 + 1, 0);
            }
            words[row / 64] |= 1 << (row % 64);
        }
        Decided(shards)
    }

    /// [`FindingSet::deciding`], for a node of the graph `findings` was made for.
    fn deciding<'f>(&self, findings: &'f FindingSet, id: NodeId) -> Option<&'f Finding> {
        let row = id.row() as usize;
        let marked = self
            .0
            .get(id.shard())
            .and_then(|words| words.get(row / 64))
            .is_some_and(|word| word & (1 << (row % 64)) != 0);
        // A row marked for another generation's node finds nothing here.
        if marked { findings.deciding(id) } else { None }
    }
}

fn resource(g: &Graph, r: &svc_engine::intern::InternerReader<'_>, id: NodeId, f: &Finding) -> WasteResource {
    WasteResource {
        crn: Crn(crn_with(g, r, id)),
        is_waste: f.is_waste,
        projected_savings_usd_mo: f.projected_savings_usd_mo,
        reason: f.reason.clone(),
        risk_score: f.risk_score,
        rule: f.rule.to_string(),
        source: f.source.label(),
        suggested_action: f.suggested_action.to_string(),
    }
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
#[utoipa::path(
    get,
    path = "/heuristics/status",
    operation_id = "getHeuristicsStatus",
    tag = "heuristics",
    summary = "What the heuristics phase found, and which engine or plugin flagged what.",
    responses(
        (status = 200, description = "Counts, verdicts over the live graph, the built-in pass, each source and each rule.", body = crate::routes::waste::HeuristicsStatus, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn status(State(state): State<AppState>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let now = engine.now_us();
        let findings = engine.findings();
        let g = engine.graph();
        let r = g.interner().reader();
        // By the finding's own source and rule: labelled once each, below.
        let (mut rules, mut sources): (HashMap<&str, Tally>, HashMap<&FindingSource, Tally>) = Default::default();
        let mut kinds: HashMap<&str, (&FindingSource, bool)> = HashMap::new();
        for (id, list) in &findings.by_node {
            let deciding = findings.deciding(*id);
            for f in list.iter() {
                let decided = deciding.is_some_and(|d| std::ptr::eq(d, f));
                for t in [
                    rules.entry(&*f.rule).or_default(),
                    sources.entry(&f.source).or_default(),
                ] {
                    t.findings += 1;
                    t.waste += u64::from(f.is_waste);
                    if decided {
                        t.decided += 1;
                        t.savings += f.projected_savings_usd_mo;
                    }
                }
                kinds.entry(&*f.rule).or_insert((&f.source, f.is_waste));
            }
        }
        let (mut waste, mut optimize, mut clear) = (0u64, 0u64, 0u64);
        let decided = Decided::new(&findings);
        for n in g.nodes().filter(|n| n.is_visible(now)) {
            match decided.deciding(&findings, n.id()) {
                Some(f) if f.is_waste => waste += 1,
                Some(_) => optimize += 1,
                None => clear += 1,
            }
        }
        let mut rule_rows: Vec<HeuristicRule> = builtin::rules()
            .map(|rule| {
                let t = rules.remove(rule.name).unwrap_or_default();
                HeuristicRule {
                    action: Some(rule.action),
                    condition: Some(rule.condition),
                    decided: t.decided,
                    findings: t.findings,
                    kind: RuleKind::from(rule.kind.label()),
                    name: rule.name.to_owned(),
                    projected_savings_usd_mo: round2(t.savings),
                    provider: Some(rule.provider),
                    risk_score: Some(rule.risk),
                    source: "builtin".to_owned(),
                    suggested_action: Some(rule.suggestion),
                    types: Some(rule.types.to_vec()),
                    waste: t.waste,
                }
            })
            .collect();
        // Rules named by heuristic plugins.
        let mut plugin_rules: Vec<(&str, Tally)> = rules.into_iter().collect();
        plugin_rules.sort_by(|a, b| a.0.cmp(b.0));
        for (name, t) in plugin_rules {
            let (source, is_waste) = kinds.get(name).map(|(s, w)| (s.label(), *w)).unwrap_or_default();
            let kind = if is_waste {
                builtin::RuleKind::Waste
            } else {
                builtin::RuleKind::Optimize
            };
            rule_rows.push(HeuristicRule {
                action: None,
                condition: None,
                decided: t.decided,
                findings: t.findings,
                kind: RuleKind::from(kind.label()),
                name: name.to_owned(),
                projected_savings_usd_mo: round2(t.savings),
                provider: None,
                risk_score: None,
                source,
                suggested_action: None,
                types: None,
                waste: t.waste,
            });
        }
        let mut sources: Vec<(String, Tally)> = sources.into_iter().map(|(s, t)| (s.label(), t)).collect();
        sources.sort_by(|a, b| a.0.cmp(&b.0));
        let engines = sources
            .into_iter()
            .map(|(source, t)| EngineTally {
                decided: t.decided,
                findings: t.findings,
                projected_savings_usd_mo: round2(t.savings),
                source,
                waste: t.waste,
            })
            .collect();
        let mut ignored: Vec<(String, String)> = findings
            .ignored
            .iter()
            .map(|(id, why)| (crn_with(&g, &r, *id), why.describe()))
            .collect();
        ignored.sort();
        let ignored = ignored
            .into_iter()
            .take(IGNORED_LISTED)
            .map(|(crn, reason)| IgnoredResource { crn: Crn(crn), reason })
            .collect();
        let (waste_usd, savings) = findings.totals();
        Ok(HeuristicsStatus {
            builtin: findings.builtin.payload(),
            counts: FindingCounts {
                findings: findings.len() as u64,
                ignored: findings.ignored.len() as u64,
                nodes_flagged: findings.by_node.len() as u64,
                projected_savings_usd_mo: round2(savings),
                waste_usd_mo: round2(waste_usd),
            },
            engines,
            ignored,
            observed_at: findings.as_of_s,
            pattern: pattern(&engine.pattern(), &g, &r),
            plugins: findings.analyzers.iter().map(AnalyzerOutcome::payload).collect(),
            price_table: svc_engine::prices::VERSION,
            rules: rule_rows,
            scan_seq: findings.scan_seq,
            verdicts: Verdicts { clear, optimize, waste },
        })
    })
    .await
}

/// Ignored resources listed in the status (the count covers all).
const IGNORED_LISTED: usize = 100;

/// Grouped findings and outliers listed in the status (the counts cover all).
const PATTERN_LISTED: usize = 100;

/// The `pattern` object of the status: the last scan's `engine.pattern` phase.
fn pattern(p: &PatternReport, g: &Graph, r: &svc_engine::intern::InternerReader<'_>) -> PatternStatus {
    let grouped = p
        .grouped
        .iter()
        .take(PATTERN_LISTED)
        .map(|f| GroupedFinding {
            group_size: f.group_size,
            members: f.members,
            rule: f.rule.clone(),
            samples: f.samples.iter().map(|id| Crn(crn_with(g, r, *id))).collect(),
            savings_usd_mo: round2(f.savings_usd_mo),
            signature: format!("{:016x}", f.signature),
            summary: f.summary.clone(),
            ty: f.ty.clone(),
        })
        .collect();
    let outliers = p
        .outliers
        .iter()
        .take(PATTERN_LISTED)
        .map(|o| PatternOutlier {
            crn: Crn(crn_with(g, r, o.node)),
            direction: OutlierDirection::from(o.direction.label()),
            group_size: o.group_size,
            group_waste: o.group_waste,
            reason: o.reason.clone(),
            signature: format!("{:016x}", o.signature),
        })
        .collect();
    PatternStatus {
        distinct_signatures: p.distinct_signatures,
        duration_ms: p.duration_ms,
        grouped,
        grouped_nodes: p.grouped_nodes,
        grouped_total: p.grouped_total,
        groups: p.groups,
        majority: p.majority,
        min_group: p.min_group,
        outliers,
        outliers_total: p.outliers_total,
        rounds: p.rounds,
        scan_seq: p.scan_seq,
        signatures: p.signatures,
    }
}
