//! The registry end to end: a real HTTP server in the test serves an index
//! listing the workspace's own plugins (`svc-plugin-mock`,
//! `svc-plugin-unattached-volumes`, as built), a policy pack from
//! `policies/`, a tampered binary, a manifest without a category, a plugin
//! whose handshake fails and a release of a source repository; a real
//! daemon searches, installs (refusing what fails a check and leaving
//! nothing behind), activates and scans through an installed plugin,
//! removes, records each install and removal in the ledger, and answers
//! from its cache once the server is gone.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use common::{Daemon, QUIET_CONFIG, SVC, Sources};
use serde_json::{Value, json};
use svc_ingest::host::manifest::sha256_file;

/// A built binary beside `svc`.
fn built(name: &str) -> PathBuf {
    let path = PathBuf::from(SVC).with_file_name(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build -p {name}` first",
        path.display()
    );
    path
}

/// Serves the files under its root; anything else is 404.
async fn serve_file(State(root): State<PathBuf>, uri: Uri) -> (StatusCode, Vec<u8>) {
    let rel = uri.path().trim_start_matches('/');
    if rel.split('/').any(|s| s == "..") {
        return (StatusCode::BAD_REQUEST, Vec::new());
    }
    match std::fs::read(root.join(rel)) {
        Ok(bytes) => (StatusCode::OK, bytes),
        Err(_) => (StatusCode::NOT_FOUND, Vec::new()),
    }
}

/// A static file server on an ephemeral port, until the handle is aborted.
async fn file_server(root: &Path) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new().fallback(serve_file).with_state(root.to_owned());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (addr, task)
}

/// This machine's architecture in the Go spelling the registry may use.
fn registry_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

fn plugin(name: &str, version: &str, category: Option<&str>, url: &str, sha256: &str, role: &str) -> Value {
    let mut p = json!({
        "name": name, "type": "plugin", "version": version,
        "description": format!("{name} for tests"), "author": "svc",
        "pricing": {"model": "free"}, "role": role,
        "binaries": [{"os": std::env::consts::OS, "arch": registry_arch(), "url": url, "sha256": sha256}],
    });
    if let Some(c) = category {
        p["category"] = json!(c);
    }
    p
}

/// Lays out the registry's files under `root`; answers the index's packages.
fn registry_files(root: &Path, base: &str) {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let mock = built("svc-plugin-mock");
    let volumes = built("svc-plugin-unattached-volumes");
    std::fs::copy(&mock, bin.join("svc-plugin-mock")).unwrap();
    std::fs::copy(&volumes, bin.join("svc-plugin-unattached-volumes")).unwrap();
    let mock_sha = sha256_file(&mock).unwrap();
    let volumes_sha = sha256_file(&volumes).unwrap();
    // The same build with one byte more than the manifest's hash covers.
    let mut tampered = std::fs::read(&mock).unwrap();
    tampered.push(0);
    std::fs::write(bin.join("tampered"), tampered).unwrap();
    // Runs, but never prints a handshake line.
    std::fs::write(bin.join("broken"), "#!/bin/sh\necho 'not a plugin' >&2\nexit 3\n").unwrap();
    let broken_sha = sha256_file(&bin.join("broken")).unwrap();

    let pack = root.join("packs/cost-hygiene");
    std::fs::create_dir_all(&pack).unwrap();
    let mut files = Vec::new();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/cost-hygiene");
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        std::fs::copy(&path, pack.join(&name)).unwrap();
        files.push(
            json!({"name": name, "url": format!("packs/cost-hygiene/{name}"), "sha256": sha256_file(&path).unwrap()}),
        );
    }

    let index = json!({"packages": [
        plugin("svc-plugin-mock", "v0.9.0", Some("cloud"), "bin/svc-plugin-mock", &mock_sha, "provider"),
        plugin("svc-plugin-mock", "v1.0.0", Some("cloud"), "bin/svc-plugin-mock", &mock_sha, "provider"),
        plugin("svc-plugin-mock", "v1.1.0-rc.1", Some("cloud"), "bin/svc-plugin-mock", &mock_sha, "provider"),
        plugin("svc-plugin-unattached-volumes", "v1.0.0", Some("cloud"), &format!("{base}/bin/svc-plugin-unattached-volumes"), &volumes_sha, "heuristic"),
        plugin("svc-plugin-tampered", "v1.0.0", Some("cloud"), "bin/tampered", &mock_sha, "provider"),
        plugin("svc-plugin-uncategorised", "v1.0.0", None, "bin/svc-plugin-mock", &mock_sha, "provider"),
        plugin("svc-plugin-broken", "v1.0.0", Some("devops"), "bin/broken", &broken_sha, "provider"),
        {"name": "cost-hygiene", "type": "policy", "version": "v1.0.0", "category": "cloud",
         "description": "Storage and compute that costs money for nothing", "author": "svc",
         "pricing": {"model": "free"}, "files": files},
        {"name": "not a valid entry"},
    ]});
    std::fs::write(root.join("index.json"), serde_json::to_vec_pretty(&index).unwrap()).unwrap();

    // A release of a source repository: its manifest, the binary beside it.
    let release = root.join("releases/acme/svc-plugin-volumes/v2.0.0");
    std::fs::create_dir_all(&release).unwrap();
    std::fs::copy(&volumes, release.join("svc-plugin-volumes")).unwrap();
    let manifest = plugin(
        "svc-plugin-volumes",
        "v2.0.0",
        Some("cloud"),
        "svc-plugin-volumes",
        &volumes_sha,
        "heuristic",
    );
    std::fs::write(release.join("manifest.json"), manifest.to_string()).unwrap();
}

/// Files of the plugin directory, dot-files (staging) included.
fn plugin_files(data: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data.join("plugins"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn policy_dirs(data: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data.join("policies"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn cli(d: &Daemon, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(SVC)
        .args(args)
        .env("SVC_URL", d.base())
        .env("SVC_TOKEN", &d.token)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn packages_install_verified_from_a_registry_and_leave_nothing_when_refused() {
    let root = tempfile::tempdir().unwrap();
    let (addr, server) = file_server(root.path()).await;
    let base = format!("http://{addr}");
    registry_files(root.path(), &base);

    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("config.toml"), QUIET_CONFIG).unwrap();
    let mut d = Daemon::configure(data.path(), 200);
    d.sources = Sources::Fallback;
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();

    // No registry yet; one configured through the API applies at once.
    let e = api.get("/api/v1/registry/search").await.expect_error(409, "conflict");
    assert!(e["error"]["message"].as_str().unwrap().contains("registry.url"), "{e}");
    let registry = json!({"registry": {
        "url": format!("{base}/index.json"),
        "release_url": format!("{base}/releases/{{owner}}/{{name}}/{{version}}/manifest.json"),
    }});
    api.put_json("/api/v1/config", &registry).await.expect(200);

    // Search: everything, then by type, category, name and description.
    let all = api.get_ok("/api/v1/registry/search").await;
    assert_eq!(all["packages"].as_array().unwrap().len(), 8, "{all}");
    assert_eq!(all["skipped"].as_array().unwrap().len(), 1, "{all}");
    assert_eq!(all["from_cache"], false);
    assert!(data.path().join("registry-index.json").exists());
    let names = |v: &Value| -> Vec<String> {
        v["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| format!("{}@{}", p["name"].as_str().unwrap(), p["version"].as_str().unwrap()))
            .collect()
    };
    let q = |text: &'static str| {
        let api = api.clone();
        async move { api.get_query_ok("/api/v1/registry/search", &[("q", text)]).await }
    };
    assert_eq!(names(&q("POLICY").await), ["cost-hygiene@v1.0.0"]);
    assert_eq!(names(&q("devops").await), ["svc-plugin-broken@v1.0.0"]);
    assert_eq!(names(&q("unattached").await), ["svc-plugin-unattached-volumes@v1.0.0"]);
    assert_eq!(names(&q("costs money").await), ["cost-hygiene@v1.0.0"]);
    let uncategorised = &q("uncategorised").await["packages"][0];
    assert!(
        uncategorised["problem"].as_str().unwrap().contains("category"),
        "{uncategorised}"
    );
    let mocks = q("svc-plugin-mock").await;
    let latest: Vec<&Value> = mocks["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["latest"] == true)
        .collect();
    assert_eq!((latest.len(), &latest[0]["version"]), (1, &json!("v1.0.0")), "{mocks}");

    // Every check refuses, names itself, and leaves nothing behind.
    let before = plugin_files(data.path());
    for (name, status, code, words) in [
        ("tampered", 422, "invalid", "checksum check failed"),
        ("uncategorised", 422, "invalid", "category check failed"),
        ("broken", 422, "invalid", "handshake check failed"),
        ("mock@v9.9.9", 404, "not_found", "unknown version v9.9.9 of mock"),
        ("no-such-plugin", 404, "not_found", "unknown package"),
        ("acme/svc-plugin-volumes@v3.0.0", 502, "bad_gateway", "download failed"),
        ("mock@latest", 400, "bad_request", "invalid package"),
    ] {
        let e = api
            .post_json("/api/v1/registry/install", &json!({"name": name, "activate": true}))
            .await
            .expect_error(status, code);
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains(words), "{name}: {message}");
        assert_eq!(plugin_files(data.path()), before, "{name} left files behind");
    }
    let e = api
        .post_json("/api/v1/plugins/install", &json!({"name": "cost-hygiene"}))
        .await
        .expect_error(422, "invalid");
    assert!(e["error"]["message"].as_str().unwrap().contains("not a plugin"), "{e}");
    assert_eq!(policy_dirs(data.path()), Vec::<String>::new());

    // The mock plugin, latest stable, installed and activated, then scanned.
    let r = api
        .post_json("/api/v1/plugins/install", &json!({"name": "mock", "activate": true}))
        .await
        .expect(200);
    assert_eq!(
        (&r["changed"], &r["package"]["version"], &r["package"]["active"]),
        (&json!(true), &json!("v1.0.0"), &json!(true)),
        "{r}"
    );
    assert_eq!(plugin_files(data.path()), ["svc-plugin-mock", "svc-plugin-mock.yaml"]);
    let manifest = std::fs::read_to_string(data.path().join("plugins/svc-plugin-mock.yaml")).unwrap();
    for field in ["version: v1.0.0", "category: cloud", "role: provider", "sha256:"] {
        assert!(manifest.contains(field), "{field}: {manifest}");
    }
    let config = std::fs::read_to_string(data.path().join("config.toml")).unwrap();
    assert!(config.contains("active = [\"mock\"]"), "{config}");
    let scan = api
        .post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect(200);
    let sources: Vec<(&Value, &Value)> = scan["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (&s["name"], &s["ok"]))
        .collect();
    assert_eq!(sources, [(&json!("mock"), &json!(true))], "{scan}");
    let again = api
        .post_json("/api/v1/registry/install", &json!({"name": "svc-plugin-mock@v1.0.0"}))
        .await
        .expect(200);
    assert_eq!(again["changed"], false, "{again}");

    // The heuristic plugin, the policy pack, and a release of a source repository.
    api.post_json("/api/v1/registry/install", &json!({"name": "unattached-volumes"}))
        .await
        .expect(200);
    let pack = api
        .post_json("/api/v1/registry/install", &json!({"name": "cost-hygiene"}))
        .await
        .expect(200);
    assert_eq!(pack["package"]["type"], "policy", "{pack}");
    assert!(data.path().join("policies/cost-hygiene/manifest.yaml").exists());
    let release = api
        .post_json(
            "/api/v1/registry/install",
            &json!({"name": "acme/svc-plugin-volumes@v2.0.0"}),
        )
        .await
        .expect(200);
    assert!(
        release["package"]["source"]
            .as_str()
            .unwrap()
            .starts_with("release acme/svc-plugin-volumes@v2.0.0"),
        "{release}"
    );
    let scan = api
        .post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect(200);
    let policies = api.get_ok("/api/v1/policies").await.to_string();
    assert!(
        policies.contains("cost-hygiene/"),
        "the pack's rules are loaded: {policies}"
    );
    assert!(scan["sources"][0]["ok"] == true, "{scan}");

    let installed = api.get_ok("/api/v1/registry/installed").await;
    let rows: Vec<String> = installed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} {} {} {} {} {}",
                p["type"].as_str().unwrap(),
                p["name"].as_str().unwrap(),
                p["version"].as_str().unwrap(),
                p["category"].as_str().unwrap(),
                p["active"],
                p["source"].as_str().unwrap().split(' ').next().unwrap()
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            "plugin mock v1.0.0 cloud true registry",
            "plugin unattached-volumes v1.0.0 cloud false registry",
            "plugin volumes v2.0.0 cloud false release",
            "policy cost-hygiene v1.0.0 cloud true registry",
        ],
        "{installed}"
    );
    let (ok, out, err) = cli(&d, &["registry", "installed"]);
    assert!(ok && out.contains("cost-hygiene") && out.contains("NAME"), "{out}{err}");
    let (ok, out, err) = cli(&d, &["registry", "search", "hygiene", "--json"]);
    assert!(ok, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["packages"][0]["installed_version"],
        "v1.0.0"
    );

    // Removal: a plugin (deactivated, its files gone), a pack, nothing.
    api.post_json("/api/v1/registry/remove", &json!({"name": "svc-plugin-mock"}))
        .await
        .expect(200);
    assert!(!plugin_files(data.path()).iter().any(|f| f.contains("mock")));
    let config = std::fs::read_to_string(data.path().join("config.toml")).unwrap();
    assert!(config.contains("active = []"), "{config}");
    let (ok, out, err) = cli(&d, &["registry", "remove", "cost-hygiene"]);
    assert!(ok && out.contains("removed policy cost-hygiene v1.0.0"), "{out}{err}");
    assert!(!data.path().join("policies/cost-hygiene").exists());
    api.post_json("/api/v1/registry/remove", &json!({"name": "cost-hygiene"}))
        .await
        .expect_error(404, "not_found");
    api.post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect(200);
    let policies = api.get_ok("/api/v1/policies").await.to_string();
    assert!(
        !policies.contains("cost-hygiene/"),
        "the pack's rules are gone: {policies}"
    );

    // Each install and removal is in the ledger, with what was checked.
    let installs = api.history_all(&[("type", "REGISTRY_INSTALL")]).await;
    let removals = api.history_all(&[("type", "REGISTRY_REMOVE")]).await;
    assert_eq!((installs.len(), removals.len()), (4, 2), "{installs:?} {removals:?}");
    let mock_install = installs.iter().find(|e| e["meta"]["name"] == "mock").unwrap();
    let p = &mock_install["meta"];
    assert_eq!(
        (&p["type"], &p["version"], &p["category"], &p["actor"]),
        (&json!("plugin"), &json!("v1.0.0"), &json!("cloud"), &json!("admin")),
        "{mock_install}"
    );
    assert_eq!(p["sha256"], sha256_file(&built("svc-plugin-mock")).unwrap());
    assert!(p["source"].as_str().unwrap().contains("/index.json"), "{p}");

    // The registry gone: the cache answers, saying how old it is.
    server.abort();
    let _ = server.await;
    let cached = api
        .get_query_ok("/api/v1/registry/search", &[("refresh", "true")])
        .await;
    assert_eq!(
        (&cached["from_cache"], cached["packages"].as_array().unwrap().len()),
        (&json!(true), 8),
        "{cached}"
    );
    assert!(cached["warning"].as_str().unwrap().contains("cached index"), "{cached}");
    api.post_json("/api/v1/registry/refresh", &json!({}))
        .await
        .expect_error(502, "bad_gateway");
    let e = api
        .post_json("/api/v1/registry/install", &json!({"name": "cost-hygiene"}))
        .await
        .expect_error(502, "bad_gateway");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("download failed"),
        "{e}"
    );
    assert!(!data.path().join("policies/cost-hygiene").exists());
    d.stop().await;
}
