//! `GET /api/v1/graph/breakdown`: the live estate's monthly cost, waste and
//! projected savings grouped by provider, account, region or type, for the
//! dashboard's overview. One pass over the node columns; groups are keyed
//! by interned symbol, so a node costs a hash-map update.

use axum::extract::State;
use axum::response::Response;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use svc_engine::heuristics::FindingSet;
use svc_engine::{Graph, Sym};
use utoipa::ToSchema;

use super::{blocking, round2};
use crate::error::ApiResult;
use crate::routes::ApiQuery;
use crate::routes::query::Limit;
use crate::state::AppState;

/// What the nodes are grouped by.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    #[default]
    Provider,
    Account,
    Region,
    Type,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BreakdownQuery {
    /// What to group by.
    #[serde(default)]
    #[param(inline)]
    by: GroupBy,
    /// Most groups listed (the costliest first); the rest are summed in `rest`.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<20, 1000>,
}

/// One group's figures.
#[derive(Clone, Debug, Default, Serialize, ToSchema)]
pub struct BreakdownGroup {
    /// The provider, account, region or type.
    pub key: String,
    /// Visible nodes.
    pub nodes: u64,
    /// Their monthly cost (USD).
    pub cost_usd_mo: f64,
    /// Of them, those judged waste.
    pub waste_nodes: u64,
    /// Monthly USD of the resources judged waste (by the last scan's deciding findings).
    pub waste_usd_mo: f64,
    /// What acting on the last scan's deciding findings would save a month.
    pub projected_savings_usd_mo: f64,
}

/// The groups beyond `limit`, summed.
#[derive(Clone, Debug, Default, Serialize, ToSchema)]
pub struct BreakdownRest {
    pub groups: u64,
    pub nodes: u64,
    pub cost_usd_mo: f64,
    pub waste_nodes: u64,
    pub waste_usd_mo: f64,
    pub projected_savings_usd_mo: f64,
}

#[derive(Serialize, ToSchema)]
pub struct Breakdown {
    pub by: GroupBy,
    /// Groups in all (listed or in `rest`).
    pub total_groups: u64,
    /// The costliest groups, most costly first (ties by key).
    pub groups: Vec<BreakdownGroup>,
    /// The other groups summed; null when every group is listed.
    pub rest: Option<BreakdownRest>,
}

#[derive(Default)]
struct Acc {
    nodes: u64,
    cost: f64,
    waste_nodes: u64,
    waste: f64,
    savings: f64,
}

/// `GET /api/v1/graph/breakdown?by=&limit=`.
#[utoipa::path(
    get,
    path = "/graph/breakdown",
    operation_id = "getGraphBreakdown",
    tag = "graph",
    summary = "Cost, waste and projected savings of the live estate, grouped.",
    description = "Visible nodes grouped by `provider`, `account`, `region` or `type`. Waste and savings per group come from the last scan's deciding findings (before any scan: the cost of the nodes marked waste), so the groups add up to `graph/stats` and the last `SCAN_COMPLETED`.",
    params(BreakdownQuery),
    responses(
        (status = 200, description = "The groups.", body = Breakdown, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn breakdown(State(state): State<AppState>, ApiQuery(q): ApiQuery<BreakdownQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let now = engine.now_us();
        let findings = engine.findings();
        let g = engine.graph();
        let at = crate::derived::State::of(&engine, &findings);
        let key = format!("graph/breakdown by={:?} limit={}", q.by, q.limit.0);
        let kept = state
            .inner
            .derived
            .get_or_make(&key, &at, || breakdown_of(&g, &findings, now, q.by, q.limit.0));
        Ok(crate::derived::Kept(kept))
    })
    .await
}

/// The visible nodes of `g` at `now` grouped `by`, with the last scan's
/// deciding `findings`; the `limit` costliest groups listed, the rest summed.
fn breakdown_of(g: &Graph, findings: &FindingSet, now: u64, by: GroupBy, limit: usize) -> Breakdown {
    let scanned = findings.scan_seq > 0;
    let mut acc: FxHashMap<Sym, Acc> = FxHashMap::default();
    for n in g.nodes().filter(|n| n.is_visible(now)) {
        let key = match by {
            GroupBy::Provider => n.provider(),
            GroupBy::Account => n.account(),
            GroupBy::Region => n.region(),
            GroupBy::Type => n.ty(),
        };
        let a = acc.entry(key).or_default();
        a.nodes += 1;
        a.cost += f64::from(n.cost_usd_mo());
        if n.is_waste() {
            a.waste_nodes += 1;
        }
        if scanned {
            if let Some(f) = findings.deciding(n.id()) {
                a.savings += f.projected_savings_usd_mo;
                if f.is_waste {
                    a.waste += f.projected_savings_usd_mo;
                }
            }
        } else if n.is_waste() {
            a.waste += f64::from(n.cost_usd_mo());
            a.savings += f64::from(n.cost_usd_mo());
        }
    }
    let r = g.interner().reader();
    let mut groups: Vec<BreakdownGroup> = acc
        .into_iter()
        .map(|(k, a)| BreakdownGroup {
            key: r.resolve(k).to_owned(),
            nodes: a.nodes,
            cost_usd_mo: a.cost,
            waste_nodes: a.waste_nodes,
            waste_usd_mo: a.waste,
            projected_savings_usd_mo: a.savings,
        })
        .collect();
    drop(r);
    groups.sort_by(|a, b| b.cost_usd_mo.total_cmp(&a.cost_usd_mo).then_with(|| a.key.cmp(&b.key)));
    let total_groups = groups.len() as u64;
    let listed = groups.len().min(limit);
    let rest = (groups.len() > listed).then(|| {
        groups[listed..].iter().fold(BreakdownRest::default(), |mut s, g| {
            s.groups += 1;
            s.nodes += g.nodes;
            s.cost_usd_mo += g.cost_usd_mo;
            s.waste_nodes += g.waste_nodes;
            s.waste_usd_mo += g.waste_usd_mo;
            s.projected_savings_usd_mo += g.projected_savings_usd_mo;
            s
        })
    });
    groups.truncate(listed);
    for g in &mut groups {
        g.cost_usd_mo = round2(g.cost_usd_mo);
        g.waste_usd_mo = round2(g.waste_usd_mo);
        g.projected_savings_usd_mo = round2(g.projected_savings_usd_mo);
    }
    let rest = rest.map(|mut s| {
        s.cost_usd_mo = round2(s.cost_usd_mo);
        s.waste_usd_mo = round2(s.waste_usd_mo);
        s.projected_savings_usd_mo = round2(s.projected_savings_usd_mo);
        s
    });
    Breakdown {
        by,
        total_groups,
        groups,
        rest,
    }
}
