//! `svc drift` and `svc provenance`: the estate against its Terraform
//! states, and where a resource is declared.

use std::process::ExitCode;

use serde_json::Value;

use super::client::Client;
use super::output::{self, money, printable, s, table};
use super::remote::Remote;

fn list(v: &Value, key: &str) -> Vec<Value> {
    v[key].as_array().cloned().unwrap_or_default()
}

pub async fn drift(remote: &Remote, crn: Option<&str>, limit: usize) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let mut query = vec![("limit", limit.to_string())];
    if let Some(c) = crn {
        query.push(("crn", c.to_owned()));
    }
    let v = call!(client.get("/api/v1/drift/report", &query));
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    if v["configured"] != true {
        println!("No Terraform state is configured: set iac.terraform_states (svc config, or config.toml).");
        return Ok(ExitCode::SUCCESS);
    }
    for st in list(&v, "states") {
        match st["error"].as_str() {
            Some(e) => println!("state {}: cannot be read: {}", s(&st, "source"), printable(e)),
            None => println!(
                "state {}: serial {}, Terraform {}, {} resources",
                s(&st, "source"),
                s(&st, "serial"),
                s(&st, "terraform_version"),
                s(&st, "resources")
            ),
        }
    }
    let t = &v["totals"];
    println!(
        "declared {} ({} of types svc maps), in sync {}, changed {} ({} attributes), gone {}, unmanaged {}, outside the scans {}",
        s(t, "declared"),
        s(t, "mapped"),
        s(t, "in_sync"),
        s(t, "changed"),
        s(t, "attributes"),
        s(t, "gone"),
        s(t, "unmanaged"),
        s(t, "outside_scans")
    );
    let gone = list(&v, "gone");
    if !gone.is_empty() {
        println!("\ngone from the estate:");
        for g in &gone {
            let by = if g["removed_by_svc"] == true {
                " (removed by svc)"
            } else {
                ""
            };
            println!("  {}  {}{by}", s(g, "address"), s(g, "crn"));
            println!("    {}", s(&g["code_change"], "summary"));
        }
    }
    let changed = list(&v, "changed");
    if !changed.is_empty() {
        println!("\nchanged outside Terraform:");
        for c in &changed {
            println!("  {}  {}", s(c, "address"), s(c, "crn"));
            for a in list(c, "attributes") {
                println!(
                    "    {}: declared {}, live {}",
                    s(&a, "attribute"),
                    printable(&a["declared"].to_string()),
                    printable(&a["live"].to_string())
                );
            }
        }
    }
    let unmanaged = list(&v, "unmanaged");
    if !unmanaged.is_empty() {
        println!("\nnot declared by any state (most expensive first):");
        let rows: Vec<Vec<String>> = unmanaged
            .iter()
            .map(|u| vec![money(u, "cost_usd_mo"), s(u, "terraform_type"), s(u, "crn")])
            .collect();
        table(&["COST/MO", "TERRAFORM TYPE", "CRN"], &rows);
    }
    if crn.is_some() && v["provenance"].is_object() {
        println!();
        print_provenance(&v["provenance"]);
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn provenance(remote: &Remote, crn: &str) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let v = call!(client.get("/api/v1/provenance", &[("crn", crn.to_owned())]));
    if output::structured(remote, &v) {
    } else {
        print_provenance(&v);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_provenance(p: &Value) {
    println!("{}", s(p, "crn"));
    if p["managed"] != true {
        println!("  not declared by any configured Terraform state");
        return;
    }
    println!("  address     {}", s(p, "address"));
    println!("  state       {}", s(p, "state"));
    if !s(p, "file").is_empty() {
        println!("  declared    {}:{}-{}", s(p, "file"), s(p, "line"), s(p, "end_line"));
    }
    if !s(p, "commit").is_empty() {
        println!("  written by  {} <{}>", s(p, "author"), s(p, "email"));
        let when = super::time::column(p, "time");
        println!("  commit      {} {} ({when})", s(p, "commit"), s(p, "summary"));
    }
    if let Some(why) = p["missing"].as_str() {
        println!("  {}", printable(why));
    }
}
