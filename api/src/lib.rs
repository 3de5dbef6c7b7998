//! svc-api: the REST API (`/api/v1`), the WebSocket ledger stream
//! (`/events`), the probes and `/metrics`. Converts engine types to the wire
//! shapes of SPEC.md; holds no business logic.

pub mod auth;
pub mod config;
pub mod error;
pub mod export;
pub mod metrics;
pub mod plugins;
pub mod routes;
pub mod state;
pub mod wire;
pub mod ws;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, Uri};
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{delete, get, post};

pub use error::{ApiError, ApiResult};
pub use state::AppState;

/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Every route the server answers, as `(method, path)` in OpenAPI path
/// syntax. `schemas/openapi.yaml` must describe exactly these; a test checks it.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/events"),
    ("GET", "/api/v1/topology"),
    ("GET", "/api/v1/graph/stats"),
    ("GET", "/api/v1/graph/nodes"),
    ("GET", "/api/v1/graph/nodes/{crn}"),
    ("GET", "/api/v1/graph/nodes/{crn}/edges"),
    ("GET", "/api/v1/graph/blast-radius/{crn}"),
    ("GET", "/api/v1/graph/at"),
    ("GET", "/api/v1/graph/diff"),
    ("GET", "/api/v1/nodes"),
    ("GET", "/api/v1/graph"),
    ("GET", "/api/v1/graph/topology"),
    ("POST", "/api/v1/engine/scan"),
    ("POST", "/api/v1/sync"),
    ("GET", "/api/v1/history"),
    ("GET", "/api/v1/history/summary"),
    ("GET", "/api/v1/history/resource"),
    ("GET", "/api/v1/history/sessions"),
    ("POST", "/api/v1/history/prune"),
    ("GET", "/api/v1/ledger/verify"),
    ("POST", "/api/v1/ledger/export"),
    ("GET", "/api/v1/config"),
    ("PUT", "/api/v1/config"),
    ("GET", "/api/v1/waste-ledger"),
    ("GET", "/api/v1/heuristics/status"),
    ("GET", "/api/v1/solver/results"),
    ("GET", "/api/v1/oracle/{crn}"),
    ("POST", "/api/v1/traffic/ingest"),
    ("GET", "/api/v1/traffic/edges"),
    ("GET", "/api/v1/anomalies"),
    ("GET", "/api/v1/plugins"),
    ("POST", "/api/v1/plugins/toggle"),
    ("GET", "/api/v1/remediation/queue"),
    ("POST", "/api/v1/remediation/approve"),
    ("POST", "/api/v1/remediation/reject"),
    ("POST", "/api/v1/remediation/move"),
    ("POST", "/api/v1/remediation/bulk"),
    ("POST", "/api/v1/remediation/override"),
    ("POST", "/api/v1/remediation/quarantine"),
    ("POST", "/api/v1/remediation/revert"),
    ("GET", "/api/v1/plan"),
    ("POST", "/api/v1/isolation"),
    ("GET", "/api/v1/isolation"),
    ("DELETE", "/api/v1/isolation/{crn}"),
    ("GET", "/api/v1/policies"),
    ("POST", "/api/v1/policies"),
    ("POST", "/api/v1/policies/toggle"),
    ("POST", "/api/v1/policies/reorder"),
    ("POST", "/api/v1/policies/dry-run"),
    ("GET", "/api/v1/policies/mesh"),
    ("DELETE", "/api/v1/policies/{id}"),
];

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    use routes::{
        config, graph, history, ledger, plugins, policies, remediation, scan, solver, time_travel, traffic, waste,
    };
    let api = Router::new()
        .route("/topology", get(graph::topology))
        .route("/graph/stats", get(graph::stats))
        .route("/graph/nodes", get(graph::list_nodes))
        .route("/graph/nodes/{crn}", get(graph::get_node))
        .route("/graph/nodes/{crn}/edges", get(graph::node_edges))
        .route("/graph/blast-radius/{crn}", get(graph::blast_radius))
        .route("/graph/at", get(time_travel::graph_at))
        .route("/graph/diff", get(time_travel::graph_diff))
        .route("/nodes", get(graph::tui_rows))
        .route("/graph", get(graph::flow_graph))
        .route("/graph/topology", get(graph::graph_topology))
        .route("/engine/scan", post(scan::trigger_scan))
        .route("/sync", post(scan::trigger_sync))
        .route("/history", get(history::list))
        .route("/history/summary", get(history::summary))
        .route("/history/resource", get(history::resource))
        .route("/history/sessions", get(history::sessions))
        .route("/history/prune", post(history::prune))
        .route("/ledger/verify", get(history::verify))
        .route("/ledger/export", post(ledger::export_now))
        .route("/config", get(config::get).put(config::put))
        .route("/waste-ledger", get(waste::ledger))
        .route("/heuristics/status", get(waste::status))
        .route("/solver/results", get(solver::results))
        .route("/oracle/{crn}", get(solver::oracle))
        .route("/traffic/ingest", post(traffic::ingest))
        .route("/traffic/edges", get(traffic::edges))
        .route("/anomalies", get(routes::anomalies::list))
        .route("/plugins", get(plugins::list))
        .route("/plugins/toggle", post(plugins::toggle))
        .route("/remediation/queue", get(remediation::queue))
        .route("/remediation/approve", post(remediation::approve))
        .route("/remediation/reject", post(remediation::reject))
        .route("/remediation/move", post(remediation::move_item))
        .route("/remediation/bulk", post(remediation::bulk))
        .route("/remediation/override", post(remediation::override_gate))
        .route("/remediation/quarantine", post(remediation::quarantine))
        .route("/remediation/revert", post(remediation::revert))
        .route("/plan", get(remediation::plan))
        .route("/isolation", get(remediation::isolations).post(remediation::isolate))
        .route("/isolation/{crn}", delete(remediation::remove_isolation))
        .route("/policies", get(policies::list).post(policies::add))
        .route("/policies/toggle", post(policies::toggle))
        .route("/policies/reorder", post(policies::reorder))
        .route("/policies/dry-run", post(policies::dry_run))
        .route("/policies/mesh", get(policies::mesh))
        .route("/policies/{id}", delete(policies::remove))
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed);
    let protected = Router::new()
        .nest("/api/v1", api)
        .route("/events", get(ws::events))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::require_token));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics::render))
        .merge(protected)
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), metrics::track_http))
        .with_state(state)
}

async fn healthz() -> impl IntoResponse {
    (StatusCode::OK, "ok\n")
}

async fn readyz(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    state.engine()?;
    Ok((StatusCode::OK, "ready\n"))
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!("no route for {method} {}", uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    let mut e = ApiError::bad_request(format!("method {method} is not allowed on {}", uri.path()));
    e.status = StatusCode::METHOD_NOT_ALLOWED;
    e
}

/// Serves the router on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}
