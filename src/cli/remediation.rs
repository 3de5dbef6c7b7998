//! `svc remediation ...`, `svc ignore` and `svc revert`: the remediation
//! verbs over the REST API. Decisions name the plan hash; without
//! `--plan-hash` the CLI takes the current plan's and prints it, so what
//! was approved is on record.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::client::{Client, encode_segment};
use super::output::{self, s, table};
use super::remote::Remote;

/// Who runs the CLI (`cli:$USER`, else `cli`): the daemon records the
/// token's name as the actor and keeps this as a note on the reason.
fn actor() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .map_or_else(|| "cli".to_owned(), |u| format!("cli:{u}"))
}

pub async fn queue(remote: &Remote, stage: Option<&str>, limit: usize) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut q = vec![("limit", limit.to_string())];
    if let Some(st) = stage {
        q.push(("stage", st.to_owned()));
    }
    let v = call!(client.get("/api/v1/remediation/queue", &q));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let stages = [
        "flagged", "analyzed", "codegen", "sau_gate", "pending", "applied", "rejected",
    ];
    let counts: Vec<String> = stages
        .iter()
        .map(|st| format!("{st} {}", s(&v["counts"], st)))
        .collect();
    println!("{}", counts.join(" | "));
    let mut rows = Vec::new();
    for st in stages {
        for i in v["stages"][st].as_array().into_iter().flatten() {
            let why = i["blockers"]
                .as_array()
                .map(|b| b.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("; "))
                .filter(|b| !b.is_empty())
                .or_else(|| i["failure"].as_str().map(str::to_owned))
                .unwrap_or_default();
            rows.push(vec![
                st.to_owned(),
                s(i, "crn"),
                s(i, "rule"),
                format!("${:.2}", i["savings_usd_mo"].as_f64().unwrap_or(0.0)),
                s(i, "plan_hash").chars().take(12).collect(),
                why,
            ]);
        }
    }
    table(
        &["STAGE", "CRN", "RULE", "SAVES/MO", "PLAN", "BLOCKERS / FAILURE"],
        &rows,
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn plan(remote: &Remote, crn: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get("/api/v1/plan", &[("crn", crn.to_owned())]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} ({}, {}): plan {}",
        s(&v, "crn"),
        s(&v, "rule"),
        s(&v, "stage"),
        s(&v, "plan_hash")
    );
    for st in v["steps"].as_array().into_iter().flatten() {
        println!(
            "  {}. {} (undone by {})",
            s(st, "index"),
            s(st, "action"),
            s(st, "inverse")
        );
        println!("     $ {}", s(st, "cli"));
    }
    println!("\n{}", s(&v, "terraform"));
    let iac = &v["iac"];
    if iac.is_object() {
        let c = &iac["code_change"];
        println!(
            "In code ({} in {}): {}",
            s(iac, "address"),
            s(iac, "state"),
            s(c, "summary")
        );
        if let Some(diff) = c["diff"].as_str() {
            println!("\n{}", output::printable_lines(diff));
        }
        if let Some(block) = c["removed_block"].as_str() {
            println!("\nor, in its place:\n\n{}", output::printable_lines(block));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The hash given, or the current plan's (printed).
async fn hash_for(client: &Client, crn: &str, given: Option<&str>) -> Result<String, super::client::Failure> {
    if let Some(h) = given {
        return Ok(h.to_owned());
    }
    let v = client.get("/api/v1/plan", &[("crn", crn.to_owned())]).await?;
    let h = s(&v, "plan_hash");
    eprintln!("deciding on plan {h} of {crn}");
    Ok(h)
}

pub async fn decide(
    remote: &Remote,
    verb: &str,
    crn: &str,
    plan_hash: Option<&str>,
    reason: Option<&str>,
    to: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let hash = call!(hash_for(&client, crn, plan_hash));
    let mut body = json!({"crn": crn, "plan_hash": hash, "actor": actor()});
    if let Some(r) = reason {
        body["reason"] = json!(r);
    }
    if let Some(t) = to {
        body["to"] = json!(t);
    }
    let v = call!(client.post(&format!("/api/v1/remediation/{verb}"), body));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    if verb == "approve" {
        let applied = v["applied"].as_bool() == Some(true);
        println!(
            "{} {} (saga {})",
            s(&v, "crn"),
            if applied { "applied" } else { "not applied" },
            s(&v, "saga_id")
        );
        for st in v["steps"].as_array().into_iter().flatten() {
            println!(
                "  {}. {} {} {}",
                s(st, "index"),
                s(st, "action"),
                s(st, "status"),
                s(st, "compensating_payload_hash")
            );
        }
        if let Some(f) = v["failure"].as_str() {
            println!("failure: {f}");
            return Ok(ExitCode::FAILURE);
        }
    } else {
        println!("{} is now {}", s(&v, "crn"), s(&v, "stage"));
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn bulk(remote: &Remote, action: &str, crns: &[String], reason: Option<&str>) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut items = Vec::new();
    for crn in crns {
        let hash = call!(hash_for(&client, crn, None));
        items.push(json!({"crn": crn, "plan_hash": hash}));
    }
    let body = json!({"action": action, "items": items, "reason": reason.unwrap_or(""), "actor": actor()});
    let v = call!(client.post("/api/v1/remediation/bulk", body));
    if output::structured(remote, &v) {
    } else {
        let rows: Vec<Vec<String>> = v["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                vec![
                    s(r, "crn"),
                    s(r, "status"),
                    r["error"].as_str().unwrap_or("ok").to_owned(),
                ]
            })
            .collect();
        table(&["CRN", "STATUS", "RESULT"], &rows);
        println!("{} succeeded, {} failed", s(&v, "succeeded"), s(&v, "failed"));
    }
    Ok(if v["failed"].as_u64() == Some(0) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub async fn ignore(
    remote: &Remote,
    crn: &str,
    reason_code: &str,
    ttl_seconds: u64,
    remove: bool,
) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = if remove {
        call!(client.delete(&format!("/api/v1/isolation/{}", encode_segment(crn))))
    } else {
        call!(client.post(
            "/api/v1/isolation",
            json!({"crn": crn, "reason_code": reason_code, "ttl_seconds": ttl_seconds, "actor": actor()}),
        ))
    };
    if output::structured(remote, &v) {
    } else if remove {
        println!("{} is no longer ignored", s(&v, "crn"));
    } else {
        let until = match super::time::field(&v, "expires_at") {
            t if t.is_empty() || v["expires_at"] == json!(0) => "permanently".to_owned(),
            t => format!("until {t}"),
        };
        println!("{} ignored {until} ({})", s(&v, "crn"), s(&v, "reason_code"));
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn quarantine(remote: &Remote, crn: &str, action: &str, reason: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.post(
        "/api/v1/remediation/quarantine",
        json!({"crn": crn, "action": action, "reason": reason, "actor": actor()}),
    ));
    if output::structured(remote, &v) {
    } else {
        println!(
            "{} quarantined ({}); undo with: svc revert {}",
            s(&v, "crn"),
            s(&v, "action"),
            s(&v, "compensating_payload_hash")
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn revert(remote: &Remote, hash: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.post("/api/v1/remediation/revert", json!({"hash": hash, "actor": actor()})));
    if output::structured(remote, &v) {
    } else {
        println!(
            "{}: {} undone with {}",
            s(&v, "crn"),
            s(&v, "reverted"),
            s(&v, "action")
        );
    }
    Ok(ExitCode::SUCCESS)
}
