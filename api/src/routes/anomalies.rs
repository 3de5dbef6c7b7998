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

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
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

/// How long a computed answer is served (SPEC 8).
pub const CACHE_TTL: Duration = Duration::from_secs(30);
/// Query parameters of `GET /api/v1/anomalies`.
#[derive(Deserialize)]
pub struct AnomalyQuery {
    /// Node and type anomalies listed (each).
    #[serde(default)]
    limit: Limit<100, 1000>,
    /// Only this resource type: a full type (`ec2:volume`) or its kind (`volume`).
    #[serde(rename = "type")]
    ty: Option<NonBlank>,
    /// Only this provider.
    provider: Option<NonBlank>,
}

/// One listed item with what the filters look at.
struct Entry {
    ty: String,
    provider: String,
    body: Value,
}

/// One computed answer, before filtering.
pub struct Computed {
    at: Instant,
    head: serde_json::Map<String, Value>,
    nodes: Vec<Entry>,
    types: Vec<Entry>,
    history: Vec<Entry>,
}

/// The answer cache of the API state.
#[derive(Default)]
pub struct Cache(tokio::sync::Mutex<Option<Arc<Computed>>>);

fn fresh(at: Instant, now: Instant) -> bool {
    now.saturating_duration_since(at) < CACHE_TTL
}

impl Cache {
    /// The cached answer when younger than [`CACHE_TTL`] at `now`, else a
    /// new one from `compute` (one computation at a time; waiters reuse it).
    pub async fn get_or_compute<F, Fut>(&self, now: Instant, compute: F) -> ApiResult<Arc<Computed>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = ApiResult<Computed>>,
    {
        let mut slot = self.0.lock().await;
        if let Some(c) = slot.as_ref().filter(|c| fresh(c.at, now)) {
            return Ok(c.clone());
        }
        let c = Arc::new(compute().await?);
        *slot = Some(c.clone());
        Ok(c)
    }
}

/// `GET /api/v1/anomalies`.
pub async fn list(State(state): State<AppState>, ApiQuery(q): ApiQuery<AnomalyQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let limit = q.limit.0;
    let (ty, provider) = (q.ty.map(|t| t.0), q.provider.map(|p| p.0));
    let computed = state
        .inner
        .anomalies
        .get_or_compute(Instant::now(), || async move {
            tokio::task::spawn_blocking(move || compute(&engine))
                .await
                .map_err(ApiError::internal)?
        })
        .await?;
    let keep = |e: &&Entry| {
        ty.as_deref()
            .is_none_or(|t| e.ty == t || e.ty.rsplit(':').next() == Some(t))
            && provider.as_deref().is_none_or(|p| e.provider == p)
    };
    let pick = |list: &[Entry], limit: usize| -> (usize, Vec<Value>) {
        let matching: Vec<&Entry> = list.iter().filter(keep).collect();
        (
            matching.len(),
            matching.iter().take(limit).map(|e| e.body.clone()).collect(),
        )
    };
    let (node_matches, nodes) = pick(&computed.nodes, limit);
    let (type_matches, types) = pick(&computed.types, limit);
    let (_, history) = pick(&computed.history, usize::MAX);
    let mut body = computed.head.clone();
    body.insert("matching".into(), json!({"nodes": node_matches, "types": type_matches}));
    body.insert("nodes".into(), Value::Array(nodes));
    body.insert("types".into(), Value::Array(types));
    body.insert("history".into(), Value::Array(history));
    let bytes = serde_json::to_vec(&Value::Object(body)).map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, "application/json")], bytes).into_response())
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// previous, current, change (of the rounded values, so they add up), change_pct, direction.
fn change_fields(previous: f64, current: f64) -> serde_json::Map<String, Value> {
    let (p, c) = (round2(previous), round2(current));
    let change = round2(c - p);
    let mut m = serde_json::Map::new();
    m.insert("previous".into(), json!(p));
    m.insert("current".into(), json!(c));
    m.insert("change".into(), json!(change));
    m.insert(
        "change_pct".into(),
        json!(signal::change_pct(previous, current).map(round2)),
    );
    m.insert("direction".into(), json!(signal::direction(change)));
    m
}

fn point(scan_seq: u64, t: &TypeTotals) -> Value {
    json!({
        "scan_seq": scan_seq,
        "count": t.count,
        "cost_usd_mo": round2(t.cost_usd_mo),
        "waste_usd_mo": round2(t.waste_usd_mo),
    })
}

/// Builds the whole answer from the engine's last analysis and history.
fn compute(engine: &svc_engine::Engine) -> ApiResult<Computed> {
    let a = engine.anomalies();
    let history = engine.signal().history();
    let nodes = a
        .nodes
        .iter()
        .map(|n| {
            let mut m = change_fields(n.previous, n.current);
            m.insert("crn".into(), json!(n.crn));
            m.insert("type".into(), json!(n.ty));
            m.insert("provider".into(), json!(n.provider));
            m.insert("kind".into(), json!(n.kind.label()));
            m.insert("z".into(), json!(round3(n.z)));
            m.insert("scan_seq".into(), json!(a.scan_seq));
            Entry {
                ty: n.ty.clone(),
                provider: n.provider.clone(),
                body: Value::Object(m),
            }
        })
        .collect();
    let types = a
        .types
        .iter()
        .map(|t| {
            let mut m = change_fields(t.previous, t.current);
            m.insert("type".into(), json!(t.ty));
            m.insert("provider".into(), json!(t.provider));
            m.insert("previous_count".into(), json!(t.previous_count));
            m.insert("count".into(), json!(t.count));
            m.insert("z".into(), json!(round3(t.z)));
            m.insert("history_changes".into(), json!(t.history_changes));
            m.insert("scan_seq".into(), json!(a.scan_seq));
            Entry {
                ty: t.ty.clone(),
                provider: t.provider.clone(),
                body: Value::Object(m),
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
            let (ty, provider) = (
                reader.resolve(s.key.ty).to_owned(),
                reader.resolve(s.key.provider).to_owned(),
            );
            let previous = s.previous.map(|p| round2(p.cost_usd_mo));
            let body = json!({
                "type": ty,
                "provider": provider,
                "scans": s.scans,
                "first_scan_seq": s.first_scan_seq,
                "last_scan_seq": s.last_scan_seq,
                "count": s.latest.count,
                "cost_usd_mo": round2(s.latest.cost_usd_mo),
                "waste_usd_mo": round2(s.latest.waste_usd_mo),
                "previous_cost_usd_mo": previous,
                "change_usd_mo": previous.map(|p| round2(round2(s.latest.cost_usd_mo) - p)),
                "min_cost_usd_mo": round2(s.min_cost_usd_mo),
                "max_cost_usd_mo": round2(s.max_cost_usd_mo),
                "mean_cost_usd_mo": round2(s.mean_cost_usd_mo),
                "recent": s.recent.iter().map(|(seq, t)| point(*seq, t)).collect::<Vec<_>>(),
            });
            Entry { ty, provider, body }
        })
        .collect();
    drop(reader);
    let head = json!({
        "generated_at": rfc3339(engine.now_us()),
        "cache_ttl_s": CACHE_TTL.as_secs(),
        "scan_seq": a.scan_seq,
        "previous_scan_seq": a.previous_scan_seq,
        "baseline": a.baseline.label(),
        "thresholds": {
            "z": Z_THRESHOLD,
            "min_change_usd_mo": MIN_CHANGE_USD_MO,
            "min_change_pct": MIN_CHANGE_PCT,
            "type_min_change_pct": TYPE_MIN_CHANGE_PCT,
            "type_min_changes": TYPE_MIN_CHANGES,
        },
        "summary": {
            "nodes_compared": a.nodes_compared,
            "nodes_changed": a.nodes_changed,
            "node_anomalies": a.nodes_flagged,
            "type_anomalies": a.types.len(),
            "history_scans": history.len(),
            "history_retention_scans": HISTORY_SCANS,
        },
    });
    let Value::Object(head) = head else {
        return Err(ApiError::internal("anomaly head is not an object"));
    };
    Ok(Computed {
        at: Instant::now(),
        head,
        nodes,
        types,
        history: history_entries,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn computed(at: Instant, n: u32) -> Computed {
        let mut head = serde_json::Map::new();
        head.insert("n".into(), json!(n));
        Computed {
            at,
            head,
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
                        Ok(computed(now, n))
                    })
                    .await
                    .unwrap()
                    .head["n"]
                    .clone()
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
        assert_eq!(ok.unwrap().head["n"], 7);
    }

    #[test]
    fn change_fields_add_up_and_say_which_way() {
        let m = change_fields(10.004, 80.456);
        assert_eq!(
            (m["previous"].clone(), m["current"].clone()),
            (json!(10.0), json!(80.46))
        );
        assert_eq!(m["change"], json!(70.46));
        assert_eq!(m["direction"], "up");
        let m = change_fields(0.0, 5.0);
        assert_eq!(
            (m["change_pct"].clone(), m["direction"].clone()),
            (Value::Null, json!("up"))
        );
        let m = change_fields(200.0, 50.0);
        assert_eq!(
            (m["change_pct"].clone(), m["direction"].clone()),
            (json!(-75.0), json!("down"))
        );
    }
}
