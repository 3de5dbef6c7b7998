//! A small hand-built estate behind an in-memory source, an engine on a
//! temporary directory, and helpers to call the real router.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use svc_api::AppState;
use svc_engine::clock::SystemClock;
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::scan::{
    QuarantineOutcome, RemediateOutcome, RemediateRequest, ScanContext, ScanSink, Source, SourceError,
};
use svc_engine::{Crn, Engine, Relation};
use tower::ServiceExt;

pub const TOKEN: &str = "test-token";

pub fn aws(kind: &str, id: &str) -> String {
    let service = svc_engine::crn::service_for("aws", kind);
    format!("crn:svc:aws:us-east-1:{service}:{kind}:123456789012:{id}")
}

pub fn vpc() -> String {
    aws("vpc", "vpc-1")
}
pub fn subnet() -> String {
    aws("subnet", "subnet-1")
}
pub fn instance() -> String {
    aws("instance", "i-1")
}
pub fn volume() -> String {
    aws("volume", "vol-1")
}
pub fn sg() -> String {
    aws("security-group", "sg-1")
}
pub fn db() -> String {
    aws("db", "db-1")
}
pub fn function() -> String {
    aws("function", "fn-1")
}
/// A physical id with a slash.
pub const POD: &str = "crn:svc:kubernetes:us-east-1:core:pod:prod-cluster:default/web-1";
/// A physical id that is an ARN (colons and a slash).
pub const ROLE: &str = "crn:svc:aws:global:iam:role:123456789012:arn:aws:iam::123456789012:role/app";

#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub crn: String,
    pub state: String,
    pub cost: f32,
}

/// What the source reports on its next scan; tests change it between scans.
#[derive(Clone, Debug, Default)]
pub struct Estate {
    pub nodes: Vec<NodeSpec>,
    pub edges: Vec<(String, String, Relation)>,
}

impl Estate {
    /// vpc contains subnet contains instance; the volume is attached to the
    /// instance; the instance is secured by the security group; a pod runs
    /// on the instance; a function uses a database; a role stands alone.
    pub fn sample() -> Estate {
        let mut e = Estate::default();
        for (crn, state, cost) in [
            (vpc(), "available", 0.0),
            (subnet(), "available", 0.0),
            (instance(), "running", 70.0),
            (volume(), "in-use", 40.1),
            (sg(), "active", 0.0),
            (db(), "available", 300.0),
            (function(), "active", 3.0),
            (POD.to_owned(), "Running", 0.5),
            (ROLE.to_owned(), "active", 0.0),
        ] {
            e.node(&crn, state, cost);
        }
        e.edge(&vpc(), &subnet(), Relation::Contains)
            .edge(&subnet(), &instance(), Relation::Contains)
            .edge(&volume(), &instance(), Relation::AttachedTo)
            .edge(&instance(), &sg(), Relation::SecuredBy)
            .edge(POD, &instance(), Relation::Runs)
            .edge(&function(), &db(), Relation::Uses);
        e
    }

    pub fn node(&mut self, crn: &str, state: &str, cost: f32) -> &mut Self {
        self.nodes.retain(|n| n.crn != crn);
        self.nodes.push(NodeSpec {
            crn: crn.to_owned(),
            state: state.to_owned(),
            cost,
        });
        self
    }

    pub fn remove(&mut self, crn: &str) -> &mut Self {
        self.nodes.retain(|n| n.crn != crn);
        self.edges.retain(|(a, b, _)| a != crn && b != crn);
        self
    }

    pub fn edge(&mut self, a: &str, b: &str, rel: Relation) -> &mut Self {
        self.edges.push((a.to_owned(), b.to_owned(), rel));
        self
    }
}

/// An in-memory source reporting the shared estate.
pub struct TestSource {
    pub estate: Arc<Mutex<Estate>>,
}

impl Source for TestSource {
    fn name(&self) -> &str {
        "test"
    }
    fn providers(&self) -> Vec<String> {
        vec!["aws".into(), "kubernetes".into()]
    }
    fn scan(&mut self, ctx: &ScanContext<'_>, sink: &mut dyn ScanSink) -> Result<(), SourceError> {
        let estate = self
            .estate
            .lock()
            .map_err(|_| SourceError::Failed("estate lock poisoned".into()))?
            .clone();
        let i = ctx.interner;
        let mut nodes = NodeBatch::default();
        let (size, encrypted, iops, attachments, name) = (
            i.intern("size_gib"),
            i.intern("encrypted"),
            i.intern("iops"),
            i.intern("attachments"),
            i.intern("name"),
        );
        let env = (i.intern("env"), i.intern("prod"));
        for n in &estate.nodes {
            let c = Crn::parse(&n.crn).map_err(|e| SourceError::Failed(e.to_string()))?;
            let key = NodeKeyRef::intern(i, &c);
            let input = NodeInput {
                key,
                ty: i.intern(&c.node_type()),
                state: i.intern(&n.state),
                cost_usd_mo: n.cost,
                creation_ts: 1_700_000_000,
            };
            nodes.push(input, &[env], |w| {
                w.int(size, 100);
                w.bool(encrypted, true);
                w.float(iops, 3000.5);
                w.json(attachments, r#"[{"device":"/dev/xvda"}]"#);
                w.str(name, &c.id);
            });
        }
        sink.nodes(nodes);
        let mut edges = EdgeBatch::default();
        let relation = i.intern("relation");
        for (a, b, rel) in &estate.edges {
            let (a, b) = (
                Crn::parse(a).map_err(|e| SourceError::Failed(e.to_string()))?,
                Crn::parse(b).map_err(|e| SourceError::Failed(e.to_string()))?,
            );
            edges.push(NodeKeyRef::intern(i, &a), NodeKeyRef::intern(i, &b), *rel, |w| {
                w.str(relation, rel.name())
            });
        }
        sink.edges(edges);
        Ok(())
    }

    /// Every step succeeds (the estate itself does not change).
    fn remediate(&mut self, r: &RemediateRequest<'_>) -> Option<Result<RemediateOutcome, SourceError>> {
        Some(Ok(RemediateOutcome {
            success: true,
            status: if r.dry_run { "validated".into() } else { "done".into() },
            error: String::new(),
            snapshot: [("previous_state".to_owned(), "as scanned".to_owned())].into(),
        }))
    }

    fn apply_quarantine(
        &mut self,
        _crn: &str,
        action: &str,
        _reason: &str,
    ) -> Option<Result<QuarantineOutcome, SourceError>> {
        Some(Ok(QuarantineOutcome {
            success: true,
            message: format!("{action} applied"),
        }))
    }
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub engine: Arc<Engine>,
    pub estate: Arc<Mutex<Estate>>,
    pub app: Router,
    pub state: AppState,
}

impl Fixture {
    /// An engine with `estate`, scanned once.
    pub fn new(estate: Estate) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(Engine::open(dir.path(), "test-session", Arc::new(SystemClock::default())).unwrap());
        let estate = Arc::new(Mutex::new(estate));
        engine.set_sources(vec![Box::new(TestSource { estate: estate.clone() })]);
        engine.try_start_scan().unwrap().run().unwrap();
        let state = AppState::new(TOKEN.into());
        state.set_engine(engine.clone());
        let app = svc_api::router(state.clone());
        Fixture {
            dir,
            engine,
            estate,
            app,
            state,
        }
    }

    /// Changes the estate and scans again.
    pub fn rescan(&self, change: impl FnOnce(&mut Estate)) {
        change(&mut self.estate.lock().unwrap());
        self.engine.try_start_scan().unwrap().run().unwrap();
    }

    pub async fn call(
        &self,
        method: &str,
        uri: &str,
        token: Option<&str>,
        body: Option<&str>,
    ) -> (StatusCode, Vec<u8>) {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req
            .body(body.map(|b| Body::from(b.to_owned())).unwrap_or_else(Body::empty))
            .unwrap();
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
        (status, bytes)
    }

    /// A GET with the token and, when given, an `Accept` header: the status,
    /// the response headers and the body.
    pub async fn get_accepting(&self, uri: &str, accept: Option<&str>) -> (StatusCode, HeaderMap, Vec<u8>) {
        let mut req = Request::builder()
            .method("GET")
            .uri(uri)
            .header("authorization", format!("Bearer {TOKEN}"));
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        let resp = self
            .app
            .clone()
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let (status, headers) = (resp.status(), resp.headers().clone());
        let bytes = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
        (status, headers, bytes)
    }

    pub async fn get(&self, uri: &str) -> (StatusCode, Value) {
        let (status, bytes) = self.call("GET", uri, Some(TOKEN), None).await;
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    pub async fn get_ok(&self, uri: &str) -> Value {
        let (status, body) = self.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        body
    }

    pub async fn post(&self, uri: &str, body: Option<&str>) -> (StatusCode, Value) {
        let (status, bytes) = self.call("POST", uri, Some(TOKEN), body).await;
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

/// Asserts the DESIGN error body and returns its message.
pub fn assert_error(status: StatusCode, body: &Value, want: StatusCode, code: &str) -> String {
    assert_eq!(status, want, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["details"].is_object(), "{body}");
    body["error"]["message"].as_str().unwrap().to_owned()
}

/// Percent-encodes a CRN for a path segment (`/` and `:` included).
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn strs(v: &Value, key: &str) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x[key].as_str().unwrap().to_owned())
        .collect()
}
