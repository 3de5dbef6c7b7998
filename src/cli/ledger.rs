//! `svc ledger verify | tail | export`.
//!
//! `verify` asks the running daemon (`GET /api/v1/ledger/verify`). With
//! `--file PATH` it reads that `events.redb` directly and needs no daemon
//! (the file must not be open in a running daemon). Without `--file`, when
//! the daemon cannot be reached, it falls back to the data directory's
//! `events.redb` and says so on stderr. Exit codes: 0 the chain is whole,
//! 5 it is broken, 3 neither the daemon nor the file could be read, 4 the
//! daemon answered with an error, 1 the verification itself failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use svc_engine::store::ledger::Ledger;
use tokio_tungstenite::tungstenite::Message;

use super::client::{Client, EXIT_UNREACHABLE, Failure};
use super::output::{self, s};
use super::remote::Remote;
use crate::paths;

/// Exit code of `verify` when the chain is broken.
pub const EXIT_BROKEN: u8 = 5;

pub async fn verify(remote: &Remote, file: Option<&Path>) -> anyhow::Result<ExitCode> {
    let report = match file {
        Some(path) => match verify_file(path).await {
            Ok(r) => r,
            Err(code) => return Ok(code),
        },
        None => {
            let client = Client::new(remote)?;
            match client.get("/api/v1/ledger/verify", &[]).await {
                Ok(v) => v,
                Err(Failure::Unreachable(why)) => {
                    let path = paths::data_dir().join(svc_engine::engine::EVENTS_FILE);
                    eprintln!("{why}");
                    eprintln!("verifying {} directly", path.display());
                    match verify_file(&path).await {
                        Ok(r) => r,
                        Err(code) => return Ok(code),
                    }
                }
                Err(f) => return Ok(f.report()),
            }
        }
    };
    let ok = report.get("ok").and_then(Value::as_bool) == Some(true);
    if output::structured(remote, &report) {
    } else if ok {
        println!(
            "ledger ok: {} events verified (seq {}..{}), every link and hash holds",
            s(&report, "events"),
            s(&report, "first_seq"),
            s(&report, "last_seq"),
        );
        if let Some(c) = report.get("checkpoint").filter(|c| c.is_object()) {
            println!(
                "events through seq {} were pruned; the chain continues from their last hash {}",
                s(c, "through_seq"),
                s(c, "hash"),
            );
        }
    } else {
        let broken = report.get("first_broken").cloned().unwrap_or(Value::Null);
        println!(
            "ledger BROKEN at seq {}: {} ({} events before it verified)",
            s(&broken, "seq"),
            s(&broken, "reason"),
            s(&report, "events"),
        );
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_BROKEN)
    })
}

/// Verifies a ledger file in place; on failure prints why and gives the exit code.
async fn verify_file(path: &Path) -> Result<Value, ExitCode> {
    let owned = PathBuf::from(path);
    let result = tokio::task::spawn_blocking(move || Ledger::verify_file(&owned)).await;
    match result {
        Ok(Ok(r)) => Ok(svc_api::routes::history::verify_report(&r)),
        Ok(Err(e)) => {
            let held = e.to_string().contains("already open") || e.to_string().contains("lock");
            eprintln!("error: {e}");
            if held {
                eprintln!("(a running daemon holds the file: run `svc ledger verify` without --file to ask it)");
            }
            Err(ExitCode::from(EXIT_UNREACHABLE))
        }
        Err(e) => {
            eprintln!("error: verification stopped: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// Prints the newest `n` events, oldest first; with `follow`, then every new
/// event as it is committed, reconnecting (without gap or repeat) when the
/// daemon restarts, until interrupted. Each event is a line, a JSON line
/// (`-o json`) or a YAML document (`-o yaml`), printed as it arrives.
pub async fn tail(remote: &Remote, n: u64, follow: bool) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let newest = match client.get("/api/v1/history", &[("limit", "1".to_owned())]).await {
        Ok(v) => v.pointer("/events/0/seq").and_then(Value::as_u64).unwrap_or(0),
        Err(f) => return Ok(f.report()),
    };
    let mut after = newest.saturating_sub(n);
    let ws_url = ws_url(&remote.url);
    let token = client.token().map(str::to_owned);
    loop {
        match stream(remote, &ws_url, token.as_deref(), &mut after, newest, follow).await {
            Ok(()) => return Ok(ExitCode::SUCCESS),
            Err(e) if follow => {
                eprintln!("event stream interrupted ({e}); reconnecting after seq {after}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => {
                eprintln!("error: event stream at {ws_url}: {e}");
                return Ok(ExitCode::from(EXIT_UNREACHABLE));
            }
        }
    }
}

fn ws_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    let rest = base
        .strip_prefix("https://")
        .map(|r| format!("wss://{r}"))
        .or_else(|| base.strip_prefix("http://").map(|r| format!("ws://{r}")))
        .unwrap_or_else(|| format!("ws://{base}"));
    format!("{rest}/events")
}

/// Replays from `*after` and prints; returns when `until` is reached (not
/// following) or the server closes (following: an error, to reconnect).
async fn stream(
    remote: &Remote,
    url: &str,
    token: Option<&str>,
    after: &mut u64,
    until: u64,
    follow: bool,
) -> anyhow::Result<()> {
    if !follow && *after >= until {
        return Ok(());
    }
    let mut ws = super::client::ws_connect(remote, url, token).await?;
    ws.send(Message::text(json!({ "since": *after }).to_string())).await?;
    while let Some(msg) = ws.next().await {
        let text = match msg? {
            Message::Text(t) => t,
            Message::Close(_) => break,
            _ => continue,
        };
        let v: Value = serde_json::from_str(text.as_str())?;
        if let Some(err) = v.get("error") {
            anyhow::bail!("the daemon refused the stream: {}", s(err, "message"));
        }
        let Some(seq) = v.get("seq").and_then(Value::as_u64) else {
            continue;
        };
        if seq <= *after {
            continue;
        }
        print_event(remote, &v);
        *after = seq;
        if !follow && seq >= until {
            let _ = ws.close(None).await;
            return Ok(());
        }
    }
    anyhow::bail!("the daemon closed the stream")
}

/// One event: a line for people, a JSON line or a YAML document for a program.
fn print_event(remote: &Remote, v: &Value) {
    if output::streamed(remote, v) {
        return;
    }
    let time = super::time::column(v, "timestamp");
    let crn = s(v, "crn");
    println!(
        "{:>8}  {time}  {:<20}  {:<10}  {}{}",
        s(v, "seq"),
        s(v, "event_type"),
        s(v, "actor"),
        if crn.is_empty() {
            String::new()
        } else {
            format!("{crn}  ")
        },
        s(v, "message"),
    );
}

/// `svc ledger export`: a compliance export now.
pub async fn export(remote: &Remote) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = match client.post("/api/v1/ledger/export", json!({})).await {
        Ok(v) => v,
        Err(f) => return Ok(f.report()),
    };
    if output::structured(remote, &v) {
    } else if v.get("events").and_then(Value::as_u64) == Some(0) {
        println!(
            "nothing new to export; {} holds every event through seq {}",
            s(&v, "bucket"),
            s(&v, "exported_through")
        );
    } else {
        for f in v.get("files").and_then(Value::as_array).into_iter().flatten() {
            println!(
                "{}/{}: seq {}..{} ({} events)",
                s(&v, "bucket"),
                s(f, "name"),
                s(f, "first_seq"),
                s(f, "last_seq"),
                s(f, "events")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
