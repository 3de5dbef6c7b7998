//! Scoped tokens, roles and dashboard sessions through a real server on an
//! ephemeral port: every role on every route, token create/list/revoke,
//! sign-in and sign-out, the CSRF check, and the ledger's actor.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod graph_fixture;

use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use svc_api::AppState;
use svc_api::auth::roles::{Access, ROUTE_ACCESS};
use svc_api::auth::tokens::TokenStore;
use svc_api::auth::{Role, roles};
use svc_engine::Engine;
use svc_engine::clock::SystemClock;
use tokio::net::TcpListener;

const ADMIN: &str = "the-admin-token";
const CRN: &str = "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0abc";

struct Server {
    dir: tempfile::TempDir,
    base: String,
    http: reqwest::Client,
    /// The admin token.
    admin: &'static str,
    _engine: Arc<Engine>,
    _fixture: Option<graph_fixture::Fixture>,
}

/// Serves `state` on an ephemeral port; its base URL.
async fn serve(state: AppState) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let app = svc_api::router(state);
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// An empty engine, with the token store in `tokens.json` of its directory.
async fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), "s1", Arc::new(SystemClock::default())).unwrap());
    let tokens = TokenStore::open(&dir.path().join("tokens.json"), ADMIN).unwrap();
    let state = AppState::with_tokens(tokens);
    state.set_engine(engine.clone());
    Server {
        dir,
        base: serve(state).await,
        http: reqwest::Client::new(),
        admin: ADMIN,
        _engine: engine,
        _fixture: None,
    }
}

/// An engine with the sample estate scanned; tokens kept in memory.
async fn estate_server() -> Server {
    let f = graph_fixture::Fixture::new(graph_fixture::Estate::sample());
    Server {
        dir: tempfile::tempdir().unwrap(),
        base: serve(f.state.clone()).await,
        http: reqwest::Client::new(),
        admin: graph_fixture::TOKEN,
        _engine: f.engine.clone(),
        _fixture: Some(f),
    }
}

/// How a request authenticates.
#[derive(Clone, Copy)]
enum Cred<'a> {
    None,
    Bearer(&'a str),
    /// Session cookie value, and the CSRF header to send if any.
    Cookie(&'a str, Option<&'a str>),
}

struct Reply {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

impl Server {
    async fn send(&self, method: &str, path: &str, cred: Cred<'_>, body: Option<Value>) -> Reply {
        let mut req = self.http.request(
            Method::from_bytes(method.as_bytes()).unwrap(),
            format!("{}{path}", self.base),
        );
        match cred {
            Cred::None => {}
            Cred::Bearer(t) => req = req.bearer_auth(t),
            Cred::Cookie(id, csrf) => {
                req = req.header("cookie", format!("svc_session={id}"));
                if let Some(c) = csrf {
                    req = req.header("x-csrf-token", c);
                }
            }
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply { status, headers, body }
    }

    /// Creates token `name` with `role` as the admin; its plaintext.
    async fn token(&self, name: &str, role: &str) -> String {
        let r = self
            .send(
                "POST",
                "/api/v1/tokens",
                Cred::Bearer(self.admin),
                Some(json!({"name": name, "role": role})),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        assert_eq!(r.body["name"], name);
        assert_eq!(r.body["role"], role);
        r.body["token"].as_str().unwrap().to_owned()
    }

    /// Signs in with `token`: the session cookie value and its CSRF token.
    async fn sign_in(&self, token: &str) -> (String, String) {
        let r = self
            .send("POST", "/api/v1/session", Cred::None, Some(json!({"token": token})))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let cookie = r.headers["set-cookie"].to_str().unwrap().to_owned();
        let id = cookie
            .strip_prefix("svc_session=")
            .and_then(|c| c.split(';').next())
            .unwrap()
            .to_owned();
        (id, r.body["csrf"].as_str().unwrap().to_owned())
    }

    /// The history events of `ty`, newest first.
    async fn events(&self, ty: &str) -> Vec<Value> {
        let r = self
            .send(
                "GET",
                &format!("/api/v1/history?type={ty}"),
                Cred::Bearer(self.admin),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body["events"].as_array().unwrap().clone()
    }
}

/// A request path for route `path`, its parameters filled in.
fn uri(path: &str) -> String {
    let crn = CRN.replace('/', "%2F");
    path.replace("{crn}", &crn)
        .replace("{name}", "nobody")
        .replace("{id}", "no-such-rule")
}

fn assert_forbidden(r: &Reply, needed: Role, role: Role, what: &str) {
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{what}: {}", r.body);
    assert_eq!(r.body["error"]["code"], "forbidden", "{what}");
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("needs the {needed} role")) && message.contains(&format!("has the {role} role")),
        "{what}: {message}"
    );
}

#[tokio::test]
async fn every_role_on_every_route() {
    let s = server().await;
    let viewer = s.token("view-1", "viewer").await;
    let operator = s.token("ops-1", "operator").await;
    let holders = [
        (Role::Viewer, viewer.as_str()),
        (Role::Operator, operator.as_str()),
        (Role::Admin, ADMIN),
    ];
    // The table covers every route (checked in the crate too): what it lists is what is tried.
    for (m, p) in svc_api::ROUTES {
        if !svc_api::openapi::OPEN_ROUTES.contains(p) {
            assert!(ROUTE_ACCESS.iter().any(|(tm, tp, _)| tm == m && tp == p), "{m} {p}");
        }
    }
    let mut tried = 0;
    for &(method, path, access) in ROUTE_ACCESS {
        let body = matches!(method, "POST" | "PUT").then(|| json!({}));
        let target = uri(path);
        // Without credentials: 401, but for sign-in.
        let r = s.send(method, &target, Cred::None, body.clone()).await;
        match access {
            Access::Open => assert!(!matches!(r.status.as_u16(), 401 | 403), "{method} {path}: {}", r.status),
            Access::Least(_) => assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{method} {path}"),
        }
        for (role, token) in holders {
            let r = s.send(method, &target, Cred::Bearer(token), body.clone()).await;
            let what = format!("{method} {path} as {role}");
            match access {
                Access::Least(needed) if role < needed => assert_forbidden(&r, needed, role, &what),
                _ => assert!(
                    !matches!(r.status.as_u16(), 401 | 403),
                    "{what}: {} {}",
                    r.status,
                    r.body
                ),
            }
            tried += 1;
        }
    }
    assert_eq!(tried, ROUTE_ACCESS.len() * 3);
    // The tokens are still good: nothing above revoked one.
    for (_, token) in holders {
        let r = s.send("GET", "/api/v1/session", Cred::Bearer(token), None).await;
        assert_eq!(r.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn tokens_are_created_listed_and_revoked_by_an_admin_only() {
    let s = server().await;
    let secret = s.token("ci-bot", "operator").await;
    assert_eq!(secret.len(), 64);
    // Listed without hash or plaintext.
    let r = s.send("GET", "/api/v1/tokens", Cred::Bearer(ADMIN), None).await;
    assert_eq!(r.status, StatusCode::OK);
    let names: Vec<&str> = r.body["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "ci-bot"]);
    let text = r.body.to_string();
    assert!(!text.contains(&secret) && !text.contains("sha256"), "{text}");
    for t in r.body["tokens"].as_array().unwrap() {
        assert_eq!(t.as_object().unwrap().len(), 3, "{t}");
    }
    // Stored hashed, mode 0600.
    let stored = std::fs::read_to_string(s.dir.path().join("tokens.json")).unwrap();
    assert!(!stored.contains(&secret) && !stored.contains(ADMIN));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(s.dir.path().join("tokens.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // Bad input and conflicts.
    for (body, status) in [
        (json!({"name": "ci-bot", "role": "viewer"}), 409),
        (json!({"name": "admin", "role": "admin"}), 409),
        (json!({"name": "no spaces", "role": "viewer"}), 422),
        (json!({"name": "", "role": "viewer"}), 422),
        (json!({"name": "x".repeat(65), "role": "viewer"}), 422),
        (json!({"name": "ok", "role": "root"}), 422),
        (json!({"name": "ok"}), 400),
    ] {
        let r = s
            .send("POST", "/api/v1/tokens", Cred::Bearer(ADMIN), Some(body.clone()))
            .await;
        assert_eq!(r.status.as_u16(), status, "{body}: {}", r.body);
    }
    // The new operator token works, and cannot manage tokens.
    let r = s.send("GET", "/api/v1/tokens", Cred::Bearer(&secret), None).await;
    assert_forbidden(&r, Role::Admin, Role::Operator, "list as operator");
    let r = s.send("GET", "/api/v1/session", Cred::Bearer(&secret), None).await;
    assert_eq!(
        r.body,
        json!({"name": "ci-bot", "role": "operator", "csrf": null, "daemon_version": env!("CARGO_PKG_VERSION")})
    );
    // The admin token cannot be revoked; an unknown one is 404.
    let r = s
        .send("DELETE", "/api/v1/tokens/admin", Cred::Bearer(ADMIN), None)
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    let r = s
        .send("DELETE", "/api/v1/tokens/ghost", Cred::Bearer(ADMIN), None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Revoked: refused at once, with its sessions.
    let (session, csrf) = s.sign_in(&secret).await;
    let r = s
        .send("GET", "/api/v1/session", Cred::Cookie(&session, None), None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = s
        .send("DELETE", "/api/v1/tokens/ci-bot", Cred::Bearer(ADMIN), None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["name"], "ci-bot");
    let r = s.send("GET", "/api/v1/graph/stats", Cred::Bearer(&secret), None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = s
        .send("GET", "/api/v1/session", Cred::Cookie(&session, Some(&csrf)), None)
        .await;
    assert_eq!(
        r.status,
        StatusCode::UNAUTHORIZED,
        "the revoked token's session is over"
    );
    let r = s
        .send("POST", "/api/v1/session", Cred::None, Some(json!({"token": secret})))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // Both are ledger events by the admin, without the token.
    let created = s.events("TOKEN_CREATED").await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["actor"], "admin");
    assert_eq!(created[0]["meta"], json!({"name": "ci-bot", "role": "operator"}));
    let revoked = s.events("TOKEN_REVOKED").await;
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0]["actor"], "admin");
    assert_eq!(revoked[0]["meta"]["sessions_ended"], 1);
    let all = s
        .send("GET", "/api/v1/history?limit=1000", Cred::Bearer(ADMIN), None)
        .await;
    assert!(!all.body.to_string().contains(&secret));
}

#[tokio::test]
async fn sessions_sign_in_need_csrf_for_writes_and_sign_out() {
    let s = server().await;
    let operator = s.token("ops-2", "operator").await;
    let viewer = s.token("view-2", "viewer").await;
    // Sign-in: an HttpOnly, SameSite=Strict cookie on /, Secure only behind https.
    let r = s
        .send("POST", "/api/v1/session", Cred::None, Some(json!({"token": operator})))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let cookie = r.headers["set-cookie"].to_str().unwrap();
    for part in ["svc_session=", "; HttpOnly", "; SameSite=Strict", "; Path=/"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "{cookie}");
    assert_eq!(r.body["name"], "ops-2");
    assert_eq!(r.body["role"], "operator");
    let secure = s
        .http
        .post(format!("{}/api/v1/session", s.base))
        .header("x-forwarded-proto", "https")
        .json(&json!({"token": operator}))
        .send()
        .await
        .unwrap();
    assert!(secure.headers()["set-cookie"].to_str().unwrap().ends_with("; Secure"));
    let r = s
        .send("POST", "/api/v1/session", Cred::None, Some(json!({"token": "nope"})))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.headers.get("set-cookie").is_none());

    let (id, csrf) = s.sign_in(&operator).await;
    let r = s.send("GET", "/api/v1/session", Cred::Cookie(&id, None), None).await;
    assert_eq!(
        r.body,
        json!({"name": "ops-2", "role": "operator", "csrf": csrf, "daemon_version": env!("CARGO_PKG_VERSION")})
    );
    // Reads need no CSRF token; writes do.
    let r = s.send("GET", "/api/v1/policies", Cred::Cookie(&id, None), None).await;
    assert_eq!(r.status, StatusCode::OK);
    let rule = json!({"rules": [{"id": "r1", "condition": "true", "action": "warn"}]});
    for csrf_sent in [None, Some("wrong"), Some("")] {
        let r = s
            .send(
                "POST",
                "/api/v1/policies",
                Cred::Cookie(&id, csrf_sent),
                Some(rule.clone()),
            )
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{csrf_sent:?}");
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("missing or wrong CSRF token"),
            "{}",
            r.body
        );
    }
    assert!(s.events("POLICY_CHANGE").await.is_empty(), "nothing was written");
    let r = s
        .send(
            "POST",
            "/api/v1/policies",
            Cred::Cookie(&id, Some(&csrf)),
            Some(rule.clone()),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(s.events("POLICY_CHANGE").await[0]["actor"], "ops-2");
    // A viewer's session with its CSRF token is still a viewer.
    let (vid, vcsrf) = s.sign_in(&viewer).await;
    let r = s
        .send(
            "POST",
            "/api/v1/policies/toggle",
            Cred::Cookie(&vid, Some(&vcsrf)),
            Some(json!({"rule_id": "r1"})),
        )
        .await;
    assert_forbidden(&r, Role::Operator, Role::Viewer, "viewer session toggles");
    // Another session's CSRF token does not do.
    let r = s
        .send(
            "POST",
            "/api/v1/policies/toggle",
            Cred::Cookie(&id, Some(&vcsrf)),
            Some(json!({"rule_id": "r1"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // Sign-out needs the CSRF token too, then ends the session and clears the cookie.
    let r = s.send("DELETE", "/api/v1/session", Cred::Cookie(&id, None), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = s
        .send("DELETE", "/api/v1/session", Cred::Cookie(&id, Some(&csrf)), None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["ended"], true);
    assert!(r.headers["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    let r = s.send("GET", "/api/v1/session", Cred::Cookie(&id, None), None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // The viewer's session goes on; a bearer caller has no session to end.
    let r = s.send("GET", "/api/v1/session", Cred::Cookie(&vid, None), None).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = s.send("DELETE", "/api/v1/session", Cred::Bearer(&viewer), None).await;
    assert_eq!(r.body["ended"], false);
    // A bearer token needs no CSRF token.
    let r = s
        .send(
            "POST",
            "/api/v1/policies/toggle",
            Cred::Bearer(&operator),
            Some(json!({"rule_id": "r1"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // The old token cookie is no credential.
    let r = s
        .http
        .get(format!("{}/api/v1/graph/stats", s.base))
        .header("cookie", format!("svc_token={ADMIN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_ledger_actor_is_the_token_name() {
    let s = estate_server().await;
    let vol = graph_fixture::volume();
    let viewer = s.token("view-3", "viewer").await;
    let operator = s.token("ops-3", "operator").await;
    let rule = json!({"rules": [{"id": "r1", "condition": "true", "action": "warn"}]});
    let r = s
        .send("POST", "/api/v1/policies", Cred::Bearer(&viewer), Some(rule.clone()))
        .await;
    assert_forbidden(&r, Role::Operator, Role::Viewer, "viewer adds a policy");
    let r = s
        .send("POST", "/api/v1/policies", Cred::Bearer(&operator), Some(rule))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let events = s.events("POLICY_CHANGE").await;
    assert_eq!(events.len(), 1, "the viewer's request recorded nothing");
    assert_eq!(events[0]["actor"], "ops-3");
    assert_eq!(events[0]["meta"]["author"], "ops-3");
    // A body's actor is a note, not the actor.
    let r = s
        .send(
            "POST",
            "/api/v1/remediation/approve",
            Cred::Bearer(&viewer),
            Some(json!({"crn": CRN, "plan_hash": "x", "actor": "alice"})),
        )
        .await;
    assert_forbidden(&r, Role::Operator, Role::Viewer, "viewer approves");
    let r = s
        .send(
            "POST",
            "/api/v1/isolation",
            Cred::Bearer(&operator),
            Some(json!({"crn": vol, "reason_code": "kept", "ttl_seconds": 0, "actor": "alice"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let events = s.events("ISOLATION").await;
    assert_eq!(events[0]["actor"], "ops-3", "{}", events[0]);
    let r = s
        .send(
            "DELETE",
            &format!("/api/v1/isolation/{vol}"),
            Cred::Bearer(&operator),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(s.events("ISOLATION").await[0]["actor"], "ops-3");
    // Pruning is an admin's, recorded under the admin's name.
    let r = s
        .send(
            "POST",
            "/api/v1/history/prune",
            Cred::Bearer(&operator),
            Some(json!({"max_age_days": 30})),
        )
        .await;
    assert_forbidden(&r, Role::Admin, Role::Operator, "operator prunes");
    let r = s
        .send(
            "POST",
            "/api/v1/history/prune",
            Cred::Bearer(s.admin),
            Some(json!({"max_age_days": 30})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(s.events("HISTORY_PRUNED").await[0]["actor"], "admin");
    assert_eq!(
        roles::access("POST", "/api/v1/history/prune"),
        Access::Least(Role::Admin)
    );
}

/// A cluster standby answers reads and refuses writes with 503 naming the
/// leader; signing in still works; once it leads, writes go through.
#[tokio::test]
async fn a_standby_refuses_writes_naming_the_leader() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), "s1", Arc::new(SystemClock::default())).unwrap());
    let state = AppState::with_tokens(TokenStore::open(&dir.path().join("tokens.json"), ADMIN).unwrap());
    state.set_engine(engine.clone());
    state.set_standby(Some(svc_api::state::Standby {
        node_id: "n2".into(),
        leader: None,
    }));
    let base = serve(state.clone()).await;
    let http = reqwest::Client::new();
    // Creating a token is a write recorded in the ledger.
    let write = || {
        http.post(format!("{base}/api/v1/tokens"))
            .bearer_auth(ADMIN)
            .json(&json!({"name": "ci", "role": "viewer"}))
    };

    let r = write().send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_ready");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no leader is elected yet"),
        "{body}"
    );

    state.set_standby(Some(svc_api::state::Standby {
        node_id: "n2".into(),
        leader: Some(("n1".into(), "https://n1.example:8443".into())),
    }));
    let r = write().send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = r.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"n1\"") && message.contains("https://n1.example:8443"),
        "{body}"
    );
    assert_eq!(
        body["error"]["details"]["leader"],
        json!({"id": "n1", "url": "https://n1.example:8443"})
    );
    // Nothing was recorded.
    assert_eq!(engine.ledger().last_seq(), 0);

    // Reads and signing in are answered.
    let r = http
        .get(format!("{base}/api/v1/graph/stats"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = http
        .post(format!("{base}/api/v1/session"))
        .json(&json!({"token": ADMIN}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "sign-in on a standby: {}", r.status());
    // An unauthenticated write learns nothing of the cluster.
    let r = http
        .post(format!("{base}/api/v1/tokens"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // Leading, the same write goes through.
    state.set_standby(None);
    let r = write().send().await.unwrap();
    assert!(r.status().is_success(), "{}: {}", r.status(), r.text().await.unwrap());
    assert!(engine.ledger().last_seq() > 0);
}
