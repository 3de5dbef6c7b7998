//! `svc token create|list|revoke` against a running daemon: tokens with
//! roles, stored hashed in the data directory, refused beyond their role
//! and at once when revoked; the token file's admin token stays. The daemon
//! prints the dashboard link with the token in the fragment.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::Duration;

use common::{Daemon, run_cli};
use serde_json::{Value, json};

#[tokio::test]
async fn tokens_are_made_listed_and_revoked_with_the_cli() {
    let dir = common::data_dir();
    let d = Daemon::start(dir.path(), 50).await;
    let api = d.api();
    let base = d.base();
    let data = dir.path().to_str().expect("utf-8 path").to_owned();
    let env = [("SVC_URL", base.as_str()), ("SVC_DATA_DIR", data.as_str())];
    let cli = |args: &'static [&'static str]| async move { run_cli(args, &env).await };

    // The link to the dashboard carries the token in its fragment.
    assert!(
        d.log
            .wait_for(
                &format!("http://{}/#token={}", d.addr, d.token),
                Duration::from_secs(30)
            )
            .await,
        "no dashboard link in the log:\n{}",
        d.log.text()
    );

    // create: the token once on stdout, a hint on stderr.
    let (code, out, err) = cli(&["token", "create", "--name", "viewer-1", "--role", "viewer"]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let viewer = out.trim().to_owned();
    assert_eq!(viewer.len(), 64, "{out}");
    assert!(err.contains("shown this once"), "{err}");
    let (code, out, err) = cli(&["token", "create", "--name", "ops-1", "--role", "operator", "--json"]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let created: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&created["name"], &created["role"]),
        (&json!("ops-1"), &json!("operator"))
    );
    let operator = created["token"].as_str().unwrap().to_owned();
    // A taken name and a bad role are refused.
    let (code, _, err) = cli(&["token", "create", "--name", "ops-1", "--role", "viewer"]).await;
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("exists") && err.contains("409"), "{err}");
    let (code, _, err) = cli(&["token", "create", "--name", "x", "--role", "root"]).await;
    assert_ne!(code, Some(0), "{err}");

    // Stored as hashes only.
    let stored = std::fs::read_to_string(dir.path().join("tokens.json")).unwrap();
    for secret in [&viewer, &operator, &d.token] {
        assert!(!stored.contains(secret.as_str()), "a plaintext token is stored");
    }

    // list: a table, and JSON.
    let (code, out, err) = cli(&["token", "list"]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("ROLE"), "{out}");
    for (name, role) in [("admin", "admin"), ("ops-1", "operator"), ("viewer-1", "viewer")] {
        assert!(
            lines.iter().any(|l| l.starts_with(name) && l.contains(role)),
            "{name} {role}:\n{out}"
        );
    }
    let (_, out, _) = cli(&["token", "list", "--json"]).await;
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["count"], 3);
    assert!(!out.contains(&viewer) && !out.contains("sha256"), "{out}");

    // The roles hold against the real daemon.
    let as_viewer = api.with_token(Some(&viewer));
    as_viewer.get_ok("/api/v1/graph/stats").await;
    as_viewer
        .post_json("/api/v1/policies/toggle", &json!({"rule_id": "nope"}))
        .await
        .expect_error(403, "forbidden");
    let as_operator = api.with_token(Some(&operator));
    as_operator
        .post_json(
            "/api/v1/policies",
            &json!({"rules": [{"id": "r1", "condition": "false", "action": "warn"}]}),
        )
        .await
        .expect(200);
    as_operator.get("/api/v1/tokens").await.expect_error(403, "forbidden");
    // A CLI verb with an operator token: the ledger names it.
    let op_env = [
        ("SVC_URL", base.as_str()),
        ("SVC_DATA_DIR", data.as_str()),
        ("SVC_TOKEN", operator.as_str()),
    ];
    let (code, out, err) = run_cli(&["policy", "toggle", "r1"], &op_env).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let changes = api.history_all(&[("type", "POLICY_CHANGE")]).await;
    assert!(!changes.is_empty());
    assert!(changes.iter().all(|e| e["actor"] == "ops-1"), "{changes:?}");
    let (code, _, err) = run_cli(&["token", "list"], &op_env).await;
    assert_eq!(code, Some(4), "an operator cannot list tokens: {err}");
    assert!(err.contains("403") && err.contains("admin role"), "{err}");

    // revoke: refused at once; the admin token cannot be revoked.
    let (code, out, err) = cli(&["token", "revoke", "ops-1"]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("ops-1") && out.contains("revoked"), "{out}");
    as_operator
        .get("/api/v1/graph/stats")
        .await
        .expect_error(401, "unauthorized");
    let (code, _, err) = cli(&["token", "revoke", "ops-1"]).await;
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("404"), "{err}");
    let (code, _, err) = cli(&["token", "revoke", "admin"]).await;
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("409"), "{err}");
    let (_, out, _) = cli(&["token", "list", "--json"]).await;
    let listed: Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "viewer-1"]);
    // Recorded in the ledger, by the admin.
    for ty in ["TOKEN_CREATED", "TOKEN_REVOKED"] {
        let events = api.history_all(&[("type", ty)]).await;
        assert!(!events.is_empty(), "{ty}");
        assert!(events.iter().all(|e| e["actor"] == "admin"), "{events:?}");
    }
}

/// Tokens survive a restart; sessions do not.
#[tokio::test]
async fn tokens_outlive_a_restart_and_sessions_do_not() {
    let dir = common::data_dir();
    let mut d = Daemon::start(dir.path(), 50).await;
    let api = d.api();
    let created = api
        .post_json("/api/v1/tokens", &json!({"name": "keeper", "role": "viewer"}))
        .await
        .expect(201);
    let keeper = created["token"].as_str().unwrap().to_owned();
    let signed_in = api
        .http
        .post(format!("{}/api/v1/session", d.base()))
        .json(&json!({"token": keeper}))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 200);
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().to_owned();
    let session = cookie.split(';').next().unwrap().to_owned();
    let who = |base: String, session: String| {
        let http = api.http.clone();
        async move {
            http.get(format!("{base}/api/v1/session"))
                .header("cookie", session)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(who(d.base(), session.clone()).await, 200);
    d.restart().await;
    let api = d.api();
    api.with_token(Some(&keeper)).get_ok("/api/v1/graph/stats").await;
    assert_eq!(who(d.base(), session).await, 401, "sessions live in memory");
}
