//! The command line against a real daemon: every read verb in each output
//! format (`-o json` is the API's answer, `-o yaml` the same tree, the
//! table has its header), the global flags before and after the verb,
//! paging, durations and times, the exit codes, completions and manual
//! pages, and a daemon behind HTTPS.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::sync::Arc;

use common::{Daemon, run_cli};
use serde_json::{Value, json};

/// The environment that points the CLI at `d` with its admin token.
fn env_of(d: &Daemon) -> Vec<(&'static str, String)> {
    vec![
        ("SVC_URL", d.base()),
        ("SVC_TOKEN", d.token.clone()),
        ("SVC_DATA_DIR", d.data_dir.display().to_string()),
    ]
}

/// Runs the CLI; the exit code, stdout and stderr.
async fn svc(args: &[&str], env: &[(&'static str, String)]) -> (Option<i32>, String, String) {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_cli(args, &env).await
}

/// Runs the CLI, which must succeed; its stdout.
async fn ok(args: &[&str], env: &[(&'static str, String)]) -> String {
    let (code, out, err) = svc(args, env).await;
    assert_eq!(code, Some(0), "svc {args:?} failed:\n{out}\n{err}");
    out
}

fn from_json(args: &[&str], out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("svc {args:?} printed no JSON ({e}):\n{out}"))
}

fn from_yaml(args: &[&str], out: &str) -> Value {
    serde_yaml_ng::from_str(out).unwrap_or_else(|e| panic!("svc {args:?} printed no YAML ({e}):\n{out}"))
}

/// `args` in every format: JSON and YAML are `want`, the table starts
/// with `header` and the wide table with `wide_header` when given.
async fn formats(env: &[(&'static str, String)], args: &[&str], want: &Value, header: &str, wide_header: Option<&str>) {
    let with = |f: &'static str| {
        let mut a = args.to_vec();
        a.extend(["-o", f]);
        a
    };
    let a = with("json");
    assert_eq!(
        &from_json(&a, &ok(&a, env).await),
        want,
        "svc {a:?} is the API's answer"
    );
    let a = with("yaml");
    assert_eq!(
        &from_yaml(&a, &ok(&a, env).await),
        want,
        "svc {a:?} is the API's answer"
    );
    let a = with("table");
    let table = ok(&a, env).await;
    assert!(table.contains(header), "svc {a:?} has {header:?}:\n{table}");
    assert!(
        serde_json::from_str::<Value>(&table).is_err(),
        "a table is no JSON:\n{table}"
    );
    if let Some(h) = wide_header {
        let a = with("wide");
        let wide = ok(&a, env).await;
        assert!(wide.contains(h), "svc {a:?} has {h:?}:\n{wide}");
        assert!(!table.contains(h), "the narrow table has no {h:?}:\n{table}");
    }
}

fn first_crn(page: &Value) -> String {
    page["nodes"][0]["crn"].as_str().expect("a node").to_owned()
}

#[tokio::test]
async fn read_verbs_print_the_api_answer_in_every_format() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 300).await;
    let api = d.api();
    let env = env_of(&d);
    api.scan_wait().await;

    let stats = api.get_ok("/api/v1/graph/stats").await;
    formats(&env, &["stats"], &stats, "active", None).await;
    // The global flags before the verb, after it, and `--json`.
    for args in [
        vec!["-o", "json", "stats"],
        vec!["stats", "-o", "json"],
        vec!["--json", "stats"],
        vec!["stats", "--json"],
        vec!["--output=json", "stats"],
    ] {
        assert_eq!(from_json(&args, &ok(&args, &env).await), stats, "svc {args:?}");
    }
    let url_first = ["--url", &d.base(), "-o", "json", "stats"];
    let no_url: Vec<(&'static str, String)> = env.iter().filter(|(k, _)| *k != "SVC_URL").cloned().collect();
    assert_eq!(from_json(&url_first, &ok(&url_first, &no_url).await), stats);
    let url_last = ["stats", "--url", &d.base(), "--json"];
    assert_eq!(from_json(&url_last, &ok(&url_last, &no_url).await), stats);

    let page = api.get_query_ok("/api/v1/graph/nodes", &[("limit", "5")]).await;
    formats(&env, &["nodes", "--limit", "5"], &page, "TYPE", Some("REGION")).await;
    let crn = first_crn(&page);
    let node = api
        .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(&crn)))
        .await;
    formats(&env, &["node", &crn], &node, "valid_from", None).await;

    let versions = api
        .get_query_ok(
            &format!("/api/v1/graph/nodes/{}/versions", common::encode_segment(&crn)),
            &[("limit", "100")],
        )
        .await;
    formats(&env, &["versions", &crn], &versions, "FROM", Some("REACHABILITY")).await;
    let history = api.get_query_ok("/api/v1/history", &[("limit", "10")]).await;
    formats(&env, &["history", "--limit", "10"], &history, "SEQ", Some("SESSION ID")).await;
    let summary = api.get_ok("/api/v1/history/summary").await;
    formats(&env, &["history", "summary"], &summary, "total_events", None).await;

    let waste = api.get_query_ok("/api/v1/waste-ledger", &[("top", "5")]).await;
    formats(&env, &["waste"], &waste, "WASTE/MO", Some("TOP")).await;
    let anomalies = api.get_query_ok("/api/v1/anomalies", &[("limit", "100")]).await;
    formats(&env, &["anomalies"], &anomalies, "DIRECTION", Some("SCAN")).await;
    let blast = api
        .get_query_ok(
            &format!("/api/v1/graph/blast-radius/{}", common::encode_segment(&crn)),
            &[("limit", "100")],
        )
        .await;
    formats(&env, &["blast", &crn], &blast, "DEPTH", Some("VIA")).await;
    let oracle = api
        .get_ok(&format!("/api/v1/oracle/{}", common::encode_segment(&crn)))
        .await;
    formats(&env, &["oracle", &crn], &oracle, "verdict", None).await;
    let traffic = api.get_query_ok("/api/v1/traffic/edges", &[("limit", "100")]).await;
    formats(&env, &["traffic"], &traffic, "SOURCE", Some("RECORDS")).await;
    let config = api.get_ok("/api/v1/config").await;
    formats(&env, &["config", "get"], &config, " = ", None).await;
    let queue = api.get_query_ok("/api/v1/remediation/queue", &[("limit", "20")]).await;
    formats(&env, &["remediation", "queue"], &queue, "STAGE", None).await;
    let tokens = api.get_ok("/api/v1/tokens").await;
    formats(&env, &["token", "list"], &tokens, "NAME", None).await;
    let mesh = api.get_ok("/api/v1/policies/mesh").await;
    formats(&env, &["policy", "list"], &mesh, "CONDITION", None).await;

    // The graph at a time and the difference between two.
    let before = chrono::Utc::now();
    let before_text = before.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let at = api
        .get_query_ok("/api/v1/graph/at", &[("ts", &before_text), ("limit", "50")])
        .await;
    formats(&env, &["at", &before_text], &at, "CRN", Some("FROM")).await;
    let now = from_json(&[], &ok(&["at", "now", "--limit", "1", "-o", "json"], &env).await);
    assert_eq!(now["total_nodes"], stats["active_nodes"], "svc at now: {now}");
    api.scan_wait().await;
    let after_text = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let diff = api
        .get_query_ok(
            "/api/v1/graph/diff",
            &[("from", &before_text), ("to", &after_text), ("limit", "1000")],
        )
        .await;
    formats(&env, &["diff", &before_text, &after_text], &diff, "CHANGE", None).await;

    // Paging: one page at a cursor, or every page.
    let first = api.get_query_ok("/api/v1/graph/nodes", &[("limit", "7")]).await;
    let cursor = first["next_cursor"].as_str().expect("more than one page");
    let second = api
        .get_query_ok("/api/v1/graph/nodes", &[("limit", "7"), ("cursor", cursor)])
        .await;
    let args = ["nodes", "--limit", "7", "--cursor", cursor, "-o", "json"];
    assert_eq!(from_json(&args, &ok(&args, &env).await), second);
    let args = ["nodes", "--limit", "40", "--all", "-o", "json"];
    let all = from_json(&args, &ok(&args, &env).await);
    let listed = all["nodes"].as_array().expect("nodes").len();
    assert_eq!(json!(listed), all["total"], "--all lists every node once");
    assert!(listed > 40, "more than one page: {listed}");
    let mut crns: Vec<&str> = all["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["crn"].as_str().unwrap())
        .collect();
    crns.sort_unstable();
    crns.dedup();
    assert_eq!(crns.len(), listed, "no node twice");
    let args = ["history", "--limit", "3", "--all", "-o", "json"];
    let events = from_json(&args, &ok(&args, &env).await);
    assert_eq!(json!(events["events"].as_array().unwrap().len()), events["total"]);
    let (_, table, err) = svc(&["nodes", "--limit", "3"], &env).await;
    assert!(
        err.contains("--cursor"),
        "the table says how to get the next page:\n{table}\n{err}"
    );

    // Times are RFC 3339 and how long ago, never Unix microseconds.
    let out = ok(&["node", &crn], &env).await;
    let line = out.lines().find(|l| l.starts_with("valid_from")).expect("valid_from");
    let micros = node["valid_from"].to_string();
    assert!(!line.contains(&micros), "no raw number: {line}");
    assert!(
        line.contains('T') && line.contains('Z') && (line.contains("ago") || line.contains("just now")),
        "{line}"
    );

    // Versions: this client's and the daemon's.
    let v = from_json(&[], &ok(&["version", "-o", "json"], &env).await);
    assert_eq!(v["client"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["daemon"]["version"], env!("CARGO_PKG_VERSION"), "{v}");
    let text = ok(&["version"], &env).await;
    assert!(
        text.contains(&format!("daemon: {}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
}

#[tokio::test]
async fn writes_take_durations_and_config_keys() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 200).await;
    let env = env_of(&d);
    let page = d.api().get_query_ok("/api/v1/graph/nodes", &[("limit", "2")]).await;
    let crn = first_crn(&page);

    let start = chrono::Utc::now().timestamp();
    let args = ["ignore", &crn, "--ttl", "7d", "-o", "json"];
    let v = from_json(&args, &ok(&args, &env).await);
    let expires = v["expires_at"].as_i64().expect("expires_at");
    let week = 7 * 86_400;
    assert!(
        (start + week - 5..=chrono::Utc::now().timestamp() + week + 5).contains(&expires),
        "{v}"
    );
    let out = ok(&["ignore", &crn, "--ttl", "600"], &env).await;
    assert!(
        out.contains("until 20") && (out.contains("(in 9 minutes)") || out.contains("(in 10 minutes)")),
        "{out}"
    );
    let (code, _, err) = svc(&["ignore", &crn, "--ttl", "7 fortnights"], &env).await;
    assert_eq!(code, Some(2), "a bad duration is a usage error: {err}");

    // config set takes a dotted key; config get reads it back.
    let args = ["config", "set", "oracle.enabled", "false"];
    let out = ok(&args, &env).await;
    assert!(out.contains("oracle.enabled = false"), "{out}");
    let got = ok(&["config", "get", "oracle.enabled", "-o", "json"], &env).await;
    assert_eq!(from_json(&[], &got), json!(false));
    assert_eq!(
        d.api().get_ok("/api/v1/config").await["oracle"]["enabled"],
        json!(false)
    );
    let (code, _, err) = svc(&["config", "set", "oracle.nothing_here", "1"], &env).await;
    assert_eq!(code, Some(4), "an unknown key is refused by the API: {err}");
    assert!(err.contains("(HTTP 422)"), "{err}");

    // history prune takes whole days.
    let args = ["history", "prune", "--older-than", "30d", "-o", "json"];
    let v = from_json(&args, &ok(&args, &env).await);
    assert_eq!(v["max_age_days"], 30, "{v}");

    // scan follows the scan to its end.
    let out = ok(&["scan", "--timeout", "5m"], &env).await;
    assert!(out.contains("completed"), "{out}");
}

#[tokio::test]
async fn exit_codes_tell_what_went_wrong() {
    let dir = common::data_dir();
    let mut d = Daemon::start_scanned(dir.path(), 200).await;
    let env = env_of(&d);
    let crn = first_crn(&d.api().get_query_ok("/api/v1/graph/nodes", &[("limit", "1")]).await);

    // 2: usage.
    for args in [
        vec!["nodes", "--bogus"],
        vec!["remediation", "queue", "--stage", "nowhere"],
        vec!["-o", "xml", "stats"],
        vec!["at", "last tuesday"],
    ] {
        let (code, _, err) = svc(&args, &env).await;
        assert_eq!(code, Some(2), "svc {args:?}: {err}");
    }
    let (_, _, err) = svc(&["remediation", "queue", "--stage", "nowhere"], &env).await;
    assert!(err.contains("sau_gate"), "the choices are named: {err}");

    // 3: unreachable (a port nobody listens on).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{closed}");
    for args in [vec!["stats"], vec!["waste", "-o", "yaml"], vec!["config", "get"]] {
        let mut a = args.clone();
        a.extend(["--url", &url]);
        let (code, _, err) = svc(&a, &env).await;
        assert_eq!(code, Some(3), "svc {a:?}: {err}");
        assert!(err.contains("not running"), "{err}");
    }
    let v = from_json(&[], &ok(&["version", "--url", &url, "-o", "json"], &env).await);
    assert_eq!(v["daemon"]["version"], "unreachable");

    // 4: refused, with the API's code.
    let viewer = d
        .api()
        .post_json("/api/v1/tokens", &json!({"name": "reader", "role": "viewer"}))
        .await
        .expect(201);
    let viewer_env: Vec<(&'static str, String)> = vec![
        ("SVC_URL", d.base()),
        ("SVC_TOKEN", viewer["token"].as_str().unwrap().to_owned()),
    ];
    let (code, _, err) = svc(&["remediation", "quarantine", &crn, "--reason", "test"], &viewer_env).await;
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains("error: forbidden: ") && err.contains("(HTTP 403)"),
        "{err}"
    );
    let (code, _, err) = svc(
        &["node", "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0none"],
        &env,
    )
    .await;
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("not_found: ") && err.contains("(HTTP 404)"), "{err}");

    // 5: a broken ledger.
    assert!(d.stop().await.success());
    let file = dir.path().join("events.redb");
    common::tamper_payload(&file, 2, "scan_seq", json!(99));
    let (code, out, err) = svc(&["ledger", "verify", "--file", file.to_str().unwrap()], &env).await;
    assert_eq!(code, Some(5), "{out}{err}");
    assert!(out.contains("BROKEN at seq 2"), "{out}");
}

#[tokio::test]
async fn completions_and_manual_pages() {
    let dir = common::data_dir();
    let no_env: Vec<(&'static str, String)> = Vec::new();
    let script = ok(&["completion", "bash"], &no_env).await;
    let path = dir.path().join("svc.bash");
    std::fs::write(&path, &script).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    let sourced = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p svc", path.display()))
        .output()
        .unwrap();
    let registered = String::from_utf8_lossy(&sourced.stdout);
    assert!(sourced.status.success() && registered.contains("svc"), "{registered}");
    assert!(script.contains("sau_gate"), "the stage values complete");
    for shell in ["zsh", "fish"] {
        let s = ok(&["completion", shell], &no_env).await;
        assert!(s.contains("remediation") && s.contains("svc"), "{shell}: {s}");
    }
    let (code, _, _) = svc(&["completion", "tcsh"], &no_env).await;
    assert_eq!(code, Some(2));

    let top = ok(&["man"], &no_env).await;
    assert!(top.lines().any(|l| l.starts_with(".TH svc 1")), "{top}");
    let out = dir.path().join("man");
    let _ = ok(&["man", "--out", out.to_str().unwrap()], &no_env).await;
    for page in [
        "svc.1",
        "svc-nodes.1",
        "svc-remediation-queue.1",
        "svc-history-prune.1",
        "svc-config-set.1",
    ] {
        let text = std::fs::read_to_string(out.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.lines().any(|l| l.starts_with(".TH ")), "{page}:\n{text}");
    }
    let queue = std::fs::read_to_string(out.join("svc-remediation-queue.1")).unwrap();
    assert!(queue.contains("stage"), "{queue}");
}

/// A TLS terminator in front of `backend`: what a daemon behind HTTPS is to
/// the CLI. Serves until dropped.
async fn tls_proxy(
    pki: &common::workers::Pki,
    backend: std::net::SocketAddr,
) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&pki.worker.cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(&pki.worker.key).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    (addr, task)
}

#[tokio::test]
async fn an_https_daemon_is_reachable_with_its_ca() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 200).await;
    let pki = common::workers::pki(dir.path());
    let (addr, proxy) = tls_proxy(&pki, d.addr).await;
    let url = format!("https://localhost:{}", addr.port());
    let ca = pki.ca.to_str().unwrap().to_owned();
    let env: Vec<(&'static str, String)> = vec![("SVC_TOKEN", d.token.clone())];

    let stats = d.api().get_ok("/api/v1/graph/stats").await;
    let args = ["--url", &url, "--ca-file", &ca, "stats", "-o", "json"];
    assert_eq!(
        from_json(&args, &ok(&args, &env).await),
        stats,
        "the answer through TLS"
    );
    let with_env: Vec<(&'static str, String)> = vec![
        ("SVC_TOKEN", d.token.clone()),
        ("SVC_URL", url.clone()),
        ("SVC_CA_FILE", ca.clone()),
    ];
    assert_eq!(
        from_json(&[], &ok(&["stats", "--json"], &with_env).await),
        stats,
        "SVC_CA_FILE"
    );

    // Without the CA the certificate is not trusted: unreachable, saying why.
    let (code, _, err) = svc(&["--url", &url, "stats"], &env).await;
    assert_eq!(code, Some(3), "{err}");
    assert!(err.to_lowercase().contains("certificate"), "{err}");

    // The event stream over wss://.
    let newest = d.api().get_query_ok("/api/v1/history", &[("limit", "1")]).await;
    let out = ok(&["ledger", "tail", "-n", "1", "--url", &url, "--ca-file", &ca], &env).await;
    assert_eq!(out.lines().count(), 1, "the newest event through wss:\n{out}");
    let kind = newest["events"][0]["type"].as_str().expect("an event");
    assert!(out.contains(kind), "{kind}:\n{out}");
    let (code, _, err) = svc(&["ledger", "tail", "-n", "1", "--url", &url], &env).await;
    assert_eq!(code, Some(3), "wss without the CA: {err}");
    proxy.abort();
}

/// The YAML documents `svc ARGS -o yaml` streamed: each is its own
/// document, a `---` line before it and a `...` line after it.
fn yaml_documents(args: &[&str], out: &str) -> Vec<Value> {
    use serde::Deserialize;
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(out)
        .map(|doc| {
            Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("svc {args:?} printed a document that is no YAML ({e}):\n{out}"))
        })
        .collect();
    assert!(out.starts_with("---\n"), "svc {args:?} starts with a document:\n{out}");
    let marks = |m: &str| out.lines().filter(|l| *l == m).count();
    assert_eq!(
        (marks("---"), marks("...")),
        (docs.len(), docs.len()),
        "svc {args:?}: a `---` before and a `...` after each document:\n{out}"
    );
    docs
}

/// The next YAML document a following `svc ... -o yaml` prints, whole once
/// its `...` line arrives; fails the test at `deadline`.
async fn next_document(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    deadline: tokio::time::Instant,
) -> Value {
    let mut text = String::new();
    loop {
        let line = tokio::time::timeout_at(deadline, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no whole YAML document in time; so far:\n{text}"))
            .expect("read")
            .unwrap_or_else(|| panic!("the stream ended inside a document:\n{text}"));
        let end = line == "...";
        text.push_str(&line);
        text.push('\n');
        if end {
            return serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("no YAML ({e}):\n{text}"));
        }
    }
}

#[tokio::test]
async fn streams_print_a_yaml_document_per_item() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 200).await;
    let api = d.api();
    let env = env_of(&d);
    api.scan_wait().await;

    // svc ask (answered offline): each event of the answer a document, the
    // same events `-o json` prints as lines.
    let question = "what are the top waste resources?";
    let args = ["ask", question, "-o", "yaml"];
    let mut docs = yaml_documents(&args, &ok(&args, &env).await);
    let mut lines = common::json_lines(&ok(&["ask", question, "-o", "json"], &env).await);
    let kinds = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_else(|| panic!("no type: {e}")).to_owned())
            .collect()
    };
    let types = kinds(&docs);
    assert_eq!(types.first().map(String::as_str), Some("start"), "{docs:?}");
    assert_eq!(types.last().map(String::as_str), Some("done"), "{docs:?}");
    assert!(
        types.iter().any(|t| t == "tool_call"),
        "the answer read the estate: {docs:?}"
    );
    assert_eq!(docs[0]["provider"], "offline", "{}", docs[0]);
    // Each answer is a conversation of its own; the rest is the same.
    assert_ne!(docs[0]["conversation_id"], lines[0]["conversation_id"]);
    docs[0]["conversation_id"] = Value::Null;
    lines[0]["conversation_id"] = Value::Null;
    assert_eq!(docs, lines, "-o yaml and -o json print the same events");
    assert!(!common::answer_text(&docs).trim().is_empty(), "{docs:?}");
    let sources = docs
        .iter()
        .find(|e| e["type"] == "sources")
        .unwrap_or_else(|| panic!("a sources event: {docs:?}"));
    assert!(
        sources["queries"].as_array().is_some_and(|q| !q.is_empty()),
        "{sources}"
    );
    let crns = sources["crns"].as_array().expect("crns");
    assert!(!crns.is_empty(), "the answer rests on resources: {sources}");
    for crn in crns {
        let crn = crn.as_str().expect("a crn");
        let node = api
            .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(crn)))
            .await;
        assert_eq!(node["crn"], crn, "a source is a resource of the estate");
    }

    // svc ledger tail: each event a document, as `-o json` prints them.
    let prune = || async {
        api.post_json("/api/v1/history/prune", &json!({"max_age_days": 3650}))
            .await
            .expect(200)
    };
    for _ in 0..3 {
        prune().await;
    }
    let args = ["ledger", "tail", "-n", "3", "-o", "yaml"];
    let events = yaml_documents(&args, &ok(&args, &env).await);
    let lines = common::json_lines(&ok(&["ledger", "tail", "-n", "3", "-o", "json"], &env).await);
    assert_eq!(events, lines, "-o yaml and -o json print the same events");
    let newest = api.get_query_ok("/api/v1/history", &[("limit", "1")]).await;
    let newest = &newest["events"][0];
    let last = newest["seq"].as_u64().unwrap_or_else(|| panic!("a seq: {newest}"));
    assert_eq!(common::seqs(&events), vec![last - 2, last - 1, last], "oldest first");
    assert_eq!(events[2]["event_type"], newest["type"], "{}", events[2]);
    assert!(events.iter().all(|e| e["event_type"] == "HISTORY_PRUNED"), "{events:?}");
    assert!(
        events.windows(2).all(|w| w[1]["prev_hash"] == w[0]["hash"]),
        "{events:?}"
    );

    // --follow: a document for each event as it is committed, whole before
    // the next one comes.
    let mut child = tokio::process::Command::new(common::SVC)
        .args(["ledger", "tail", "-n", "1", "--follow", "-o", "yaml"])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn svc ledger tail --follow -o yaml");
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().expect("stdout")));
    let deadline = tokio::time::Instant::now() + common::START_DEADLINE;
    let first = next_document(&mut lines, deadline).await;
    assert_eq!(first["seq"].as_u64(), Some(last), "{first}");
    prune().await;
    let next = next_document(&mut lines, deadline).await;
    assert_eq!(next["seq"].as_u64(), Some(last + 1), "{next}");
    assert_eq!(next["event_type"], "HISTORY_PRUNED", "{next}");
    assert_eq!(next["prev_hash"], first["hash"], "{next}");
    child.kill().await.expect("stop svc ledger tail");
}
