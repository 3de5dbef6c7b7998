//! The verbs that read the analysis and the past: waste, anomalies, blast,
//! at, diff, versions, oracle, traffic, config, and `svc history summary | prune`.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::client::{Client, encode_segment, pages};
use super::output::{self, money, s, table};
use super::page::Page;
use super::remote::Remote;
use super::time::{self, Time};

/// The array under `key`, empty when absent.
fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `svc waste`: the waste ledger, one row per resource type.
pub async fn waste(remote: &Remote, provider: Option<&str>, top: usize) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut q = vec![("top", top.to_string())];
    if let Some(p) = provider {
        q.push(("provider", p.to_owned()));
    }
    let v = call!(client.get("/api/v1/waste-ledger", &q));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = list(&v, "types")
        .iter()
        .map(|t| {
            let mut row = vec![
                s(t, "type"),
                s(t, "provider"),
                s(t, "count"),
                s(t, "waste_count"),
                money(t, "waste_usd_mo"),
                money(t, "projected_savings_usd_mo"),
            ];
            if remote.wide() {
                let top: Vec<String> = list(t, "top").iter().map(|n| s(n, "crn")).collect();
                row.push(top.join(" "));
            }
            row
        })
        .collect();
    let mut header = vec!["TYPE", "PROVIDER", "COUNT", "WASTE", "WASTE/MO", "SAVES/MO"];
    if remote.wide() {
        header.push("TOP");
    }
    table(&header, &rows);
    let totals = &v["totals"];
    println!(
        "total: {} flagged, {}/mo wasted, {}/mo projected savings (scan {}, {})",
        s(totals, "flagged"),
        money(totals, "waste_usd_mo"),
        money(totals, "projected_savings_usd_mo"),
        s(&v, "scan_seq"),
        time::field(&v, "observed_at"),
    );
    Ok(ExitCode::SUCCESS)
}

/// `svc anomalies`: resource types whose cost moved against their history.
pub async fn anomalies(
    remote: &Remote,
    resource_type: Option<&str>,
    provider: Option<&str>,
    limit: usize,
) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut q = vec![("limit", limit.to_string())];
    if let Some(t) = resource_type {
        q.push(("type", t.to_owned()));
    }
    if let Some(p) = provider {
        q.push(("provider", p.to_owned()));
    }
    let v = call!(client.get("/api/v1/anomalies", &q));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = list(&v, "types")
        .iter()
        .map(|t| {
            let mut row = vec![
                s(t, "type"),
                s(t, "provider"),
                s(t, "direction"),
                money(t, "previous"),
                money(t, "current"),
                format!("{}%", s(t, "change_pct")),
            ];
            if remote.wide() {
                row.extend([s(t, "previous_count"), s(t, "count"), s(t, "z"), s(t, "scan_seq")]);
            }
            row
        })
        .collect();
    let mut header = vec!["TYPE", "PROVIDER", "DIRECTION", "BEFORE/MO", "NOW/MO", "CHANGE"];
    if remote.wide() {
        header.extend(["COUNT BEFORE", "COUNT", "Z", "SCAN"]);
    }
    table(&header, &rows);
    println!("{} anomalies (scan {})", rows.len(), s(&v, "scan_seq"));
    Ok(ExitCode::SUCCESS)
}

/// `svc blast CRN`: what removing a resource would affect.
pub async fn blast(remote: &Remote, crn: &str, limit: usize) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let path = format!("/api/v1/graph/blast-radius/{}", encode_segment(crn));
    let v = call!(client.get(&path, &[("limit", limit.to_string())]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = list(&v, "affected")
        .iter()
        .map(|n| {
            let mut row = vec![s(n, "depth"), s(n, "relation"), s(n, "type"), money(n, "cost_usd_mo")];
            if remote.wide() {
                row.push(s(n, "via_crn"));
            }
            row.push(s(n, "crn"));
            row
        })
        .collect();
    let mut header = vec!["DEPTH", "RELATION", "TYPE", "COST/MO"];
    if remote.wide() {
        header.push("VIA");
    }
    header.push("CRN");
    table(&header, &rows);
    println!(
        "{} affected, {}/mo, {} levels deep{}",
        s(&v, "affected_count"),
        money(&v, "total_cost_usd_mo"),
        s(&v, "max_depth"),
        if v["truncated"] == json!(true) {
            " (listing cut at --limit)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `svc at TIME`: the graph as it was then, in pages of nodes.
pub async fn at(remote: &Remote, at: &Time, page: &Page) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let q = vec![("ts", time::rfc3339(at))];
    let v = call!(pages(&client, "/api/v1/graph/at", &q, "nodes", page));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = list(&v, "nodes")
        .iter()
        .map(|n| {
            let mut row = vec![s(n, "type"), s(n, "state"), money(n, "cost_usd_mo")];
            if remote.wide() {
                row.extend([time::column(n, "valid_from"), time::column(n, "valid_to")]);
            }
            row.push(s(n, "crn"));
            row
        })
        .collect();
    let mut header = vec!["TYPE", "STATE", "COST/MO"];
    if remote.wide() {
        header.extend(["FROM", "TO"]);
    }
    header.push("CRN");
    table(&header, &rows);
    println!(
        "{} of {} nodes, {} edges at {}",
        rows.len(),
        s(&v, "total_nodes"),
        s(&v, "total_edges"),
        time::show(at)
    );
    if let Some(c) = super::client::next_cursor(&v) {
        eprintln!("more: --cursor {c} (or --all)");
    }
    Ok(ExitCode::SUCCESS)
}

/// `svc diff FROM TO`: what changed between two times.
pub async fn diff(remote: &Remote, from: &Time, to: &Time, limit: usize) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let q = vec![
        ("from", time::rfc3339(from)),
        ("to", time::rfc3339(to)),
        ("limit", limit.to_string()),
    ];
    let v = call!(client.get("/api/v1/graph/diff", &q));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = Vec::new();
    for (key, change) in [("added", "added"), ("removed", "removed")] {
        for n in list(&v, key) {
            rows.push(vec![change.to_owned(), s(n, "type"), String::new(), s(n, "crn")]);
        }
    }
    for c in list(&v, "changed") {
        let fields: Vec<String> = list(c, "fields")
            .iter()
            .map(|f| f.as_str().map_or_else(|| f.to_string(), str::to_owned))
            .collect();
        let kind = s(&c["after"], "type");
        rows.push(vec![
            "changed".to_owned(),
            kind,
            output::printable(&fields.join(",")),
            s(c, "crn"),
        ]);
    }
    table(&["CHANGE", "TYPE", "FIELDS", "CRN"], &rows);
    let n = &v["counts"];
    println!(
        "from {} to {}: {} added, {} removed, {} changed; edges {} added, {} removed, {} changed{}",
        time::show(from),
        time::show(to),
        s(n, "added"),
        s(n, "removed"),
        s(n, "changed"),
        s(n, "edges_added"),
        s(n, "edges_removed"),
        s(n, "edges_changed"),
        if v["truncated"] == json!(true) {
            " (lists cut at --limit)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `svc versions CRN`: one resource's versions, newest first.
pub async fn versions(remote: &Remote, crn: &str, limit: usize) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let path = format!("/api/v1/graph/nodes/{}/versions", encode_segment(crn));
    let v = call!(client.get(&path, &[("limit", limit.to_string())]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = list(&v, "versions")
        .iter()
        .map(|n| {
            let waste = if n["is_waste"] == json!(true) { "waste" } else { "" };
            let mut row = vec![
                time::column(n, "valid_from"),
                time::column(n, "valid_to"),
                s(n, "state"),
                money(n, "cost_usd_mo"),
                waste.to_owned(),
            ];
            if remote.wide() {
                row.extend([s(n, "reachability"), s(n, "risk_score")]);
            }
            row
        })
        .collect();
    let mut header = vec!["FROM", "TO", "STATE", "COST/MO", ""];
    if remote.wide() {
        header.extend(["REACHABILITY", "RISK"]);
    }
    table(&header, &rows);
    println!("{} of {} versions of {}", rows.len(), s(&v, "total"), s(&v, "crn"));
    Ok(ExitCode::SUCCESS)
}

/// `svc oracle CRN`: the verdict on a resource and its proof.
pub async fn oracle(remote: &Remote, crn: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get(&format!("/api/v1/oracle/{}", encode_segment(crn)), &[]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    for key in [
        "crn",
        "type",
        "verdict",
        "is_waste",
        "reachability",
        "risk_score",
        "entry_point",
        "scan_seq",
    ] {
        println!("{key:<14} {}", s(&v, key));
    }
    let proof = list(&v, "proof");
    if !proof.is_empty() {
        println!("proof:");
        for (i, step) in proof.iter().enumerate() {
            let text = step
                .as_str()
                .map_or_else(|| output::printable(&step.to_string()), output::printable);
            println!("  {}. {text}", i + 1);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `svc traffic`: observed flows between resources.
pub async fn traffic(remote: &Remote, limit: usize) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get("/api/v1/traffic/edges", &[("limit", limit.to_string())]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = list(&v, "edges")
        .iter()
        .map(|e| {
            let mut row = vec![s(e, "source_crn"), s(e, "target_crn"), s(e, "bytes"), s(e, "packets")];
            if remote.wide() {
                row.extend([
                    s(e, "records"),
                    time::column(e, "window_start"),
                    time::column(e, "window_end"),
                ]);
            }
            row
        })
        .collect();
    let mut header = vec!["SOURCE", "TARGET", "BYTES", "PACKETS"];
    if remote.wide() {
        header.extend(["RECORDS", "FROM", "TO"]);
    }
    table(&header, &rows);
    println!("{} edges, {} bytes", s(&v, "count"), s(&v, "total_bytes"));
    Ok(ExitCode::SUCCESS)
}

/// The value at a dotted key of a tree.
fn at_key<'a>(tree: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(tree, |v, part| v.get(part))
}

/// `svc config get [KEY]`.
pub async fn config_get(remote: &Remote, key: Option<&str>) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let tree = call!(client.get("/api/v1/config", &[]));
    let v = match key {
        None => tree,
        Some(k) => match at_key(&tree, k) {
            Some(v) => v.clone(),
            None => {
                eprintln!("error: no configuration key {k:?}");
                return Ok(ExitCode::FAILURE);
            }
        },
    };
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    match &v {
        Value::Object(_) => {
            for (k, val) in flatten(key.unwrap_or(""), &v) {
                println!("{k} = {}", output::printable(&val));
            }
        }
        other => println!(
            "{}",
            output::printable(&other.as_str().map_or_else(|| other.to_string(), str::to_owned))
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// Every leaf of a tree with its dotted key.
fn flatten(prefix: &str, v: &Value) -> Vec<(String, String)> {
    match v {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, val)| {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, val)
            })
            .collect(),
        other => vec![(prefix.to_owned(), other.to_string())],
    }
}

/// `svc config set KEY VALUE`: VALUE as JSON when it parses, else text.
pub async fn config_set(remote: &Remote, key: &str, value: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let parsed: Value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
    let mut body = serde_json::Map::new();
    body.insert(key.to_owned(), parsed);
    let tree = call!(client.put("/api/v1/config", Value::Object(body)));
    let now = at_key(&tree, key).cloned().unwrap_or(Value::Null);
    if output::structured(remote, &tree) {
        return Ok(ExitCode::SUCCESS);
    }
    println!("{key} = {}", output::printable(&now.to_string()));
    Ok(ExitCode::SUCCESS)
}

/// `svc history summary`.
pub async fn history_summary(remote: &Remote) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get("/api/v1/history/summary", &[]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    for key in ["total_events", "session_count", "approved", "rejected", "quarantined"] {
        println!("{key:<18} {}", s(&v, key));
    }
    println!("{:<18} {}", "total_savings", money(&v, "total_savings_usd"));
    for key in ["first_event", "last_event"] {
        println!("{key:<18} {}", time::field(&v, key));
    }
    Ok(ExitCode::SUCCESS)
}

/// `svc history prune --older-than 90d`.
pub async fn history_prune(remote: &Remote, older_than: std::time::Duration) -> anyhow::Result<ExitCode> {
    let days = older_than.as_secs() / 86_400;
    if days == 0 {
        eprintln!("error: --older-than must be at least 1d");
        return Ok(ExitCode::from(2));
    }
    let client = Client::new(remote)?;
    let v = call!(client.post("/api/v1/history/prune", json!({ "max_age_days": days })));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} events older than {days} days removed", s(&v, "pruned"));
    Ok(ExitCode::SUCCESS)
}
