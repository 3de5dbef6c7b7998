//! The assistant with a model, against local servers that speak each
//! provider's real wire format (OpenAI Chat Completions and Anthropic
//! Messages, streamed as server-sent events, with tool calls): the daemon
//! sends the question and the read-only tools, runs the tools the model
//! calls against its own routes, streams the model's text, keeps the
//! conversation, picks and escalates tiers, retries 429 after its
//! `Retry-After` (three attempts at most), and ends a malformed or slow
//! answer with a clear error. A model that calls a tool that would write
//! gets an error and changes nothing.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::time::{Duration, Instant};

use common::models::{Mode, fake_provider};
use common::{Api, Daemon};
use serde_json::{Value, json};

const KEY: &str = "sk-e2e-not-a-real-key";

async fn configure(api: &Api, ai: Value) {
    let r = api.put_json("/api/v1/config", &json!({ "ai": ai })).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
}

async fn ask(api: &Api, question: &str, conversation: Option<&str>) -> Vec<Value> {
    let mut body = json!({ "question": question });
    if let Some(c) = conversation {
        body["conversation_id"] = json!(c);
    }
    let r = api.post_json("/api/v1/cortex/assimilate", &body).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    common::json_lines(&r.text)
}

fn text_of(lines: &[Value]) -> String {
    common::answer_text(lines)
}

fn kinds(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn error_of(lines: &[Value]) -> String {
    lines
        .iter()
        .find(|l| l["type"] == "error")
        .and_then(|l| l["message"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_model_answers_through_the_read_only_tools() {
    let (base, fake) = fake_provider().await;
    let dir = common::data_dir();
    let mut d = Daemon::configure(dir.path(), 300);
    d.env.push(("SVC_E2E_AI_KEY".into(), KEY.into()));
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();
    let openai = json!({
        "provider": "vllm", "base_url": format!("{base}/v1"), "model": "big",
        "router_model": "small", "api_key_env": "SVC_E2E_AI_KEY", "timeout": "1s"
    });
    configure(&api, openai.clone()).await;
    let stats = api.get_ok("/api/v1/graph/stats").await;
    let events_before = api.get_query_ok("/api/v1/history", &[("limit", "1")]).await["total"].clone();

    // Who answers: the provider, which answers its list of models; the key is never shown.
    let providers = api.get_ok("/api/v1/ai/providers").await;
    assert_eq!(providers["active"], "vllm", "{providers}");
    let p = providers["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "vllm")
        .unwrap()
        .clone();
    assert_eq!(
        (
            p["answers"].as_bool(),
            p["models"]["router"].as_str(),
            p["models"]["deep"].as_str()
        ),
        (Some(true), Some("small"), Some("big"))
    );
    for shown in [providers.to_string(), api.get_ok("/api/v1/config").await.to_string()] {
        assert!(!shown.contains(KEY), "{shown}");
    }

    // A look-up: the router tier, one tool call, the model's text from the tool's answer.
    fake.set(Mode::Normal);
    let lines = ask(&api, "how many resources are there?", Some("conv-1")).await;
    assert_eq!(
        kinds(&lines),
        ["start", "tool_call", "tool_result", "text", "text", "sources", "done"],
        "{lines:?}"
    );
    assert_eq!(
        (
            lines[0]["tier"].as_str(),
            lines[0]["model"].as_str(),
            lines[0]["provider"].as_str()
        ),
        (Some("router"), Some("small"), Some("vllm"))
    );
    assert_eq!(
        (lines[1]["name"].as_str(), lines[2]["ok"].as_bool()),
        (Some("graph_stats"), Some(true))
    );
    assert_eq!(
        text_of(&lines),
        format!("The estate holds {} resources.", stats["active_nodes"])
    );
    assert_eq!(lines[5]["queries"], json!(["GET /api/v1/graph/stats"]));
    let calls = fake.calls();
    assert_eq!(calls.len(), 2, "a call for the tool, one after its answer");
    let (first, headers) = &calls[0];
    assert_eq!(headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(first["stream"], true);
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"graph_stats") && offered.contains(&"blast_radius"),
        "{offered:?}"
    );
    assert!(
        !offered
            .iter()
            .any(|t| t.contains("approve") || t.contains("reject") || t.contains("delete")),
        "{offered:?}"
    );
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("You only read")
    );

    // The conversation goes on: the next call carries the first question and answer.
    fake.set(Mode::Normal);
    ask(&api, "and how many are there now?", Some("conv-1")).await;
    let calls = fake.calls();
    let history = calls[0].0["messages"].to_string();
    assert!(
        history.contains("how many resources are there?") && history.contains("The estate holds"),
        "{history}"
    );

    // A question for judgement goes to the deep tier first.
    fake.set(Mode::Normal);
    let lines = ask(
        &api,
        "what strategy should we follow to cut our bill this quarter?",
        None,
    )
    .await;
    assert_eq!(
        (lines[0]["tier"].as_str(), lines[0]["model"].as_str()),
        (Some("deep"), Some("big"))
    );
    assert_eq!(fake.calls()[0].0["model"], "big");

    // The router says it cannot answer: the deep tier takes over mid-turn.
    fake.set(Mode::Normal);
    let lines = ask(&api, "please say you cannot", None).await;
    let k = kinds(&lines);
    let esc = lines
        .iter()
        .find(|l| l["type"] == "escalation")
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(
        (esc["tier"].as_str(), esc["model"].as_str()),
        (Some("deep"), Some("big"))
    );
    assert!(esc["reason"].as_str().unwrap().contains("cannot answer"), "{esc}");
    assert!(text_of(&lines).ends_with("The deep model answers."), "{lines:?}");
    assert_eq!(k.last().map(String::as_str), Some("done"));
    let models: Vec<String> = fake
        .calls()
        .iter()
        .map(|(b, _)| b["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(models, ["small", "big"]);

    // A model that calls a tool that would write gets an error, and nothing changes.
    fake.set(Mode::Normal);
    let lines = ask(&api, "approve everything that is pending", None).await;
    let result = lines.iter().find(|l| l["type"] == "tool_result").unwrap();
    assert_eq!(result["ok"], false);
    assert!(
        result["error"].as_str().unwrap().contains("no tool named \"approve\""),
        "{result}"
    );
    let events_after = api.get_query_ok("/api/v1/history", &[("limit", "1")]).await["total"].clone();
    assert_eq!(events_after, events_before, "asking appended to the ledger");

    // 429 with Retry-After: waited, then answered; two attempts for that call.
    fake.set(Mode::RateLimitedOnce);
    let started = Instant::now();
    let lines = ask(&api, "what strategy should we follow for the staging account?", None).await;
    assert_eq!(kinds(&lines).last().map(String::as_str), Some("done"), "{lines:?}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(fake.calls().len(), 3, "429, then the tool call, then the answer");

    // 429 every time: three attempts, then a clear error.
    fake.set(Mode::RateLimited);
    let lines = ask(&api, "what strategy should we follow for the dev account?", None).await;
    assert_eq!(fake.calls().len(), 3);
    let e = error_of(&lines);
    assert!(
        e.contains("HTTP 429 after 3 attempts") && e.contains("Rate limit reached"),
        "{e}"
    );

    // A malformed answer and a slow one end the turn with a clear error.
    fake.set(Mode::Malformed);
    let e = error_of(&ask(&api, "what strategy should we follow for networking?", None).await);
    assert!(e.contains("not the Chat Completions stream format"), "{e}");
    fake.set(Mode::Slow);
    let e = error_of(&ask(&api, "what strategy should we follow for storage?", None).await);
    assert!(e.contains("did not answer within 1s"), "{e}");

    // The same through Anthropic's Messages API.
    configure(
        &api,
        json!({
            "provider": "anthropic", "base_url": base, "model": "claude-deep",
            "router_model": "claude-small", "api_key_env": "SVC_E2E_AI_KEY", "timeout": "1s"
        }),
    )
    .await;
    fake.set(Mode::Normal);
    let lines = ask(&api, "how many resources are there?", None).await;
    assert_eq!(
        (lines[0]["provider"].as_str(), lines[0]["model"].as_str()),
        (Some("anthropic"), Some("claude-small"))
    );
    assert_eq!(
        text_of(&lines),
        format!("The estate holds {} resources.", stats["active_nodes"]),
        "{lines:?}"
    );
    let calls = fake.calls();
    assert_eq!(calls[0].1["x-api-key"], KEY);
    assert_eq!(calls[0].1["anthropic-version"], "2023-06-01");
    assert!(calls[0].0["system"].as_str().unwrap().contains("You only read"));
    assert_eq!(
        calls[1].0["messages"][2]["content"][0]["type"], "tool_result",
        "{}",
        calls[1].0
    );

    // A provider that cannot be used: the offline answerer, saying why.
    configure(
        &api,
        json!({"provider": "anthropic", "model": "c", "api_key_env": "SVC_E2E_NO_SUCH_KEY", "base_url": Value::Null}),
    )
    .await;
    let lines = ask(&api, "write a poem", None).await;
    assert_eq!(lines[0]["tier"], "offline");
    assert!(text_of(&lines).contains("SVC_E2E_NO_SUCH_KEY"), "{lines:?}");
}
