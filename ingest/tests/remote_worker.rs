//! A scan worker's relay and the daemon's remote source, in one process
//! but over real TLS on loopback, against the real `svc-plugin-mock`: a
//! scan through the worker gives what the plugin sends, its unlisted-parts
//! trailer included; a plugin that crashes mid-scan, a scan past its
//! timeout and a source with no live worker each fail that source with a
//! reason that names where; a scan the daemon gives up on kills the plugin
//! on the worker; the action calls reach the plugin of the source.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use svc_engine::Interner;
use svc_engine::scan::{CollectSink, RemediateRequest, ReversibilityAsk, ScanContext, Source, SourceError};
use svc_ingest::host::{Category, LaunchOptions, PluginSource, Role, SourceOptions, write_manifest_for};
use svc_ingest::remote::{
    Assignment, Relay, RemoteSource, RemoteSpec, TlsFiles, WorkerAddr, WorkerOptions, assignment,
};
use tokio::runtime::Runtime;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::Server;

fn mock_binary() -> PathBuf {
    let path = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("svc-plugin-mock")))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/svc-plugin-mock"));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build -p svc-plugin-mock` first",
        path.display()
    );
    path
}

/// The worker's and the daemon's TLS files, one CA.
fn certificates(dir: &Path) -> (TlsFiles, TlsFiles) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    let leaf = |name: &str, usage| {
        let mut p = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
        p.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &ca).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
        TlsFiles {
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}.key")),
            ca: dir.join("ca.pem"),
        }
    };
    (
        leaf("worker", ExtendedKeyUsagePurpose::ServerAuth),
        leaf("daemon", ExtendedKeyUsagePurpose::ClientAuth),
    )
}

/// A worker serving on loopback whose plugins run with `SVC_MOCK_FAIL=fail`.
struct Worker {
    relay: Relay,
    addr: String,
    daemon_tls: TlsFiles,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

fn worker(rt: &Runtime, fail: &str) -> Worker {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let plugin = plugins.join("svc-plugin-mock");
    std::fs::copy(mock_binary(), &plugin).unwrap();
    write_manifest_for(&plugin, "mock", Role::Provider, Category::Cloud).unwrap();
    let (server_tls, daemon_tls) = certificates(dir.path());
    let relay = Relay::new(WorkerOptions {
        id: "wt".to_owned(),
        plugin_dir: plugins,
        launch: LaunchOptions {
            env: vec![("SVC_MOCK_FAIL".to_owned(), fail.to_owned())],
            ..LaunchOptions::default()
        },
    });
    let (provider, remediator) = relay.services();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = Server::builder()
        .tls_config(server_tls.server().unwrap())
        .unwrap()
        .add_service(provider)
        .add_service(remediator)
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), async {
            let _ = stopped.await;
        });
    rt.spawn(server);
    Worker {
        relay,
        addr,
        daemon_tls,
        _stop: stop,
        _dir: dir,
    }
}

fn remote(rt: &Runtime, w: &Worker, source: &str, assigned: bool) -> RemoteSource {
    let mut map = Assignment::new();
    if assigned {
        map.insert(
            source.to_owned(),
            WorkerAddr {
                id: "wt".to_owned(),
                addr: w.addr.clone(),
            },
        );
    }
    let (tx, rx) = assignment::channel(map);
    // The assignment stays as it is for the test's length.
    std::mem::forget(tx);
    RemoteSource::new(
        RemoteSpec {
            name: source.to_owned(),
            plugin: "mock".to_owned(),
            providers: vec!["mock".to_owned()],
        },
        rx,
        w.daemon_tls.client().unwrap(),
        SourceOptions::default(),
        rt.handle().clone(),
    )
}

fn scan(source: &mut dyn Source, timeout: Option<Duration>) -> (Result<(), SourceError>, CollectSink) {
    let interner = Interner::new();
    let config = BTreeMap::from([
        ("seed".to_owned(), "7".to_owned()),
        ("scale".to_owned(), "300".to_owned()),
        ("batch_size".to_owned(), "100".to_owned()),
    ]);
    let ctx = ScanContext {
        interner: &interner,
        scan_seq: 1,
        now_us: 1_700_000_000_000_000,
        config: &config,
        timeout,
        concurrent: 1,
        graph: None,
    };
    let mut sink = CollectSink::default();
    let result = source.scan(&ctx, &mut sink);
    (result, sink)
}

#[test]
fn a_scan_through_the_worker_is_the_plugins_scan_trailer_included() {
    let rt = Runtime::new().unwrap();
    let local_opts = |fail: &str| SourceOptions {
        launch: LaunchOptions {
            env: vec![("SVC_MOCK_FAIL".to_owned(), fail.to_owned())],
            ..LaunchOptions::default()
        },
        ..SourceOptions::default()
    };
    for fail in ["", "unlisted_region"] {
        let w = worker(&rt, fail);
        let mut local = PluginSource::new(mock_binary(), local_opts(fail), rt.handle().clone());
        let (direct, want) = scan(&mut local, None);
        direct.unwrap();
        let mut source = remote(&rt, &w, "acct-7", true);
        let (result, got) = scan(&mut source, None);
        result.unwrap();
        assert!(want.node_count > 200, "{} nodes", want.node_count);
        assert_eq!(
            (got.node_count, got.edge_count),
            (want.node_count, want.edge_count),
            "{fail:?}"
        );
        assert_eq!(source.unlisted(), local.unlisted(), "{fail:?}");
        assert_eq!(source.unlisted().len(), usize::from(fail == "unlisted_region"));
        rt.block_on(local.shutdown());

        // The action calls reach the same plugin, which knows the scanned estate.
        let crn = "crn:svc:nowhere:r:1:volume:vol-none";
        let proof = source.check_reversibility(crn, &BTreeMap::new()).unwrap().unwrap();
        assert!(!proof.safe && !proof.reason.is_empty(), "{proof:?}");
        let asks: Vec<ReversibilityAsk> = (0..40)
            .map(|k| ReversibilityAsk {
                crn: format!("{crn}-{k}"),
                properties: BTreeMap::new(),
            })
            .collect();
        let together = source.check_reversibility_many(&asks);
        assert_eq!(together.len(), asks.len());
        for (ask, answer) in asks.iter().zip(together) {
            let p = answer.unwrap().unwrap();
            assert!(!p.safe && !p.reason.is_empty(), "{ask:?}: {p:?}");
        }
        let outcome = source.apply_quarantine(crn, "ISOLATE", "test").unwrap().unwrap();
        assert!(!outcome.success, "{outcome:?}");
        let properties = BTreeMap::new();
        let step = RemediateRequest {
            crn,
            action: "stop",
            properties: &properties,
            dry_run: true,
        };
        let outcome = source.remediate(&step).unwrap().unwrap();
        assert!(!outcome.success && !outcome.error.is_empty(), "{outcome:?}");
        rt.block_on(w.relay.shutdown());
    }
}

#[test]
fn a_plugin_that_crashes_mid_scan_fails_its_source_with_where() {
    let rt = Runtime::new().unwrap();
    let w = worker(&rt, "crash_mid_scan");
    let mut source = remote(&rt, &w, "acct-c", true);
    let (result, _) = scan(&mut source, None);
    let Err(SourceError::Failed(e)) = result else {
        panic!("expected a failed scan, got {result:?}");
    };
    assert!(e.starts_with("source acct-c on worker wt ("), "{e}");
    assert!(e.contains("the plugin broke off its scan"), "{e}");
    rt.block_on(w.relay.shutdown());
}

#[test]
fn a_scan_past_its_timeout_fails_and_the_worker_kills_the_plugin() {
    let rt = Runtime::new().unwrap();
    let w = worker(&rt, "hang");
    let mut source = remote(&rt, &w, "acct-h", true);
    let (result, _) = scan(&mut source, Some(Duration::from_secs(1)));
    assert_eq!(result, Err(SourceError::Timeout("1s".to_owned())));
    let deadline = Instant::now() + Duration::from_secs(30);
    while rt.block_on(w.relay.plugin_pid("acct-h")).is_some() {
        assert!(Instant::now() < deadline, "the hanging plugin still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
    rt.block_on(w.relay.shutdown());
}

#[test]
fn a_source_without_a_live_worker_fails_and_a_worker_gone_is_named() {
    let rt = Runtime::new().unwrap();
    let w = worker(&rt, "");
    let mut unassigned = remote(&rt, &w, "acct-u", false);
    let (result, _) = scan(&mut unassigned, None);
    assert_eq!(
        result,
        Err(SourceError::Failed(
            "source acct-u is assigned to no live worker".to_owned()
        ))
    );
    let refused = unassigned.remediate(&RemediateRequest {
        crn: "crn:x",
        action: "stop",
        properties: &BTreeMap::new(),
        dry_run: true,
    });
    assert_eq!(
        refused,
        Some(Err(SourceError::Failed(
            "source acct-u is assigned to no live worker".to_owned()
        )))
    );
    let asks = vec![ReversibilityAsk::default(); 3];
    let unproved = unassigned.check_reversibility_many(&asks);
    assert_eq!(
        unproved,
        vec![
            Some(Err(SourceError::Failed(
                "source acct-u is assigned to no live worker".to_owned()
            )));
            3
        ]
    );
    let mut source = remote(&rt, &w, "acct-g", true);
    drop(w);
    let (result, _) = scan(&mut source, None);
    let Err(SourceError::Failed(e)) = result else {
        panic!("expected a failed scan, got {result:?}");
    };
    assert!(e.starts_with("source acct-g on worker wt (127.0.0.1:"), "{e}");
}
