//! The OpenAPI contract: `schemas/openapi.yaml` describes exactly the routes
//! of `svc_api::ROUTES`, every one of them is routed by the real router, the
//! documented limits and defaults are the ones the handlers apply, and the
//! live responses (bodies, statuses, content types, errors, the `/events`
//! frames) match the documented schemas.
//!
//! The schemas are checked by a small validator for the subset of JSON
//! Schema (OpenAPI 3.1) the file uses (`type`, also as a list with `null`,
//! `properties`, `required`, `items`, `additionalProperties`,
//! `propertyNames`, `oneOf`, `enum`, `minimum`, `maximum`, `format`,
//! `pattern`, `minLength`, `maxLength`, `minItems`, `maxItems`,
//! `uniqueItems`, `$ref`). A keyword outside that subset fails the test, so nothing in the
//! file is silently left unchecked.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod graph_fixture;

use std::collections::{BTreeSet, HashSet};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use futures::{SinkExt, StreamExt};
use graph_fixture::*;
use http_body_util::BodyExt;
use serde_json::{Map, Value, json};
use svc_api::AppState;
use svc_api::routes::rfc3339;
use svc_engine::Relation;
use svc_engine::store::ledger::NewEvent;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tower::ServiceExt;

const SPEC_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/openapi.yaml");
const HTTP_METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
/// Schema keywords the validator checks, plus the ones that only document.
const CHECKED_KEYWORDS: [&str; 18] = [
    "$ref",
    "type",
    "properties",
    "required",
    "items",
    "additionalProperties",
    "propertyNames",
    "oneOf",
    "enum",
    "minimum",
    "maximum",
    "format",
    "pattern",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
];
const DOC_KEYWORDS: [&str; 2] = ["description", "default"];
/// `binary` marks a body that is not JSON (the binary graph form); a JSON
/// value is never one.
const FORMATS: [&str; 6] = ["date-time", "int32", "int64", "float", "double", "binary"];
/// Upper bound for a background scan or a WebSocket frame; only a failing test waits this long.
const PATIENCE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------- the document

struct Spec {
    doc: Value,
}

/// YAML to JSON; mapping keys become strings (`200:` and `'200':` alike).
fn yaml_to_json(v: &serde_yaml_ng::Value) -> Value {
    use serde_yaml_ng::Value as Y;
    match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                json!(i)
            } else if let Some(u) = n.as_u64() {
                json!(u)
            } else {
                json!(n.as_f64())
            }
        }
        Y::String(s) => Value::String(s.clone()),
        Y::Sequence(items) => Value::Array(items.iter().map(yaml_to_json).collect()),
        Y::Mapping(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let key = match k {
                    Y::String(s) => s.clone(),
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    other => format!("{other:?}"),
                };
                out.insert(key, yaml_to_json(v));
            }
            Value::Object(out)
        }
        Y::Tagged(t) => yaml_to_json(&t.value),
    }
}

impl Spec {
    fn load() -> Spec {
        let text = std::fs::read_to_string(SPEC_PATH).unwrap_or_else(|e| panic!("cannot read {SPEC_PATH}: {e}"));
        let yaml: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{SPEC_PATH} is not valid YAML: {e}"));
        Spec {
            doc: yaml_to_json(&yaml),
        }
    }

    /// The target of a local reference (`#/components/...`).
    fn pointer(&self, reference: &str) -> Option<&Value> {
        reference.strip_prefix('#').and_then(|p| self.doc.pointer(p))
    }

    /// `v`, or what its `$ref` chain ends at.
    fn deref<'a>(&'a self, mut v: &'a Value) -> &'a Value {
        for _ in 0..32 {
            match v.get("$ref").and_then(Value::as_str) {
                Some(r) => v = self.pointer(r).unwrap_or_else(|| panic!("unresolved $ref {r}")),
                None => return v,
            }
        }
        panic!("$ref chain longer than 32 links")
    }

    /// Every `(METHOD, path)` the file documents.
    fn operations(&self) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        for (path, item) in self.doc["paths"].as_object().expect("paths is an object") {
            for method in item.as_object().expect("a path item is an object").keys() {
                if HTTP_METHODS.contains(&method.as_str()) {
                    out.insert((method.to_ascii_uppercase(), path.clone()));
                }
            }
        }
        out
    }

    fn operation(&self, method: &str, path: &str) -> &Value {
        let op = &self.doc["paths"][path][method.to_ascii_lowercase()];
        assert!(op.is_object(), "{method} {path} is not in {SPEC_PATH}");
        op
    }

    /// Parameters of an operation (path-item level and operation level), resolved.
    fn parameters(&self, method: &str, path: &str) -> Vec<&Value> {
        let shared = self.doc["paths"][path]["parameters"].as_array().into_iter().flatten();
        let own = self.operation(method, path)["parameters"]
            .as_array()
            .into_iter()
            .flatten();
        shared.chain(own).map(|p| self.deref(p)).collect()
    }

    fn query_parameter(&self, method: &str, path: &str, name: &str) -> Option<&Value> {
        self.parameters(method, path)
            .into_iter()
            .find(|p| p["in"] == "query" && p["name"] == name)
    }

    /// Whether the operation needs credentials (its own `security`, else the document's).
    fn secured(&self, method: &str, path: &str) -> bool {
        let op = self.operation(method, path);
        let security = op.get("security").unwrap_or(&self.doc["security"]);
        security.as_array().is_some_and(|a| !a.is_empty())
    }

    /// The documented response of an operation for a status, resolved.
    fn response(&self, method: &str, path: &str, status: u16) -> Option<&Value> {
        self.operation(method, path)["responses"]
            .get(status.to_string())
            .map(|r| self.deref(r))
    }

    /// Validates `v` against `schema`, appending every disagreement to `errors`.
    fn check(&self, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
        let Some(s) = schema.as_object() else {
            errors.push(format!("{at}: schema is not an object: {schema}"));
            return;
        };
        if let Some(r) = s.get("$ref") {
            match r.as_str().and_then(|r| self.pointer(r)) {
                Some(target) => self.check(target, v, at, errors),
                None => errors.push(format!("{at}: unresolved $ref {r}")),
            }
            return;
        }
        for k in s.keys() {
            if !CHECKED_KEYWORDS.contains(&k.as_str()) && !DOC_KEYWORDS.contains(&k.as_str()) {
                errors.push(format!("{at}: schema keyword {k:?} is not checked by this test"));
            }
        }
        if let Some(branches) = s.get("oneOf").and_then(Value::as_array) {
            let matching = branches
                .iter()
                .filter(|b| {
                    let mut e = Vec::new();
                    self.check(b, v, at, &mut e);
                    e.is_empty()
                })
                .count();
            if matching != 1 {
                errors.push(format!(
                    "{at}: {v} matches {matching} of the oneOf schemas, not exactly one"
                ));
            }
            return;
        }
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            Some(other) => {
                errors.push(format!("{at}: type {other} is neither a name nor a list of names"));
                return;
            }
            None => Vec::new(),
        };
        if v.is_null() {
            if !types.is_empty() && !types.contains(&"null") {
                errors.push(format!("{at}: null where the schema does not allow it"));
            }
            return;
        }
        if !types.is_empty() {
            let mut ok = false;
            for ty in &types {
                ok |= match *ty {
                    "string" => v.is_string(),
                    "integer" => v.is_i64() || v.is_u64(),
                    "number" => v.is_number(),
                    "boolean" => v.is_boolean(),
                    "object" => v.is_object(),
                    "array" => v.is_array(),
                    "null" => false,
                    other => {
                        errors.push(format!("{at}: unknown type {other:?} in the schema"));
                        return;
                    }
                };
            }
            if !ok {
                errors.push(format!("{at}: expected {}, got {v}", types.join(" or ")));
                return;
            }
        }
        if let Some(options) = s.get("enum").and_then(Value::as_array)
            && !options.contains(v)
        {
            errors.push(format!("{at}: {v} is not one of {options:?}"));
        }
        if let Some(n) = v.as_f64() {
            if let Some(min) = s.get("minimum").and_then(Value::as_f64)
                && n < min
            {
                errors.push(format!("{at}: {n} is below the minimum {min}"));
            }
            if let Some(max) = s.get("maximum").and_then(Value::as_f64)
                && n > max
            {
                errors.push(format!("{at}: {n} is above the maximum {max}"));
            }
        }
        if let Some(text) = v.as_str() {
            // JSON Schema counts a string's length in code points.
            let chars = text.chars().count() as u64;
            if let Some(min) = s.get("minLength").and_then(Value::as_u64)
                && chars < min
            {
                errors.push(format!("{at}: {text:?} is shorter than {min} characters"));
            }
            if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
                && chars > max
            {
                errors.push(format!("{at}: a string of {chars} characters is longer than {max}"));
            }
            if let Some(p) = s.get("pattern").and_then(Value::as_str) {
                match regex::Regex::new(p) {
                    Ok(re) if !re.is_match(text) => errors.push(format!("{at}: {text:?} does not match {p:?}")),
                    Ok(_) => {}
                    Err(e) => errors.push(format!("{at}: pattern {p:?} does not compile: {e}")),
                }
            }
        }
        if let Some(list) = v.as_array() {
            let n = list.len() as u64;
            if let Some(min) = s.get("minItems").and_then(Value::as_u64)
                && n < min
            {
                errors.push(format!("{at}: {n} items, fewer than {min}"));
            }
            if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
                && n > max
            {
                errors.push(format!("{at}: {n} items, more than {max}"));
            }
            if s.get("uniqueItems") == Some(&Value::Bool(true))
                && list.iter().enumerate().any(|(i, a)| list[..i].contains(a))
            {
                errors.push(format!("{at}: items repeat where they must be unique"));
            }
        }
        match s.get("format").and_then(Value::as_str) {
            Some("date-time") => {
                if let Some(t) = v.as_str()
                    && chrono::DateTime::parse_from_rfc3339(t).is_err()
                {
                    errors.push(format!("{at}: {t:?} is not an RFC 3339 time"));
                }
            }
            Some("binary") => errors.push(format!("{at}: a JSON value where a binary body is documented")),
            Some("int32") if v.as_i64().is_none_or(|n| i32::try_from(n).is_err()) => {
                errors.push(format!("{at}: {v} is not a 32-bit integer"));
            }
            Some(f) if !FORMATS.contains(&f) => errors.push(format!("{at}: format {f:?} is not checked by this test")),
            _ => {}
        }
        if let Some(obj) = v.as_object() {
            if let Some(names) = s.get("propertyNames") {
                for k in obj.keys() {
                    self.check(names, &Value::String(k.clone()), &format!("{at} key {k:?}"), errors);
                }
            }
            let props = s.get("properties").and_then(Value::as_object);
            for name in s.get("required").and_then(Value::as_array).into_iter().flatten() {
                let name = name.as_str().unwrap_or_default();
                if !obj.contains_key(name) {
                    errors.push(format!("{at}: required property {name:?} is missing"));
                }
            }
            for (k, field) in obj {
                let here = format!("{at}.{k}");
                match props.and_then(|p| p.get(k)) {
                    Some(sub) => self.check(sub, field, &here, errors),
                    None => match s.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            errors.push(format!("{at}: property {k:?} is not in the schema"));
                        }
                        Some(extra @ Value::Object(_)) => self.check(extra, field, &here, errors),
                        _ => {}
                    },
                }
            }
        }
        if let (Some(items), Some(list)) = (s.get("items"), v.as_array()) {
            for (i, item) in list.iter().enumerate() {
                self.check(items, item, &format!("{at}[{i}]"), errors);
            }
        }
    }
}

/// Every `$ref` in `v`, with where it is.
fn collect_refs(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, sub) in m {
                if k == "$ref" {
                    out.push((at.to_owned(), sub.as_str().unwrap_or("<not a string>").to_owned()));
                } else {
                    collect_refs(sub, &format!("{at}/{k}"), out);
                }
            }
        }
        Value::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                collect_refs(sub, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Every keyword of a schema tree (not following `$ref`) that the validator does not know.
fn unknown_keywords(schema: &Value, at: &str, out: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        out.push(format!("{at}: schema is not an object"));
        return;
    };
    for (k, sub) in s {
        if !CHECKED_KEYWORDS.contains(&k.as_str()) && !DOC_KEYWORDS.contains(&k.as_str()) {
            out.push(format!("{at}: keyword {k:?}"));
        }
        match k.as_str() {
            "properties" => {
                for (name, p) in sub.as_object().into_iter().flatten() {
                    unknown_keywords(p, &format!("{at}/properties/{name}"), out);
                }
            }
            "items" | "propertyNames" => unknown_keywords(sub, &format!("{at}/{k}"), out),
            "oneOf" => {
                for (i, branch) in sub.as_array().into_iter().flatten().enumerate() {
                    unknown_keywords(branch, &format!("{at}/oneOf/{i}"), out);
                }
            }
            "additionalProperties" if sub.is_object() => {
                unknown_keywords(sub, &format!("{at}/additionalProperties"), out)
            }
            "format" if !sub.as_str().is_some_and(|f| FORMATS.contains(&f)) => {
                out.push(format!("{at}: format {sub}"));
            }
            "pattern" => match sub.as_str() {
                None => out.push(format!("{at}: pattern {sub} is not a string")),
                Some(p) =>
                {
                    #[allow(
                        clippy::regex_creation_in_loops,
                        reason = "each pattern is compiled once, to check it"
                    )]
                    if let Err(e) = regex::Regex::new(p) {
                        out.push(format!("{at}: pattern {p:?} does not compile: {e}"));
                    }
                }
            },
            _ => {}
        }
    }
}

/// Every `schema` value in `v` (parameters, media types), with where it is.
fn collect_schemas<'a>(v: &'a Value, at: &str, out: &mut Vec<(String, &'a Value)>) {
    match v {
        Value::Object(m) => {
            for (k, sub) in m {
                let here = format!("{at}/{k}");
                if k == "schema" {
                    out.push((here, sub));
                } else {
                    collect_schemas(sub, &here, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                collect_schemas(sub, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Fails with the disagreements found, the first 60 of them in full.
fn assert_none(errors: &[String]) {
    const SHOWN: usize = 60;
    if errors.is_empty() {
        return;
    }
    let mut text = errors.iter().take(SHOWN).cloned().collect::<Vec<_>>().join("\n");
    if errors.len() > SHOWN {
        text.push_str(&format!("\n... and {} more", errors.len() - SHOWN));
    }
    panic!(
        "{} disagreement(s) between {SPEC_PATH} and the server:\n{text}",
        errors.len()
    );
}

// ---------------------------------------------------------------- requests

struct Reply {
    status: StatusCode,
    content_type: String,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// True when the router's fallback answered: no route, or no such method on it.
    fn is_fallback(&self) -> bool {
        self.status == StatusCode::METHOD_NOT_ALLOWED
            || (self.status == StatusCode::NOT_FOUND
                && self.json()["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("no route for")))
    }
}

/// One request through the real router; a body is sent as JSON.
async fn send(app: &Router, method: &str, uri: &str, token: Option<&str>, body: Option<&str>) -> Reply {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    if body.is_some() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    let req = req
        .body(body.map(|b| Body::from(b.to_owned())).unwrap_or_else(Body::empty))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
    Reply {
        status,
        content_type,
        body,
    }
}

/// Disagreements between a reply and what the file documents for its status.
fn conformance(spec: &Spec, method: &str, route: &str, reply: &Reply) -> Vec<String> {
    let label = format!("{method} {route} -> {}", reply.status.as_u16());
    let Some(resp) = spec.response(method, route, reply.status.as_u16()) else {
        return vec![format!("{label}: status not documented; body: {}", reply.text())];
    };
    let Some(content) = resp.get("content").and_then(Value::as_object) else {
        if reply.body.is_empty() {
            return Vec::new();
        }
        return vec![format!("{label}: a body is returned but none is documented")];
    };
    let media = reply.content_type.split(';').next().unwrap_or_default().trim();
    let Some(schema) = content.get(media).and_then(|m| m.get("schema")) else {
        let documented: Vec<&String> = content.keys().collect();
        return vec![format!(
            "{label}: content type {:?} not documented (documented: {documented:?})",
            reply.content_type
        )];
    };
    let value = if media == "application/json" {
        match serde_json::from_slice(&reply.body) {
            Ok(v) => v,
            Err(e) => return vec![format!("{label}: body is not JSON: {e}")],
        }
    } else {
        Value::String(reply.text())
    };
    let mut errors = Vec::new();
    spec.check(schema, &value, &format!("{label} $"), &mut errors);
    errors
}

/// A URI for a route that the file calls valid: path parameters and required
/// query parameters filled in (`crn` with `crn`, times with `time_us`).
fn example_uri(spec: &Spec, method: &str, route: &str, crn: &str, time_us: u64) -> String {
    let mut path = route.to_owned();
    let mut query = Vec::new();
    for p in spec.parameters(method, route) {
        let name = p["name"].as_str().unwrap_or_default();
        match p["in"].as_str() {
            Some("path") => path = path.replace(&format!("{{{name}}}"), &enc(crn)),
            Some("query") if p["required"] == true => {
                let value = if p["schema"]["format"] == "date-time" {
                    rfc3339(time_us)
                } else if name == "crn" {
                    crn.to_owned()
                } else {
                    panic!("{method} {route}: no example value for required query parameter {name}")
                };
                query.push(format!("{name}={}", enc(&value)));
            }
            _ => {}
        }
    }
    assert!(
        !path.contains('{'),
        "{method} {route}: a path parameter is not documented"
    );
    if query.is_empty() {
        path
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

/// A body every POST route rejects with 400: it reaches the handler but changes nothing.
const REJECTED_BODY: &str = "[1]";

/// Waits until no scan runs.
async fn wait_for_idle(f: &Fixture) {
    let started = Instant::now();
    while f.engine.is_scanning() {
        assert!(started.elapsed() < PATIENCE, "a background scan did not finish");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The sample estate scanned three times so every list of the time-travel
/// endpoints has entries: scan 2 stops the instance, adds a volume attached
/// to it, removes the role and the pod's edge and the function's edge; scan 3
/// brings the function's edge back (a new version of it). One APPROVAL
/// event names the volume. Returns the fixture and a time after scan 1.
/// One installed plugin, `mock`, that toggles in memory.
struct OnePlugin(std::sync::Mutex<bool>);

impl OnePlugin {
    fn info(active: bool) -> svc_api::plugins::PluginInfo {
        svc_api::plugins::PluginInfo {
            name: "mock".into(),
            display_name: "Mock estate".into(),
            category: "cloud".into(),
            color: "#6b7280".into(),
            path: "/var/lib/svc/plugins/svc-plugin-mock".into(),
            active,
            role: "provider".into(),
            status: "verified".into(),
        }
    }
}

impl svc_api::plugins::PluginCatalog for OnePlugin {
    fn list(&self) -> Vec<svc_api::plugins::PluginInfo> {
        vec![OnePlugin::info(*self.0.lock().unwrap())]
    }
    fn toggle(&self, name: &str) -> Result<svc_api::plugins::PluginInfo, svc_api::plugins::ToggleError> {
        if name != "mock" {
            return Err(svc_api::plugins::ToggleError::NotFound(name.into()));
        }
        let mut active = self.0.lock().unwrap();
        *active = !*active;
        Ok(OnePlugin::info(*active))
    }
}

/// A registry held in memory: two packages listed, `mock` installable.
struct MemoryRegistry(std::sync::Mutex<Vec<svc_api::plugins::InstalledPackage>>);

impl MemoryRegistry {
    fn mock() -> svc_api::plugins::InstalledPackage {
        svc_api::plugins::InstalledPackage {
            active: true,
            category: "cloud".into(),
            installed_at: Some(1_700_000_000),
            name: "mock".into(),
            path: "/var/lib/svc/plugins/svc-plugin-mock".into(),
            sha256: "ab".repeat(32),
            source: "registry https://registry.example/index.json".into(),
            kind: "plugin".into(),
            version: "v1.0.0".into(),
        }
    }
}

impl svc_api::plugins::PackageRegistry for MemoryRegistry {
    fn search<'a>(
        &'a self,
        q: &'a str,
        refresh: bool,
    ) -> svc_api::plugins::RegistryFuture<'a, svc_api::plugins::RegistryListing> {
        let package = |name: &str, kind: &str, category: Option<&str>| svc_api::plugins::RegistryPackage {
            category: category.map(str::to_owned),
            description: format!("{name} for tests"),
            author: "svc".into(),
            installed_version: None,
            problem: category.is_none().then(|| "category check failed".to_owned()),
            pricing_model: "free".into(),
            price_usd: 0.0,
            name: name.into(),
            role: (kind == "plugin").then(|| "provider".to_owned()),
            latest: true,
            kind: kind.into(),
            version: "v1.0.0".into(),
        };
        let packages = vec![
            package("svc-plugin-mock", "plugin", Some("cloud")),
            package("cost-hygiene", "policy", None),
        ];
        let listing = svc_api::plugins::RegistryListing {
            age_seconds: if refresh { 0 } else { 12 },
            fetched_at: 1_700_000_000,
            from_cache: !refresh,
            packages: packages.into_iter().filter(|p| p.name.contains(q)).collect(),
            skipped: vec!["package 2: missing field `type`".into()],
            source: "https://registry.example/index.json".into(),
            warning: None,
        };
        Box::pin(async move { Ok(listing) })
    }
    fn installed(&self) -> svc_api::plugins::RegistryFuture<'_, Vec<svc_api::plugins::InstalledPackage>> {
        let list = self.0.lock().unwrap().clone();
        Box::pin(async move { Ok(list) })
    }
    fn install<'a>(
        &'a self,
        request: svc_api::plugins::InstallRequest,
        _actor: &'a str,
    ) -> svc_api::plugins::RegistryFuture<'a, svc_api::plugins::InstallOutcome> {
        let outcome = if request.name == "mock" {
            let mut list = self.0.lock().unwrap();
            let changed = list.is_empty();
            if changed {
                list.push(MemoryRegistry::mock());
            }
            Ok(svc_api::plugins::InstallOutcome {
                changed,
                message: "installed plugin mock v1.0.0".into(),
                package: MemoryRegistry::mock(),
                previous_version: None,
            })
        } else {
            Err(svc_api::plugins::RegistryFailure {
                kind: svc_api::plugins::RegistryFailureKind::NotFound,
                message: format!("unknown package {:?}", request.name),
            })
        };
        Box::pin(async move { outcome })
    }
    fn remove<'a>(
        &'a self,
        name: &'a str,
        _actor: &'a str,
    ) -> svc_api::plugins::RegistryFuture<'a, svc_api::plugins::InstalledPackage> {
        let mut list = self.0.lock().unwrap();
        let found = list.iter().position(|p| p.name == name).map(|i| list.remove(i));
        let outcome = found.ok_or_else(|| svc_api::plugins::RegistryFailure {
            kind: svc_api::plugins::RegistryFailureKind::NotFound,
            message: format!("no installed plugin or policy pack named {name:?}"),
        });
        Box::pin(async move { outcome })
    }
}

/// A configuration held in memory that accepts `sau` and `daemon` keys.
struct MemoryConfig(std::sync::Mutex<Value>);

impl svc_api::config::ConfigService for MemoryConfig {
    fn get(&self) -> Value {
        self.0.lock().unwrap().clone()
    }
    fn put(&self, patch: Value) -> Result<Value, svc_api::config::ConfigError> {
        let mut cur = self.0.lock().unwrap();
        for (k, v) in patch.as_object().into_iter().flatten() {
            if k != "sau" && k != "daemon" {
                return Err(svc_api::config::ConfigError::Invalid(format!("unknown key {k:?}")));
            }
            cur[k] = v.clone();
        }
        Ok(cur.clone())
    }
}

/// Writes a Terraform state declaring the fixture's volume (with a tag
/// it does not have) and a volume that is gone; returns its path.
fn terraform_state(f: &Fixture) -> String {
    let arn = |id: &str| format!("arn:aws:ec2:us-east-1:123456789012:volume/{id}");
    let state = json!({
        "version": 4, "terraform_version": "1.9.5", "serial": 3, "lineage": "contract",
        "resources": [
            {"module": "module.disks", "mode": "managed", "type": "aws_ebs_volume", "name": "data", "each": "list",
             "instances": [{"index_key": 0, "attributes": {"id": "vol-1", "arn": arn("vol-1"), "tags_all": {"team": "data"}}}]},
            {"mode": "managed", "type": "aws_ebs_volume", "name": "old",
             "instances": [{"attributes": {"id": "vol-gone", "arn": arn("vol-gone")}}]}
        ]
    });
    let path = f.dir.path().join("contract.tfstate");
    std::fs::write(&path, state.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

fn three_scans() -> (Fixture, u64) {
    let f = Fixture::new(Estate::sample());
    f.state
        .set_plugins(std::sync::Arc::new(OnePlugin(std::sync::Mutex::new(true))));
    f.state
        .set_registry(std::sync::Arc::new(MemoryRegistry(std::sync::Mutex::new(Vec::new()))));
    let tfstate = terraform_state(&f);
    f.state
        .set_config(std::sync::Arc::new(MemoryConfig(std::sync::Mutex::new(
            json!({"daemon": {"scan_interval": "1h"}, "iac": {"terraform_states": [tfstate]}}),
        ))));
    let settings = svc_api::export::ExportSettings {
        bucket: Some(svc_api::export::Bucket::Dir(f.dir.path().join("audit"))),
        ..Default::default()
    };
    f.state.set_exporter(std::sync::Arc::new(svc_api::export::Exporter::new(
        f.engine.clone(),
        settings,
        svc_api::export::Identity::new("00000000-0000-4000-8000-000000000000".into()),
    )));
    let after_first = f.engine.now_us();
    f.rescan(|e| {
        e.node(&instance(), "stopped", 70.0);
        e.node(&aws("volume", "vol-2"), "available", 8.0);
        e.edge(&aws("volume", "vol-2"), &instance(), Relation::AttachedTo);
        e.remove(ROLE);
        e.edges.retain(|(a, _, _)| a != POD && *a != function());
    });
    f.rescan(|e| {
        e.edge(&function(), &db(), Relation::Uses);
        // A public address makes the instance reachable, with a proof.
        e.node(&aws("eip", "eipalloc-1"), "in-use", 3.6);
        e.edge(&aws("eip", "eipalloc-1"), &instance(), Relation::AttachedTo);
    });
    f.engine
        .ledger()
        .append_one(NewEvent {
            event_type: "APPROVAL".into(),
            crn: Some(volume()),
            actor: "operator".into(),
            message: "approved for deletion".into(),
            payload: json!({"savings_usd": 40.1}),
        })
        .unwrap();
    (f, after_first)
}

// ---------------------------------------------------------------- the document itself

#[test]
fn operations_are_exactly_the_routes() {
    let spec = Spec::load();
    let documented = spec.operations();
    let routed: BTreeSet<(String, String)> = svc_api::ROUTES
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(routed.len(), svc_api::ROUTES.len(), "ROUTES lists an operation twice");
    let missing: Vec<_> = routed.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&routed).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{SPEC_PATH} and svc_api::ROUTES disagree\n  routed but not documented: {missing:?}\n  documented but not routed: {extra:?}"
    );
}

#[test]
fn document_is_well_formed_and_every_ref_resolves() {
    let spec = Spec::load();
    assert_eq!(spec.doc["openapi"], "3.1.0");
    assert_eq!(spec.doc["info"]["title"], "svc");
    assert_eq!(spec.doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(spec.doc["info"]["description"].as_str().is_some_and(|d| !d.is_empty()));

    let mut refs = Vec::new();
    collect_refs(&spec.doc, "#", &mut refs);
    assert!(!refs.is_empty());
    let unresolved: Vec<_> = refs
        .iter()
        .filter(|(_, r)| !r.starts_with("#/components/") || spec.pointer(r).is_none())
        .collect();
    assert!(unresolved.is_empty(), "unresolved $ref (at, ref): {unresolved:?}");

    // Every component is used somewhere.
    let used: HashSet<&str> = refs.iter().map(|(_, r)| r.as_str()).collect();
    for kind in ["schemas", "parameters", "responses", "requestBodies"] {
        for name in spec.doc["components"][kind]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            let r = format!("#/components/{kind}/{name}");
            assert!(used.contains(r.as_str()), "{r} is never referenced");
        }
    }

    // The validator knows every keyword the schemas use.
    let mut schemas: Vec<(String, &Value)> = Vec::new();
    collect_schemas(&spec.doc["paths"], "#/paths", &mut schemas);
    for kind in ["parameters", "responses", "requestBodies"] {
        collect_schemas(
            &spec.doc["components"][kind],
            &format!("#/components/{kind}"),
            &mut schemas,
        );
    }
    for (name, s) in spec.doc["components"]["schemas"]
        .as_object()
        .expect("components/schemas")
    {
        schemas.push((format!("#/components/schemas/{name}"), s));
    }
    let mut unknown = Vec::new();
    for (at, s) in &schemas {
        unknown_keywords(s, at, &mut unknown);
    }
    assert!(
        unknown.is_empty(),
        "schema keywords this test does not check:\n{}",
        unknown.join("\n")
    );

    // Operations: unique ids, documented statuses, documented path parameters.
    let schemes = spec.doc["components"]["securitySchemes"]
        .as_object()
        .expect("securitySchemes");
    assert_eq!(schemes["bearerAuth"]["type"], "http");
    assert_eq!(schemes["bearerAuth"]["scheme"], "bearer");
    let mut ids = HashSet::new();
    for (method, path) in spec.operations() {
        let op = spec.operation(&method, &path);
        let id = op["operationId"].as_str().unwrap_or_default();
        assert!(
            !id.is_empty() && ids.insert(id.to_owned()),
            "{method} {path}: missing or repeated operationId"
        );
        let responses = op["responses"].as_object().expect("responses");
        assert!(!responses.is_empty(), "{method} {path} documents no response");
        for status in responses.keys() {
            assert!(
                status.len() == 3 && status.parse::<u16>().is_ok_and(|s| (100..600).contains(&s)),
                "{method} {path}: response key {status:?} is not a status code"
            );
        }
        for requirement in op
            .get("security")
            .unwrap_or(&spec.doc["security"])
            .as_array()
            .into_iter()
            .flatten()
        {
            for scheme in requirement.as_object().into_iter().flatten().map(|(k, _)| k) {
                assert!(
                    schemes.contains_key(scheme),
                    "{method} {path}: unknown security scheme {scheme}"
                );
            }
        }
        if spec.secured(&method, &path) {
            assert!(
                spec.response(&method, &path, 401).is_some(),
                "{method} {path} is secured but documents no 401"
            );
        }
        for segment in path.split('/').filter(|s| s.starts_with('{')) {
            let name = segment.trim_matches(|c| c == '{' || c == '}');
            assert!(
                spec.parameters(&method, &path)
                    .iter()
                    .any(|p| p["in"] == "path" && p["name"] == name && p["required"] == true),
                "{method} {path}: path parameter {name} is not documented as required"
            );
        }
    }
}

// ---------------------------------------------------------------- routing and security

#[tokio::test]
async fn every_route_is_routed() {
    let spec = Spec::load();
    let f = Fixture::new(Estate::sample());
    let now = f.engine.now_us();
    for (method, route) in svc_api::ROUTES {
        let uri = example_uri(&spec, method, route, POD, now);
        let body = (*method == "POST").then_some(REJECTED_BODY);
        let reply = send(&f.app, method, &uri, Some(TOKEN), body).await;
        assert!(
            !reply.is_fallback(),
            "{method} {route} ({uri}) is not routed: {} {}",
            reply.status,
            reply.text()
        );
    }
    // The fallback itself, for contrast.
    let reply = send(&f.app, "GET", "/api/v1/no-such-route", Some(TOKEN), None).await;
    assert!(reply.is_fallback(), "{} {}", reply.status, reply.text());
    let reply = send(&f.app, "DELETE", "/api/v1/graph/stats", Some(TOKEN), None).await;
    assert!(reply.is_fallback(), "{} {}", reply.status, reply.text());
}

#[tokio::test]
async fn documented_security_is_what_the_server_enforces() {
    let spec = Spec::load();
    let f = Fixture::new(Estate::sample());
    let now = f.engine.now_us();
    let mut errors = Vec::new();
    for (method, route) in svc_api::ROUTES {
        let uri = example_uri(&spec, method, route, POD, now);
        let body = (*method == "POST").then_some(REJECTED_BODY);
        for token in [None, Some("wrong-token")] {
            let reply = send(&f.app, method, &uri, token, body).await;
            let secured = spec.secured(method, route);
            if secured != (reply.status == StatusCode::UNAUTHORIZED) {
                errors.push(format!(
                    "{method} {route}: documented {}, but without a valid token the answer is {}",
                    if secured { "secured" } else { "open" },
                    reply.status
                ));
            }
            if reply.status == StatusCode::UNAUTHORIZED {
                errors.extend(conformance(&spec, method, route, &reply));
                assert_eq!(reply.json()["error"]["code"], "unauthorized");
            }
        }
    }
    assert_none(&errors);
}

// ---------------------------------------------------------------- live responses

/// One request and what it must produce.
struct Case {
    method: &'static str,
    route: &'static str,
    uri: String,
    body: Option<String>,
    want: u16,
    /// JSON pointers to arrays that must not be empty, so their items get checked.
    nonempty: &'static [&'static str],
}

fn get(route: &'static str, uri: impl Into<String>, nonempty: &'static [&'static str]) -> Case {
    Case {
        method: "GET",
        route,
        uri: uri.into(),
        body: None,
        want: 200,
        nonempty,
    }
}

/// A JSON traffic body of `n` flows from `src` to `dst`.
fn traffic_body(src: &str, dst: &str, n: u64) -> String {
    let records: Vec<Value> = (0..n)
        .map(|i| json!({"source": src, "destination": dst, "bytes": 100 + i, "packets": 1, "start": 1_700_000_000, "end": 1_700_000_060}))
        .collect();
    json!({ "records": records }).to_string()
}

fn post(route: &'static str, uri: &str, body: Option<&str>, want: u16) -> Case {
    Case {
        method: "POST",
        route,
        uri: uri.to_owned(),
        body: body.map(str::to_owned),
        want,
        nonempty: &[],
    }
}

async fn run_cases(spec: &Spec, f: &Fixture, cases: &[Case], covered: &mut BTreeSet<(String, String)>) -> Vec<String> {
    let mut errors = Vec::new();
    for c in cases {
        let reply = send(&f.app, c.method, &c.uri, Some(TOKEN), c.body.as_deref()).await;
        if reply.status.as_u16() != c.want {
            errors.push(format!(
                "{} {}: expected {}, got {} {}",
                c.method,
                c.uri,
                c.want,
                reply.status,
                reply.text()
            ));
            continue;
        }
        if reply.is_fallback() {
            errors.push(format!("{} {}: answered by the router fallback", c.method, c.uri));
        }
        errors.extend(
            conformance(spec, c.method, c.route, &reply)
                .into_iter()
                .map(|e| format!("{e} ({})", c.uri)),
        );
        let body = reply.json();
        for p in c.nonempty {
            if body.pointer(p).and_then(Value::as_array).is_none_or(|a| a.is_empty()) {
                errors.push(format!(
                    "{} {}: {p} is empty, so its items were not checked",
                    c.method, c.uri
                ));
            }
        }
        covered.insert((c.method.to_owned(), c.route.to_owned()));
        if matches!(c.route, "/api/v1/engine/scan" | "/api/v1/sync") {
            wait_for_idle(f).await;
        }
    }
    errors
}

/// A notification receiver that answers every POST with 200 "ok".
async fn receiver() -> std::net::SocketAddr {
    let app = axum::Router::new().route("/{path}", axum::routing::post(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test]
async fn live_responses_match_their_schemas() {
    let spec = Spec::load();
    let (f, after_first) = three_scans();
    let receiver = receiver().await;
    let notify = svc_api::notify::NotifySettings {
        slack_webhook: Some(format!("http://{receiver}/slack")),
        ..Default::default()
    };
    f.state
        .set_notifier(svc_api::notify::Notifier::new(notify, f.state.inner.metrics.notify.clone()).unwrap());
    let now = f.engine.now_us();
    let (t1, t_now) = (enc(&rfc3339(after_first)), enc(&rfc3339(now)));
    let cases = vec![
        get("/healthz", "/healthz", &[]),
        post(
            "/api/v1/config/slack-test",
            "/api/v1/config/slack-test?all=true",
            None,
            200,
        ),
        get("/readyz", "/readyz", &[]),
        get("/metrics", "/metrics", &[]),
        Case {
            // A plain GET is not an upgrade: the handler says so (the 101 is checked over a real socket).
            want: 400,
            ..get("/events", "/events", &[])
        },
        get("/api/v1/topology", "/api/v1/topology", &["/nodes", "/edges"]),
        get("/api/v1/graph/stats", "/api/v1/graph/stats", &[]),
        get("/api/v1/engine/scan/progress", "/api/v1/engine/scan/progress", &[]),
        get("/api/v1/graph/nodes", "/api/v1/graph/nodes", &["/nodes"]),
        get("/api/v1/graph/nodes", "/api/v1/graph/nodes?limit=2", &["/nodes"]),
        get(
            "/api/v1/graph/nodes",
            "/api/v1/graph/nodes?include_deleted=true&provider=aws",
            &["/nodes"],
        ),
        get(
            "/api/v1/graph/nodes/{crn}",
            format!("/api/v1/graph/nodes/{}", enc(POD)),
            &[],
        ),
        get(
            "/api/v1/graph/nodes/{crn}",
            format!("/api/v1/graph/nodes/{}", enc(ROLE)),
            &[],
        ),
        get(
            "/api/v1/graph/nodes/{crn}/edges",
            format!("/api/v1/graph/nodes/{}/edges", enc(&instance())),
            &["/outgoing", "/incoming"],
        ),
        get(
            "/api/v1/graph/blast-radius/{crn}",
            format!("/api/v1/graph/blast-radius/{}", enc(&vpc())),
            &["/affected"],
        ),
        get(
            "/api/v1/graph/nodes/{crn}/versions",
            format!("/api/v1/graph/nodes/{}/versions", enc(&instance())),
            &["/versions"],
        ),
        get(
            "/api/v1/graph/breakdown",
            "/api/v1/graph/breakdown?by=type&limit=1",
            &["/groups"],
        ),
        get(
            "/api/v1/graph/at",
            format!("/api/v1/graph/at?ts={t_now}"),
            &["/nodes", "/edges"],
        ),
        get(
            "/api/v1/graph/at",
            format!("/api/v1/graph/at?ts={t1}&limit=2"),
            &["/nodes", "/edges"],
        ),
        get(
            "/api/v1/graph/diff",
            format!("/api/v1/graph/diff?from={t1}&to={t_now}"),
            &[
                "/added",
                "/removed",
                "/changed",
                "/changed/0/fields",
                "/edges_added",
                "/edges_removed",
                "/edges_changed",
            ],
        ),
        get("/api/v1/nodes", "/api/v1/nodes", &["/rows"]),
        get("/api/v1/nodes", "/api/v1/nodes?limit=2", &["/rows"]),
        get(
            "/api/v1/nodes",
            "/api/v1/nodes?category=storage&sort=cost&order=desc&offset=1&limit=3&filter=vol",
            &["/rows"],
        ),
        get("/api/v1/graph", "/api/v1/graph", &["/nodes", "/edges"]),
        get(
            "/api/v1/graph/topology",
            "/api/v1/graph/topology",
            &["/nodes", "/edges", "/clusters"],
        ),
        get("/api/v1/history", "/api/v1/history", &["/events"]),
        get(
            "/api/v1/history",
            "/api/v1/history?limit=1&type=APPROVAL&since=1h",
            &["/events"],
        ),
        get("/api/v1/history/summary", "/api/v1/history/summary", &[]),
        get(
            "/api/v1/history/resource",
            format!("/api/v1/history/resource?crn={}", enc(&volume())),
            &["/events"],
        ),
        get("/api/v1/history/sessions", "/api/v1/history/sessions", &["/sessions"]),
        get("/api/v1/ledger/verify", "/api/v1/ledger/verify", &[]),
        get(
            "/api/v1/waste-ledger",
            "/api/v1/waste-ledger",
            &["/types", "/types/0/top"],
        ),
        get(
            "/api/v1/waste-ledger",
            "/api/v1/waste-ledger?top=1&provider=aws",
            &["/types"],
        ),
        get(
            "/api/v1/heuristics/status",
            "/api/v1/heuristics/status",
            &["/rules", "/engines"],
        ),
        get("/api/v1/solver/results", "/api/v1/solver/results", &["/nodes"]),
        get(
            "/api/v1/solver/results",
            "/api/v1/solver/results?reachability=unreachable&min_risk=0&limit=5",
            &["/nodes"],
        ),
        get(
            "/api/v1/oracle/{crn}",
            format!("/api/v1/oracle/{}", enc(&instance())),
            &["/proof"],
        ),
        post(
            "/api/v1/traffic/ingest",
            "/api/v1/traffic/ingest",
            Some(&traffic_body(&instance(), &db(), 3)),
            200,
        ),
        get("/api/v1/traffic/edges", "/api/v1/traffic/edges", &["/edges"]),
        get(
            "/api/v1/anomalies",
            "/api/v1/anomalies",
            &["/history", "/history/0/recent"],
        ),
        get(
            "/api/v1/anomalies",
            "/api/v1/anomalies?limit=5&type=volume&provider=aws",
            &["/history"],
        ),
        get("/api/v1/plugins", "/api/v1/plugins", &[""]),
        get(
            "/api/v1/registry/search",
            "/api/v1/registry/search",
            &["/packages", "/skipped"],
        ),
        get(
            "/api/v1/registry/search",
            "/api/v1/registry/search?q=mock&refresh=true",
            &["/packages"],
        ),
        post(
            "/api/v1/registry/install",
            "/api/v1/registry/install",
            Some(r#"{"name": "mock", "activate": true}"#),
            200,
        ),
        post(
            "/api/v1/plugins/install",
            "/api/v1/plugins/install",
            Some(r#"{"name": "mock", "force": false}"#),
            200,
        ),
        post(
            "/api/v1/registry/install",
            "/api/v1/registry/install",
            Some(r#"{"name": "nope"}"#),
            404,
        ),
        get("/api/v1/registry/installed", "/api/v1/registry/installed", &[""]),
        post(
            "/api/v1/registry/remove",
            "/api/v1/registry/remove",
            Some(r#"{"name": "mock"}"#),
            200,
        ),
        post(
            "/api/v1/registry/remove",
            "/api/v1/registry/remove",
            Some(r#"{"name": "mock"}"#),
            404,
        ),
        post("/api/v1/registry/refresh", "/api/v1/registry/refresh", None, 200),
        post(
            "/api/v1/plugins/toggle",
            "/api/v1/plugins/toggle",
            Some(r#"{"name": "mock"}"#),
            200,
        ),
        post("/api/v1/sync", "/api/v1/sync", Some(r#"{"wait": true}"#), 200),
        post("/api/v1/engine/scan", "/api/v1/engine/scan?wait=true", None, 200),
        post("/api/v1/engine/scan", "/api/v1/engine/scan", None, 202),
        post("/api/v1/sync", "/api/v1/sync", Some("{}"), 202),
        post(
            "/api/v1/history/prune",
            "/api/v1/history/prune",
            Some(r#"{"max_age_days": 30}"#),
            200,
        ),
        get("/api/v1/ledger/verify", "/api/v1/ledger/verify", &[]),
        get("/api/v1/policies/mesh", "/api/v1/policies/mesh", &[]),
        post(
            "/api/v1/policies",
            "/api/v1/policies",
            Some(
                r#"{"rules": [{"id": "big-volumes", "condition": "kind == 'volume' && cost > 1.0", "action": "warn", "message": "costly volume"},
                               {"id": "hold-instances", "condition": "size(tags) >= 0 && kind == 'instance'", "action": "block", "message": "", "mode": "shadow"}]}"#,
            ),
            200,
        ),
        post("/api/v1/engine/scan", "/api/v1/engine/scan?wait=true", None, 200),
        get("/api/v1/policies", "/api/v1/policies", &["/rules"]),
        get("/api/v1/policies/mesh", "/api/v1/policies/mesh", &["/policies"]),
        post(
            "/api/v1/policies/toggle",
            "/api/v1/policies/toggle",
            Some(r#"{"rule_id": "big-volumes"}"#),
            200,
        ),
        post(
            "/api/v1/policies/reorder",
            "/api/v1/policies/reorder",
            Some(r#"{"order": ["hold-instances"]}"#),
            200,
        ),
        post(
            "/api/v1/policies/dry-run",
            "/api/v1/policies/dry-run",
            Some(r#"{"condition": "props.nope > 1 || kind == 'volume'", "limit": 1}"#),
            200,
        ),
        post(
            "/api/v1/cortex/assimilate",
            "/api/v1/cortex/assimilate",
            Some(r#"{"question": "how many resources are there?"}"#),
            200,
        ),
        get("/api/v1/ai/providers", "/api/v1/ai/providers", &["/providers"]),
        get(
            "/api/v1/drift/report",
            "/api/v1/drift/report",
            &["/states", "/gone", "/changed", "/unmanaged"],
        ),
        get(
            "/api/v1/drift/report",
            format!("/api/v1/drift/report?limit=1&crn={}", enc(&volume())),
            &["/changed"],
        ),
        get(
            "/api/v1/provenance",
            format!("/api/v1/provenance?crn={}", enc(&volume())),
            &[],
        ),
        get(
            "/api/v1/provenance",
            format!("/api/v1/provenance?crn={}", enc(&vpc())),
            &[],
        ),
        post(
            "/api/v1/mcp",
            "/api/v1/mcp",
            Some(
                r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "graph_stats", "arguments": {}}}"#,
            ),
            200,
        ),
        Case {
            method: "DELETE",
            route: "/api/v1/policies/{id}",
            uri: "/api/v1/policies/big-volumes".into(),
            body: None,
            want: 200,
            nonempty: &[],
        },
        post("/api/v1/ledger/export", "/api/v1/ledger/export", None, 200),
        post("/api/v1/ledger/export", "/api/v1/ledger/export", None, 200),
        get("/api/v1/config", "/api/v1/config", &[]),
        Case {
            method: "PUT",
            ..post(
                "/api/v1/config",
                "/api/v1/config",
                Some(r#"{"sau": {"audit_bucket": "s3://audit/svc"}}"#),
                200,
            )
        },
        Case {
            method: "PUT",
            ..post("/api/v1/config", "/api/v1/config", Some(r#"{"bogus": 1}"#), 422)
        },
        post(
            "/api/v1/tokens",
            "/api/v1/tokens",
            Some(r#"{"name": "ci-bot", "role": "operator"}"#),
            201,
        ),
        post(
            "/api/v1/tokens",
            "/api/v1/tokens",
            Some(r#"{"name": "ci-bot", "role": "viewer"}"#),
            409,
        ),
        post(
            "/api/v1/tokens",
            "/api/v1/tokens",
            Some(r#"{"name": "bad name", "role": "viewer"}"#),
            422,
        ),
        get("/api/v1/tokens", "/api/v1/tokens", &["/tokens"]),
        Case {
            method: "DELETE",
            route: "/api/v1/tokens/{name}",
            uri: "/api/v1/tokens/ci-bot".into(),
            body: None,
            want: 200,
            nonempty: &[],
        },
        Case {
            method: "DELETE",
            route: "/api/v1/tokens/{name}",
            uri: "/api/v1/tokens/admin".into(),
            body: None,
            want: 409,
            nonempty: &[],
        },
        post(
            "/api/v1/session",
            "/api/v1/session",
            Some(&format!(r#"{{"token": "{TOKEN}"}}"#)),
            200,
        ),
        post("/api/v1/session", "/api/v1/session", Some(r#"{"token": "wrong"}"#), 401),
        get("/api/v1/session", "/api/v1/session", &[]),
        Case {
            method: "DELETE",
            route: "/api/v1/session",
            uri: "/api/v1/session".into(),
            body: None,
            want: 200,
            nonempty: &[],
        },
    ];
    let mut covered = BTreeSet::new();
    let mut errors = run_cases(&spec, &f, &cases, &mut covered).await;
    errors.extend(run_cases(&spec, &f, &remediation_cases(&f), &mut covered).await);
    for (method, route) in svc_api::ROUTES {
        if !covered.contains(&((*method).to_owned(), (*route).to_owned())) {
            errors.push(format!("{method} {route}: no live response was checked"));
        }
    }
    assert_none(&errors);
}

/// Every remediation route once, on the fixture's pending items: a hold
/// released by override then approved, a rejection, a bulk request with an
/// unknown item, quarantine and revert, the ignore list.
fn remediation_cases(f: &Fixture) -> Vec<Case> {
    let pending: Vec<(String, String)> = f
        .engine
        .remediation_items()
        .unwrap()
        .into_iter()
        .filter(|i| i.stage == svc_engine::graph::Phase::Pending && i.notes().rejected.is_none())
        .map(|i| (i.crn, i.plan_hash))
        .collect();
    assert!(pending.len() >= 2, "the fixture has pending items: {pending:?}");
    let ((a, ha), (b, hb)) = (pending[0].clone(), pending[1].clone());
    let quarantined = f.engine.quarantine(&instance(), "ISOLATE", "contract", "test").unwrap();
    let decision = |crn: &str, hash: &str, extra: Value| {
        let mut v = json!({"crn": crn, "plan_hash": hash});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v.to_string()
    };
    vec![
        get(
            "/api/v1/remediation/queue",
            "/api/v1/remediation/queue",
            &["/stages/pending"],
        ),
        get(
            "/api/v1/remediation/queue",
            "/api/v1/remediation/queue?stage=pending&limit=1",
            &["/stages/pending"],
        ),
        get("/api/v1/plan", format!("/api/v1/plan?crn={}", enc(&a)), &["/steps"]),
        post(
            "/api/v1/remediation/move",
            "/api/v1/remediation/move",
            Some(&decision(&a, &ha, json!({"to": "sau_gate", "reason": "review"}))),
            200,
        ),
        post(
            "/api/v1/remediation/override",
            "/api/v1/remediation/override",
            Some(&decision(&a, &ha, json!({"reason": "ticket 1", "actor": "ops"}))),
            200,
        ),
        post(
            "/api/v1/remediation/approve",
            "/api/v1/remediation/approve",
            Some(&decision(&a, &ha, json!({"actor": "ops"}))),
            200,
        ),
        post(
            "/api/v1/remediation/reject",
            "/api/v1/remediation/reject",
            Some(&decision(&b, &hb, json!({"reason": "keep"}))),
            200,
        ),
        post(
            "/api/v1/remediation/bulk",
            "/api/v1/remediation/bulk",
            Some(
                &json!({"action": "reject", "items": [{"crn": aws("volume", "vol-none"), "plan_hash": "x"}]})
                    .to_string(),
            ),
            200,
        ),
        post(
            "/api/v1/remediation/quarantine",
            "/api/v1/remediation/quarantine",
            Some(&json!({"crn": db(), "action": "STOP", "reason": "contract"}).to_string()),
            200,
        ),
        post(
            "/api/v1/remediation/revert",
            "/api/v1/remediation/revert",
            Some(&json!({"hash": quarantined}).to_string()),
            200,
        ),
        post(
            "/api/v1/isolation",
            "/api/v1/isolation",
            Some(&json!({"crn": volume(), "reason_code": "owner", "ttl_seconds": 3600}).to_string()),
            200,
        ),
        get("/api/v1/isolation", "/api/v1/isolation", &["/entries"]),
        Case {
            method: "DELETE",
            route: "/api/v1/isolation/{crn}",
            uri: format!("/api/v1/isolation/{}", enc(&volume())),
            body: None,
            want: 200,
            nonempty: &[],
        },
    ]
}

/// An estate whose last scan has node and type anomalies: twenty $10
/// volumes scanned six times unchanged, then one of them jumps to $90.
#[tokio::test]
async fn anomaly_lists_match_their_schemas() {
    let spec = Spec::load();
    let mut estate = Estate::sample();
    for i in 0..20 {
        estate.node(&aws("volume", &format!("vol-a{i:02}")), "in-use", 10.0);
    }
    let f = Fixture::new(estate);
    for _ in 0..5 {
        f.rescan(|_| {});
    }
    f.rescan(|e| {
        e.node(&aws("volume", "vol-a07"), "in-use", 90.0);
    });
    let cases = [get(
        "/api/v1/anomalies",
        "/api/v1/anomalies",
        &["/nodes", "/types", "/history", "/history/0/recent"],
    )];
    let errors = run_cases(&spec, &f, &cases, &mut BTreeSet::new()).await;
    assert_none(&errors);
}

/// A request that fails, with the status and error code it must produce.
struct Failure {
    method: &'static str,
    route: &'static str,
    uri: String,
    token: Option<&'static str>,
    body: Option<String>,
    want: u16,
    code: &'static str,
}

fn failure(route: &'static str, uri: impl Into<String>, want: u16, code: &'static str) -> Failure {
    Failure {
        method: "GET",
        route,
        uri: uri.into(),
        token: Some(TOKEN),
        body: None,
        want,
        code,
    }
}

fn failed_post(route: &'static str, body: &str, want: u16, code: &'static str) -> Failure {
    Failure {
        method: "POST",
        body: Some(body.to_owned()),
        ..failure(route, route, want, code)
    }
}

/// Requests that fail, each with its status and error code.
#[tokio::test]
async fn error_responses_match_the_error_schema() {
    let spec = Spec::load();
    let f = Fixture::new(Estate::sample());
    let missing = enc(&aws("volume", "vol-missing"));
    let oversized = format!(
        r#"{{"max_age_days": 1, "pad": "{}"}}"#,
        "x".repeat(svc_api::MAX_BODY_BYTES)
    );
    let cases = vec![
        Failure {
            token: None,
            ..failure("/api/v1/graph/stats", "/api/v1/graph/stats", 401, "unauthorized")
        },
        Failure {
            token: Some("wrong-token"),
            ..failure("/api/v1/topology", "/api/v1/topology", 401, "unauthorized")
        },
        Failure {
            token: None,
            ..failure("/events", "/events", 401, "unauthorized")
        },
        failure("/events", "/events", 400, "bad_request"),
        failure(
            "/api/v1/graph/nodes/{crn}",
            format!("/api/v1/graph/nodes/{missing}"),
            404,
            "not_found",
        ),
        failure(
            "/api/v1/graph/nodes/{crn}/edges",
            format!("/api/v1/graph/nodes/{missing}/edges"),
            404,
            "not_found",
        ),
        failure(
            "/api/v1/graph/blast-radius/{crn}",
            format!("/api/v1/graph/blast-radius/{missing}"),
            404,
            "not_found",
        ),
        failure(
            "/api/v1/graph/nodes/{crn}",
            "/api/v1/graph/nodes/garbage",
            422,
            "invalid",
        ),
        failure("/api/v1/oracle/{crn}", "/api/v1/oracle/garbage", 422, "invalid"),
        failed_post("/api/v1/traffic/ingest", r#"{"records": []}"#, 422, "invalid"),
        failed_post(
            "/api/v1/traffic/ingest",
            r#"{"records": [{"source": "web", "destination": "10.0.0.1", "bytes": 1, "start": 1, "end": 2}]}"#,
            422,
            "invalid",
        ),
        failed_post("/api/v1/traffic/ingest", r#"{"records": "many"}"#, 400, "bad_request"),
        failure(
            "/api/v1/oracle/{crn}",
            format!("/api/v1/oracle/{missing}"),
            404,
            "not_found",
        ),
        failure(
            "/api/v1/solver/results",
            "/api/v1/solver/results?reachability=maybe",
            400,
            "bad_request",
        ),
        failure(
            "/api/v1/solver/results",
            "/api/v1/solver/results?min_risk=101",
            400,
            "bad_request",
        ),
        failure(
            "/api/v1/graph/nodes/{crn}/edges",
            "/api/v1/graph/nodes/garbage/edges",
            422,
            "invalid",
        ),
        failure(
            "/api/v1/graph/blast-radius/{crn}",
            "/api/v1/graph/blast-radius/garbage",
            422,
            "invalid",
        ),
        failure("/api/v1/history", "/api/v1/history?crn=garbage", 422, "invalid"),
        failure(
            "/api/v1/history/resource",
            "/api/v1/history/resource?crn=garbage",
            422,
            "invalid",
        ),
        failure("/api/v1/graph/nodes", "/api/v1/graph/nodes?limit=0", 400, "bad_request"),
        failure("/api/v1/anomalies", "/api/v1/anomalies?limit=1001", 400, "bad_request"),
        failure("/api/v1/anomalies", "/api/v1/anomalies?type=", 400, "bad_request"),
        failure(
            "/api/v1/graph/nodes",
            "/api/v1/graph/nodes?cursor=%21%21",
            400,
            "bad_request",
        ),
        failure(
            "/api/v1/nodes",
            "/api/v1/nodes?include_deleted=maybe",
            400,
            "bad_request",
        ),
        failure("/api/v1/nodes", "/api/v1/nodes?category=disks", 400, "bad_request"),
        failure("/api/v1/nodes", "/api/v1/nodes?sort=size", 400, "bad_request"),
        failure(
            "/api/v1/nodes",
            "/api/v1/nodes?filter=waste%3Amaybe",
            400,
            "bad_request",
        ),
        failure("/api/v1/nodes", "/api/v1/nodes?offset=100000001", 400, "bad_request"),
        failure(
            "/api/v1/nodes",
            "/api/v1/nodes?sort=cost&cursor=AAAAAAAAAAE",
            400,
            "bad_request",
        ),
        failure("/api/v1/graph/at", "/api/v1/graph/at", 400, "bad_request"),
        failure("/api/v1/graph/at", "/api/v1/graph/at?ts=yesterday", 400, "bad_request"),
        failure(
            "/api/v1/graph/diff",
            "/api/v1/graph/diff?from=2030-01-01T00:00:00Z&to=2020-01-01T00:00:00Z",
            400,
            "bad_request",
        ),
        failure("/api/v1/history", "/api/v1/history?status=DONE", 400, "bad_request"),
        failure("/api/v1/history", "/api/v1/history?since=yesterday", 400, "bad_request"),
        failure(
            "/api/v1/history/resource",
            "/api/v1/history/resource",
            400,
            "bad_request",
        ),
        failed_post("/api/v1/history/prune", r#"{"max_age_days": -1}"#, 400, "bad_request"),
        failed_post("/api/v1/history/prune", r#"{"days": 1}"#, 400, "bad_request"),
        failed_post("/api/v1/engine/scan", r#"{"wait": "soon"}"#, 400, "bad_request"),
        failed_post("/api/v1/sync", "[1]", 400, "bad_request"),
        failed_post("/api/v1/history/prune", &oversized, 413, "payload_too_large"),
        failed_post("/api/v1/engine/scan", &oversized, 413, "payload_too_large"),
        failed_post(
            "/api/v1/policies",
            r#"{"rules": [{"id": "r", "condition": "kind ==", "action": "warn"}]}"#,
            422,
            "invalid",
        ),
        failed_post(
            "/api/v1/policies",
            r#"{"rules": [{"id": "r", "condition": "true", "action": "explode"}]}"#,
            422,
            "invalid",
        ),
        failed_post("/api/v1/policies", r#"{"rules": "all"}"#, 400, "bad_request"),
        failed_post("/api/v1/policies/toggle", r#"{"rule_id": "nope"}"#, 404, "not_found"),
        failed_post("/api/v1/policies/reorder", r#"{"order": ["nope"]}"#, 404, "not_found"),
        failed_post("/api/v1/policies/reorder", r#"{"order": []}"#, 422, "invalid"),
        failed_post("/api/v1/policies/dry-run", r#"{"condition": ""}"#, 422, "invalid"),
        failed_post(
            "/api/v1/policies/dry-run",
            r#"{"condition": "true", "limit": 0}"#,
            400,
            "bad_request",
        ),
        Failure {
            method: "DELETE",
            ..failure("/api/v1/policies/{id}", "/api/v1/policies/nope", 404, "not_found")
        },
    ];
    let mut errors = Vec::new();
    for c in &cases {
        let reply = send(&f.app, c.method, &c.uri, c.token, c.body.as_deref()).await;
        if reply.status.as_u16() != c.want || reply.json()["error"]["code"] != c.code {
            errors.push(format!(
                "{} {}: expected {} {}, got {} {}",
                c.method,
                c.uri,
                c.want,
                c.code,
                reply.status,
                reply.text().chars().take(300).collect::<String>()
            ));
            continue;
        }
        errors.extend(conformance(&spec, c.method, c.route, &reply));
    }

    // 409: a scan is running.
    let permit = f.engine.try_start_scan().expect("no scan is running");
    for route in ["/api/v1/engine/scan", "/api/v1/sync"] {
        let reply = send(&f.app, "POST", route, Some(TOKEN), None).await;
        if reply.status != StatusCode::CONFLICT || reply.json()["error"]["code"] != "conflict" {
            errors.push(format!(
                "POST {route} while scanning: expected 409 conflict, got {} {}",
                reply.status,
                reply.text()
            ));
        }
        errors.extend(conformance(&spec, "POST", route, &reply));
    }
    drop(permit);
    assert_none(&errors);
}

/// Before the graph is loaded every route that needs the engine answers 503.
#[tokio::test]
async fn routes_answer_503_until_the_engine_is_ready() {
    let spec = Spec::load();
    let state = AppState::new(TOKEN.into());
    let app = svc_api::router(state);
    let mut errors = Vec::new();
    for (method, route) in svc_api::ROUTES {
        let uri = example_uri(&spec, method, route, POD, 1_700_000_000_000_000);
        let body = match *route {
            "/api/v1/history/prune" => Some(r#"{"max_age_days": 30}"#),
            "/api/v1/plugins/toggle" => Some(r#"{"name": "mock"}"#),
            "/api/v1/plugins/install" | "/api/v1/registry/install" | "/api/v1/registry/remove" => {
                Some(r#"{"name": "mock"}"#)
            }
            "/api/v1/remediation/approve" | "/api/v1/remediation/reject" | "/api/v1/remediation/override" => {
                Some(r#"{"crn": "crn:svc:aws:us-east-1:ec2:volume:1:vol-1", "plan_hash": "x"}"#)
            }
            "/api/v1/remediation/move" => {
                Some(r#"{"crn": "crn:svc:aws:us-east-1:ec2:volume:1:vol-1", "plan_hash": "x", "to": "flagged"}"#)
            }
            "/api/v1/remediation/bulk" => Some(
                r#"{"action": "approve", "items": [{"crn": "crn:svc:aws:us-east-1:ec2:volume:1:vol-1", "plan_hash": "x"}]}"#,
            ),
            "/api/v1/remediation/quarantine" => {
                Some(r#"{"crn": "crn:svc:aws:us-east-1:ec2:volume:1:vol-1", "action": "STOP", "reason": "x"}"#)
            }
            "/api/v1/remediation/revert" => Some(r#"{"hash": "x"}"#),
            "/api/v1/isolation" if *method == "POST" => {
                Some(r#"{"crn": "crn:svc:aws:us-east-1:ec2:volume:1:vol-1", "reason_code": "x", "ttl_seconds": 0}"#)
            }
            "/api/v1/policies" => Some(r#"{"rules": [{"id": "r", "condition": "true", "action": "warn"}]}"#),
            "/api/v1/policies/toggle" => Some(r#"{"rule_id": "r"}"#),
            "/api/v1/policies/reorder" => Some(r#"{"order": ["r"]}"#),
            "/api/v1/policies/dry-run" => Some(r#"{"condition": "true"}"#),
            "/api/v1/cortex/assimilate" => Some(r#"{"question": "what is the top waste?"}"#),
            "/api/v1/mcp" => Some(r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#),
            "/api/v1/config" if *method == "PUT" => Some(r#"{"sau": {"audit_export_interval": "1h"}}"#),
            "/api/v1/tokens" if *method == "POST" => Some(r#"{"name": "early", "role": "viewer"}"#),
            "/api/v1/session" if *method == "POST" => Some(r#"{"token": "test-token"}"#),
            _ => None,
        };
        let reply = send(&app, method, &uri, Some(TOKEN), body).await;
        // Sessions and the token list read no engine; creating or revoking
        // a token records a ledger event, so it waits like the rest.
        let engine_free = matches!(*route, "/healthz" | "/metrics" | "/api/v1/session")
            || (*method == "GET" && *route == "/api/v1/tokens");
        let want = if engine_free { 200 } else { 503 };
        if reply.status.as_u16() != want {
            errors.push(format!(
                "{method} {route}: expected {want} before the engine is ready, got {}",
                reply.status
            ));
            continue;
        }
        if want == 503 && reply.json()["error"]["code"] != "not_ready" {
            errors.push(format!(
                "{method} {route}: 503 without code not_ready: {}",
                reply.text()
            ));
        }
        errors.extend(conformance(&spec, method, route, &reply));
    }
    assert_none(&errors);
}

// ---------------------------------------------------------------- limits and defaults

/// Where each paged or capped route shows the list its `limit` caps, for an
/// estate larger than every default.
fn limited_list(route: &str) -> Option<&'static str> {
    Some(match route {
        "/api/v1/graph/nodes" => "/nodes",
        "/api/v1/nodes" => "/rows",
        "/api/v1/graph/nodes/{crn}/edges" => "/incoming",
        "/api/v1/graph/blast-radius/{crn}" => "/affected",
        "/api/v1/graph/at" => "/nodes",
        "/api/v1/graph/diff" => "/added",
        "/api/v1/graph" => "/nodes",
        "/api/v1/graph/topology" => "/nodes",
        "/api/v1/history" => "/events",
        "/api/v1/history/resource" => "/events",
        "/api/v1/solver/results" => "/nodes",
        "/api/v1/traffic/edges" => "/edges",
        "/api/v1/anomalies" => "/nodes",
        "/api/v1/remediation/queue" => "/stages/pending",
        "/api/v1/graph/breakdown" => "/groups",
        "/api/v1/graph/nodes/{crn}/versions" => "/versions",
        "/api/v1/drift/report" => "/unmanaged",
        _ => return None,
    })
}

/// Routes whose default cannot be reached by any estate of the test: a
/// breakdown has a group per provider (or account, region, type), and a
/// node a version per scan that changed it. Their list must stay within
/// the default instead.
const DEFAULT_UNREACHED: [&str; 2] = ["/api/v1/graph/breakdown", "/api/v1/graph/nodes/{crn}/versions"];

/// The documented `limit` of every route: values outside `minimum..=maximum`
/// are 400, the bounds themselves are accepted, and without `limit` the
/// capped list holds exactly `default` entries.
#[tokio::test]
async fn documented_limits_and_defaults_hold() {
    let spec = Spec::load();
    let mut estate = Estate::sample();
    // Subnet contains 2100 more volumes, each attached to the instance: more
    // nodes, edges and dependents than any default.
    for i in 0..2100 {
        let v = aws("volume", &format!("vol-x{i:04}"));
        estate.node(&v, "in-use", 1.0);
        estate.edge(&subnet(), &v, Relation::Contains);
        estate.edge(&v, &instance(), Relation::AttachedTo);
    }
    // 150 volumes attached to nothing: more pending remediations than the queue lists.
    for i in 0..150 {
        estate.node(&aws("volume", &format!("vol-idle{i:03}")), "available", 4.0);
    }
    let f = Fixture::new(estate);
    // A state declaring one volume covers the account: the others are unmanaged.
    let tfstate = terraform_state(&f);
    f.state
        .set_config(std::sync::Arc::new(MemoryConfig(std::sync::Mutex::new(
            json!({"iac": {"terraform_states": [tfstate]}}),
        ))));
    // 150 of those volumes jump from $1 to $5: more node anomalies than the default limit.
    f.rescan(|e| {
        for i in 0..150 {
            e.node(&aws("volume", &format!("vol-x{i:04}")), "in-use", 5.0);
        }
    });
    let events: Vec<NewEvent> = (0..120)
        .map(|i| NewEvent {
            event_type: "APPROVAL".into(),
            crn: Some(volume()),
            actor: "operator".into(),
            message: format!("approval {i}"),
            payload: json!({"savings_usd": 1.0}),
        })
        .collect();
    f.engine.ledger().append(events).unwrap();
    // More traffic edges than the default listing: a flow from each volume.
    let records: Vec<svc_engine::analysis::traffic::FlowRecord> = (0..150)
        .map(|i| svc_engine::analysis::traffic::FlowRecord {
            source: aws("volume", &format!("vol-x{i:04}")),
            destination: instance(),
            bytes: 1000 + i,
            packets: 1,
            start_s: 1,
            end_s: 2,
        })
        .collect();
    let added = f
        .engine
        .ingest_traffic(&records, Default::default())
        .unwrap()
        .expect("no scan running");
    assert_eq!(added.edges_added, 150);
    let now = f.engine.now_us();

    let mut errors = Vec::new();
    let mut checked = 0;
    for (method, route) in svc_api::ROUTES {
        let Some(limit) = spec.query_parameter(method, route, "limit") else {
            continue;
        };
        checked += 1;
        let schema = spec.deref(&limit["schema"]);
        let (Some(min), Some(max), Some(default)) = (
            schema["minimum"].as_u64(),
            schema["maximum"].as_u64(),
            schema["default"].as_u64(),
        ) else {
            errors.push(format!(
                "{method} {route}: limit needs an integer minimum, maximum and default"
            ));
            continue;
        };
        let crn = if route.contains("blast-radius") {
            vpc()
        } else if route.starts_with("/api/v1/history") {
            volume()
        } else {
            instance()
        };
        // The diff counts from before the first scan, so everything is added.
        let base = example_uri(&spec, method, route, &crn, now).replacen(
            &format!("from={}", enc(&rfc3339(now))),
            "from=2001-01-01T00%3A00%3A00Z",
            1,
        );
        let sep = if base.contains('?') { '&' } else { '?' };
        for (value, want) in [(min, 200), (max, 200), (min - 1, 400), (max + 1, 400)] {
            let uri = format!("{base}{sep}limit={value}");
            let reply = send(&f.app, method, &uri, Some(TOKEN), None).await;
            if reply.status.as_u16() != want {
                errors.push(format!(
                    "{method} {uri}: documented limit {min}..={max}, but the answer is {}",
                    reply.status
                ));
            }
            errors.extend(conformance(&spec, method, route, &reply));
        }
        let Some(list) = limited_list(route) else {
            errors.push(format!(
                "{method} {route}: has a limit but no list to check its default against"
            ));
            continue;
        };
        let reply = send(&f.app, method, &base, Some(TOKEN), None).await;
        let len = reply.json().pointer(list).and_then(Value::as_array).map(Vec::len);
        let within = DEFAULT_UNREACHED.contains(route) && len.is_some_and(|n| n > 0 && n <= default as usize);
        if len != Some(default as usize) && !within {
            errors.push(format!(
                "{method} {base}: documented default limit {default}, but {list} holds {len:?} entries"
            ));
        }
    }
    assert!(checked >= 10, "only {checked} routes document a limit");
    assert_none(&errors);
}

// ---------------------------------------------------------------- the event stream

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The next text frame as JSON; control frames are skipped.
async fn next_text(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(PATIENCE, ws.next())
            .await
            .expect("no frame in time");
        if let Message::Text(t) = msg.expect("stream ended").expect("socket error") {
            return serde_json::from_str(t.as_str()).expect("a frame is JSON");
        }
    }
}

#[tokio::test]
async fn event_stream_frames_match_their_schemas() {
    let spec = Spec::load();
    let f = Fixture::new(Estate::sample());
    f.rescan(|e| {
        e.node(&aws("volume", "vol-2"), "available", 8.0);
    });
    let head = f.engine.ledger().last_seq();
    assert!(head >= 2);

    let stream = spec.operation("GET", "/events");
    assert!(
        spec.response("GET", "/events", 101).is_some(),
        "GET /events documents no 101"
    );
    let server_schema = &stream["x-websocket"]["server-messages"];
    let client_schema = &stream["x-websocket"]["client-messages"];
    let error_schema = &stream["x-websocket"]["error-messages"];
    let payloads = stream["x-websocket"]["payloads"]
        .as_object()
        .expect("x-websocket payloads");
    let mut payloads_checked = 0;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(svc_api::serve(listener, f.state.clone(), std::future::pending()));
    let mut req = format!("ws://{addr}/events").into_client_request().unwrap();
    req.headers_mut()
        .insert(header::AUTHORIZATION, format!("Bearer {TOKEN}").parse().unwrap());
    let (mut ws, handshake) = tokio_tungstenite::connect_async(req).await.unwrap();
    assert_eq!(handshake.status().as_u16(), 101);

    let since = json!({"since": 0});
    let mut errors = Vec::new();
    spec.check(client_schema, &since, "client message", &mut errors);
    ws.send(Message::Text(since.to_string().into())).await.unwrap();

    let mut seen = 0;
    while seen < head {
        let frame = next_text(&mut ws).await;
        seen = frame["seq"].as_u64().unwrap_or(u64::MAX);
        let at = format!("frame seq {seen}");
        spec.check(server_schema, &frame, &at, &mut errors);
        if let Some(payload) = frame["event_type"].as_str().and_then(|t| payloads.get(t)) {
            spec.check(payload, &frame["payload"], &format!("{at} payload"), &mut errors);
            payloads_checked += 1;
        }
    }
    assert!(payloads_checked >= 2, "no SCAN_COMPLETED payload was checked");
    ws.send(Message::Text("hello".into())).await.unwrap();
    let reply = next_text(&mut ws).await;
    spec.check(error_schema, &reply, "error frame", &mut errors);
    assert_eq!(reply["error"]["code"], "bad_request");
    assert_none(&errors);
}

/// Time travel before the graph history kept (`graph.history_retention`)
/// answers the documented 410 `before_retention`, naming the earliest time.
#[tokio::test]
async fn times_before_the_history_kept_answer_their_documented_error() {
    let spec = Spec::load();
    let f = Fixture::new(Estate::sample());
    let before = f.engine.now_us();
    // A window of a microsecond: each commit a checkpoint, all but the last dropped.
    f.engine.set_history_retention(Some(Duration::from_micros(1)));
    f.rescan(|e| {
        e.node(&instance(), "stopped", 70.0);
    });
    f.rescan(|e| {
        e.node(&aws("volume", "vol-9"), "available", 8.0);
    });
    let earliest = f.engine.store().history_start().unwrap();
    assert!(earliest > before);
    let (t_before, t_now) = (enc(&rfc3339(before)), enc(&rfc3339(f.engine.now_us())));
    let gone = |route: &'static str, uri: String| Case {
        want: 410,
        ..get(route, uri, &[])
    };
    let cases = [
        gone("/api/v1/graph/at", format!("/api/v1/graph/at?ts={t_before}")),
        gone(
            "/api/v1/graph/diff",
            format!("/api/v1/graph/diff?from={t_before}&to={t_now}"),
        ),
        get(
            "/api/v1/graph/at",
            format!("/api/v1/graph/at?ts={}", enc(&rfc3339(earliest))),
            &["/nodes"],
        ),
    ];
    let errors = run_cases(&spec, &f, &cases, &mut BTreeSet::new()).await;
    assert_none(&errors);
    let reply = send(&f.app, "GET", &cases[0].uri, Some(TOKEN), None).await.json();
    assert_eq!(reply["error"]["code"], "before_retention", "{reply}");
    assert_eq!(reply["error"]["details"]["earliest"], rfc3339(earliest), "{reply}");
}
