//! The plugin host against the real `svc-plugin-mock` binary: a full scan
//! into the graph over both transports, and each injected failure
//! (`SVC_MOCK_FAIL`) giving the documented outcome.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use svc_engine::graph::{EdgeBatch, NodeBatch};
use svc_engine::scan::{CollectSink, ReversibilityAsk, ScanContext, ScanSink, Source, SourceError};
use svc_engine::{Graph, Interner};
use svc_ingest::host::{
    Category, HostError, Integrity, LaunchOptions, Net, PluginProcess, PluginSource, Role, SourceOptions,
    write_manifest_for,
};
use svc_proto::provider::v1 as pb;
use tokio::runtime::Runtime;

fn mock_binary() -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/svc-plugin-mock,
    // wherever the target directory is.
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

fn options(fail: &str, extra: &[(&str, &str)]) -> SourceOptions {
    let mut env = vec![("SVC_MOCK_FAIL".to_owned(), fail.to_owned())];
    env.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    SourceOptions {
        launch: LaunchOptions {
            env,
            ..LaunchOptions::default()
        },
        ..SourceOptions::default()
    }
}

/// The context of scan 1 of one source, with `config`.
fn context<'a>(interner: &'a Interner, config: &'a BTreeMap<String, String>) -> ScanContext<'a> {
    ScanContext {
        interner,
        scan_seq: 1,
        now_us: 1_700_000_000_000_000,
        config,
        timeout: None,
        concurrent: 1,
        graph: None,
    }
}

fn scan(source: &mut PluginSource, interner: &Interner, scan_seq: u64) -> (Result<(), SourceError>, CollectSink) {
    let config = BTreeMap::from([
        ("seed".to_owned(), "7".to_owned()),
        ("scale".to_owned(), "300".to_owned()),
        ("batch_size".to_owned(), "100".to_owned()),
    ]);
    let ctx = ScanContext {
        scan_seq,
        ..context(interner, &config)
    };
    let mut sink = CollectSink::default();
    let result = source.scan(&ctx, &mut sink);
    (result, sink)
}

fn is_running(pid: u32) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists()
}

fn scans_into_the_graph(transport: &[(&str, &str)], net: Net) {
    let rt = Runtime::new().expect("runtime");
    let mut source = PluginSource::new(mock_binary(), options("", transport), rt.handle().clone());
    assert_eq!(source.name(), "mock");
    let mut graph = Graph::new(Arc::new(Interner::new()));
    let interner = graph.interner().clone();

    let (result, sink) = scan(&mut source, &interner, 1);
    result.expect("scan succeeds");
    let process = source.process().expect("plugin is running");
    assert_eq!(process.handshake().net, net);
    assert!(!process.plugin_version().is_empty());
    let pid = process.id().expect("pid");
    let socket = PathBuf::from(&process.handshake().addr);

    let stats = source.last_stats().clone();
    assert_eq!(
        (stats.rejected_nodes, stats.rejected_edges),
        (0, 0),
        "{:?}",
        stats.reasons
    );
    assert!((200..=450).contains(&stats.nodes), "{} nodes", stats.nodes);
    assert!(stats.edges > 0);
    let node_count: usize = sink.nodes.iter().map(NodeBatch::len).sum();
    assert_eq!(node_count as u64, stats.nodes);
    let n = graph.ingest_nodes(&sink.nodes, 1_700_000_000_000_000, 1);
    let e = graph.ingest_edges(&sink.edges, 1_700_000_000_000_000, 1);
    assert_eq!(n.inserted as u64, stats.nodes);
    assert_eq!(e.dangling, 0);

    let (again, _) = scan(&mut source, &interner, 2);
    again.expect("second scan succeeds");
    assert_eq!(
        source.process().and_then(PluginProcess::id),
        Some(pid),
        "the plugin is reused"
    );

    rt.block_on(source.shutdown());
    assert!(source.process().is_none());
    assert!(!is_running(pid), "plugin {pid} still running after shutdown");
    if net == Net::Unix {
        assert_socket_dir_removed(&socket);
    }
}

/// The socket's directory, and the host's directory above it, are gone.
fn assert_socket_dir_removed(socket: &Path) {
    let dir = socket.parent().expect("socket directory");
    let host_dir = dir.parent().expect("host socket directory");
    let named = format!("svc-plugin-sock-{}-", std::process::id());
    assert!(
        host_dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(&named)),
        "the plugin was not given the host's socket directory: {}",
        socket.display()
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
    assert!(!host_dir.exists(), "{} left behind", host_dir.display());
}

#[test]
fn host_scans_the_mock_estate_over_a_unix_socket() {
    scans_into_the_graph(&[], Net::Unix);
}

#[test]
fn host_scans_the_mock_estate_over_tcp() {
    scans_into_the_graph(&[("SVC_PLUGIN_TRANSPORT", "tcp")], Net::Tcp);
}

#[test]
fn host_malformed_nodes_are_counted_not_fatal() {
    let rt = Runtime::new().expect("runtime");
    let mut source = PluginSource::new(mock_binary(), options("malformed_nodes", &[]), rt.handle().clone());
    let interner = Interner::new();
    let (result, sink) = scan(&mut source, &interner, 1);
    result.expect("scan succeeds despite malformed nodes");
    let stats = source.last_stats();
    assert_eq!(stats.rejected_nodes, 3, "{:?}", stats.reasons);
    assert!(stats.nodes > 200);
    assert!(!sink.nodes.is_empty());
}

/// A scan that ends OK with the trailer naming a part not listed succeeds,
/// and the source says which part; a trailer that is not a list of parts
/// fails the scan.
#[test]
fn host_reads_the_parts_a_plugin_could_not_list() {
    let rt = Runtime::new().expect("runtime");
    let interner = Interner::new();
    let mut whole = PluginSource::new(mock_binary(), options("", &[]), rt.handle().clone());
    scan(&mut whole, &interner, 1).0.expect("a whole scan");
    assert_eq!(whole.unlisted(), Vec::new());
    let all = whole.last_stats().nodes;

    let mut part = PluginSource::new(mock_binary(), options("unlisted_region", &[]), rt.handle().clone());
    scan(&mut part, &interner, 1)
        .0
        .expect("a scan that listed the rest succeeds");
    let unlisted = part.unlisted();
    assert_eq!(unlisted.len(), 1, "{unlisted:?}");
    assert_eq!(unlisted[0].provider.as_deref(), Some("aws"));
    assert_eq!(unlisted[0].region.as_deref(), Some("us-west-2"));
    assert_eq!(
        (unlisted[0].service.as_deref(), unlisted[0].account.as_deref()),
        (None, None)
    );
    assert!(
        unlisted[0].error.contains("connection refused"),
        "{}",
        unlisted[0].error
    );
    let listed = part.last_stats().nodes;
    assert!(listed > 0 && listed < all, "{listed} of {all} nodes");

    let mut bad = PluginSource::new(mock_binary(), options("bad_trailer", &[]), rt.handle().clone());
    let (result, _) = scan(&mut bad, &interner, 1);
    let Err(SourceError::Failed(e)) = result else {
        panic!("expected a failed scan, got {result:?}");
    };
    assert!(e.starts_with("plugin mock ended its scan badly: "), "{e}");
    assert!(e.contains("svc-scan-unlisted-bin"), "{e}");
    assert_eq!(bad.unlisted(), Vec::new());
}

#[test]
fn host_crash_mid_scan_fails_the_scan_and_the_next_scan_relaunches() {
    let rt = Runtime::new().expect("runtime");
    let mut source = PluginSource::new(mock_binary(), options("crash_mid_scan", &[]), rt.handle().clone());
    let interner = Interner::new();
    for _ in 0..2 {
        let (result, _) = scan(&mut source, &interner, 1);
        let Err(SourceError::Failed(e)) = result else {
            panic!("expected a failed scan, got {result:?}");
        };
        assert!(e.starts_with("plugin mock crashed mid-scan: "), "{e}");
        assert!(e.contains("exit status: 3"), "{e}");
        assert!(source.process().is_none());
    }
}

#[test]
fn host_hanging_scan_times_out_and_the_plugin_is_killed() {
    let rt = Runtime::new().expect("runtime");
    let mut opts = options("hang", &[]);
    opts.scan_timeout = Duration::from_secs(2);
    let mut source = PluginSource::new(mock_binary(), opts, rt.handle().clone());
    let interner = Interner::new();
    rt.block_on(source.running()).expect("plugin starts");
    let pid = source.process().and_then(PluginProcess::id).expect("pid");
    let socket = PathBuf::from(&source.process().expect("plugin").handshake().addr);
    let (result, _) = scan(&mut source, &interner, 1);
    assert_eq!(result, Err(SourceError::Timeout("2s".to_owned())));
    assert_eq!(
        result.err().map(|e| e.to_string()).as_deref(),
        Some("scan timed out after 2s")
    );
    assert!(source.process().is_none());
    assert!(!is_running(pid), "plugin {pid} still running after the timeout");
    assert_socket_dir_removed(&socket);
}

#[test]
fn host_plugins_scanned_together_share_the_decode_workers() {
    let rt = Runtime::new().expect("runtime");
    let opts = SourceOptions {
        decode_workers: 4,
        ..options("", &[])
    };
    let mut source = PluginSource::new(mock_binary(), opts, rt.handle().clone());
    let interner = Interner::new();
    let config = BTreeMap::from([("scale".to_owned(), "300".to_owned())]);
    for (concurrent, decoders) in [(1, 4), (2, 2), (3, 2), (8, 1)] {
        let ctx = ScanContext {
            concurrent,
            graph: None,
            ..context(&interner, &config)
        };
        source.scan(&ctx, &mut CollectSink::default()).expect("scan");
        assert_eq!(
            source.last_stats().decoders,
            decoders,
            "beside {} others",
            concurrent - 1
        );
    }
    rt.block_on(source.shutdown());
}

/// Takes `max` nodes, then refuses the source.
struct Capped {
    nodes: u64,
    max: u64,
    refused: Option<String>,
}

impl ScanSink for Capped {
    fn nodes(&mut self, batch: NodeBatch) {
        if self.refused.is_none() {
            self.nodes += batch.len() as u64;
            if self.nodes >= self.max {
                self.refused = Some(format!("sent {} nodes", self.nodes));
            }
        }
    }
    fn edges(&mut self, _: EdgeBatch) {}
    fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }
}

#[test]
fn host_a_plugin_the_sink_refuses_is_stopped_and_killed() {
    let rt = Runtime::new().expect("runtime");
    let mut source = PluginSource::new(mock_binary(), options("", &[]), rt.handle().clone());
    let interner = Interner::new();
    rt.block_on(source.running()).expect("plugin starts");
    let pid = source.process().and_then(PluginProcess::id).expect("pid");
    // Far more than the test could wait for: the scan ends because the
    // sink refused, or at the timeout, which fails the test.
    let config = BTreeMap::from([("scale".to_owned(), "20000000".to_owned())]);
    let ctx = ScanContext {
        timeout: Some(Duration::from_secs(120)),
        ..context(&interner, &config)
    };
    let mut sink = Capped {
        nodes: 0,
        max: 5_000,
        refused: None,
    };
    let result = source.scan(&ctx, &mut sink);
    let Err(SourceError::Failed(e)) = result else {
        panic!("expected the refusal, got {result:?}");
    };
    assert!(e.starts_with("plugin mock sent "), "{e}");
    assert!(source.process().is_none());
    assert!(!is_running(pid), "plugin {pid} still running after the refusal");

    // The next scan starts it again.
    let (again, sink) = scan(&mut source, &interner, 2);
    again.expect("the next scan succeeds");
    assert!(!sink.nodes.is_empty());
    rt.block_on(source.shutdown());
}

#[tokio::test]
async fn host_incompatible_plugin_is_refused_with_its_message() {
    let opts = options("incompatible", &[]).launch;
    let e = PluginProcess::launch(&mock_binary(), Role::Provider, &opts)
        .await
        .expect_err("incompatible");
    assert!(matches!(e, HostError::Incompatible { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "plugin mock is incompatible: mock plugin speaks protocol 0 only"
    );
}

#[tokio::test]
async fn host_garbage_handshake_from_the_mock_is_refused() {
    let opts = options("garbage_handshake", &[]).launch;
    let e = PluginProcess::launch(&mock_binary(), Role::Provider, &opts)
        .await
        .expect_err("garbage");
    assert!(
        e.to_string()
            .starts_with("plugin mock printed an invalid handshake line \"hello world\": "),
        "{e}"
    );
}

#[test]
fn host_proofs_asked_together_answer_as_asked_singly_in_order() {
    let rt = Runtime::new().expect("runtime");
    let mut source = PluginSource::new(mock_binary(), options("", &[]), rt.handle().clone());
    let mut graph = Graph::new(Arc::new(Interner::new()));
    let interner = graph.interner().clone();
    let (result, sink) = scan(&mut source, &interner, 1);
    result.expect("scan succeeds");
    graph.ingest_nodes(&sink.nodes, 1_700_000_000_000_000, 1);
    // Scanned resources, some flagged as protected, with resources the
    // plugin never listed between them: more than are kept in flight.
    let mut asks = Vec::new();
    for (k, node) in graph.nodes().take(150).enumerate() {
        let mut properties = BTreeMap::from([("intent".to_owned(), "delete".to_owned())]);
        if k % 7 == 3 {
            properties.insert("deletion_protection".to_owned(), "true".to_owned());
        }
        asks.push(ReversibilityAsk {
            crn: node.crn(),
            properties,
        });
        if k % 5 == 0 {
            asks.push(ReversibilityAsk {
                crn: format!("crn:svc:aws:us-east-1:123456789012:volume:vol-absent-{k}"),
                properties: BTreeMap::new(),
            });
        }
    }
    let together = source.check_reversibility_many(&asks);
    let singly: Vec<_> = asks
        .iter()
        .map(|a| source.check_reversibility(&a.crn, &a.properties))
        .collect();
    let answers = |all: Vec<Option<Result<svc_engine::scan::ReversibilityProof, SourceError>>>| {
        all.into_iter()
            .map(|a| {
                let p = a.expect("the plugin checks reversibility").expect("answered");
                (p.safe, p.reason)
            })
            .collect::<Vec<_>>()
    };
    let (together, singly) = (answers(together), answers(singly));
    assert_eq!(together.len(), asks.len());
    assert_eq!(together, singly);
    let safe = together.iter().filter(|(safe, _)| *safe).count();
    let protected = together
        .iter()
        .filter(|(_, why)| why.contains("deletion protection"))
        .count();
    assert_eq!(protected, (0..150).filter(|k| k % 7 == 3).count());
    assert_eq!(safe, 150 - protected, "{together:?}");
    assert_eq!(
        together.len() - safe - protected,
        30,
        "the unlisted resources are not safe"
    );
    rt.block_on(source.shutdown());
}

/// A plugin that cannot start fails each proof asked of it, with why,
/// rather than answering for some or none.
#[test]
fn host_proofs_of_a_plugin_that_cannot_start_each_fail() {
    let rt = Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut source = PluginSource::new(
        dir.path().join("svc-plugin-gone"),
        options("", &[]),
        rt.handle().clone(),
    );
    let asks: Vec<ReversibilityAsk> = (0..3)
        .map(|k| ReversibilityAsk {
            crn: format!("crn:svc:aws:us-east-1:123456789012:volume:vol-{k}"),
            properties: BTreeMap::new(),
        })
        .collect();
    let answers = source.check_reversibility_many(&asks);
    assert_eq!(answers.len(), 3);
    let whys: Vec<String> = answers
        .into_iter()
        .map(|a| match a {
            Some(Err(SourceError::Failed(why))) => why,
            other => panic!("a plugin that cannot start answered {other:?}"),
        })
        .collect();
    assert!(
        whys[0].contains("plugin gone failed to start") && whys[0].contains("No such file"),
        "{}",
        whys[0]
    );
    assert!(whys.iter().all(|w| *w == whys[0]), "{whys:?}");
    // One ask goes the same way.
    let one = source.check_reversibility(&asks[0].crn, &asks[0].properties);
    assert!(matches!(one, Some(Err(SourceError::Failed(_)))), "{one:?}");
}

#[tokio::test]
async fn host_remediation_rpcs_reach_the_running_plugin() {
    let plugin = PluginProcess::launch(&mock_binary(), Role::Provider, &options("", &[]).launch)
        .await
        .expect("plugin starts");
    let crn = "crn:svc:aws:us-east-1:123456789012:volume:vol-absent".to_owned();
    let proof = plugin
        .check_reversibility(pb::ReversibilityRequest {
            crn: crn.clone(),
            properties: Default::default(),
        })
        .await
        .expect("CheckReversibility answers");
    assert!(!proof.safe && !proof.reason.is_empty(), "{proof:?}");
    let q = plugin
        .apply_quarantine(pb::QuarantineRequest {
            crn: crn.clone(),
            action: "STOP".into(),
            reason: "idle".into(),
        })
        .await
        .expect("ApplyQuarantine answers");
    assert!(!q.success && !q.message.is_empty(), "{q:?}");
    let r = plugin
        .remediate(pb::RemediateRequest {
            crn,
            action: "stop".into(),
            properties: Default::default(),
            dry_run: true,
        })
        .await
        .expect("Remediate answers");
    assert!(!r.success && !r.error.is_empty(), "{r:?}");
    let pid = plugin.id().expect("pid");
    plugin.shutdown().await;
    assert!(!is_running(pid), "plugin {pid} still running after shutdown");
}

/// A scan the plugin refuses before it sends anything (an answer with the
/// status in its headers, no body) fails with the plugin's own words, and
/// the same plugin then serves a valid scan.
#[test]
fn host_scan_refused_at_once_fails_with_the_plugins_status() {
    let rt = Runtime::new().expect("runtime");
    let mut source = PluginSource::new(mock_binary(), options("", &[]), rt.handle().clone());
    let interner = Interner::new();
    let config = BTreeMap::from([("scale".to_owned(), "many".to_owned())]);
    let ctx = context(&interner, &config);
    let mut sink = CollectSink::default();
    let result = source.scan(&ctx, &mut sink);
    assert_eq!(
        result,
        Err(SourceError::Failed(
            "plugin mock scan failed: InvalidArgument: invalid scan config scale \"many\": expected a non-negative integer"
                .to_owned()
        ))
    );
    assert!(sink.nodes.is_empty() && sink.edges.is_empty());
    let (again, sink) = scan(&mut source, &interner, 1);
    again.expect("a valid scan succeeds");
    assert!(!sink.nodes.is_empty());
    rt.block_on(source.shutdown());
}

/// A plugin left running by a host that no longer runs is stopped by the
/// next host's sweep of socket directories, but only that very process
/// (same pid and start time, as noted at launch).
#[tokio::test]
async fn host_sweep_stops_the_plugin_a_dead_host_left_running() {
    let temp = tempfile::tempdir().expect("temp dir");
    let opts = LaunchOptions {
        socket_parent: Some(temp.path().to_owned()),
        ..LaunchOptions::default()
    };
    let mut plugin = PluginProcess::launch(&mock_binary(), Role::Provider, &opts)
        .await
        .expect("the mock starts");
    let pid = plugin.id().expect("pid");
    let socket = PathBuf::from(&plugin.handshake().addr);
    let host_dir = socket.parent().and_then(Path::parent).expect("host socket directory");
    let noted = std::fs::read_to_string(host_dir.join("plugin.pid")).expect("the launch noted the plugin");
    let (noted_pid, rest) = noted.split_once(' ').expect("pid, start time, path");
    assert_eq!(noted_pid, pid.to_string());
    let mut gone = std::process::Command::new("true").spawn().expect("spawn true");
    let dead = gone.id();
    gone.wait().expect("true exits");
    // A note naming the same pid with another start time is another
    // process: its directory goes, the plugin stays.
    let (started, path) = rest.split_once(' ').expect("start time, path");
    let other = temp.path().join(format!("svc-plugin-sock-{dead}-other"));
    std::fs::create_dir(&other).expect("mkdir");
    let later: u64 = started.parse::<u64>().expect("start time") + 1;
    std::fs::write(other.join("plugin.pid"), format!("{pid} {later} {path}")).expect("write");
    svc_ingest::host::launch::sweep_socket_dirs(temp.path());
    assert!(!other.exists(), "stale directory removed");
    let mut health = svc_proto::health::v1::health_client::HealthClient::new(plugin.channel());
    let answer = health
        .check(svc_proto::health::v1::HealthCheckRequest {
            service: "plugin".to_owned(),
        })
        .await;
    assert!(answer.is_ok(), "another process's note stopped the plugin: {answer:?}");
    // The host "dies": its directory now names a process that is gone.
    let stale = temp.path().join(format!("svc-plugin-sock-{dead}-x"));
    std::fs::rename(host_dir, &stale).expect("rename");
    svc_ingest::host::launch::sweep_socket_dirs(temp.path());
    assert!(!stale.exists(), "stale directory removed");
    let status = plugin
        .wait_exit(Duration::from_secs(20))
        .await
        .expect("the plugin was stopped");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "{status}"
    );
}

/// With an integrity check, a plugin installed again (a new binary and its
/// manifest) while its process runs is restarted for the next scan, and one
/// whose binary changed without a new manifest fails that scan, naming it.
#[test]
fn host_a_plugin_installed_again_is_restarted_and_a_changed_one_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("svc-plugin-mock");
    let install = |extra: &[u8]| {
        let mut bytes = std::fs::read(mock_binary()).expect("read the plugin");
        bytes.extend_from_slice(extra);
        // A fresh file, so a running process keeps its own.
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, bytes).expect("write the plugin");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        write_manifest_for(&path, "svc-plugin-mock", Role::Provider, Category::Cloud).expect("manifest");
    };
    install(b"");
    let rt = Runtime::new().expect("runtime");
    let mut opts = options("", &[]);
    opts.launch.integrity = Some(Arc::new(Integrity::default()));
    let mut source = PluginSource::new(&path, opts, rt.handle().clone());
    let interner = Interner::new();

    let (result, _) = scan(&mut source, &interner, 1);
    result.expect("first scan");
    let first = source.process().and_then(PluginProcess::id).expect("pid");
    let (result, _) = scan(&mut source, &interner, 2);
    result.expect("second scan");
    assert_eq!(
        source.process().and_then(PluginProcess::id),
        Some(first),
        "the same process"
    );

    // Installed again: a new process from the next scan, the old one gone.
    install(b"\0");
    let (result, _) = scan(&mut source, &interner, 3);
    result.expect("scan after the new install");
    let second = source.process().and_then(PluginProcess::id).expect("pid");
    assert_ne!(second, first, "restarted");
    assert!(!is_running(first), "the old process was stopped");

    // Changed without a new manifest: that scan fails, naming the check.
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.push(1);
    let _ = std::fs::remove_file(&path);
    std::fs::write(&path, bytes).expect("write");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let (result, _) = scan(&mut source, &interner, 4);
    match result {
        Err(SourceError::Failed(e)) => assert!(e.contains("failed verification"), "{e}"),
        other => panic!("expected a failed scan, got {other:?}"),
    }
    rt.block_on(source.shutdown());
}

/// Every node `g` holds, as text: its CRN, its fields and its validity.
fn node_rows(g: &Graph) -> Vec<String> {
    let mut rows: Vec<String> = g
        .nodes()
        .map(|n| {
            let tags: Vec<_> = n.tags().collect();
            let props: Vec<_> = n.props().collect();
            format!(
                "{} {:?} {} {} {} {} {:?} {:?}",
                n.crn(),
                n.state(),
                n.cost_usd_mo(),
                n.creation_ts(),
                n.valid_from(),
                n.valid_to(),
                tags,
                props
            )
        })
        .collect();
    rows.sort();
    rows
}

/// Applies scan `scan`'s batches to `g` at `now_us`, retiring what the
/// scan did not report; returns the nodes' inserted, changed, revived and
/// unchanged counts.
fn apply(g: &mut Graph, sink: &CollectSink, now_us: u64, scan: u32) -> (usize, usize, usize, usize) {
    let n = g.ingest_nodes(&sink.nodes, now_us, scan);
    let e = g.ingest_edges(&sink.edges, now_us, scan);
    assert_eq!(e.dangling, 0);
    let mock = g.interner().intern("mock");
    g.retire_unseen(&[mock], now_us, scan);
    (n.inserted, n.changed, n.revived, n.unchanged)
}

#[test]
fn host_a_later_scan_leaves_the_nodes_the_graph_holds_undecoded() {
    let rt = Runtime::new().expect("runtime");
    let mut source = PluginSource::new(mock_binary(), options("", &[]), rt.handle().clone());
    let interner = Arc::new(Interner::new());
    // `looked_up` is scanned with the graph to look nodes up in; `decoded`
    // decodes every node, as a source without it does.
    let (mut looked_up, mut decoded) = (Graph::new(interner.clone()), Graph::new(interner.clone()));
    let (first, sink) = scan(&mut source, &interner, 1);
    first.expect("scan 1 succeeds");
    assert!(
        sink.nodes.iter().all(|b| b.found.is_empty()),
        "nothing to find in scan 1"
    );
    let t = 1_700_000_000_000_000;
    apply(&mut looked_up, &sink, t, 1);
    apply(&mut decoded, &sink, t, 1);

    for scan_seq in 2..=3u32 {
        let config = BTreeMap::from([
            ("seed".to_owned(), "7".to_owned()),
            ("scale".to_owned(), "300".to_owned()),
            ("batch_size".to_owned(), "100".to_owned()),
        ]);
        let mut with_lookup = CollectSink::default();
        {
            let read = |f: &mut dyn FnMut(&Graph)| f(&looked_up);
            let ctx = ScanContext {
                scan_seq: u64::from(scan_seq),
                graph: Some(&read),
                ..context(&interner, &config)
            };
            source
                .scan(&ctx, &mut with_lookup)
                .expect("scan with the graph succeeds");
        }
        let stats = source.last_stats().clone();
        let (again, whole) = scan(&mut source, &interner, u64::from(scan_seq));
        again.expect("scan without the graph succeeds");
        assert_eq!(
            source.last_stats().unchanged,
            0,
            "without the graph every node is decoded"
        );

        let found: usize = with_lookup.nodes.iter().map(|b| b.found.len()).sum();
        let rows: usize = with_lookup.nodes.iter().map(NodeBatch::len).sum();
        assert_eq!(stats.unchanged, found as u64);
        assert_eq!(
            stats.nodes,
            (found + rows) as u64,
            "every node is either found or decoded"
        );
        assert!(
            found * 2 > rows && rows > 0,
            "most nodes are found unchanged, some are not: {found} found, {rows} decoded"
        );
        let at = t + u64::from(scan_seq) * 1_000_000;
        let counts = apply(&mut looked_up, &with_lookup, at, scan_seq);
        assert_eq!(apply(&mut decoded, &whole, at, scan_seq), counts);
        let (inserted, changed, revived, unchanged) = counts;
        assert_eq!(
            inserted + changed + revived,
            rows,
            "each node decoded is new, changed or back"
        );
        assert_eq!(unchanged, found);
        assert_eq!(node_rows(&looked_up), node_rows(&decoded), "scan {scan_seq}");
    }
    rt.block_on(source.shutdown());
}
