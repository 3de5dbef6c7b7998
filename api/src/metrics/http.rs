//! The metrics' HTTP side: `GET /metrics` and the middleware that counts
//! and times every request.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use super::operator::Scrape;
use super::{CONTENT_TYPE, UNMATCHED_ROUTE};
use crate::state::AppState;

/// The route template a path belongs to, from [`crate::ROUTES`]: the route
/// itself when it is one, else the first whose `{param}` segments match any
/// one segment each.
fn route_template(path: &str) -> Option<&'static str> {
    if let Some((_, t)) = crate::ROUTES.iter().find(|(_, t)| *t == path) {
        return Some(t);
    }
    let segs: Vec<&str> = path.split('/').collect();
    crate::ROUTES.iter().map(|(_, t)| *t).find(|t| {
        let tsegs = t.split('/');
        tsegs.clone().count() == segs.len()
            && tsegs
                .zip(&segs)
                .all(|(t, s)| (t.starts_with('{') && t.ends_with('}') && !s.is_empty()) || t == *s)
    })
}

/// `GET /metrics`.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    tag = "probes",
    summary = "Prometheus metrics.",
    description = r#"Prometheus text exposition format 0.0.4 (`text/plain; version=0.0.4`).
Families include `svc_scan_duration_seconds` (histogram),
`svc_nodes_discovered_total{provider}`, `svc_scans_total{outcome}`,
`svc_source_failures_total{source}`,
`svc_policy_violations_total{rule_id,resource_type,enforcement_mode}`,
`svc_http_requests_total{method,route,status}`,
`svc_http_request_duration_seconds{method,route}` (histogram),
`svc_graph_nodes`, `svc_graph_edges`, `svc_process_uptime_seconds`,
`svc_ready` (1 while `/readyz` answers 200, else 0),
`svc_ledger_events_total` (once the engine is ready) and
`svc_waste_usd_total` (untyped; current projected waste in USD per month).
For alerting: `svc_build_info{version,commit}`,
`svc_source_last_success_timestamp_seconds{source}`,
`svc_plugin_up{plugin,role}`, `svc_plugin_rejected_items_total{plugin,reason}`,
`svc_remediation_queue_depth{stage}`, `svc_remediation_savings_usd{stage}`,
and, while the compliance export is on, `svc_ledger_export_lag_events` and
`svc_ledger_export_lag_seconds`."#,
    responses(
        (status = 200, description = "The exposition text.", body = String, content_type = "text/plain"),
        (status = 500, response = crate::openapi::Internal),
    ),
)]
pub async fn render(State(state): State<AppState>) -> impl IntoResponse {
    let uptime = state.inner.started.elapsed().as_secs_f64();
    let ledger = state.engine().ok().map(|e| e.ledger().last_seq());
    let ready = state.readiness().is_ok();
    let scrape = {
        let engine = state.engine().ok().cloned();
        let plugins = state.plugins();
        let export_on = state.exporter().is_some_and(|e| e.settings().bucket.is_some());
        let now_us = u64::try_from(chrono::Utc::now().timestamp_micros()).unwrap_or(0);
        tokio::task::spawn_blocking(move || Scrape::read(engine.as_deref(), plugins.as_deref(), export_on, now_us))
            .await
            .unwrap_or_default()
    };
    match state.inner.metrics.encode_with(uptime, ledger, ready, &scrape) {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => crate::error::ApiError::internal(e).into_response(),
    }
}

/// Middleware: counts and times every request by method, route template
/// and status, in a span `{method} {route}` (OpenTelemetry's HTTP server
/// conventions: `http.request.method`, `http.route`,
/// `http.response.status_code`). The route is the matched path when
/// routing has run (route layers), else the template of [`crate::ROUTES`]
/// the path fits, else `unmatched`.
pub async fn track_http(
    State(state): State<AppState>,
    matched: Option<MatchedPath>,
    req: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = match &matched {
        Some(m) => route_template(m.as_str()).unwrap_or(UNMATCHED_ROUTE),
        None => route_template(req.uri().path()).unwrap_or(UNMATCHED_ROUTE),
    };
    let span = tracing::info_span!(
        "http.request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
    );
    let response = next.run(req).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "error");
    }
    state.inner.metrics.observe_http(
        &method,
        route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_map_to_their_templates() {
        assert_eq!(route_template("/api/v1/graph/nodes"), Some("/api/v1/graph/nodes"));
        assert_eq!(
            route_template("/api/v1/graph/nodes/crn:svc:aws:r:s:k:a:default%2Fweb-1/edges"),
            Some("/api/v1/graph/nodes/{crn}/edges")
        );
        assert_eq!(route_template("/metrics"), Some("/metrics"));
        assert_eq!(route_template("/api/v1/graph/nodes//edges"), None);
        assert_eq!(route_template("/nope"), None);
    }
}
