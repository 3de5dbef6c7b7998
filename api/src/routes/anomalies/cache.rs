//! The answer cache of `GET /api/v1/anomalies`, held by the API state: one
//! computed answer, reused while younger than [`CACHE_TTL`].

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::body::{AnomalySummary, Baseline, NodeAnomaly, Thresholds, TypeAnomaly, TypeHistory};
use crate::error::ApiResult;

/// How long a computed answer is served (SPEC 8).
pub const CACHE_TTL: Duration = Duration::from_secs(30);
/// One computed answer, before filtering.
pub struct Computed {
    pub at: Instant,
    pub baseline: Baseline,
    pub generated_at: String,
    pub previous_scan_seq: u64,
    pub scan_seq: u64,
    pub summary: AnomalySummary,
    pub thresholds: Thresholds,
    pub nodes: Vec<NodeAnomaly>,
    pub types: Vec<TypeAnomaly>,
    pub history: Vec<TypeHistory>,
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
