//! The CLI verbs against a running daemon (found through `SVC_URL`, the token
//! through `SVC_DATA_DIR`), as tables and as `--json`, and against no
//! daemon at all.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use common::{Daemon, run_cli};
use serde_json::Value;

fn parse(verb: &str, stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("`svc {verb} --json` printed no JSON ({e}):\n{stdout}"))
}

#[tokio::test]
async fn verbs_print_what_the_api_answers() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 500).await;
    let api = d.api();
    let base = d.base();
    let data = dir.path().to_str().expect("utf-8 path").to_owned();
    let env = [("SVC_URL", base.as_str()), ("SVC_DATA_DIR", data.as_str())];
    let cli = |args: Vec<&'static str>| async move {
        let (code, out, err) = run_cli(&args, &env).await;
        assert_eq!(code, Some(0), "svc {args:?} failed:\n{out}\n{err}");
        out
    };

    // The CLI does not retry a refused scan: make sure the scan at start has
    // let go of the engine before the CLI asks for one.
    api.scan_wait().await;

    // scan
    let out = cli(vec!["scan"]).await;
    assert!(out.contains("scan 3 completed"), "scan prints its number:\n{out}");
    let stats = api.get_ok("/api/v1/graph/stats").await;
    assert!(
        out.contains(&format!("{} nodes", stats["active_nodes"])),
        "scan prints the node count:\n{out}"
    );
    let report = parse("scan", &cli(vec!["scan", "--json"]).await);
    assert_eq!(report["scan_seq"], 4);
    assert_eq!(
        report["sources"][0]["ok"], true,
        "the scan followed to its end: {report}"
    );
    let stats = api.get_ok("/api/v1/graph/stats").await;
    assert_eq!(report["node_count"], stats["active_nodes"]);
    let last = api
        .get_query_ok("/api/v1/history", &[("type", "SCAN_COMPLETED"), ("limit", "1")])
        .await;
    assert_eq!(
        last["events"][0]["meta"]["scan_seq"], 4,
        "the CLI's scans reached the ledger"
    );
    assert_eq!(
        report, last["events"][0]["meta"],
        "-o json prints the scan's report as recorded"
    );

    // stats
    let out = cli(vec!["stats"]).await;
    assert!(
        out.contains(&format!("{} active", stats["active_nodes"])),
        "stats:\n{out}"
    );
    assert!(
        out.contains(&format!("aws {}", stats["providers"]["aws"])),
        "stats lists providers:\n{out}"
    );
    assert_eq!(
        parse("stats", &cli(vec!["stats", "--json"]).await),
        stats,
        "stats --json is graph/stats"
    );

    // nodes
    let page = api
        .get_query_ok("/api/v1/graph/nodes", &[("provider", "aws"), ("limit", "5")])
        .await;
    let crns: Vec<&str> = page["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["crn"].as_str().expect("crn"))
        .collect();
    assert_eq!(crns.len(), 5);
    let out = cli(vec!["nodes", "--provider", "aws", "--limit", "5"]).await;
    for crn in &crns {
        assert!(out.contains(crn), "nodes lists {crn}:\n{out}");
    }
    assert_eq!(
        out.lines().filter(|l| l.contains("crn:svc:")).count(),
        5,
        "five rows:\n{out}"
    );
    assert!(
        out.contains(&format!("5 of {} nodes", stats["providers"]["aws"])),
        "nodes footer:\n{out}"
    );
    let json = parse(
        "nodes",
        &cli(vec!["nodes", "--provider", "aws", "--limit", "5", "--json"]).await,
    );
    assert_eq!(json, page, "nodes --json is graph/nodes");
    assert!(
        json["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .all(|n| n["provider"] == "aws")
    );

    // node, also one whose id holds a `/`
    let all = api.all_nodes(None).await;
    let slash = all
        .iter()
        .find(|n| n["physical_id"].as_str().is_some_and(|p| p.contains('/')))
        .expect("an id with /");
    for crn in [crns[0].to_owned(), slash["crn"].as_str().expect("crn").to_owned()] {
        let want = api
            .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(&crn)))
            .await;
        let (code, out, err) = run_cli(&["node", &crn], &env).await;
        assert_eq!(code, Some(0), "svc node {crn}:\n{out}\n{err}");
        assert!(out.contains(&crn), "node prints its crn:\n{out}");
        assert!(
            out.contains(want["type"].as_str().expect("type")),
            "node prints its type:\n{out}"
        );
        let (code, out, err) = run_cli(&["node", &crn, "--json"], &env).await;
        assert_eq!(code, Some(0), "svc node --json {crn}:\n{out}\n{err}");
        assert_eq!(parse("node", &out), want, "node --json is graph/nodes/{{crn}}");
    }
    let (code, _, err) = run_cli(
        &["node", "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0nothere"],
        &env,
    )
    .await;
    assert_eq!(code, Some(4), "an unknown node is an API error:\n{err}");
    assert!(
        err.contains("vol-0nothere") && err.contains("404"),
        "the error names the crn and status:\n{err}"
    );

    // history
    let want = api
        .get_query_ok("/api/v1/history", &[("type", "SCAN_COMPLETED"), ("limit", "50")])
        .await;
    let out = cli(vec!["history", "--type", "SCAN_COMPLETED"]).await;
    assert_eq!(
        out.lines().filter(|l| l.contains("SCAN_COMPLETED")).count(),
        4,
        "four scans:\n{out}"
    );
    assert!(out.contains("4 of 4 events"), "history footer:\n{out}");
    let json = parse(
        "history",
        &cli(vec!["history", "--type", "SCAN_COMPLETED", "--json"]).await,
    );
    assert_eq!(json, want, "history --json is the history endpoint");
}

#[tokio::test]
async fn verbs_say_when_no_daemon_is_running() {
    let dir = common::data_dir();
    std::fs::write(dir.path().join("token"), "0".repeat(64)).expect("token");
    let data = dir.path().to_str().expect("utf-8 path").to_owned();
    let env = [("SVC_URL", "http://127.0.0.1:1"), ("SVC_DATA_DIR", data.as_str())];
    let crn = "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0abc";
    let verbs: [&[&str]; 5] = [
        &["scan"],
        &["stats"],
        &["nodes", "--provider", "aws", "--limit", "5"],
        &["node", crn],
        &["history", "--type", "SCAN_COMPLETED"],
    ];
    for verb in verbs {
        for json in [false, true] {
            let mut args = verb.to_vec();
            if json {
                args.push("--json");
            }
            let (code, out, err) = run_cli(&args, &env).await;
            assert!(
                code.is_some_and(|c| c != 0),
                "svc {args:?} exits non-zero without a daemon: {code:?}"
            );
            assert!(
                err.contains("not running"),
                "svc {args:?} says the daemon is not running:\n{out}\n{err}"
            );
        }
    }
}

/// The client flags of every verb that talks to a daemon.
const CLIENT_FLAGS: [&str; 5] = ["--url", "--token", "--ca-file", "--output", "--json"];

#[tokio::test]
async fn client_flags_are_for_the_verbs_that_talk_to_a_daemon() {
    let dir = common::data_dir();
    let data = dir.path().to_str().expect("utf-8 path").to_owned();
    let env = [("SVC_DATA_DIR", data.as_str())];

    for help in [
        vec!["daemon", "--help"],
        vec!["worker", "--help"],
        vec!["help", "daemon"],
        vec!["completion", "--help"],
        vec!["man", "--help"],
    ] {
        let (code, out, err) = run_cli(&help, &env).await;
        assert_eq!(code, Some(0), "svc {help:?}:\n{out}\n{err}");
        assert!(out.contains("Usage: svc "), "svc {help:?}:\n{out}");
        for flag in CLIENT_FLAGS {
            assert!(!out.contains(flag), "svc {help:?} does not show {flag}:\n{out}");
        }
    }
    let (_, out, _) = run_cli(&["daemon", "--help"], &env).await;
    assert!(out.contains("--listen") && out.contains("--log-format"), "{out}");
    for help in [
        vec!["stats", "--help"],
        vec!["ledger", "tail", "--help"],
        vec!["help", "ask"],
    ] {
        let (code, out, err) = run_cli(&help, &env).await;
        assert_eq!(code, Some(0), "svc {help:?}:\n{out}\n{err}");
        for flag in CLIENT_FLAGS {
            assert!(out.contains(flag), "svc {help:?} shows {flag}:\n{out}");
        }
    }

    // Given to a command that is no client they are a usage error saying
    // why, before or after the verb; it starts nothing.
    for (args, flag) in [
        (
            vec!["daemon", "--listen", "127.0.0.1:0", "--url", "http://127.0.0.1:1"],
            "--url",
        ),
        (vec!["--token", "t", "daemon", "--listen", "127.0.0.1:0"], "--token"),
        (vec!["-o", "json", "daemon", "--listen", "127.0.0.1:0"], "-o/--output"),
        (
            vec![
                "worker",
                "--id",
                "w1",
                "--tls-cert",
                "c.pem",
                "--tls-key",
                "k.pem",
                "--tls-ca",
                "ca.pem",
                "--plugin-dir",
                "plugins",
                "--json",
            ],
            "--json",
        ),
        (vec!["completion", "bash", "--ca-file", "ca.pem"], "--ca-file"),
    ] {
        let (code, out, err) = run_cli(&args, &env).await;
        assert_eq!(code, Some(2), "svc {args:?} is a usage error:\n{out}\n{err}");
        let verb = args
            .iter()
            .find(|a| ["daemon", "worker", "completion"].contains(a))
            .expect("a verb");
        assert!(
            err.contains(&format!("`svc {verb}` does not take {flag}")),
            "svc {args:?} says which flag it does not take:\n{err}"
        );
    }
    // From the environment (a shell set up for the client verbs) they are ignored.
    let client_env = [
        ("SVC_DATA_DIR", data.as_str()),
        ("SVC_URL", "http://127.0.0.1:1"),
        ("SVC_TOKEN", "t"),
    ];
    let (code, out, err) = run_cli(&["completion", "bash"], &client_env).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("svc"), "{out}");
}
