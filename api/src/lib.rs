//! svc-api: the REST API (`/api/v1`), the WebSocket ledger stream
//! (`/events`), the probes and `/metrics`. Converts engine types to the wire
//! shapes of SPEC.md; holds no business logic.
//!
//! Every route is registered once, with its OpenAPI operation
//! (`#[utoipa::path]` on the handler): the router, the OpenAPI document
//! ([`openapi()`], committed as `schemas/openapi.yaml`) and the route table
//! ([`ROUTES`]) all come from those registrations.

pub mod assistant;
pub mod auth;
pub mod config;
pub mod dashboard;
pub mod derived;
pub mod error;
pub mod export;
pub mod fbs;
pub mod iac;
pub mod metrics;
pub mod notify;
pub mod openapi;
pub mod plugins;
pub mod routes;
pub mod state;
pub mod wire;
pub mod ws;

use std::sync::LazyLock;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, Uri};
use axum::middleware;
use axum::response::IntoResponse;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use error::{ApiError, ApiResult};
pub use state::AppState;

pub use error::MAX_BODY_BYTES;

/// Every route the server answers, as `(method, path)` in OpenAPI path
/// syntax, read from the OpenAPI document the router builds with its routes
/// (so the two cannot disagree), in the document's order.
pub const ROUTES: Routes = Routes;

/// The route table; iterate it (`for (method, path) in ROUTES`) or call
/// [`Routes::iter`].
#[derive(Clone, Copy, Debug)]
pub struct Routes;

static ROUTE_PATHS: LazyLock<Vec<(&'static str, String)>> = LazyLock::new(|| {
    let doc = openapi();
    let mut out = Vec::new();
    for (path, item) in &doc.paths.paths {
        let methods = [
            ("GET", &item.get),
            ("PUT", &item.put),
            ("POST", &item.post),
            ("DELETE", &item.delete),
            ("PATCH", &item.patch),
        ];
        for (method, op) in methods {
            if op.is_some() {
                out.push((method, path.clone()));
            }
        }
    }
    out
});

static ROUTE_TABLE: LazyLock<Vec<(&'static str, &'static str)>> =
    LazyLock::new(|| ROUTE_PATHS.iter().map(|(m, p)| (*m, p.as_str())).collect());

impl Routes {
    pub fn iter(&self) -> std::slice::Iter<'static, (&'static str, &'static str)> {
        ROUTE_TABLE.iter()
    }
    pub fn len(&self) -> usize {
        ROUTE_TABLE.len()
    }
    pub fn is_empty(&self) -> bool {
        ROUTE_TABLE.is_empty()
    }
}

impl IntoIterator for Routes {
    type Item = &'static (&'static str, &'static str);
    type IntoIter = std::slice::Iter<'static, (&'static str, &'static str)>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The routes under `/api/v1`, each registered with its OpenAPI operation.
fn api_routes() -> OpenApiRouter<AppState> {
    use routes::{
        anomalies, assistant, config, graph, history, iac, ledger, notify, plugins, policies, registry, remediation,
        scan, solver, time_travel, tokens, traffic, waste,
    };
    OpenApiRouter::new()
        .routes(routes!(graph::topology::topology))
        .routes(routes!(graph::stats))
        .routes(routes!(graph::breakdown::breakdown))
        .routes(routes!(graph::list_nodes))
        .routes(routes!(graph::get_node))
        .routes(routes!(graph::node_edges))
        .routes(routes!(graph::versions::node_versions))
        .routes(routes!(graph::blast_radius))
        .routes(routes!(time_travel::graph_at))
        .routes(routes!(time_travel::graph_diff))
        .routes(routes!(graph::rows::tui_rows))
        .routes(routes!(graph::layout::flow_graph))
        .routes(routes!(graph::layout::graph_topology))
        .routes(routes!(scan::trigger_scan))
        .routes(routes!(scan::trigger_sync))
        .routes(routes!(scan::progress))
        .routes(routes!(history::list))
        .routes(routes!(history::summary))
        .routes(routes!(history::resource))
        .routes(routes!(history::sessions))
        .routes(routes!(history::prune))
        .routes(routes!(history::verify))
        .routes(routes!(ledger::export_now))
        .routes(routes!(config::get, config::put))
        .routes(routes!(notify::slack_test))
        .routes(routes!(waste::ledger))
        .routes(routes!(waste::status))
        .routes(routes!(solver::results))
        .routes(routes!(solver::oracle))
        .routes(routes!(traffic::ingest))
        .routes(routes!(traffic::edges))
        .routes(routes!(anomalies::list))
        .routes(routes!(assistant::assimilate))
        .routes(routes!(assistant::providers))
        .routes(routes!(assistant::mcp))
        .routes(routes!(iac::drift_report))
        .routes(routes!(iac::provenance))
        .routes(routes!(plugins::list))
        .routes(routes!(plugins::toggle))
        .routes(routes!(registry::install_plugin))
        .routes(routes!(registry::search))
        .routes(routes!(registry::installed))
        .routes(routes!(registry::install))
        .routes(routes!(registry::remove))
        .routes(routes!(registry::refresh))
        .routes(routes!(remediation::queue))
        .routes(routes!(remediation::approve))
        .routes(routes!(remediation::reject))
        .routes(routes!(remediation::move_item))
        .routes(routes!(remediation::bulk))
        .routes(routes!(remediation::override_gate))
        .routes(routes!(remediation::quarantine))
        .routes(routes!(remediation::revert))
        .routes(routes!(remediation::plan))
        .routes(routes!(remediation::isolations, remediation::isolate))
        .routes(routes!(remediation::remove_isolation))
        .routes(routes!(policies::list, policies::add))
        .routes(routes!(policies::toggle))
        .routes(routes!(policies::reorder))
        .routes(routes!(policies::dry_run))
        .routes(routes!(policies::mesh))
        .routes(routes!(policies::remove))
        .routes(routes!(tokens::list, tokens::create))
        .routes(routes!(tokens::revoke))
        .routes(routes!(tokens::sign_in, tokens::current, tokens::sign_out))
}

/// The HTTP surface, before it has its state, and its OpenAPI document:
/// both come from the same route registrations. Without a state (for the
/// document alone) the routes are not guarded by the token and role check.
fn surface(state: Option<&AppState>) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (api, api_doc) = api_routes().split_for_parts();
    let api = api.fallback(no_route).method_not_allowed_fallback(method_not_allowed);
    let mut api = OpenApiRouter::from(api);
    *api.get_openapi_mut() = api_doc;
    let mut protected = OpenApiRouter::new().nest("/api/v1", api).routes(routes!(ws::events));
    if let Some(state) = state {
        protected = protected.route_layer(middleware::from_fn_with_state(state.clone(), auth::authorize));
    }
    let (router, mut doc) = OpenApiRouter::with_openapi(openapi::Base::openapi())
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(metrics::http::render))
        .merge(protected)
        .split_for_parts();
    openapi::complete(&mut doc);
    (router, doc)
}

/// The OpenAPI document of the whole HTTP surface.
pub fn openapi() -> utoipa::openapi::OpenApi {
    surface(None).1
}

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    state.set_router_builder(router);
    let (router, _) = surface(Some(&state));
    router
        .route("/", axum::routing::get(dashboard::index))
        .route("/index.html", axum::routing::get(dashboard::index))
        .route("/assets/{*file}", axum::routing::get(dashboard::assets))
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(error::reject_oversized))
        .layer(middleware::from_fn_with_state(state.clone(), metrics::http::track_http))
        .with_state(state)
}

wire::listed_str! {
    /// The liveness answer.
    Alive ["ok\n"]
}

wire::listed_str! {
    /// The readiness answer.
    Ready ["ready\n"]
}

#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "probes",
    summary = "Liveness probe.",
    description = "Answers 200 while the daemon process is alive.",
    responses(
        (status = 200, description = "The process is alive.", body = inline(Alive), content_type = "text/plain"),
    ),
)]
async fn healthz() -> impl IntoResponse {
    (StatusCode::OK, Alive::VALUES[0])
}

#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "probes",
    summary = "Readiness probe.",
    description = "Answers 200 once the graph is loaded and the engine accepts requests; 503 before, and while a part of the daemon (the scan scheduler) cannot make progress, the message naming it and why.",
    responses(
        (status = 200, description = "The engine is ready.", body = inline(Ready), content_type = "text/plain"),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
async fn readyz(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    state.readiness()?;
    Ok((StatusCode::OK, Ready::VALUES[0]))
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
