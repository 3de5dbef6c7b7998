//! `svc policy ...`: the policy verbs over the REST API (`install` works
//! on the data directory and needs no daemon).

use std::process::ExitCode;

use serde_json::{Value, json};

use super::client::{Client, encode_segment};
use super::output::{self, s, table};
use super::remote::Remote;

fn print_rule(v: &Value) {
    println!(
        "{} [{} {}] {}: {}",
        s(v, "id"),
        s(v, "mode"),
        s(v, "action"),
        s(v, "evaluation"),
        s(v, "condition")
    );
}

pub async fn add(
    remote: &Remote,
    id: &str,
    condition: &str,
    action: &str,
    message: &str,
    shadow: bool,
) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut rule = json!({"id": id, "condition": condition, "action": action, "message": message});
    if shadow {
        rule["mode"] = json!("shadow");
    }
    let v = call!(client.post("/api/v1/policies", json!({ "rules": [rule] })));
    if output::structured(remote, &v) {
    } else {
        for r in v["rules"].as_array().into_iter().flatten() {
            print!("added ");
            print_rule(r);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn list(remote: &Remote) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get("/api/v1/policies/mesh", &[]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = v["policies"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            vec![
                s(r, "priority"),
                s(r, "id"),
                s(r, "mode"),
                s(r, "action"),
                s(r, "trigger_count"),
                s(r, "error_count"),
                s(r, "condition"),
            ]
        })
        .collect();
    table(&["#", "ID", "MODE", "ACTION", "MATCHES", "ERRORS", "CONDITION"], &rows);
    Ok(ExitCode::SUCCESS)
}

pub async fn rm(remote: &Remote, id: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.delete(&format!("/api/v1/policies/{}", encode_segment(id))));
    if output::structured(remote, &v) {
    } else {
        println!("removed {}", s(&v["removed"], "id"));
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn toggle(remote: &Remote, id: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.post("/api/v1/policies/toggle", json!({ "rule_id": id })));
    if output::structured(remote, &v) {
    } else {
        println!("{} is now {}", s(&v, "id"), s(&v, "mode"));
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn reorder(remote: &Remote, ids: &[String]) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.post("/api/v1/policies/reorder", json!({ "order": ids })));
    if output::structured(remote, &v) {
    } else {
        for r in v["rules"].as_array().into_iter().flatten() {
            print!("{}. ", s(r, "priority"));
            print_rule(r);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn dry_run(remote: &Remote, condition: &str, limit: usize) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.post(
        "/api/v1/policies/dry-run",
        json!({ "condition": condition, "limit": limit.max(1) })
    ));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} of {} nodes match, {} errors ({} path, {} ms)",
        s(&v, "count"),
        s(&v, "nodes_evaluated"),
        s(&v, "errors"),
        s(&v, "evaluation"),
        s(&v, "duration_ms")
    );
    if let Some(value) = v["value"].as_str() {
        println!("value: {value}");
    }
    if let Some(e) = v["value_error"].as_str() {
        println!("value: error: {e}");
    }
    for c in v["crns"].as_array().into_iter().flatten() {
        println!("  {}", c.as_str().unwrap_or_default());
    }
    for e in v["error_samples"].as_array().into_iter().flatten() {
        println!("  error on {}: {}", s(e, "crn"), s(e, "message"));
    }
    Ok(ExitCode::SUCCESS)
}
