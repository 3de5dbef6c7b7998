//! `GET /api/v1/anomalies`: the cost anomalies of the last analysed scan
//! (nodes and types, by robust z-score of their cost change) and each
//! type's cost history in brief.
//!
//! The answer is computed at most once per [`CACHE_TTL`] (SPEC 8): the
//! first request after the cache expired builds it on the blocking pool
//! while later ones wait for it, and every request within the TTL gets the
//! same document (`generated_at` says when it was built), filtered by its
//! `type`, `provider` and `limit`. A scan that finishes within the TTL shows
//! once it expires.

mod body;
pub mod cache;

use std::time::Instant;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use svc_engine::signal::{
    self, HISTORY_SCANS, MIN_CHANGE_PCT, MIN_CHANGE_USD_MO, TYPE_MIN_CHANGE_PCT, TYPE_MIN_CHANGES, TypeTotals,
    Z_THRESHOLD,
};

use super::ApiQuery;
use super::graph::round2;
use super::query::{Limit, NonBlank};
use super::rfc3339;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire::Crn;
pub use body::*;
pub use cache::{CACHE_TTL, Cache, Computed};

/// Query parameters of `GET /api/v1/anomalies`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnomalyQuery {
    /// Page size.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 1000>,
    /// Only this resource type, full (`ec2:volume`) or by kind (`volume`).
    #[serde(rename = "type")]
    #[param(inline)]
    ty: Option<NonBlank>,
    /// Only this provider's types and nodes.
    #[param(inline)]
    provider: Option<NonBlank>,
}

/// `GET /api/v1/anomalies`.
#[utoipa::path(
    get,
    path = "/anomalies",
    operation_id = "getAnomalies",
    tag = "signals",
    summary = "Cost anomalies of the last analysed scan, and each type's cost history in brief (SPEC 4.4).",
    description = "A node is an anomaly when its cost change since the previous scan has a robust z-score (0.6745 (x - median) / MAD over the changes of every node of its type, unchanged ones counting as 0; (x - median) / (1.253314 MeanAD) when the MAD is 0) above 3.5 in absolute value and the change is material (at least $1/mo and 10% of the previous cost; a new node, or one that cost nothing, passes). New and removed nodes are changes from and to 0. A type is an anomaly when its total's change scores above 3.5 against the type's changes over the recorded scans (at least 5 of them) and is at least $1/mo and 1% of the previous total. The answer is computed at most once per 30 seconds (SPEC 8) and shared by every request in that window; `generated_at` says when.",
    params(AnomalyQuery),
    responses(
        (status = 200, description = "The anomalies and the history summary.", body = crate::routes::anomalies::Anomalies<'static>, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn list(State(state): State<AppState>, ApiQuery(q): ApiQuery<AnomalyQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let limit = q.limit.0;
    let (ty_filter, provider) = (q.ty.map(|t| t.0), q.provider.map(|p| p.0));
    let computed = state
        .inner
        .anomalies
        .get_or_compute(Instant::now(), || async move {
            tokio::task::spawn_blocking(move || compute(&engine))
                .await
                .map_err(ApiError::internal)?
        })
        .await?;
    let keep = |ty: &str, p: &str| self::ty(&ty_filter, ty) && provider.as_deref().is_none_or(|want| p == want);
    let (node_matches, nodes) = pick(computed.nodes.iter().filter(|n| keep(&n.ty, &n.provider)), limit);
    let (type_matches, types) = pick(computed.types.iter().filter(|t| keep(&t.ty, &t.provider)), limit);
    let (_, history) = pick(computed.history.iter().filter(|h| keep(&h.ty, &h.provider)), usize::MAX);
    let body = Anomalies {
        baseline: &computed.baseline,
        cache_ttl_s: CACHE_TTL.as_secs(),
        generated_at: &computed.generated_at,
        history,
        matching: Matching {
            nodes: node_matches,
            types: type_matches,
        },
        nodes,
        previous_scan_seq: computed.previous_scan_seq,
        scan_seq: computed.scan_seq,
        summary: &computed.summary,
        thresholds: &computed.thresholds,
        types,
    };
    let bytes = serde_json::to_vec(&body).map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, "application/json")], bytes).into_response())
}

/// Whether a type passes the `type` filter: the full type or its kind.
fn ty(filter: &Option<String>, ty: &str) -> bool {
    filter
        .as_deref()
        .is_none_or(|t| ty == t || ty.rsplit(':').next() == Some(t))
}

/// How many items match, and the first `limit` of them.
fn pick<'a, T>(matching: impl Iterator<Item = &'a T>, limit: usize) -> (usize, Vec<&'a T>) {
    let mut count = 0;
    let mut listed = Vec::new();
    for item in matching {
        count += 1;
        if listed.len() < limit {
            listed.push(item);
        }
    }
    (count, listed)
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The change of a cost: previous, current, change (of the rounded
/// values, so they add up), change_pct, direction.
struct Change {
    previous: f64,
    current: f64,
    change: f64,
    change_pct: Option<f64>,
    direction: Direction,
}

fn change_of(previous: f64, current: f64) -> Change {
    let (p, c) = (round2(previous), round2(current));
    let change = round2(c - p);
    Change {
        previous: p,
        current: c,
        change,
        change_pct: signal::change_pct(previous, current).map(round2),
        direction: Direction::from(signal::direction(change)),
    }
}

fn point(scan_seq: u64, t: &TypeTotals) -> HistoryPoint {
    HistoryPoint {
        cost_usd_mo: round2(t.cost_usd_mo),
        count: t.count,
        scan_seq,
        waste_usd_mo: round2(t.waste_usd_mo),
    }
}

/// Builds the whole answer from the engine's last analysis and history.
fn compute(engine: &svc_engine::Engine) -> ApiResult<Computed> {
    let a = engine.anomalies();
    let history = engine.signal().history();
    let nodes = a
        .nodes
        .iter()
        .map(|n| {
            let c = change_of(n.previous, n.current);
            NodeAnomaly {
                change: c.change,
                change_pct: c.change_pct,
                crn: Crn(n.crn.clone()),
                current: c.current,
                direction: c.direction,
                kind: ChangeKind::from(n.kind.label()),
                previous: c.previous,
                provider: n.provider.clone(),
                scan_seq: a.scan_seq,
                ty: n.ty.clone(),
                z: round3(n.z),
            }
        })
        .collect();
    let types = a
        .types
        .iter()
        .map(|t| {
            let c = change_of(t.previous, t.current);
            TypeAnomaly {
                change: c.change,
                change_pct: c.change_pct,
                count: t.count,
                current: c.current,
                direction: c.direction,
                history_changes: t.history_changes,
                previous: c.previous,
                previous_count: t.previous_count,
                provider: t.provider.clone(),
                scan_seq: a.scan_seq,
                ty: t.ty.clone(),
                z: round3(t.z),
            }
        })
        .collect();
    let mut summaries = history.summaries();
    summaries.sort_by(|x, y| {
        y.latest
            .cost_usd_mo
            .total_cmp(&x.latest.cost_usd_mo)
            .then(x.key.cmp(&y.key))
    });
    let reader = engine.interner().reader();
    let history_entries = summaries
        .iter()
        .map(|s| {
            let previous = s.previous.map(|p| round2(p.cost_usd_mo));
            TypeHistory {
                change_usd_mo: previous.map(|p| round2(round2(s.latest.cost_usd_mo) - p)),
                cost_usd_mo: round2(s.latest.cost_usd_mo),
                count: s.latest.count,
                first_scan_seq: s.first_scan_seq,
                last_scan_seq: s.last_scan_seq,
                max_cost_usd_mo: round2(s.max_cost_usd_mo),
                mean_cost_usd_mo: round2(s.mean_cost_usd_mo),
                min_cost_usd_mo: round2(s.min_cost_usd_mo),
                previous_cost_usd_mo: previous,
                provider: reader.resolve(s.key.provider).to_owned(),
                recent: s.recent.iter().map(|(seq, t)| point(*seq, t)).collect(),
                scans: s.scans,
                ty: reader.resolve(s.key.ty).to_owned(),
                waste_usd_mo: round2(s.latest.waste_usd_mo),
            }
        })
        .collect();
    drop(reader);
    Ok(Computed {
        at: Instant::now(),
        baseline: Baseline::from(a.baseline.label()),
        generated_at: rfc3339(engine.now_us()),
        previous_scan_seq: a.previous_scan_seq,
        scan_seq: a.scan_seq,
        summary: AnomalySummary {
            history_retention_scans: HISTORY_SCANS,
            history_scans: history.len(),
            node_anomalies: a.nodes_flagged,
            nodes_changed: a.nodes_changed,
            nodes_compared: a.nodes_compared,
            type_anomalies: a.types.len(),
        },
        thresholds: Thresholds {
            min_change_pct: MIN_CHANGE_PCT,
            min_change_usd_mo: MIN_CHANGE_USD_MO,
            type_min_change_pct: TYPE_MIN_CHANGE_PCT,
            type_min_changes: TYPE_MIN_CHANGES,
            z: Z_THRESHOLD,
        },
        nodes,
        types,
        history: history_entries,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;

    fn computed(at: Instant, n: u64) -> Computed {
        Computed {
            at,
            baseline: Baseline::from("none"),
            generated_at: String::new(),
            previous_scan_seq: 0,
            scan_seq: n,
            summary: AnomalySummary {
                history_retention_scans: 1,
                history_scans: 0,
                node_anomalies: 0,
                nodes_changed: 0,
                nodes_compared: 0,
                type_anomalies: 0,
            },
            thresholds: Thresholds {
                min_change_pct: 0.0,
                min_change_usd_mo: 0.0,
                type_min_change_pct: 0.0,
                type_min_changes: 0,
                z: 0.0,
            },
            nodes: Vec::new(),
            types: Vec::new(),
            history: Vec::new(),
        }
    }

    #[tokio::test]
    async fn the_answer_is_computed_at_most_once_per_ttl() {
        let cache = Cache::default();
        let runs = AtomicU32::new(0);
        let t0 = Instant::now();
        let get = |now: Instant| {
            let runs = &runs;
            let cache = &cache;
            async move {
                cache
                    .get_or_compute(now, || async move {
                        let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                        Ok(computed(now, u64::from(n)))
                    })
                    .await
                    .unwrap()
                    .scan_seq
            }
        };
        assert_eq!(get(t0).await, 1);
        assert_eq!(get(t0 + Duration::from_secs(29)).await, 1);
        assert_eq!(get(t0 + CACHE_TTL).await, 2, "expired at the TTL");
        assert_eq!(get(t0 + CACHE_TTL + Duration::from_secs(1)).await, 2);
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_failed_computation_is_not_cached() {
        let cache = Cache::default();
        let now = Instant::now();
        let err = cache
            .get_or_compute(now, || async { Err(ApiError::internal("boom")) })
            .await;
        assert!(err.is_err());
        let ok = cache.get_or_compute(now, || async move { Ok(computed(now, 7)) }).await;
        assert_eq!(ok.unwrap().scan_seq, 7);
    }

    #[test]
    fn changes_add_up_and_say_which_way() {
        let c = change_of(10.004, 80.456);
        assert_eq!((c.previous, c.current, c.change), (10.0, 80.46, 70.46));
        assert_eq!(c.direction, Direction::from("up"));
        let c = change_of(0.0, 5.0);
        assert_eq!((c.change_pct, c.direction), (None, Direction::from("up")));
        let c = change_of(200.0, 50.0);
        assert_eq!((c.change_pct, c.direction), (Some(-75.0), Direction::from("down")));
    }
}
