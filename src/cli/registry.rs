//! `svc registry search|install|installed|remove|refresh`.

use std::process::ExitCode;

use serde_json::{Value, json};

use super::client::Client;
use super::output::{self, s, table};
use super::remote::Remote;

fn listing(remote: &Remote, v: &Value) {
    if output::structured(remote, v) {
        return;
    }
    let rows: Vec<Vec<String>> = v
        .get("packages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let mut version = s(p, "version");
            if p.get("latest").and_then(Value::as_bool) == Some(true) {
                version.push_str(" (latest)");
            }
            vec![
                s(p, "name"),
                version,
                s(p, "type"),
                s(p, "category"),
                s(p, "installed_version"),
                s(p, "problem"),
                s(p, "description"),
            ]
        })
        .collect();
    table(
        &[
            "NAME",
            "VERSION",
            "TYPE",
            "CATEGORY",
            "INSTALLED",
            "PROBLEM",
            "DESCRIPTION",
        ],
        &rows,
    );
    let cache = if v.get("from_cache").and_then(Value::as_bool) == Some(true) {
        format!(", cached {} s ago", s(v, "age_seconds"))
    } else {
        String::new()
    };
    println!("{} package(s) from {}{cache}", rows.len(), s(v, "source"));
    if let Some(w) = v.get("warning").and_then(Value::as_str) {
        eprintln!("warning: {}", output::printable(w));
    }
}

pub async fn search(remote: &Remote, q: Option<&str>, refresh: bool) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut query = vec![("q", q.unwrap_or_default().to_owned())];
    if refresh {
        query.push(("refresh", "true".to_owned()));
    }
    let v = call!(client.get("/api/v1/registry/search", &query));
    listing(remote, &v);
    Ok(ExitCode::SUCCESS)
}

pub async fn refresh(remote: &Remote) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.post("/api/v1/registry/refresh", json!({})));
    listing(remote, &v);
    Ok(ExitCode::SUCCESS)
}

pub async fn install(remote: &Remote, name: &str, activate: bool, force: bool) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let body = json!({ "name": name, "activate": activate, "force": force });
    let v = call!(client.post("/api/v1/registry/install", body));
    if output::structured(remote, &v) {
    } else {
        println!("{}", s(&v, "message"));
        if let Some(p) = v.get("package") {
            println!("sha256 {}  {}", s(p, "sha256"), s(p, "path"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn installed(remote: &Remote) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get("/api/v1/registry/installed", &[]));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            vec![
                s(p, "name"),
                s(p, "type"),
                s(p, "version"),
                s(p, "category"),
                if p.get("active").and_then(Value::as_bool) == Some(true) {
                    "yes".into()
                } else {
                    "no".into()
                },
                s(p, "source"),
            ]
        })
        .collect();
    table(&["NAME", "TYPE", "VERSION", "CATEGORY", "ACTIVE", "SOURCE"], &rows);
    Ok(ExitCode::SUCCESS)
}

pub async fn remove(remote: &Remote, name: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.post("/api/v1/registry/remove", json!({ "name": name })));
    if output::structured(remote, &v) {
    } else {
        println!("removed {} {} {}", s(&v, "type"), s(&v, "name"), s(&v, "version"));
    }
    Ok(ExitCode::SUCCESS)
}
