//! Listening, serving and stopping.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Duration;

use svc_proto::health::v1::health_server::HealthServer;
use svc_proto::plugin::grpc_controller_server::GrpcControllerServer;
use svc_proto::plugin::grpc_stdio_server::GrpcStdioServer;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::Notify;
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tonic::transport::Server;
use tower::layer::util::{Identity, Stack};

use crate::trace::TraceLayer;

/// The server a plugin's services are added to: each call in its span.
pub(crate) type Router = tonic::transport::server::Router<Stack<TraceLayer, Identity>>;

use crate::error::SdkError;
use crate::framework::{Controller, HealthService, Stdio};
use crate::handshake::{Cookie, HandshakeLine, ListenAddr, check_protocol_versions};

/// The socket directory of the running plugin, for [`exit_now`].
static SOCKET_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Ends the process at once with `code`, sending the spans that ended and
/// removing the socket directory first (a clean stop does both by itself).
pub fn exit_now(code: i32) -> ! {
    crate::trace::shutdown();
    if let Some(dir) = SOCKET_DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
    std::process::exit(code)
}

/// After a shutdown request, how long in-flight calls (an open scan stream)
/// may take before the plugin exits anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How often a plugin checks that the process that started it still runs.
const PARENT_CHECK: Duration = Duration::from_millis(500);

/// Resolves once `host`, the process that started this one, has gone (it
/// was killed or crashed without stopping its plugins), so the plugin stops
/// instead of running on unreachable. Gone means either this process was
/// handed to another parent, or the host's process entry no longer runs
/// (it exited, or is a zombie waiting to be reaped): some PID namespaces
/// do not report the new parent of an orphan at once.
async fn orphaned(host: u32) {
    let mut every = tokio::time::interval(PARENT_CHECK);
    loop {
        every.tick().await;
        if std::os::unix::process::parent_id() != host || !runs(host) {
            return;
        }
    }
}

/// Whether process `pid` exists and is not a zombie, read from
/// `/proc/<pid>/stat`. Without a readable `/proc` it is taken as running,
/// leaving the parent check alone to decide.
fn runs(pid: u32) -> bool {
    let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    !ended(&stat)
}

/// Whether a `/proc/<pid>/stat` line shows a process that has ended (a
/// zombie, or dead). `pid (comm) state ...`: comm may hold spaces and
/// parentheses, so the state is the first field after the last `)`.
fn ended(stat: &str) -> bool {
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next());
    matches!(state, Some("Z" | "X" | "x"))
}

/// Checks the magic cookie and the offered protocol versions, printing the
/// reason to stderr when the plugin must not start.
pub fn check_startup(cookie: &Cookie) -> Result<(), SdkError> {
    if let Err(e) = cookie.check(|k| std::env::var(k).ok()) {
        eprintln!("{}", cookie.by_hand_message());
        return Err(e);
    }
    let offered = std::env::var("PLUGIN_PROTOCOL_VERSIONS").ok();
    if let Err(e) = check_protocol_versions(offered.as_deref()) {
        eprintln!("{e}");
        return Err(e);
    }
    Ok(())
}

fn env_port(name: &'static str) -> Result<Option<u16>, SdkError> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<u16>()
            .map(Some)
            .map_err(|_| SdkError::InvalidEnv { name, value: v }),
        _ => Ok(None),
    }
}

async fn bind_tcp() -> Result<TcpListener, SdkError> {
    let (min, max) = match (env_port("PLUGIN_MIN_PORT")?, env_port("PLUGIN_MAX_PORT")?) {
        (None, None) => return Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?),
        (min, max) => (min.unwrap_or(1), max.unwrap_or(u16::MAX)),
    };
    for port in min..=max {
        if let Ok(l) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await {
            return Ok(l);
        }
    }
    Err(SdkError::NoFreePort { min, max })
}

/// A fresh directory for the socket, under `PLUGIN_UNIX_SOCKET_DIR` when set.
fn socket_dir() -> Result<tempfile::TempDir, SdkError> {
    let mut b = tempfile::Builder::new();
    b.prefix("svc-plugin-");
    Ok(match std::env::var_os("PLUGIN_UNIX_SOCKET_DIR") {
        Some(dir) if !dir.is_empty() => b.tempdir_in(dir)?,
        _ => b.tempdir()?,
    })
}

fn announce(addr: &ListenAddr) -> Result<(), SdkError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", HandshakeLine(addr))?;
    out.flush()?;
    Ok(())
}

/// Serves `add(framework services)` until `plugin.GRPCController/Shutdown`,
/// SIGTERM or the end of the process that started it, after printing the
/// handshake line.
pub(crate) async fn serve(
    cookie: &Cookie,
    served: &[&str],
    add: impl FnOnce(Router) -> Router,
) -> Result<(), SdkError> {
    check_startup(cookie)?;
    // Read before anything can wait: a host that dies while this process
    // starts is then still noticed.
    let host = std::os::unix::process::parent_id();
    crate::log::init();
    let shutdown = Arc::new(Notify::new());
    let health = HealthService {
        serving: served.iter().map(|s| (*s).to_owned()).collect(),
    };
    let router = add(Server::builder()
        .layer(TraceLayer)
        .add_service(HealthServer::new(health))
        .add_service(GrpcControllerServer::new(Controller {
            shutdown: shutdown.clone(),
        }))
        .add_service(GrpcStdioServer::new(Stdio)));
    let stop = {
        let shutdown = shutdown.clone();
        async move {
            let term = async {
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(mut s) => {
                        s.recv().await;
                    }
                    Err(_) => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = shutdown.notified() => {}
                () = term => tracing::info!("terminated"),
                () = orphaned(host) => tracing::warn!("the host process is gone; stopping"),
            }
        }
    };
    // The grace period starts when the stop signal fires.
    let stopped = Arc::new(Notify::new());
    let stop = {
        let stopped = stopped.clone();
        async move {
            stop.await;
            stopped.notify_one();
        }
    };
    let deadline = async move {
        stopped.notified().await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
        tracing::warn!("calls still open after the shutdown grace period; exiting");
    };

    let transport = std::env::var("SVC_PLUGIN_TRANSPORT").unwrap_or_default();
    if transport == "tcp" {
        let listener = bind_tcp().await?;
        let addr: SocketAddr = listener.local_addr()?;
        let server = router.serve_with_incoming_shutdown(TcpListenerStream::new(listener), stop);
        announce(&ListenAddr::Tcp(addr))?;
        tracing::info!(address = %addr, "plugin listening");
        tokio::select! {
            r = server => r?,
            () = deadline => {}
        }
    } else {
        let dir = socket_dir()?;
        let path = dir.path().join("plugin.sock");
        let listener = UnixListener::bind(&path)?;
        let _ = SOCKET_DIR.set(dir.path().to_owned());
        let server = router.serve_with_incoming_shutdown(UnixListenerStream::new(listener), stop);
        let addr = ListenAddr::Unix(path);
        announce(&addr)?;
        tracing::info!(address = %dir.path().display(), "plugin listening");
        tokio::select! {
            r = server => r?,
            () = deadline => {}
        }
        drop(dir);
    }
    tracing::info!("plugin stopped");
    let _ = tokio::task::spawn_blocking(crate::trace::shutdown).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_read_after_the_last_parenthesis() {
        assert!(ended("41 (svc) Z 1 41 41 0"));
        assert!(ended("41 (a) R (b) X 1"));
        assert!(!ended("41 (a) Z (b) S 1 41"));
        assert!(!ended("41 (svc-daemon) S 1 41 41 0"));
        assert!(!ended("garbage"));
    }

    #[test]
    fn a_running_process_runs_and_a_reaped_one_does_not() {
        assert!(runs(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().expect("true starts");
        let pid = child.id();
        child.wait().expect("true is reaped");
        assert!(!runs(pid));
    }
}
