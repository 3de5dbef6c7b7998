//! Launching plugins that misbehave: shell scripts standing in for plugin
//! binaries, each refused with the documented error and left not running.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use svc_engine::Interner;
use svc_engine::scan::{CollectSink, ScanContext, Source, SourceError};
use svc_ingest::host::{
    Category, HostError, Integrity, LaunchOptions, PluginProcess, PluginSource, Role, SourceOptions, write_manifest_for,
};

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(format!("svc-plugin-{name}"));
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn opts(handshake_timeout: Duration) -> LaunchOptions {
    LaunchOptions {
        handshake_timeout,
        ..LaunchOptions::default()
    }
}

/// Launches, retrying while another test thread's fork still holds the
/// freshly written script open for writing (ETXTBSY).
async fn launch(path: &Path, opts: &LaunchOptions) -> HostError {
    launch_as(path, Role::Provider, opts).await
}

async fn launch_as(path: &Path, role: Role, opts: &LaunchOptions) -> HostError {
    for _ in 0..20 {
        match PluginProcess::launch(path, role, opts).await {
            Ok(p) => panic!("{} should not start, started {:?}", path.display(), p.handshake()),
            Err(HostError::Spawn { source, .. }) if source.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return e,
        }
    }
    panic!("{} stayed busy", path.display());
}

/// The script's process id, which it writes to `pid` before anything else.
fn assert_gone(pid_file: &Path) {
    let pid = std::fs::read_to_string(pid_file).expect("pid file");
    let proc = PathBuf::from(format!("/proc/{}", pid.trim()));
    assert!(!proc.exists(), "plugin process {} is still running", pid.trim());
}

#[tokio::test]
async fn host_garbage_handshake_line_is_refused_quoting_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid = dir.path().join("pid");
    let path = script(
        dir.path(),
        "garbage",
        &format!("echo $$ > {}\necho 'hello world'\nexec sleep 30", pid.display()),
    );
    let e = launch(&path, &opts(Duration::from_secs(10))).await;
    assert!(matches!(e, HostError::InvalidHandshake { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with("plugin garbage printed an invalid handshake line \"hello world\": "),
        "{text}"
    );
    assert_gone(&pid);
}

/// A plugin's stderr is drained whatever it holds: bytes that are not
/// UTF-8 and a long run without a newline neither stop the forwarding (the
/// plugin's next write would fail) nor grow the daemon's buffer.
#[tokio::test]
async fn host_stderr_that_is_not_text_is_drained_to_its_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = script(
        dir.path(),
        "noisy",
        // A write to a stderr nobody reads any more would fail (`set -e`
        // then ends the script), as a Go plugin dies of SIGPIPE.
        "set -e\nprintf 'caf\\351\\n' >&2\nhead -c 300000 /dev/zero | tr '\\0' x >&2\necho 'after the noise'\nexec sleep 30",
    );
    let e = launch(&path, &opts(Duration::from_secs(5))).await;
    assert!(matches!(e, HostError::InvalidHandshake { .. }), "{e:?}");
    assert!(e.to_string().contains("\"after the noise\""), "{e}");
}

#[tokio::test]
async fn host_plugin_gets_the_magic_cookie_and_protocol_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = script(
        dir.path(),
        "env",
        "echo \"$SVC_PLUGIN/$SVC_HEURISTIC_PLUGIN/$PLUGIN_PROTOCOL_VERSIONS/$PLUGIN_MIN_PORT/$PLUGIN_MAX_PORT\"",
    );
    let e = launch(&path, &opts(Duration::from_secs(10))).await.to_string();
    assert!(e.contains("\"svc//1/10000/25000\""), "{e}");

    let e = launch_as(&path, Role::Heuristic, &opts(Duration::from_secs(10)))
        .await
        .to_string();
    assert!(e.contains("\"/svc-heuristic/1/10000/25000\""), "{e}");
}

#[tokio::test]
async fn host_silent_plugin_times_out_and_is_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid = dir.path().join("pid");
    let path = script(
        dir.path(),
        "silent",
        &format!("echo $$ > {}\nexec sleep 30", pid.display()),
    );
    let started = Instant::now();
    let e = launch(&path, &opts(Duration::from_secs(1))).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(e, HostError::NoHandshake { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "plugin silent did not complete its handshake: it printed no handshake line within 1s"
    );
    assert_gone(&pid);
}

/// Whether process `pid` is gone (or dead, waiting for its new parent to
/// reap it), waiting up to ten seconds for the kill to land.
fn dead_soon(pid: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.chars().next()))
            .flatten();
        if matches!(state, None | Some('Z' | 'X')) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::yield_now();
    }
}

/// A plugin that starts a child of its own and then hangs in its
/// handshake: both are killed, nothing is left behind.
#[tokio::test]
async fn host_hanging_plugin_is_killed_with_what_it_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (pid, child) = (dir.path().join("pid"), dir.path().join("child"));
    let path = script(
        dir.path(),
        "forks",
        &format!(
            "echo $$ > {}\nsleep 300 >/dev/null 2>&1 &\necho $! > {}\nexec sleep 300",
            pid.display(),
            child.display()
        ),
    );
    let e = launch(&path, &opts(Duration::from_secs(1))).await;
    assert!(matches!(e, HostError::NoHandshake { .. }), "{e:?}");
    assert_gone(&pid);
    let child = std::fs::read_to_string(&child).expect("child pid");
    assert!(
        dead_soon(child.trim()),
        "the plugin's child {} is still running",
        child.trim()
    );
}

#[tokio::test]
async fn host_plugin_that_exits_at_once_is_reported_with_its_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = script(dir.path(), "exits", "echo 'bad credentials' >&2\nexit 3");
    let e = launch(&path, &opts(Duration::from_secs(10))).await.to_string();
    assert_eq!(
        e,
        "plugin exits did not complete its handshake: it exited (exit status: 3) before printing a handshake line"
    );
}

/// With an integrity check, a binary changed after it was verified is
/// refused before it runs, and runs again once it matches its manifest.
#[tokio::test]
async fn host_a_binary_changed_since_its_check_is_not_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ran = dir.path().join("ran");
    let body = format!("touch {}\nexit 3", ran.display());
    let path = script(dir.path(), "changed", &body);
    write_manifest_for(&path, "svc-plugin-changed", Role::Provider, Category::Cloud).expect("manifest");
    let opts = LaunchOptions {
        integrity: Some(Arc::new(Integrity::default())),
        ..opts(Duration::from_secs(10))
    };
    // As installed: it passes the check and runs (and exits at once).
    let e = launch(&path, &opts).await;
    assert!(matches!(e, HostError::NoHandshake { .. }), "{e:?}");
    assert!(ran.exists(), "the verified binary ran");
    std::fs::remove_file(&ran).expect("rm");

    // Changed after that check: refused, and never run.
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n# changed\n")).expect("change");
    let e = launch(&path, &opts).await;
    assert!(matches!(e, HostError::Verification { .. }), "{e:?}");
    assert!(!ran.exists(), "the changed binary did not run");

    // Installed again (a new manifest): it passes and runs.
    write_manifest_for(&path, "svc-plugin-changed", Role::Provider, Category::Cloud).expect("manifest");
    let e = launch(&path, &opts).await;
    assert!(matches!(e, HostError::NoHandshake { .. }), "{e:?}");
    assert!(ran.exists(), "the reinstalled binary ran");
}

#[tokio::test]
async fn host_plugin_without_execute_permission_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = script(dir.path(), "noexec", "exit 0");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let e = launch(&path, &opts(Duration::from_secs(10))).await;
    assert_eq!(
        e.to_string(),
        format!("plugin {} is not executable (permission denied)", path.display())
    );
}

#[tokio::test]
async fn host_unsupported_protocol_version_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = script(dir.path(), "old", "echo '1|2|unix|/tmp/none.sock|grpc|'\nexec sleep 30");
    let e = launch(&path, &opts(Duration::from_secs(10))).await.to_string();
    assert!(
        e.starts_with("plugin old printed an invalid handshake line \"1|2|unix|/tmp/none.sock|grpc|\": "),
        "{e}"
    );
    assert!(
        e.contains("app protocol version 2 is not supported (expected 1)"),
        "{e}"
    );
}

#[tokio::test]
async fn host_unreachable_address_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("none.sock");
    let path = script(
        dir.path(),
        "nowhere",
        &format!("echo '1|1|unix|{}|grpc|'\nexec sleep 30", sock.display()),
    );
    let e = launch(&path, &opts(Duration::from_secs(5))).await;
    assert!(matches!(e, HostError::Connect { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "plugin nowhere could not be reached at unix:{}: ",
            sock.display()
        )),
        "{text}"
    );
}

#[test]
fn host_source_whose_plugin_cannot_start_fails_only_its_scan() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = script(dir.path(), "broken", "echo 'hello world'");
    let mut source = PluginSource::new(&path, SourceOptions::default(), rt.handle().clone());
    assert_eq!(source.name(), "broken");
    assert_eq!(source.providers(), ["broken"]);

    let interner = Interner::new();
    let config = BTreeMap::new();
    let ctx = ScanContext {
        interner: &interner,
        scan_seq: 1,
        now_us: 0,
        config: &config,
        timeout: None,
        concurrent: 1,
        graph: None,
    };
    let mut sink = CollectSink::default();
    let err = loop {
        match source.scan(&ctx, &mut sink) {
            Err(SourceError::Failed(e)) if e.contains("Text file busy") => continue,
            other => break other,
        }
    };
    let Err(SourceError::Failed(e)) = err else {
        panic!("expected a failed scan, got {err:?}");
    };
    assert!(
        e.starts_with("plugin broken printed an invalid handshake line \"hello world\""),
        "{e}"
    );
    assert!(sink.nodes.is_empty() && sink.edges.is_empty());
    assert!(source.process().is_none());
}

/// The socket directories a killed host left behind are removed; those of
/// running hosts (this one included) and anything not named like one stay.
#[test]
fn host_sweeps_socket_directories_of_hosts_that_are_gone() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut gone = std::process::Command::new("true").spawn().expect("spawn true");
    let dead = gone.id();
    gone.wait().expect("true exits");
    let own = std::process::id();
    let make_dir = |name: &str| {
        let dir = temp.path().join(name);
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("plugin.sock"), b"").expect("file inside");
        dir
    };
    let stale = make_dir(&format!("svc-plugin-sock-{dead}-abc123"));
    // A host that ended but was never reaped (a zombie) is gone too.
    let mut zombie = std::process::Command::new("true").spawn().expect("spawn true");
    let stat = format!("/proc/{}/stat", zombie.id());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&stat)
        .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')))
    {
        assert!(Instant::now() < deadline, "`true` did not end");
        std::thread::yield_now();
    }
    let unreaped = make_dir(&format!("svc-plugin-sock-{}-zombie", zombie.id()));
    let kept = [
        make_dir("svc-plugin-sock-1-init"),
        make_dir(&format!("svc-plugin-sock-{own}-mine")),
        make_dir("svc-plugin-sock-noPid"),
        make_dir(&format!("other-{dead}-abc")),
    ];
    let file = temp.path().join(format!("svc-plugin-sock-{dead}-file"));
    std::fs::write(&file, b"").expect("a file");
    svc_ingest::host::launch::sweep_socket_dirs(temp.path());
    assert!(!stale.exists(), "{} left behind", stale.display());
    assert!(!unreaped.exists(), "{} left behind", unreaped.display());
    zombie.wait().expect("reaped");
    for k in &kept {
        assert!(k.exists(), "{} removed", k.display());
    }
    assert!(file.exists(), "a file is not a socket directory");
}

/// Without a place for its socket directory a plugin is not started, and
/// the error says where the directory could not be made.
#[tokio::test]
async fn host_without_a_socket_directory_refuses_to_start_the_plugin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("started");
    let path = script(dir.path(), "nosock", &format!("touch '{}'\nexit 0", marker.display()));
    let not_a_dir = dir.path().join("a-file");
    std::fs::write(&not_a_dir, b"").expect("a file");
    let opts = LaunchOptions {
        socket_parent: Some(not_a_dir.clone()),
        ..opts(Duration::from_secs(10))
    };
    let e = launch(&path, &opts).await;
    assert!(matches!(e, HostError::SocketDir { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "plugin nosock failed to start: no socket directory could be made in {}: ",
            not_a_dir.display()
        )),
        "{text}"
    );
    assert!(!marker.exists(), "the plugin was started");
}
