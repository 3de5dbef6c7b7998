//! Policy rules against a real daemon: every endpoint, bad input that
//! changes nothing, the scan applying the rules, the ledger and metrics,
//! a restart, pack install and the CLI.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use common::{Daemon, encode_segment, run_cli};
use serde_json::{Value, json};

fn ids(list: &Value) -> Vec<String> {
    list["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn mesh_entry<'a>(mesh: &'a Value, id: &str) -> &'a Value {
    mesh["policies"]
        .as_array()
        .expect("policies")
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in the mesh: {mesh}"))
}

#[tokio::test]
async fn endpoints_bad_input_scans_and_a_restart() {
    let dir = common::data_dir();
    let mut d = Daemon::start_scanned(dir.path(), 400).await;
    let api = d.api();
    api.scan_wait().await;

    let added = api
        .post_json(
            "/api/v1/policies",
            &json!({"rules": [
                {"id": "detached", "condition": "kind == 'volume' && has(props.attachment_state) && props.attachment_state == 'detached'", "action": "flag", "message": "detached volume"},
                {"id": "no-owner", "condition": "!has(tags.owner)", "action": "block", "message": "unowned"},
                {"id": "any-cost", "condition": "cost > 0.0", "action": "warn", "message": "costs money", "mode": "shadow"},
                {"id": "errs", "condition": "props.volume_type == 'gp2'", "action": "warn", "message": ""}
            ]}),
        )
        .await
        .expect(200);
    assert_eq!(added["added"], 4);
    assert_eq!(added["rules"][0]["mode"], "enforcing", "enforcing by default");
    assert_eq!(added["rules"][2]["mode"], "shadow");
    assert_eq!(added["rules"][0]["evaluation"], "fast");

    // Bad input: each a clear error, nothing changed.
    let e = api
        .post_json(
            "/api/v1/policies",
            &json!({"rules": [{"id": "ok", "condition": "true", "action": "warn"},
                              {"id": "bad", "condition": "kind == 'volume' &&", "action": "warn"}]}),
        )
        .await
        .expect_error(422, "invalid");
    assert_eq!(e["error"]["details"]["index"], 1);
    assert_eq!(e["error"]["details"]["line"], 1);
    assert!(e["error"]["details"]["column"].as_u64().unwrap_or(0) > 0, "{e}");
    for (body, status, code) in [
        (
            json!({"rules": [{"id": "detached", "condition": "true", "action": "warn"}]}),
            409,
            "conflict",
        ),
        (
            json!({"rules": [{"id": "e", "condition": "  ", "action": "warn"}]}),
            422,
            "invalid",
        ),
        (
            json!({"rules": [{"id": "e", "condition": format!("cost > {}", "1.0 + ".repeat(2000)), "action": "warn"}]}),
            422,
            "invalid",
        ),
        (
            json!({"rules": [{"id": "e", "condition": format!("{}true{}", "(".repeat(500), ")".repeat(500)), "action": "warn"}]}),
            422,
            "invalid",
        ),
        (
            json!({"rules": [{"id": "e", "condition": "tags.all(k, tags.exists(j, j == k))", "action": "warn"}]}),
            422,
            "invalid",
        ),
        (
            json!({"rules": [{"id": "e", "condition": "nosuch > 1", "action": "warn"}]}),
            422,
            "invalid",
        ),
        (
            json!({"rules": [{"id": "e", "condition": "true", "action": "delete"}]}),
            422,
            "invalid",
        ),
        (
            json!({"rules": [{"id": "e", "condition": "true", "action": "warn", "mode": "loud"}]}),
            422,
            "invalid",
        ),
        (
            json!({"rules": [{"id": "", "condition": "true", "action": "warn"}]}),
            422,
            "invalid",
        ),
        (json!({"rules": []}), 422, "invalid"),
        (json!({"rules": [{"id": "e"}]}), 400, "bad_request"),
    ] {
        api.post_json("/api/v1/policies", &body)
            .await
            .expect_error(status, code);
    }
    api.post_json("/api/v1/policies/toggle", &json!({"rule_id": "nope"}))
        .await
        .expect_error(404, "not_found");
    api.delete("/api/v1/policies/nope").await.expect_error(404, "not_found");
    api.post_json("/api/v1/policies/reorder", &json!({"order": ["errs", "nope"]}))
        .await
        .expect_error(404, "not_found");
    api.post_json("/api/v1/policies/dry-run", &json!({"condition": "kind =="}))
        .await
        .expect_error(422, "invalid");
    let list = api.get_ok("/api/v1/policies").await;
    assert_eq!(ids(&list), ["detached", "no-owner", "any-cost", "errs"]);

    // Dry-run: the matches and the errors, nothing stored.
    let dry = api
        .post_json(
            "/api/v1/policies/dry-run",
            &json!({"condition": "props.volume_type == 'gp2' || kind == 'bucket'", "limit": 5}),
        )
        .await
        .expect(200);
    assert!(dry["count"].as_u64().unwrap() > 5, "{dry}");
    assert_eq!(dry["crns"].as_array().unwrap().len(), 5);
    assert_eq!(dry["truncated"], true);
    assert!(
        dry["errors"].as_u64().unwrap() > 0,
        "nodes without volume_type error: {dry}"
    );
    assert!(
        dry["error_samples"][0]["message"]
            .as_str()
            .unwrap()
            .contains("No such key")
    );
    assert_eq!(ids(&api.get_ok("/api/v1/policies").await).len(), 4);

    // Toggle and reorder.
    let t = api
        .post_json("/api/v1/policies/toggle", &json!({"rule_id": "any-cost"}))
        .await
        .expect(200);
    assert_eq!(t["mode"], "enforcing");
    api.post_json("/api/v1/policies/toggle", &json!({"rule_id": "any-cost"}))
        .await
        .expect(200);
    let r = api
        .post_json("/api/v1/policies/reorder", &json!({"order": ["errs", "no-owner"]}))
        .await
        .expect(200);
    assert_eq!(ids(&r), ["errs", "no-owner", "detached", "any-cost"]);

    // A scan applies them.
    let scan = api.scan_wait().await;
    assert_eq!(scan["policy"]["rules"], 4);
    assert!(scan["policy"]["flagged"].as_u64().unwrap() > 0, "{}", scan["policy"]);
    assert!(scan["policy"]["blocked"].as_u64().unwrap() > 0, "{}", scan["policy"]);
    let mesh = api.get_ok("/api/v1/policies/mesh").await;
    let detached = mesh_entry(&mesh, "detached");
    let flagged_crn = detached["last_evaluation"]["sample_crns"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let node = api
        .get_ok(&format!("/api/v1/graph/nodes/{}", encode_segment(&flagged_crn)))
        .await;
    assert_eq!(node["is_waste"], true, "{node}");
    let any_cost = mesh_entry(&mesh, "any-cost");
    assert!(any_cost["trigger_count"].as_u64().unwrap() > 100);
    assert_eq!(any_cost["last_evaluation"]["mode"], "shadow");
    let errs = mesh_entry(&mesh, "errs");
    assert!(errs["error_count"].as_u64().unwrap() > 0);
    assert!(
        errs["last_evaluation"]["first_error"]
            .as_str()
            .unwrap()
            .contains("No such key")
    );

    // The ledger and the metric.
    let changes = api.history_all(&[("type", "POLICY_CHANGE")]).await;
    let actions: Vec<&str> = changes.iter().filter_map(|e| e["meta"]["action"].as_str()).collect();
    assert_eq!(actions.iter().filter(|a| **a == "ADDED").count(), 4);
    assert_eq!(actions.iter().filter(|a| **a == "TOGGLED").count(), 2);
    assert_eq!(actions.iter().filter(|a| **a == "REORDERED").count(), 1);
    for e in &changes {
        assert_eq!(e["meta"]["author"], "admin", "the token's name");
        assert!(
            e["meta"]["rule_id"].is_string() && e["meta"]["enforcement_mode"].is_string(),
            "{e}"
        );
    }
    let metrics = api.get("/metrics").await.text;
    assert!(
        metrics.lines().any(|l| l.starts_with("svc_policy_violations_total{")
            && l.contains("rule_id=\"any-cost\"")
            && l.contains("enforcement_mode=\"shadow\"")),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("policy"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // Remove one, restart: the rest survive, in order, with their modes.
    api.delete("/api/v1/policies/errs").await.expect(200);
    d.restart().await;
    let api = d.api();
    let list = api.get_ok("/api/v1/policies").await;
    assert_eq!(ids(&list), ["no-owner", "detached", "any-cost"]);
    assert_eq!(list["rules"][2]["mode"], "shadow");
    let mesh = api.get_ok("/api/v1/policies/mesh").await;
    assert!(
        mesh_entry(&mesh, "any-cost")["trigger_count"].as_u64().unwrap() > 100,
        "kept across the restart"
    );
    let node = api
        .get_ok(&format!("/api/v1/graph/nodes/{}", encode_segment(&flagged_crn)))
        .await;
    assert_eq!(node["is_waste"], true, "still flagged after the restart");
}

#[tokio::test]
async fn cli_verbs_and_pack_install() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 400).await;
    let api = d.api();
    api.scan_wait().await;
    let base = d.base();
    let data = dir.path().to_str().expect("utf-8 path").to_owned();
    let env = [("SVC_URL", base.as_str()), ("SVC_DATA_DIR", data.as_str())];
    let cli = |args: Vec<String>| async move {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = run_cli(&a, &env).await;
        (code, out, err)
    };
    let ok = |r: (Option<i32>, String, String)| {
        assert_eq!(r.0, Some(0), "{}\n{}", r.1, r.2);
        r.1
    };
    let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();

    // Packs shipped in the repository.
    let root = env!("CARGO_MANIFEST_DIR");
    for pack in ["cost-hygiene", "tagging-hygiene"] {
        let out = ok(cli(v(&["policy", "install", &format!("{root}/policies/{pack}")])).await);
        assert!(out.contains(&format!("policy pack {pack} v1.0.0 installed")), "{out}");
    }
    // A broken pack is refused and installs nothing.
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(
        bad.path().join("manifest.yaml"),
        "name: broken\ntype: policy\nversion: v1\n",
    )
    .unwrap();
    std::fs::write(
        bad.path().join("r.yaml"),
        "rules:\n  - id: x\n    condition: 'kind =='\n    action: warn\n",
    )
    .unwrap();
    let (code, _, err) = cli(v(&["policy", "install", bad.path().to_str().unwrap()])).await;
    assert_ne!(code, Some(0));
    assert!(err.contains("invalid condition"), "{err}");
    assert!(!dir.path().join("policies/broken").exists());

    // CLI verbs.
    let out = ok(cli(v(&[
        "policy",
        "add",
        "big",
        "cost > 100.0",
        "--action",
        "warn",
        "--message",
        "big spend",
    ]))
    .await);
    assert!(out.contains("added big [enforcing warn] fast"), "{out}");
    ok(cli(v(&["policy", "add", "quiet", "kind == 'volume'", "--shadow"])).await);
    let out = ok(cli(v(&["policy", "toggle", "quiet"])).await);
    assert!(out.contains("quiet is now enforcing"), "{out}");
    let out = ok(cli(v(&["policy", "dry-run", "kind == 'volume'", "--limit", "2"])).await);
    assert!(out.contains("nodes match, 0 errors (fast path"), "{out}");
    let out = ok(cli(v(&["policy", "reorder", "quiet", "big"])).await);
    assert!(out.lines().next().unwrap_or_default().starts_with("0. quiet"), "{out}");
    let (code, _, err) = cli(v(&["policy", "add", "bad", "kind =="])).await;
    assert_eq!(code, Some(4), "an API error: {err}");
    assert!(err.contains("line 1"), "{err}");

    // The next scan synchronises the packs and evaluates everything.
    let scan = api.scan_wait().await;
    assert!(
        scan["policy"]["pack_changes"].as_u64().unwrap() >= 7,
        "{}",
        scan["policy"]
    );
    let out = ok(cli(v(&["policy", "list"])).await);
    assert!(out.contains("tagging-hygiene/missing-owner"), "{out}");
    let mesh = api.get_ok("/api/v1/policies/mesh").await;
    for id in [
        "tagging-hygiene/missing-owner",
        "cost-hygiene/detached-volumes",
        "cost-hygiene/gp2-volumes",
        "big",
    ] {
        let e = mesh_entry(&mesh, id);
        assert!(
            e["trigger_count"].as_u64().unwrap() > 0,
            "{id} matches something in the mock estate: {e}"
        );
    }
    assert_eq!(mesh_entry(&mesh, "cost-hygiene/costly-unreachable")["mode"], "shadow");
    // Pack rules change with their pack.
    api.delete(&format!(
        "/api/v1/policies/{}",
        encode_segment("tagging-hygiene/missing-owner")
    ))
    .await
    .expect_error(409, "conflict");
    let out = ok(cli(v(&["policy", "rm", "big"])).await);
    assert!(out.contains("removed big"), "{out}");

    let changes = api.history_all(&[("type", "POLICY_CHANGE")]).await;
    let by = |author: &str| changes.iter().filter(|e| e["meta"]["author"] == author).count();
    assert!(by("admin") >= 5, "add, add, toggle, reorder, rm, with the admin token");
    assert_eq!(by("pack:tagging-hygiene"), 3);
    assert_eq!(by("pack:cost-hygiene"), 4);
}

#[tokio::test]
async fn comprehensions_times_and_the_cost_budget() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 200).await;
    let api = d.api();
    let dry = |condition: &str| {
        let api = api.clone();
        let condition = condition.to_owned();
        async move {
            api.post_json("/api/v1/policies/dry-run", &json!({"condition": condition, "limit": 3}))
                .await
        }
    };

    // `now - created` splits the resources that have a creation time.
    let old = dry("created != null && now - created > duration('720h')")
        .await
        .expect(200);
    let young = dry("created != null && now - created <= duration('720h')")
        .await
        .expect(200);
    let dated = dry("created != null").await.expect(200);
    assert_eq!(old["errors"], 0, "{old}");
    assert!(old["count"].as_u64().unwrap() > 0, "{old}");
    assert_eq!(
        old["count"].as_u64().unwrap() + young["count"].as_u64().unwrap(),
        dated["count"].as_u64().unwrap()
    );
    assert_eq!(old["evaluation"], "interpreter");
    assert_eq!(old["value"], Value::Null, "it reads the resource");
    let years = dry("created != null && created.getFullYear() >= 2000")
        .await
        .expect(200);
    assert_eq!(years["count"], dated["count"], "{years}");

    // Macros over the resource's maps.
    let tagged = dry("tags.exists(k, k == 'env')").await.expect(200);
    let has_env = dry("has(tags.env)").await.expect(200);
    assert_eq!(tagged["count"], has_env["count"], "{tagged}");
    assert!(tagged["count"].as_u64().unwrap() > 0);
    let all = dry("tags.all(k, size(tags[k]) >= 0) && size(tags.filter(k, k.startsWith('e'))) >= 0")
        .await
        .expect(200);
    assert_eq!(all["count"], all["nodes_evaluated"], "{all}");

    // A condition that reads no resource has one value, written in CEL.
    let v = dry("[1, 2, 3].map(x, x * 2)").await.expect(200);
    assert_eq!(v["value"], "[2, 4, 6]", "{v}");
    let v = dry("now > timestamp('2020-01-01T00:00:00Z') && duration('1h') < duration('2h')")
        .await
        .expect(200);
    assert_eq!(v["value"], "true", "{v}");
    assert_eq!(v["count"], v["nodes_evaluated"]);
    let v = dry("1 / 0 == 1").await.expect(200);
    assert!(v["value_error"].as_str().unwrap().contains("Division by zero"), "{v}");

    // Nested comprehensions over tags are over the budget: refused, with
    // the figures.
    let e = dry("tags.all(k, tags.exists(j, j == k))")
        .await
        .expect_error(422, "invalid");
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("over the budget of 5000000") && msg.contains("may cost up to"),
        "{msg}"
    );

    // A rule with a macro and `now` is added and evaluated by a scan.
    api.post_json(
        "/api/v1/policies",
        &json!({"rules": [{"id": "old-env", "condition": "tags.exists(k, k == 'env') && created != null && now - created > duration('720h')", "action": "warn", "message": "old"}]}),
    )
    .await
    .expect(200);
    api.scan_wait().await;
    let mesh = api.get_ok("/api/v1/policies/mesh").await;
    let entry = mesh_entry(&mesh, "old-env");
    let last = &entry["last_evaluation"];
    assert_eq!(last["errors"], 0, "{entry}");
    assert!(last["matches"].as_u64().unwrap() > 0, "{entry}");
}
