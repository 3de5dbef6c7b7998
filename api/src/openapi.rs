//! The OpenAPI document of the HTTP surface, generated from the router and
//! the types of its bodies: every route's `#[utoipa::path]`, the schemas
//! its types derive, and what this module adds (the document's head, the
//! shared error responses, the security schemes, the open probes and the
//! `/events` frames). `schemas/openapi.yaml` is this document, committed;
//! a test fails when the two differ.

use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::tag::TagBuilder;
use utoipa::openapi::{
    ComponentsBuilder, InfoBuilder, LicenseBuilder, OpenApi, Ref, SecurityRequirement, ServerBuilder,
};
use utoipa::{Modify, ToResponse};

use crate::error::ErrorBody;

/// The document's description: what the daemon is and the conventions of
/// its API.
const DESCRIPTION: &str = "\
svc is a long-running daemon that finds cloud resources an organisation
pays for and does not use. It discovers resources through provider
plugins, keeps them as a temporal graph (nodes keyed by CRN, typed
directed edges, an estimated monthly cost per node), flags waste, shows
what removing a resource would affect (blast radius), and records every
decision in an append-only, hash-chained audit ledger.

This document describes the HTTP surface of the daemon: the REST API
under `/api/v1`, the WebSocket ledger stream at `/events`, the health
probes and the Prometheus metrics. It lists exactly the routes the server
answers.

Conventions:
- A CRN is `crn:svc:<provider>:<region>:<service>:<kind>:<account>:<physical_id>`.
  The physical id is everything after the seventh colon, so it may hold
  colons and slashes; in a path segment it must be percent-encoded
  (`/` as `%2F`). A CRN without the `svc` segment is accepted as well.
- Times in responses are RFC 3339 (UTC) unless a field says otherwise;
  `valid_to` fields are microseconds since the Unix epoch (0 while the
  version is current) and `creation_timestamp` is Unix seconds.
- Every failed request answers with the `Error` body
  `{\"error\":{\"code\":..,\"message\":..,\"details\":{}}}`.
- Every `/api/v1` route and `/events` need `Authorization: Bearer <token>`
  or a dashboard session (the `svc_session` cookie from `POST
  /api/v1/session`); `/healthz`, `/readyz` and `/metrics` are open, and so
  is signing in.
- Each token has a role: `viewer` (reads), `operator` (remediation
  decisions, quarantine, ignore list, policies, scans) or `admin`
  (configuration, plugins, ledger maintenance, tokens); each role may do
  what the roles before it may. Each operation's description starts with
  the least role it needs; a caller below it gets 403 `forbidden`. A
  request made with the session cookie that is not a GET must send the
  session's CSRF token as `X-CSRF-Token` (403 otherwise).
- What a request records in the ledger has the caller's token name as its
  actor. A body's `actor` is only a note: appended to the reason where
  the request records one.
- Until the graph is loaded, every route that reads the engine answers 503
  `not_ready`.
";

/// Tags of the operations, in the order the document lists them.
const TAGS: [(&str, &str); 16] = [
    ("probes", "Liveness, readiness and metrics (no authentication)."),
    ("graph", "The live resource graph."),
    (
        "time-travel",
        "The graph as it was at a past time, and what changed between two times.",
    ),
    ("scan", "Scan and reconciliation triggers."),
    ("heuristics", "Waste findings, the waste ledger and who flagged what."),
    (
        "verification",
        "Formal verification (reachability with proof paths, removal risk, spot interruption) and the cross-provider linker.",
    ),
    ("signals", "Cost history per resource type and cost anomalies."),
    ("history", "The audit ledger."),
    ("events", "The WebSocket ledger stream."),
    ("policies", "CEL policy rules, their enforcement and what they match."),
    (
        "remediation",
        "The remediation pipeline, quarantine and revert, and the ignore list.",
    ),
    (
        "iac",
        "Infrastructure as code: drift between the live estate and the Terraform states, and where each resource is declared.",
    ),
    ("plugins", "Installed provider and heuristic plugins."),
    (
        "registry",
        "The package registry: search, install and remove plugins and policy packs.",
    ),
    ("config", "The daemon configuration."),
    ("tokens", "API tokens with roles, and dashboard sessions."),
];

/// Routes anyone may call.
pub const OPEN_ROUTES: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// Description of a `{crn}` path segment.
pub const CRN_PATH: &str = "A CRN, percent-encoded (a `/` in the physical id as `%2F`); with or without the `svc` \
                            segment. 422 when it does not parse, 404 when no node has it.";

/// A malformed parameter or body (`bad_request`).
#[derive(ToResponse)]
pub struct BadRequest(pub ErrorBody);

/// Missing or wrong token (`unauthorized`).
#[derive(ToResponse)]
pub struct Unauthorized(pub ErrorBody);

/// The caller's role is below the operation's, or a write made with the
/// session cookie lacks its CSRF token (`forbidden`).
#[derive(ToResponse)]
pub struct Forbidden(pub ErrorBody);

/// No node with that CRN (`not_found`).
#[derive(ToResponse)]
pub struct NotFound(pub ErrorBody);

/// A scan is already running (`conflict`).
#[derive(ToResponse)]
pub struct Conflict(pub ErrorBody);

/// The request body is larger than 1 MiB (`payload_too_large`).
#[derive(ToResponse)]
pub struct PayloadTooLarge(pub ErrorBody);

/// A time before the graph history kept (`before_retention`, with
/// `details.earliest`, the earliest time still available, RFC 3339, and
/// `details.earliest_us`): `graph.history_retention` dropped what answered it.
#[derive(ToResponse)]
pub struct BeforeRetention(pub ErrorBody);

/// A well-formed request naming something invalid, such as a CRN that does not parse (`invalid`).
#[derive(ToResponse)]
pub struct Invalid(pub ErrorBody);

/// Too many concurrent requests of this kind (`rate_limited`); retry after the given seconds.
#[derive(ToResponse)]
#[response(headers(("Retry-After" = u64, description = "Seconds to wait before retrying.")))]
pub struct RateLimited(pub ErrorBody);

/// An internal failure (`internal`); details are in the daemon log, not in the body.
#[derive(ToResponse)]
pub struct Internal(pub ErrorBody);

/// The graph is still loading (`not_ready`).
#[derive(ToResponse)]
pub struct NotReady(pub ErrorBody);

/// The disk holding a store is full (`insufficient_storage`): nothing of
/// the request was written; writes resume once space is freed.
#[derive(ToResponse)]
pub struct InsufficientStorage(pub ErrorBody);

/// The binary graph form (SPEC 2.4), media type `application/x-flatbuffers`:
/// a FlatBuffers buffer of the schema `schemas/graph.fbs` (namespace
/// `Graph`, root `Graph`, file identifier `SVCG`). `Graph.nodes` is sorted
/// by CRN (the `Node` key); `Graph.version` is the graph generation and
/// `Graph.last_updated` the Unix seconds of the last commit. Generated
/// readers: `web/src/fbs/` (TypeScript), `api/src/fbs/` (Rust).
pub struct FlatBuffersGraph;

impl utoipa::PartialSchema for FlatBuffersGraph {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some(
                "A FlatBuffers `Graph` buffer (SPEC 2.4): schema `schemas/graph.fbs`, namespace `Graph`, \
                 file identifier `SVCG`. `nodes` sorted by CRN; `version` the graph generation; \
                 `last_updated` Unix seconds of the last commit.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for FlatBuffersGraph {}

/// The parts of the document no route declares.
#[derive(utoipa::OpenApi)]
#[openapi(components(
    responses(
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        PayloadTooLarge,
        Invalid,
        RateLimited,
        Internal,
        NotReady,
        InsufficientStorage,
        BeforeRetention
    ),
    schemas(
        crate::routes::history::body::Envelope,
        crate::routes::history::body::StreamClientMessage,
        crate::wire::payloads::ScanReport,
        ErrorBody
    )
))]
pub struct Base;

/// Completes a document the router made: head, open routes, event frames.
pub(crate) fn complete(doc: &mut OpenApi) {
    Head.modify(doc);
    OpenRoutes.modify(doc);
    EventFrames.modify(doc);
    OptionalBodies.modify(doc);
    Roles.modify(doc);
}

/// Routes whose body may be left out.
pub const OPTIONAL_BODIES: [&str; 2] = ["/api/v1/engine/scan", "/api/v1/sync"];

/// The scan triggers take an empty body as well as a JSON object.
struct OptionalBodies;

impl Modify for OptionalBodies {
    fn modify(&self, doc: &mut OpenApi) {
        for route in OPTIONAL_BODIES {
            let body = doc
                .paths
                .paths
                .get_mut(route)
                .and_then(|item| item.post.as_mut())
                .and_then(|op| op.request_body.as_mut());
            if let Some(utoipa::openapi::RefOr::T(body)) = body {
                body.required = Some(utoipa::openapi::Required::False);
            }
        }
    }
}

/// Title, version, description, server, tags and security.
struct Head;

impl Modify for Head {
    fn modify(&self, doc: &mut OpenApi) {
        doc.info = InfoBuilder::new()
            .title("svc")
            .version(env!("CARGO_PKG_VERSION"))
            .description(Some(DESCRIPTION))
            .license(Some(LicenseBuilder::new().name("Apache-2.0").build()))
            .build();
        doc.servers = Some(vec![
            ServerBuilder::new()
                .url("http://127.0.0.1:8080")
                .description(Some("Default bind address of the daemon."))
                .build(),
        ]);
        doc.tags = Some(
            TAGS.iter()
                .map(|(name, description)| TagBuilder::new().name(*name).description(Some(*description)).build())
                .collect(),
        );
        doc.security = Some(vec![
            SecurityRequirement::new("bearerAuth", Vec::<String>::new()),
            SecurityRequirement::new("sessionCookie", Vec::<String>::new()),
        ]);
        let components = doc.components.get_or_insert_with(|| ComponentsBuilder::new().build());
        let mut bearer = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        bearer.description = Some(
            "A token, as `Authorization: Bearer <token>`: the admin token of `$SVC_DATA_DIR/token`, or one made with `POST /api/v1/tokens` (`svc token create`).".into(),
        );
        components.add_security_scheme("bearerAuth", SecurityScheme::Http(bearer));
        components.add_security_scheme(
            "sessionCookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::auth::SESSION_COOKIE,
                "A dashboard session, set by `POST /api/v1/session`; its writes send the session's CSRF token as `X-CSRF-Token`.",
            ))),
        );
    }
}

/// The probes and `/metrics` need no credentials.
struct OpenRoutes;

impl Modify for OpenRoutes {
    fn modify(&self, doc: &mut OpenApi) {
        for route in OPEN_ROUTES {
            if let Some(item) = doc.paths.paths.get_mut(route) {
                for op in [&mut item.get, &mut item.post].into_iter().flatten() {
                    op.security = Some(Vec::new());
                }
            }
        }
    }
}

/// Each guarded operation states its least role, and those a caller can
/// be refused (above `viewer`, or not a GET: the CSRF check) list 403.
struct Roles;

impl Modify for Roles {
    fn modify(&self, doc: &mut OpenApi) {
        use utoipa::openapi::{RefOr, Response};
        for (path, item) in doc.paths.paths.iter_mut() {
            let ops = [
                ("GET", &mut item.get),
                ("PUT", &mut item.put),
                ("POST", &mut item.post),
                ("DELETE", &mut item.delete),
                ("PATCH", &mut item.patch),
            ];
            for (method, op) in ops {
                let Some(op) = op.as_mut() else { continue };
                if OPEN_ROUTES.contains(&path.as_str()) {
                    continue;
                }
                let Some(role) = crate::auth::roles::least_role(method, path) else {
                    op.security = Some(Vec::new());
                    op.description = Some(match op.description.take() {
                        Some(d) => format!("Open: no credentials needed.\n\n{d}"),
                        None => "Open: no credentials needed.".to_owned(),
                    });
                    continue;
                };
                op.description = Some(match op.description.take() {
                    Some(d) => format!("Role: {role}.\n\n{d}"),
                    None => format!("Role: {role}."),
                });
                if role > crate::auth::Role::Viewer || method != "GET" {
                    op.responses
                        .responses
                        .entry("403".to_owned())
                        .or_insert_with(|| RefOr::<Response>::Ref(Ref::from_response_name("Forbidden")));
                }
            }
        }
    }
}

/// What `/events` sends and accepts, named by the `x-websocket` extension.
struct EventFrames;

impl Modify for EventFrames {
    fn modify(&self, doc: &mut OpenApi) {
        let schema = |name: &str| serde_json::to_value(Ref::from_schema_name(name)).unwrap_or_default();
        let frames = serde_json::json!({
            "server-messages": schema("Envelope"),
            "client-messages": schema("StreamClientMessage"),
            "error-messages": schema("Error"),
            "payloads": {"SCAN_COMPLETED": schema("ScanReport")},
        });
        if let Some(op) = doc.paths.paths.get_mut("/events").and_then(|item| item.get.as_mut()) {
            let mut ext = Extensions::default();
            ext.insert("x-websocket".into(), frames);
            op.extensions = Some(ext);
        }
    }
}
