//! The assistant through a real daemon in mock mode with no model
//! configured: `POST /api/v1/cortex/assimilate` streams JSON lines, the
//! offline answerer answers the common questions from the daemon's own
//! read endpoints (the figures it quotes are theirs), says plainly when a
//! question needs a model, reads with the asker's rights and writes
//! nothing; `GET /api/v1/ai/providers` lists who answers.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use common::{Api, Daemon};
use serde_json::{Value, json};

const SCALE: usize = 1500;

/// The answer's lines, each checked to be JSON with a `type`.
async fn ask(api: &Api, question: &str) -> Vec<Value> {
    let r = api
        .post_json("/api/v1/cortex/assimilate", &json!({ "question": question }))
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    let lines = common::json_lines(&r.text);
    assert!(lines.iter().all(|l| l["type"].is_string()), "{lines:?}");
    assert_eq!(lines.first().map(|l| &l["type"]), Some(&json!("start")), "{lines:?}");
    assert_eq!(lines.last().map(|l| &l["type"]), Some(&json!("done")), "{lines:?}");
    let sources = &lines[lines.len() - 2];
    assert_eq!(sources["type"], "sources", "{lines:?}");
    lines
}

fn text_of(lines: &[Value]) -> String {
    common::answer_text(lines)
}

fn tools_of(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "tool_call")
        .map(|l| l["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn sources_of(lines: &[Value]) -> &Value {
    &lines[lines.len() - 2]
}

/// Money as the answer writes it.
fn usd(x: f64) -> String {
    let cents = (x * 100.0).round() as i64;
    let digits = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("${grouped}.{:02}", cents % 100)
}

#[tokio::test]
async fn the_offline_answerer_answers_the_common_questions_from_the_daemon() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let events_before = api.get_query_ok("/api/v1/history", &[("limit", "1")]).await["total"].clone();

    // Top waste: the ledger's own totals and top resources.
    let lines = ask(&api, "What is our top waste?").await;
    let start = &lines[0];
    assert_eq!(
        (start["tier"].as_str(), start["provider"].as_str()),
        (Some("offline"), Some("offline"))
    );
    assert!(
        start["conversation_id"].as_str().is_some_and(|c| c.starts_with("c-")),
        "{start}"
    );
    assert_eq!(tools_of(&lines), ["waste_summary"]);
    let ledger = api.get_query_ok("/api/v1/waste-ledger", &[("top", "3")]).await;
    let text = text_of(&lines);
    let flagged = ledger["totals"]["flagged"].as_u64().unwrap();
    assert!(flagged > 0);
    assert!(text.contains(&format!("flags {flagged} resources")), "{text}");
    assert!(
        text.contains(&usd(ledger["totals"]["projected_savings_usd_mo"].as_f64().unwrap())),
        "{text}"
    );
    let top = ledger["types"][0]["top"][0]["crn"].as_str().unwrap();
    assert!(text.contains(top), "{text}");
    let sources = sources_of(&lines);
    assert!(
        sources["crns"].as_array().unwrap().iter().any(|c| c == top),
        "{sources}"
    );
    assert_eq!(sources["queries"], json!(["GET /api/v1/waste-ledger?top=3"]));

    // Why a flagged resource is flagged: its own findings.
    let node = api
        .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(top)))
        .await;
    let lines = ask(&api, &format!("why is {top} flagged?")).await;
    let text = text_of(&lines);
    assert_eq!(tools_of(&lines), ["get_node"]);
    let reason = node["findings"][0]["reason"].as_str().unwrap();
    assert!(text.contains("flagged as waste") && text.contains(reason), "{text}");

    // What depends on a resource: the blast radius's count and members.
    let nodes = api.all_nodes(None).await;
    let mut found = None;
    for n in nodes.iter().take(400) {
        let crn = n["crn"].as_str().unwrap();
        let b = api
            .get_ok(&format!("/api/v1/graph/blast-radius/{}", common::encode_segment(crn)))
            .await;
        if b["affected_count"].as_u64().unwrap_or(0) > 0 {
            found = Some((crn.to_owned(), b));
            break;
        }
    }
    let (root, blast) = found.expect("a resource that something depends on");
    let lines = ask(&api, &format!("What depends on `{root}`?")).await;
    let text = text_of(&lines);
    let n = blast["affected_count"].as_u64().unwrap();
    assert!(text.starts_with(&format!("{n} resource")), "{text}");
    let first = blast["affected"][0]["crn"].as_str().unwrap();
    assert!(text.contains(first), "{text}");

    // A leaf: nothing depends on it, said so.
    let leaf = nodes
        .iter()
        .map(|n| n["crn"].as_str().unwrap())
        .find(|c| *c != root && c.contains(":ec2:volume:"))
        .unwrap();
    let b = api
        .get_ok(&format!("/api/v1/graph/blast-radius/{}", common::encode_segment(leaf)))
        .await;
    if b["affected_count"] == 0 {
        let text = text_of(&ask(&api, &format!("what would break if I delete {leaf}")).await);
        assert!(text.contains("Nothing in the graph depends on"), "{text}");
    }

    // What changed: the ledger's events, the scan among them.
    let text = text_of(&ask(&api, "What changed since yesterday?").await);
    assert!(
        text.contains("SCAN_COMPLETED") && text.contains("since yesterday"),
        "{text}"
    );

    // Approving everything pending: the queue's own pending savings.
    let queue = api.get_query_ok("/api/v1/remediation/queue", &[("limit", "1")]).await;
    let text = text_of(&ask(&api, "How much would approving everything pending save?").await);
    let pending = queue["counts"]["pending"].as_u64().unwrap();
    if pending > 0 {
        let saving = usd(queue["savings_usd_mo"]["pending"].as_f64().unwrap());
        assert!(
            text.contains(&format!("{pending} resource")) && text.contains(&saving),
            "{text}"
        );
    } else {
        assert!(text.contains("Nothing is pending"), "{text}");
    }

    // Totals: graph stats.
    let stats = api.get_ok("/api/v1/graph/stats").await;
    let text = text_of(&ask(&api, "how many resources do we have?").await);
    assert!(text.contains(&format!("{} resources", stats["active_nodes"])), "{text}");

    // A question that needs a model: said plainly, with what can be asked.
    let lines = ask(&api, "Write a haiku about our cloud bill").await;
    let text = text_of(&lines);
    assert!(tools_of(&lines).is_empty(), "{lines:?}");
    assert!(
        text.contains("needs a language model") && text.contains("what depends on <crn>"),
        "{text}"
    );
    assert!(text.contains("no model is configured"), "{text}");

    // An unknown CRN: the tool's 404 in words, the answer still ends.
    let lines = ask(
        &api,
        "why is crn:svc:aws:us-east-1:000000000000:ec2:volume:vol-nothere flagged?",
    )
    .await;
    let result = lines.iter().find(|l| l["type"] == "tool_result").unwrap();
    assert_eq!(result["ok"], false, "{lines:?}");
    assert!(result["error"].as_str().unwrap().contains("404"), "{result}");
    assert!(
        text_of(&lines).contains("could not get that from the daemon"),
        "{lines:?}"
    );

    // Asking wrote nothing to the ledger.
    let events_after = api.get_query_ok("/api/v1/history", &[("limit", "1")]).await["total"].clone();
    assert_eq!(events_after, events_before);
}

#[tokio::test]
async fn asking_takes_a_viewer_and_refuses_bad_requests() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 300).await;
    let api = d.api();
    let created = api
        .post_json("/api/v1/tokens", &json!({"name": "reader", "role": "viewer"}))
        .await
        .expect(201);
    let viewer = api.with_token(created["token"].as_str());
    let lines = ask(&viewer, "what is the top waste").await;
    assert!(
        lines.iter().any(|l| l["type"] == "tool_result" && l["ok"] == true),
        "{lines:?}"
    );

    let path = "/api/v1/cortex/assimilate";
    api.with_token(None)
        .post_json(path, &json!({"question": "top waste"}))
        .await
        .expect_error(401, "unauthorized");
    api.post_json(path, &json!({"question": "   "}))
        .await
        .expect_error(400, "bad_request");
    api.post_json(path, &json!({"question": "x".repeat(4001)}))
        .await
        .expect_error(400, "bad_request");
    api.post_json(path, &json!({"question": "top waste", "model": "gpt"}))
        .await
        .expect_error(400, "bad_request");
    api.post_json(path, &json!({"question": 7}))
        .await
        .expect_error(400, "bad_request");
    api.post_raw(path, "{not json").await.expect_error(400, "bad_request");
    api.post_json(path, &json!({"question": "top waste", "conversation_id": "a b"}))
        .await
        .expect_error(400, "bad_request");
    // A conversation id given is the one answered under.
    let r = api
        .post_json(path, &json!({"question": "top waste", "conversation_id": "conv-42"}))
        .await;
    let first: Value = serde_json::from_str(r.text.lines().next().unwrap()).unwrap();
    assert_eq!(first["conversation_id"], "conv-42");

    // `svc ask`: the text on stdout as it streams, the reads on stderr.
    let data = dir.path().to_str().unwrap().to_owned();
    let base = d.base();
    let env = [("SVC_URL", base.as_str()), ("SVC_DATA_DIR", data.as_str())];
    let (code, out, err) = common::run_cli(&["ask", "how many resources are there?"], &env).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    let stats = api.get_ok("/api/v1/graph/stats").await;
    assert!(
        out.contains(&format!("The estate holds {} resources", stats["active_nodes"])),
        "{out}"
    );
    assert!(
        err.contains("[reading: graph_stats") && err.contains("[offline answers"),
        "{err}"
    );
    let (code, out, _) = common::run_cli(&["ask", "--json", "top waste"], &env).await;
    assert_eq!(code, Some(0), "{out}");
    let types: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(types.first().map(String::as_str), Some("start"), "{out}");
    assert_eq!(types.last().map(String::as_str), Some("done"), "{out}");
    let (code, _, err) = common::run_cli(&["ask", " "], &env).await;
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("question must not be empty"), "{err}");

    let providers = viewer.get_ok("/api/v1/ai/providers").await;
    assert_eq!(providers["active"], "offline");
    let list = providers["providers"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{providers}");
    assert_eq!(
        (list[0]["name"].as_str(), list[0]["answers"].as_bool()),
        (Some("offline"), Some(true))
    );
}
