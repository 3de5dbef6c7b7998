//! `svc worker`: a scan worker. It runs provider plugins (from its own
//! plugin directory, checked against their manifests as the daemon checks
//! its own) for the sources a daemon asks it to scan, and serves the
//! provider protocol on TCP with mutual TLS: a daemon dials it with a
//! certificate the CA signed, and a client without one is refused in the
//! TLS handshake. Every call names its source; the worker runs one plugin
//! process per source and relays the call to it
//! ([`svc_ingest::remote::relay`]).
//!
//! Settings are flags (each also an `SVC_WORKER_*` variable): a worker
//! keeps no state and has no data directory, so it has no configuration
//! file.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use svc_ingest::host::LaunchOptions;
use svc_ingest::remote::{Relay, TlsFiles, WorkerOptions, valid_source_name};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::Server;
use tracing::info;

/// What `svc worker` was started with.
pub struct WorkerArgs {
    pub join: Option<String>,
    pub id: String,
    pub listen: SocketAddr,
    pub advertise: Option<String>,
    pub tls: TlsFiles,
    pub plugin_dir: PathBuf,
}

/// What a worker tells the cluster about itself.
#[derive(Clone, Debug)]
pub struct Member {
    pub id: String,
    /// `host:port` daemons dial.
    pub addr: String,
    /// The provider plugins it can run.
    pub plugins: Vec<String>,
}

/// Registers `me` with the etcd cluster at `endpoints` under a lease kept
/// alive while the worker runs (so it leaves the live set within the lease
/// time when it dies). This is where svc-cluster's membership goes.
async fn join(endpoints: &str, me: &Member) -> anyhow::Result<()> {
    bail!(
        "--join {endpoints}: this build registers no worker with etcd yet; start {} without --join and \
         list it in the daemon's [workers.members] as {} = \"{}\"",
        me.id,
        me.id,
        me.addr
    )
}

/// Runs the worker until SIGTERM or Ctrl-C, then stops its plugins.
pub async fn run(args: WorkerArgs) -> anyhow::Result<()> {
    if !valid_source_name(&args.id) {
        bail!(
            "invalid worker id {:?}: 1 to 128 letters, digits, '-', '_', '.', ':'",
            args.id
        );
    }
    if !args.plugin_dir.is_dir() {
        bail!("plugin directory {} is not a directory", args.plugin_dir.display());
    }
    let tls = args.tls.server().context("the worker's TLS files")?;
    let mut server = Server::builder()
        .tls_config(tls)
        .context("the worker's TLS certificate and key do not make a TLS server")?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let local = listener.local_addr()?;
    let advertise = args.advertise.clone().unwrap_or_else(|| local.to_string());
    let relay = Relay::new(WorkerOptions {
        id: args.id.clone(),
        plugin_dir: args.plugin_dir.clone(),
        launch: LaunchOptions {
            env: crate::telemetry::plugin_env(),
            ..LaunchOptions::default()
        },
    });
    let me = Member {
        id: args.id.clone(),
        addr: advertise.clone(),
        plugins: relay.plugins(),
    };
    if let Some(endpoints) = &args.join {
        if args.advertise.is_none() && local.ip().is_unspecified() {
            bail!("--advertise is needed with --join when listening on {local}: daemons cannot dial it");
        }
        join(endpoints, &me).await?;
    }
    let (provider, remediator) = relay.services();
    info!(id = %me.id, advertise = %me.addr, plugins = ?me.plugins, plugin_dir = %args.plugin_dir.display(),
        "svc worker {} listening on {local}", me.id);
    let served = server
        .add_service(provider)
        .add_service(remediator)
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), crate::daemon::shutdown_signal())
        .await;
    relay.shutdown().await;
    served.context("the worker's server failed")?;
    info!(id = %me.id, "svc worker stopped");
    Ok(())
}
