//! `svc scan`: starts a scan and follows it through
//! `GET /api/v1/engine/scan/progress`, four times a second, until the
//! daemon reports it finished: a progress bar when stderr is a terminal, a
//! line per phase otherwise. Ctrl-C stops following, not the scan. A daemon
//! without the progress endpoint is waited on in one blocking request.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use http_client::StatusCode;
use serde_json::{Value, json};

use super::client::{Client, Failure};
use super::output::{self, money, s};
use super::remote::Remote;

const PROGRESS: &str = "/api/v1/engine/scan/progress";
const POLL: Duration = Duration::from_millis(250);

/// Exit code when the user stopped following (the scan goes on).
const EXIT_INTERRUPTED: u8 = 130;

pub async fn run(remote: &Remote, wait: bool, timeout: Option<Duration>) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut body = json!({ "wait": false });
    if let Some(t) = timeout {
        body["timeout"] = json!(humantime::format_duration(t).to_string());
    }
    if wait {
        match client.get(PROGRESS, &[]).await {
            Ok(_) => {}
            Err(f) if f.status() == Some(StatusCode::NOT_FOUND) => return blocking(remote, body).await,
            Err(f) => return Ok(f.report()),
        }
    }
    let started = match client.post("/api/v1/engine/scan", body).await {
        Ok(v) => v,
        Err(f) => return Ok(f.report()),
    };
    if !wait {
        if !output::structured(remote, &started) {
            println!("scan {} started", s(&started, "scan_seq"));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let seq = started.get("scan_seq").and_then(Value::as_u64).unwrap_or(0);
    follow(remote, &client, seq).await
}

/// Polls the progress until scan `seq` is the last finished one.
async fn follow(remote: &Remote, client: &Client, seq: u64) -> anyhow::Result<ExitCode> {
    let mut view = View::new();
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let progress = match client.get(PROGRESS, &[]).await {
            Ok(v) => v,
            Err(f) => {
                view.clear();
                return Ok(f.report());
            }
        };
        let last = &progress["last_scan"];
        if last.get("scan_seq").and_then(Value::as_u64).is_some_and(|l| l >= seq) {
            view.clear();
            if last.get("ok").and_then(Value::as_bool) == Some(true)
                && let Some(report) = completed(client, seq).await
            {
                return Ok(report_of(remote, &report));
            }
            return Ok(finished(remote, last));
        }
        view.show(&progress);
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = &mut interrupted => {
                view.clear();
                eprintln!(
                    "stopped following; scan {seq} goes on in the daemon: see how it ended with \
                     `svc history --type SCAN_COMPLETED --limit 1`"
                );
                return Ok(ExitCode::from(EXIT_INTERRUPTED));
            }
        }
    }
}

/// How long the scan's SCAN_COMPLETED may take to reach the ledger after
/// the scan is over (it is appended once the scan lets go of the sources).
const RECORDED_WITHIN: Duration = Duration::from_secs(30);

/// The report of committed scan `seq`, as its SCAN_COMPLETED event holds
/// it in `meta` (the answer a waiting `POST /api/v1/engine/scan` gives); `None` when
/// the ledger does not show it in time.
async fn completed(client: &Client, seq: u64) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + RECORDED_WITHIN;
    let query = [("type", "SCAN_COMPLETED".to_owned()), ("limit", "20".to_owned())];
    loop {
        let page = client.get("/api/v1/history", &query).await.ok()?;
        let found = page["events"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| &e["meta"])
            .find(|p| p.get("scan_seq").and_then(Value::as_u64) == Some(seq));
        if let Some(p) = found {
            return Some(p.clone());
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Prints a committed scan's report; 0.
fn report_of(remote: &Remote, v: &Value) -> ExitCode {
    if !output::structured(remote, v) {
        print_report(v);
    }
    ExitCode::SUCCESS
}

/// Prints the finished scan; 0 when it went well, 1 when it failed.
fn finished(remote: &Remote, last: &Value) -> ExitCode {
    let ok = last.get("ok").and_then(Value::as_bool) == Some(true);
    if !output::structured(remote, last) {
        println!(
            "scan {} {} in {} ms: {} nodes, {} edges",
            s(last, "scan_seq"),
            if ok { "completed" } else { "FAILED" },
            s(last, "duration_ms"),
            s(last, "node_count"),
            s(last, "edge_count"),
        );
    }
    if !ok {
        eprintln!("error: scan {} failed: {}", s(last, "scan_seq"), s(last, "error"));
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// How progress is drawn on stderr: a bar redrawn in place on a terminal,
/// else a line each time the phase changes.
struct View {
    terminal: bool,
    drawn: bool,
    phase: Option<String>,
}

impl View {
    fn new() -> View {
        View {
            terminal: std::io::stderr().is_terminal(),
            drawn: false,
            phase: None,
        }
    }

    fn show(&mut self, p: &Value) {
        let phase = p.get("phase").and_then(Value::as_str).map(output::printable);
        let index = p.get("phase_index").and_then(Value::as_u64).unwrap_or(0);
        let count = p.get("phase_count").and_then(Value::as_u64).unwrap_or(10).max(1);
        let counts = format!("{} nodes, {} edges", s(p, "nodes"), s(p, "edges"));
        let elapsed = p.get("elapsed_ms").and_then(Value::as_u64).unwrap_or(0) as f64 / 1000.0;
        let name = phase.clone().unwrap_or_else(|| "starting".to_owned());
        if self.terminal {
            let width = 20;
            let done = (index.min(count) * width / count) as usize;
            let bar = format!("{}{}", "#".repeat(done), "-".repeat(width as usize - done));
            eprint!(
                "\r[{bar}] {index}/{count} {name}  {counts}  {elapsed:.1}s{}\x1b[K",
                sources(p)
            );
            let _ = std::io::stderr().flush();
            self.drawn = true;
        } else if phase.is_some() && phase != self.phase {
            eprintln!("phase {index}/{count} {name}: {counts} ({elapsed:.1}s)");
        }
        self.phase = phase;
    }

    fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[K");
            let _ = std::io::stderr().flush();
            self.drawn = false;
        }
    }
}

/// The sources still scanning or failed, for the bar.
fn sources(p: &Value) -> String {
    let list: Vec<String> = p
        .get("sources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|src| s(src, "state") != "done")
        .map(|src| format!("{} {}", s(src, "name"), s(src, "state")))
        .collect();
    if list.is_empty() {
        String::new()
    } else {
        format!("  [{}]", list.join(", "))
    }
}

/// A daemon without the progress endpoint: one request that answers when
/// the scan has finished.
async fn blocking(remote: &Remote, mut body: Value) -> anyhow::Result<ExitCode> {
    let client = Client::patient(remote)?;
    body["wait"] = json!(true);
    eprintln!("scanning (this daemon reports no progress; waiting for the scan to finish)");
    let v = match client.post("/api/v1/engine/scan", body).await {
        Ok(v) => v,
        Err(f @ Failure::Api { .. }) | Err(f @ Failure::Unreachable(_)) => return Ok(f.report()),
    };
    Ok(report_of(remote, &v))
}

/// A scan's report for people: totals, changes, the sources that failed.
fn print_report(v: &Value) {
    println!(
        "scan {} completed in {} ms: {} nodes, {} edges, {} waste ({}/mo of {}/mo)",
        s(v, "scan_seq"),
        s(v, "duration_ms"),
        s(v, "node_count"),
        s(v, "edge_count"),
        s(v, "waste_count"),
        money(v, "waste_usd_mo"),
        money(v, "cost_usd_mo"),
    );
    println!(
        "changes: {} added, {} changed, {} deleted",
        s(v, "nodes_added"),
        s(v, "nodes_changed"),
        s(v, "nodes_deleted")
    );
    for src in v.get("sources").and_then(Value::as_array).into_iter().flatten() {
        if src.get("ok").and_then(Value::as_bool) == Some(false) {
            println!("source {} failed: {}", s(src, "name"), s(src, "error"));
        }
    }
}
