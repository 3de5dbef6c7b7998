//! The client verbs: stats, nodes, node, history, plugins, ask, mcp.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::args::HistoryList;
use super::client::{Client, encode_segment, pages};
use super::output::{self, money, s, table};
use super::page::Page;
use super::remote::{Format, Remote};
use super::time;

/// `svc ask`: the answer's text as it streams, the tools it called on
/// stderr, its sources at the end; for a program each event as it comes,
/// a JSON line as sent (`-o json`) or a YAML document (`-o yaml`). An
/// answer that stops early exits with [`super::client::EXIT_API_ERROR`].
pub async fn ask(remote: &Remote, question: &str, conversation: Option<&str>) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let client = Client::new(remote)?;
    let mut body = serde_json::json!({ "question": question });
    if let Some(c) = conversation {
        body["conversation_id"] = Value::from(c);
    }
    let mut failed = None;
    let mut sources = Value::Null;
    let streamed = client
        .post_lines("/api/v1/cortex/assimilate", body, |line| {
            if line.is_empty() {
                return;
            }
            let json = remote.format() == Format::Json;
            if json {
                // The line as sent.
                println!("{line}");
                let _ = std::io::stdout().flush();
            }
            let Ok(event) = serde_json::from_str::<Value>(line) else {
                if !json {
                    eprintln!("(an answer line that is not JSON: {})", output::printable(line));
                }
                return;
            };
            let text = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            match event.get("type").and_then(Value::as_str) {
                Some("sources") => sources = event.clone(),
                Some("error") => failed = Some(text("message")),
                _ => {}
            }
            if remote.machine() {
                if !json {
                    output::streamed(remote, &event);
                }
                return;
            }
            match event.get("type").and_then(Value::as_str) {
                Some("start") => eprintln!(
                    "[{} answers, conversation {}]",
                    text("provider"),
                    text("conversation_id")
                ),
                Some("tool_call") => eprintln!(
                    "[reading: {} {}]",
                    text("name"),
                    event.get("args").unwrap_or(&Value::Null)
                ),
                Some("tool_result") if event.get("ok") == Some(&Value::Bool(false)) => {
                    eprintln!("[{} failed: {}]", text("name"), text("error"))
                }
                Some("text") => {
                    print!("{}", text("text"));
                    let _ = std::io::stdout().flush();
                }
                _ => {}
            }
        })
        .await;
    if let Err(f) = streamed {
        return Ok(f.report());
    }
    if !remote.machine() {
        println!();
        let crns = sources.get("crns").and_then(Value::as_array).map_or(0, Vec::len);
        let queries: Vec<&str> = sources
            .get("queries")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !queries.is_empty() {
            eprintln!("[sources: {crns} resources; {}]", queries.join(", "));
        }
    }
    if let Some(m) = failed {
        eprintln!("error: the answer stopped: {m}");
        return Ok(ExitCode::from(super::client::EXIT_API_ERROR));
    }
    Ok(ExitCode::SUCCESS)
}

/// `svc mcp`: the Model Context Protocol on stdin and stdout, one JSON-RPC
/// message a line; each tool call is a request to the daemon with the token.
/// Nothing but the protocol goes to stdout.
pub async fn mcp(remote: &Remote) -> anyhow::Result<ExitCode> {
    use svc_api::assistant::run::Outcome;
    use svc_api::assistant::{mcp, tools};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    let client = Client::new(remote)?;
    let call = |name: String, args: Value| {
        let client = &client;
        async move {
            let request = match tools::request(&name, &args) {
                Ok(r) => r,
                Err(e) => return Outcome::failed(e.0),
            };
            let answer = match request.method {
                tools::Method::Get => client.get(&request.path, &[]).await,
                tools::Method::Post => client.post(&request.path, request.body.unwrap_or(Value::Null)).await,
            };
            match answer {
                Ok(value) => Outcome { ok: true, value },
                Err(super::client::Failure::Api { status, message, .. }) => {
                    Outcome::failed(format!("{}: {message}", status.as_u16()))
                }
                Err(super::client::Failure::Unreachable(m)) => Outcome::failed(m),
            }
        }
    };
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(answer) = mcp::handle_body(line.as_bytes(), &call).await {
            let mut text = answer.to_string();
            text.push('\n');
            out.write_all(text.as_bytes()).await?;
            out.flush().await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn stats(remote: &Remote) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get("/api/v1/graph/stats", &[]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "nodes          {} active, {} logically deleted",
        s(&v, "active_nodes"),
        s(&v, "logically_deleted")
    );
    println!("edges          {}", s(&v, "total_edges"));
    println!("waste          {} nodes", s(&v, "waste_nodes"));
    println!("monthly cost   {}", money(&v, "total_cost_usd_mo"));
    println!("savings        {}/mo projected", money(&v, "projected_savings_usd_mo"));
    if let Some(p) = v.get("providers").and_then(Value::as_object) {
        let list: Vec<String> = p.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("providers      {}", list.join(", "));
    }
    for src in v.get("sources").and_then(Value::as_array).into_iter().flatten() {
        println!("source         {}", source_line(src));
    }
    if v.get("simulated").and_then(Value::as_bool) == Some(true) {
        println!("simulated      yes: this graph holds a simulated estate, not a real account");
    } else {
        println!("simulated      no");
    }
    Ok(ExitCode::SUCCESS)
}

/// One source of the graph: its name, providers, whether it is simulated
/// and how its last scan went.
fn source_line(src: &Value) -> String {
    let providers: Vec<&str> = src
        .get("providers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let kind = if src.get("simulated").and_then(Value::as_bool) == Some(true) {
        "simulated"
    } else {
        "real"
    };
    let last = match src.get("last_scan").filter(|l| !l.is_null()) {
        None => "not in the last scan".to_owned(),
        Some(l) if l.get("ok").and_then(Value::as_bool) == Some(true) => format!(
            "last scan {} ok at {}, {} nodes",
            s(l, "scan_seq"),
            time::field(l, "finished_at"),
            s(l, "nodes")
        ),
        Some(l) => format!(
            "last scan {} FAILED at {}: {}",
            s(l, "scan_seq"),
            time::field(l, "finished_at"),
            s(l, "error")
        ),
    };
    format!("{} ({kind}; {}): {last}", s(src, "name"), providers.join(", "))
}

pub async fn nodes(remote: &Remote, provider: Option<&str>, page: &Page) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut query = Vec::new();
    if let Some(p) = provider {
        query.push(("provider", p.to_owned()));
    }
    let v = call!(pages(&client, "/api/v1/graph/nodes", &query, "nodes", page));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = v
        .get("nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|n| {
            let waste = if n.get("is_waste").and_then(Value::as_bool) == Some(true) {
                "waste"
            } else {
                ""
            };
            let mut row = vec![s(n, "type"), s(n, "state"), money(n, "cost_usd_mo"), waste.to_owned()];
            if remote.wide() {
                row.extend([
                    s(n, "region"),
                    s(n, "account"),
                    s(n, "reachability"),
                    s(n, "risk_score"),
                ]);
            }
            row.push(s(n, "crn"));
            row
        })
        .collect();
    let mut header = vec!["TYPE", "STATE", "COST/MO", ""];
    if remote.wide() {
        header.extend(["REGION", "ACCOUNT", "REACHABILITY", "RISK"]);
    }
    header.push("CRN");
    table(&header, &rows);
    println!("{} of {} nodes", rows.len(), s(&v, "total"));
    next_page(&v);
    Ok(ExitCode::SUCCESS)
}

pub async fn node(remote: &Remote, crn: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get(&format!("/api/v1/graph/nodes/{}", encode_segment(crn)), &[]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    for key in ["crn", "type", "provider", "region", "account", "state"] {
        println!("{key:<14} {}", s(&v, key));
    }
    println!("{:<14} {}", "cost", money(&v, "cost_usd_mo"));
    println!("{:<14} {} {}", "waste", s(&v, "is_waste"), s(&v, "waste_reason"));
    for key in ["reachability", "risk_score", "phase"] {
        println!("{key:<14} {}", s(&v, key));
    }
    for key in ["valid_from", "valid_to"] {
        println!("{key:<14} {}", time::field(&v, key));
    }
    for (title, key) in [("tags", "tags"), ("properties", "properties")] {
        if let Some(map) = v.get(key).and_then(Value::as_object).filter(|m| !m.is_empty()) {
            println!("{title}:");
            for (k, val) in map {
                println!(
                    "  {k} = {}",
                    val.as_str().map(str::to_owned).unwrap_or_else(|| val.to_string())
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the next page starts, when there is one (`--cursor`).
fn next_page(v: &Value) {
    if let Some(c) = super::client::next_cursor(v) {
        eprintln!("more: --cursor {c} (or --all)");
    }
}

pub async fn history(remote: &Remote, list: &HistoryList) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut query = Vec::new();
    if let Some(t) = &list.event_type {
        query.push(("type", t.clone()));
    }
    if let Some(t) = &list.since {
        query.push(("since", t.clone()));
    }
    if let Some(c) = &list.crn {
        query.push(("crn", c.clone()));
    }
    let v = call!(pages(&client, "/api/v1/history", &query, "events", &list.page));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = v
        .get("events")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let mut row = vec![
                s(e, "id"),
                time::column(e, "ts"),
                s(e, "type"),
                s(e, "status"),
                s(e, "actor"),
            ];
            if remote.wide() {
                row.extend([s(e, "crn"), s(e, "session_id")]);
            }
            row.push(s(e, "message"));
            row
        })
        .collect();
    let mut header = vec!["SEQ", "TIME", "TYPE", "STATUS", "ACTOR"];
    if remote.wide() {
        header.extend(["CRN", "SESSION ID"]);
    }
    header.push("MESSAGE");
    table(&header, &rows);
    println!("{} of {} events", rows.len(), s(&v, "total"));
    next_page(&v);
    Ok(ExitCode::SUCCESS)
}

pub async fn plugins_list(remote: &Remote) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get("/api/v1/plugins", &[]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let active = if p.get("active").and_then(Value::as_bool) == Some(true) {
                "yes"
            } else {
                "no"
            };
            vec![
                s(p, "name"),
                s(p, "role"),
                s(p, "category"),
                active.to_owned(),
                s(p, "status"),
                s(p, "path"),
            ]
        })
        .collect();
    table(&["NAME", "ROLE", "CATEGORY", "ACTIVE", "STATUS", "PATH"], &rows);
    Ok(ExitCode::SUCCESS)
}

pub async fn plugins_toggle(remote: &Remote, name: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.post("/api/v1/plugins/toggle", json!({ "name": name })));
    if output::structured(remote, &v) {
    } else {
        let active = v.get("active").and_then(Value::as_bool) == Some(true);
        println!(
            "{} is now {} (from the next scan)",
            s(&v, "name"),
            if active { "active" } else { "inactive" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
