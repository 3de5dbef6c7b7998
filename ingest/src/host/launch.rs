//! Launching one plugin process with the go-plugin compatible protocol:
//! magic cookie and protocol versions in the environment, the handshake line
//! on stdout, a gRPC channel over a Unix socket or TCP, the health check,
//! the provider Handshake, and shutdown through `plugin.GRPCController`.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use svc_proto::health::v1::health_check_response::ServingStatus;
use svc_proto::health::v1::{HealthCheckRequest, health_client::HealthClient};
use svc_proto::plugin::{Empty, grpc_controller_client::GrpcControllerClient};
use svc_proto::provider::v1 as pb;
use svc_proto::provider::v1::{provider_client::ProviderClient, remediator_client::RemediatorClient};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::timeout;
use tonic::transport::{Channel, Endpoint, Uri};
use tracing::Instrument;

use super::discover::{Integrity, PLUGIN_PREFIX};
use super::handshake::{Handshake, Net, parse_handshake};
use super::logs::forward_lines;
use super::manifest::Role;
use super::trace;
use super::{HostError, status_text};

/// Longest handshake line read from a plugin.
const MAX_HANDSHAKE_LINE: u64 = 64 * 1024;
/// Largest message accepted from a plugin.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Largest HTTP/2 frame the host accepts (its SETTINGS_MAX_FRAME_SIZE):
/// HTTP/2's own maximum, 2^24 - 1 bytes. A plugin streaming large
/// responses may send each in one frame instead of HTTP/2's default 16 KiB,
/// so far fewer frames are read and parsed, and a message that fits one
/// frame is handed to the decoders as a slice of it, not copied together.
pub(crate) const MAX_FRAME_BYTES: u32 = (1 << 24) - 1;
/// HTTP/2 flow-control window of a plugin's stream and connection: how far
/// a plugin may send ahead of the decoders.
pub(crate) const STREAM_WINDOW_BYTES: u32 = 16 * 1024 * 1024;

/// How plugins are launched and stopped.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Time for the handshake line, the health check and Handshake, each.
    pub handshake_timeout: Duration,
    /// Time a plugin gets to exit after Shutdown before it is killed.
    pub shutdown_grace: Duration,
    /// Sent in `HandshakeRequest.daemon_version`.
    pub daemon_version: String,
    /// Extra environment for the plugin process.
    pub env: Vec<(String, String)>,
    /// Where plugin socket directories are made; the system's temporary
    /// directory when `None`.
    pub socket_parent: Option<PathBuf>,
    /// The binary's integrity check, run before each launch (and, by the
    /// plugin's source, before each scan) when set: the daemon sets it for
    /// the plugins it discovered; a plugin started from a build directory
    /// has no manifest to check against.
    pub integrity: Option<Arc<Integrity>>,
}

impl Default for LaunchOptions {
    fn default() -> LaunchOptions {
        LaunchOptions {
            handshake_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(2),
            daemon_version: env!("CARGO_PKG_VERSION").to_owned(),
            env: Vec::new(),
            socket_parent: None,
            integrity: None,
        }
    }
}

/// A running plugin process and its gRPC channel.
#[derive(Debug)]
pub struct PluginProcess {
    name: String,
    path: PathBuf,
    role: Role,
    child: Child,
    /// The plugin's process group (its pid: it leads a group of its own),
    /// so whatever it started is stopped with it.
    group: Option<u32>,
    channel: Channel,
    handshake: Handshake,
    plugin_version: String,
    shutdown_grace: Duration,
    /// The version of the binary that passed its integrity check before
    /// this process started ([`Integrity::check`]), when it was checked.
    checked: Option<u64>,
    /// The directory the plugin is told to put its Unix socket in
    /// (`PLUGIN_UNIX_SOCKET_DIR`); removed with everything in it when the
    /// process value is dropped, so a plugin that is killed, or crashes,
    /// leaves nothing behind.
    _socket_dir: tempfile::TempDir,
}

/// Kills every process of the process group `group` leads: a plugin and
/// whatever it started.
fn kill_group(group: Option<u32>) {
    if let Some(pid) = group.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

impl Drop for PluginProcess {
    /// A plugin still running when its value goes (a scan cancelled, the
    /// daemon stopping) is killed with its group; one already reaped is
    /// left alone, as its group id may be another's by now.
    fn drop(&mut self) {
        if self.child.id().is_some() {
            kill_group(self.group);
        }
    }
}

/// Runs `opts`' integrity check of the binary at `path`, if it has one,
/// off the async workers (it may hash the binary): which version passed.
pub(crate) async fn check_integrity(path: &Path, opts: &LaunchOptions) -> Result<Option<u64>, HostError> {
    let Some(integrity) = &opts.integrity else {
        return Ok(None);
    };
    let (integrity, binary) = (integrity.clone(), path.to_owned());
    tokio::task::spawn_blocking(move || integrity.check(&binary))
        .await
        .map_err(|e| HostError::Io {
            path: path.to_owned(),
            source: std::io::Error::other(e),
        })?
        .map(Some)
}

/// Socket directories are `<temp>/svc-plugin-sock-<host pid>-<random>`.
const SOCKET_DIR_PREFIX: &str = "svc-plugin-sock-";

/// Removes the socket directories in `temp` that a host process which no
/// longer runs left behind (it was killed before it could stop its
/// plugins), first stopping the plugin each names if that process still
/// runs (plugins written with the SDK stop by themselves once their host is
/// gone; others may not). Directories of running processes, and any other
/// entry, are left alone.
pub fn sweep_socket_dirs(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SOCKET_DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own || runs(pid) {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            stop_orphan(&entry.path());
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => {
                    tracing::info!(dir = %entry.path().display(), pid, "removed a stopped host's plugin socket directory")
                }
                Err(e) => {
                    tracing::debug!(dir = %entry.path().display(), error = %e, "stale plugin socket directory not removed")
                }
            }
        }
    }
}

/// The file in a socket directory naming the plugin process launched with
/// it: `<pid> <start time> <path>`, the start time as `/proc/<pid>/stat`
/// gives it, so a later process with the same pid is never taken for it.
const PLUGIN_PID_FILE: &str = "plugin.pid";

/// What `/proc/<pid>/stat` says of a process: its state letter and when it
/// started (clock ticks since boot); `None` where there is no such file.
fn proc_stat(pid: u32) -> Option<(String, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces and parentheses)
    // start at field 3, the state; the start time is field 22.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.to_owned();
    let started = fields.nth(18)?.parse().ok()?;
    Some((state, started))
}

/// Whether process `pid` runs (or cannot be told apart from one that does).
/// A zombie (ended, not yet reaped: under a container init that does not
/// reap, for good) does not run.
fn runs(pid: u32) -> bool {
    if let Some((state, _)) = proc_stat(pid) {
        return alive(&state);
    }
    let Ok(raw) = i32::try_from(pid) else { return true };
    // Signal 0 checks for the process without sending anything; only "no
    // such process" says it is gone.
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// When process `pid` started, if it runs.
fn start_time(pid: u32) -> Option<u64> {
    proc_stat(pid)
        .filter(|(state, _)| alive(state))
        .map(|(_, started)| started)
}

/// Whether a process state letter is one of a process that has not ended
/// (`Z` zombie and `X` dead have).
fn alive(state: &str) -> bool {
    state != "Z" && state != "X"
}

/// Notes the plugin process launched with socket directory `dir`, for
/// [`sweep_socket_dirs`] should this host end without stopping it.
fn note_plugin(dir: &Path, pid: u32, path: &Path) {
    let Some(started) = start_time(pid) else { return };
    let line = format!("{pid} {started} {}\n", path.display());
    if let Err(e) = std::fs::write(dir.join(PLUGIN_PID_FILE), line) {
        tracing::debug!(dir = %dir.display(), error = %e, "plugin pid not noted");
    }
}

/// Stops the plugin process a stopped host launched with socket directory
/// `dir`, when that very process (same pid, same start time) still runs:
/// a plugin that does not notice its host's end by itself would otherwise
/// run on, unreachable, for good.
fn stop_orphan(dir: &Path) {
    let Ok(text) = std::fs::read_to_string(dir.join(PLUGIN_PID_FILE)) else {
        return;
    };
    let mut fields = text.trim_end().splitn(3, ' ');
    let (Some(Ok(pid)), Some(Ok(started)), path) = (
        fields.next().map(str::parse::<u32>),
        fields.next().map(str::parse::<u64>),
        fields.next().unwrap_or(""),
    ) else {
        return;
    };
    if start_time(pid) != Some(started) {
        return;
    }
    let Ok(raw) = i32::try_from(pid) else { return };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), nix::sys::signal::Signal::SIGKILL) {
        Ok(()) => tracing::warn!(pid, plugin = %path, "stopped a plugin left running by a host that no longer runs"),
        Err(e) => tracing::debug!(pid, plugin = %path, error = %e, "orphaned plugin not stopped"),
    }
}

/// The plugin name of a binary: its file name without `svc-plugin-`.
pub fn plugin_name(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match file.strip_prefix(PLUGIN_PREFIX) {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => file,
    }
}

impl PluginProcess {
    /// Starts the plugin at `path` and connects to it. The process is killed
    /// when any step fails and when the returned value is dropped.
    pub async fn launch(path: &Path, role: Role, opts: &LaunchOptions) -> Result<PluginProcess, HostError> {
        let checked = check_integrity(path, opts).await?;
        let name = plugin_name(path);
        let parent = opts.socket_parent.clone().unwrap_or_else(std::env::temp_dir);
        sweep_socket_dirs(&parent);
        let socket_dir = tempfile::Builder::new()
            .prefix(&format!("{SOCKET_DIR_PREFIX}{}-", std::process::id()))
            .tempdir_in(&parent)
            .map_err(|source| HostError::SocketDir {
                name: name.clone(),
                parent: parent.clone(),
                source,
            })?;
        let mut cmd = Command::new(path);
        match role {
            Role::Provider => cmd.env("SVC_PLUGIN", "svc"),
            Role::Heuristic => cmd.env("SVC_HEURISTIC_PLUGIN", "svc-heuristic"),
        };
        cmd.env("PLUGIN_PROTOCOL_VERSIONS", "1")
            .env("PLUGIN_MIN_PORT", "10000")
            .env("PLUGIN_MAX_PORT", "25000")
            .env("PLUGIN_UNIX_SOCKET_DIR", socket_dir.path())
            .envs(opts.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own: a plugin's children go when it does.
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|source| match source.kind() {
            std::io::ErrorKind::PermissionDenied => HostError::NotExecutable { path: path.to_owned() },
            _ => HostError::Spawn {
                name: name.clone(),
                source,
            },
        })?;
        if let Some(pid) = child.id() {
            note_plugin(socket_dir.path(), pid, path);
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(forward_lines(name.clone(), stderr, "stderr"));
        }
        match connect(&name, role, opts, &mut child).await {
            Ok((channel, handshake, plugin_version)) => {
                tracing::info!(plugin = %name, pid = child.id(), net = %handshake.net, addr = %handshake.addr,
                    version = %plugin_version, "plugin started");
                let group = child.id();
                Ok(PluginProcess {
                    name,
                    path: path.to_owned(),
                    role,
                    child,
                    group,
                    channel,
                    handshake,
                    plugin_version,
                    shutdown_grace: opts.shutdown_grace,
                    checked,
                    _socket_dir: socket_dir,
                })
            }
            Err(e) => {
                kill_group(child.id());
                let _ = child.start_kill();
                let _ = child.wait().await;
                Err(e)
            }
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn handshake(&self) -> &Handshake {
        &self.handshake
    }

    /// `HandshakeResponse.plugin_version` (empty for heuristic plugins).
    pub fn plugin_version(&self) -> &str {
        &self.plugin_version
    }

    /// The operating system's process id, while the process has not been reaped.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }

    /// Whether the binary at the process's path is still the one it was
    /// started from: checked again with `opts`' integrity check. `Ok(false)`
    /// when it was installed again since (a new version passed), an error
    /// when it no longer passes; `Ok(true)` without a check.
    pub async fn binary_unchanged(&self, opts: &LaunchOptions) -> Result<bool, HostError> {
        let now = check_integrity(&self.path, opts).await?;
        Ok(now.is_none() || self.checked.is_none() || now == self.checked)
    }

    /// The exit status if the process has exited.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits up to `within` for the process to exit.
    pub async fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        timeout(within, self.child.wait()).await.ok().and_then(Result::ok)
    }

    /// Kills the process and everything it started, and reaps it.
    pub async fn kill(&mut self) {
        if self.child.id().is_some() {
            kill_group(self.group);
        }
        let _ = self.child.kill().await;
    }

    /// Asks the plugin to stop (`GRPCController.Shutdown`; the reply is
    /// usually a transport error as the process exits), waits for the grace
    /// period, then kills it.
    pub async fn shutdown(mut self) {
        let grace = self.shutdown_grace;
        let deadline = tokio::time::Instant::now() + grace;
        let mut controller = GrpcControllerClient::new(self.channel.clone());
        let call = controller.shutdown(Empty {});
        if let Ok(Err(status)) = tokio::time::timeout_at(deadline, call).await {
            tracing::debug!(plugin = %self.name, reply = %status_text(&status), "plugin shutdown reply");
        }
        match tokio::time::timeout_at(deadline, self.child.wait()).await {
            Ok(Ok(status)) => {
                tracing::info!(plugin = %self.name, %status, "plugin stopped");
                // What it started and left running goes too; the group
                // still has members, so its id is not reused yet.
                kill_group(self.group);
            }
            _ => {
                tracing::warn!(plugin = %self.name, grace = ?grace, "plugin did not exit after shutdown; killing it");
                self.kill().await;
            }
        }
    }

    pub(crate) fn provider(&self) -> ProviderClient<Channel> {
        ProviderClient::new(self.channel.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES)
    }

    /// `Provider.PreflightCheck`, the optional credentials check run before
    /// a scan: `Ok(None)` when the plugin does not implement it.
    pub async fn preflight(
        &self,
        config: std::collections::HashMap<String, String>,
        within: Duration,
    ) -> Result<Option<pb::PreflightResponse>, HostError> {
        let span = tracing::info_span!("plugin.preflight", plugin = %self.name);
        let mut client = self.provider();
        let call = client.preflight_check(trace::request(&span, pb::PreflightRequest { config }));
        match timeout(within, call).instrument(span).await {
            Err(_) => Err(HostError::Rpc {
                name: self.name.clone(),
                rpc: "PreflightCheck",
                message: format!("not answered within {}", fmt_duration(within)),
            }),
            Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => Ok(None),
            Ok(Err(status)) => Err(HostError::rpc(&self.name, "PreflightCheck", &status)),
            Ok(Ok(reply)) => Ok(Some(reply.into_inner())),
        }
    }

    /// `Provider.CheckReversibility`: whether removing a resource can be undone.
    pub async fn check_reversibility(
        &self,
        req: pb::ReversibilityRequest,
    ) -> Result<pb::ReversibilityProof, HostError> {
        self.provider()
            .check_reversibility(req)
            .await
            .map(tonic::Response::into_inner)
            .map_err(|s| HostError::rpc(&self.name, "CheckReversibility", &s))
    }

    /// `Provider.ApplyQuarantine`, in span `plugin.quarantine`.
    pub async fn apply_quarantine(&self, req: pb::QuarantineRequest) -> Result<pb::QuarantineResponse, HostError> {
        let span = tracing::info_span!("plugin.quarantine", plugin = %self.name, crn = %req.crn, action = %req.action);
        self.provider()
            .apply_quarantine(trace::request(&span, req))
            .instrument(span)
            .await
            .map(tonic::Response::into_inner)
            .map_err(|s| HostError::rpc(&self.name, "ApplyQuarantine", &s))
    }

    /// `Remediator.Remediate`, in span `plugin.remediate`. A plugin without
    /// `Remediator` answers `Unimplemented`: it is scan-only.
    pub async fn remediate(&self, req: pb::RemediateRequest) -> Result<pb::RemediateResponse, HostError> {
        let span = tracing::info_span!("plugin.remediate", plugin = %self.name, crn = %req.crn, action = %req.action,
            dry_run = req.dry_run);
        let req = trace::request(&span, req);
        RemediatorClient::new(self.channel.clone())
            .remediate(req)
            .instrument(span)
            .await
            .map(tonic::Response::into_inner)
            .map_err(|s| HostError::rpc(&self.name, "Remediate", &s))
    }
}

/// Time a process gets to be seen exiting after one of its streams broke.
const CRASH_PROBE: Duration = Duration::from_millis(500);

/// Before `process` is used for a scan or a pass: drops it when it has
/// exited, and shuts it down when its binary was installed again since it
/// started, so the next use launches the binary as it is now; an error
/// when the binary no longer passes its integrity check.
pub(crate) async fn drop_if_stale(process: &mut Option<PluginProcess>, opts: &LaunchOptions) -> Result<(), HostError> {
    if let Some(p) = process.as_mut()
        && let Some(status) = p.exit_status()
    {
        tracing::warn!(plugin = %p.name(), role = ?p.role(), %status, "plugin exited; restarting it");
        *process = None;
    }
    if let Some(p) = process.as_ref()
        && !p.binary_unchanged(opts).await?
    {
        tracing::info!(plugin = %p.name(), role = ?p.role(), "plugin installed again; restarting it");
        if let Some(p) = process.take() {
            p.shutdown().await;
        }
    }
    Ok(())
}

/// After a call on `process` broke: the exit status when the process has
/// exited (it is then dropped, to be relaunched on next use), else `None`.
pub(crate) async fn exited_after_error(process: &mut Option<PluginProcess>) -> Option<ExitStatus> {
    let exit = process.as_mut()?.wait_exit(CRASH_PROBE).await?;
    *process = None;
    Some(exit)
}

/// Everything after spawning: handshake line, dial, health, Handshake.
async fn connect(
    name: &str,
    role: Role,
    opts: &LaunchOptions,
    child: &mut Child,
) -> Result<(Channel, Handshake, String), HostError> {
    let no_handshake = |reason: String| HostError::NoHandshake {
        name: name.to_owned(),
        reason,
    };
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| no_handshake("its stdout is not readable".to_owned()))?;
    let (line, rest) = read_handshake_line(stdout, opts.handshake_timeout, child)
        .await
        .map_err(no_handshake)?;
    tokio::spawn(forward_lines(name.to_owned(), rest, "stdout"));
    let handshake = parse_handshake(&line).map_err(|error| HostError::InvalidHandshake {
        name: name.to_owned(),
        error,
    })?;
    let unreachable = |reason: String| HostError::Connect {
        name: name.to_owned(),
        addr: format!("{}:{}", handshake.net, handshake.addr),
        reason,
    };
    if handshake.cert.is_some() {
        return Err(unreachable(
            "the plugin serves TLS (AutoMTLS), which the host does not request".to_owned(),
        ));
    }
    let channel = dial(&handshake, opts.handshake_timeout).await.map_err(unreachable)?;

    let t = opts.handshake_timeout;
    let mut health_client = HealthClient::new(channel.clone());
    let health = health_client.check(HealthCheckRequest {
        service: "plugin".to_owned(),
    });
    let status = match timeout(t, health).await {
        Err(_) => {
            return Err(no_handshake(format!(
                "health check not answered within {}",
                fmt_duration(t)
            )));
        }
        Ok(Err(status)) => return Err(HostError::rpc(name, "health check", &status)),
        Ok(Ok(resp)) => resp.into_inner().status(),
    };
    if status != ServingStatus::Serving {
        return Err(HostError::Unhealthy {
            name: name.to_owned(),
            status: status.as_str_name().to_owned(),
        });
    }
    if role == Role::Heuristic {
        return Ok((channel, handshake, String::new()));
    }

    let span = tracing::info_span!("plugin.handshake", plugin = %name, daemon_version = %opts.daemon_version);
    let mut provider = ProviderClient::new(channel.clone());
    let call = provider.handshake(trace::request(
        &span,
        pb::HandshakeRequest {
            daemon_version: opts.daemon_version.clone(),
        },
    ));
    let reply = match timeout(t, call).instrument(span).await {
        Err(_) => {
            return Err(no_handshake(format!(
                "Handshake not answered within {}",
                fmt_duration(t)
            )));
        }
        Ok(Err(status)) => return Err(HostError::rpc(name, "Handshake", &status)),
        Ok(Ok(resp)) => resp.into_inner(),
    };
    if !reply.compatible {
        return Err(HostError::Incompatible {
            name: name.to_owned(),
            message: reply.message,
        });
    }
    Ok((channel, handshake, reply.plugin_version))
}

/// The first stdout line, and the reader for the rest of stdout.
async fn read_handshake_line(
    stdout: ChildStdout,
    within: Duration,
    child: &mut Child,
) -> Result<(String, BufReader<ChildStdout>), String> {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    let read = timeout(
        within,
        (&mut reader).take(MAX_HANDSHAKE_LINE).read_until(b'\n', &mut buf),
    )
    .await;
    match read {
        Err(_) => Err(format!("it printed no handshake line within {}", fmt_duration(within))),
        Ok(Err(e)) => Err(format!("its stdout could not be read: {e}")),
        Ok(Ok(0)) => match timeout(Duration::from_secs(1), child.wait()).await {
            Ok(Ok(status)) => Err(format!("it exited ({status}) before printing a handshake line")),
            _ => Err("it closed its stdout without printing a handshake line".to_owned()),
        },
        Ok(Ok(_)) => Ok((String::from_utf8_lossy(&buf).into_owned(), reader)),
    }
}

async fn dial(handshake: &Handshake, connect_timeout: Duration) -> Result<Channel, String> {
    let result = match handshake.net {
        Net::Tcp => {
            let endpoint = Endpoint::from_shared(format!("http://{}", handshake.addr)).map_err(|e| error_chain(&e))?;
            endpoint
                .connect_timeout(connect_timeout)
                .max_frame_size(MAX_FRAME_BYTES)
                .initial_stream_window_size(STREAM_WINDOW_BYTES)
                .initial_connection_window_size(STREAM_WINDOW_BYTES)
                .connect()
                .await
        }
        Net::Unix => {
            let path = PathBuf::from(&handshake.addr);
            let connector = tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move { Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?)) }
            });
            Endpoint::from_static("http://plugin.invalid")
                .connect_timeout(connect_timeout)
                .max_frame_size(MAX_FRAME_BYTES)
                .initial_stream_window_size(STREAM_WINDOW_BYTES)
                .initial_connection_window_size(STREAM_WINDOW_BYTES)
                .connect_with_connector(connector)
                .await
        }
    };
    result.map_err(|e| error_chain(&e))
}

/// An error and its sources, joined with `: `.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A duration as the log and error texts show it: `10s`, `10m`.
pub(crate) fn fmt_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}
