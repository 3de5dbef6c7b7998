//! Observed traffic: `POST /api/v1/traffic/ingest` takes flow records (AWS
//! VPC flow-log lines as `text/plain`, or JSON records) and adds them to the
//! graph as `FlowsTo` edges with their volumes; `GET /api/v1/traffic/edges`
//! lists those edges, largest first.

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use svc_engine::analysis::traffic::{self, FlowKeys, FlowRecord, TrafficReport};
use svc_engine::graph::visible;
use utoipa::ToSchema;

use super::ApiQuery;
use super::graph::{blocking, crn_with};
use super::query::Limit;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire::{Crn, listed_str};

/// One flow record of the JSON form.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowRecordBody {
    /// A CRN, or an address or name a resource carries.
    source: String,
    /// Like `source`.
    destination: String,
    bytes: u64,
    #[serde(default)]
    packets: u64,
    /// Start of the window, Unix seconds.
    start: u64,
    /// End of the window, Unix seconds.
    end: u64,
}

/// `POST /api/v1/traffic/ingest` as JSON (AWS VPC flow-log lines are sent as `text/plain`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrafficIngest {
    /// At least one record.
    #[schema(min_items = 1)]
    records: Vec<FlowRecordBody>,
}

/// What an ingest did. Fields are declared in the order they are written: by name.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TrafficReport)]
pub struct TrafficIngestReport {
    pub bytes: u64,
    pub edges_added: u64,
    pub edges_updated: u64,
    /// The first 20 problems, for the operator.
    pub errors: Vec<String>,
    pub pairs: u64,
    pub records: u64,
    /// Pairs a provider already reports a FlowsTo edge for (left as reported).
    pub reported: u64,
    pub resolved: u64,
    pub skipped: u64,
    /// Records with an endpoint no resource carries.
    pub unresolved: u64,
}

listed_str! {
    FlowsTo ["FlowsTo"]
}

/// An observed traffic edge.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrafficEdge {
    pub bytes: u64,
    pub packets: u64,
    pub records: u64,
    pub source_crn: Crn,
    pub target_crn: Crn,
    #[serde(rename = "type")]
    pub ty: FlowsTo,
    /// Unix seconds.
    pub window_end: u64,
    /// Unix seconds.
    pub window_start: u64,
}

/// `GET /api/v1/traffic/edges`: observed traffic edges, largest first.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrafficEdges {
    pub count: usize,
    pub edges: Vec<TrafficEdge>,
    /// How long an edge is kept after its window ended, in seconds.
    pub retention_s: u64,
    pub total_bytes: u64,
}

fn body_rejection(e: BytesRejection) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::payload_too_large(format!(
            "request body is larger than {} bytes",
            crate::error::MAX_BODY_BYTES
        ));
    }
    ApiError::bad_request(format!("unreadable request body: {}", e.body_text()))
}

/// The records of a request, checked; bad ones are counted and named in the report.
fn records(headers: &HeaderMap, body: &[u8], report: &mut TrafficReport) -> ApiResult<Vec<FlowRecord>> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let parsed = if content_type.starts_with("text/plain") {
        let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("flow-log body is not UTF-8 text"))?;
        traffic::parse_flow_log(text, report)
    } else if content_type.starts_with("application/json") || content_type.is_empty() {
        let b: TrafficIngest =
            serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("malformed request body: {e}")))?;
        b.records
            .into_iter()
            .map(|r| FlowRecord {
                source: r.source,
                destination: r.destination,
                bytes: r.bytes,
                packets: r.packets,
                start_s: r.start,
                end_s: r.end,
            })
            .collect()
    } else {
        return Err(ApiError::bad_request(format!(
            "unsupported content type {content_type:?}: send application/json records or text/plain VPC flow-log lines"
        )));
    };
    let mut ok = Vec::with_capacity(parsed.len());
    for (i, r) in parsed.into_iter().enumerate() {
        match traffic::check(&r) {
            Ok(()) => ok.push(r),
            Err(e) => {
                report.skipped += 1;
                report.error(format!("record {}: {e}", i + 1));
            }
        }
    }
    if ok.is_empty() {
        let why = report
            .errors
            .first()
            .cloned()
            .unwrap_or_else(|| "no flow records".to_owned());
        return Err(ApiError::invalid(format!("no usable flow record: {why}")));
    }
    Ok(ok)
}

/// `POST /api/v1/traffic/ingest`.
#[utoipa::path(
    post,
    path = "/traffic/ingest",
    operation_id = "ingestTraffic",
    tag = "verification",
    summary = "Add observed flows to the graph as FlowsTo edges with their volumes.",
    description = r#"`application/json`: `{"records": [{"source", "destination", "bytes", "packets", "start", "end"}]}`, endpoints
as CRNs or IP addresses, the window in Unix seconds. `text/plain`: AWS VPC flow-log lines (version 2, default
format); `REJECT`ed, `NODATA` and `SKIPDATA` lines are skipped. Endpoints given as IPs resolve through the
addresses resources carry. Records are summed per (source, destination); a pair sent again adds to its
totals. Bad records are skipped and counted, the first of them named in `errors`; a request with no usable
record is 422. Traffic edges feed reachability and the idle rules from the next scan, and expire 7 days
after their window ends."#,
    request_body(content((TrafficIngest = "application/json"), (String = "text/plain"))),
    responses(
        (status = 200, description = "What was ingested.", body = crate::routes::traffic::TrafficIngestReport, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn ingest(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    let body = body.map_err(body_rejection)?;
    let engine = state.engine()?.clone();
    let mut report = TrafficReport::default();
    let records = records(&headers, &body, &mut report)?;
    let report = tokio::task::spawn_blocking(move || engine.ingest_traffic(&records, report))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::from)?
        .ok_or_else(|| ApiError::conflict("a scan is running; send the records again when it has finished"))?;
    Ok((
        StatusCode::OK,
        axum::Json(TrafficIngestReport {
            bytes: report.bytes,
            edges_added: report.edges_added,
            edges_updated: report.edges_updated,
            errors: report.errors,
            pairs: report.pairs,
            records: report.records + report.skipped,
            reported: report.reported,
            resolved: report.resolved,
            skipped: report.skipped,
            unresolved: report.unresolved,
        }),
    )
        .into_response())
}

/// Query parameters of `GET /api/v1/traffic/edges`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EdgesQuery {
    /// Edges listed.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 1000>,
}

/// `GET /api/v1/traffic/edges`.
#[utoipa::path(
    get,
    path = "/traffic/edges",
    operation_id = "getTrafficEdges",
    tag = "verification",
    summary = "Traffic edges (observed flows), largest volume first.",
    params(EdgesQuery),
    responses(
        (status = 200, description = "The edges.", body = crate::routes::traffic::TrafficEdges, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn edges(State(state): State<AppState>, ApiQuery(q): ApiQuery<EdgesQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let limit = q.limit.0;
    blocking(move || {
        let now = engine.now_us();
        let g = engine.graph();
        let keys = FlowKeys::new(&g);
        let r = g.interner().reader();
        let mut flows: Vec<_> = g
            .edges()
            .filter(|e| e.inferred() && visible(e.valid_to(), now))
            .filter(|e| g.is_node_visible(e.source(), now) && g.is_node_visible(e.target(), now))
            .filter_map(|e| keys.read(&e.props()).map(|f| (e.source(), e.target(), f)))
            .collect();
        let total_bytes: u64 = flows.iter().map(|(_, _, f)| f.bytes).sum();
        let count = flows.len();
        flows.sort_by(|a, b| b.2.bytes.cmp(&a.2.bytes).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
        flows.truncate(limit);
        let edges = flows
            .iter()
            .map(|(s, t, f)| TrafficEdge {
                bytes: f.bytes,
                packets: f.packets,
                records: f.records,
                source_crn: Crn(crn_with(&g, &r, *s)),
                target_crn: Crn(crn_with(&g, &r, *t)),
                ty: FlowsTo::from("FlowsTo"),
                window_end: f.window_end,
                window_start: f.window_start,
            })
            .collect();
        Ok(TrafficEdges {
            count,
            edges,
            retention_s: traffic::RETENTION_S,
            total_bytes,
        })
    })
    .await
}
