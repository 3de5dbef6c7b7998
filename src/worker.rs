//! `svc worker`: a scan worker. It runs provider plugins (from its own
//! plugin directory, checked against their manifests as the daemon checks
//! its own) for the sources a daemon asks it to scan, and serves the
//! provider protocol on TCP with mutual TLS: a daemon dials it with a
//! certificate the CA signed, and a client without one is refused in the
//! TLS handshake. Every call names its source; the worker runs one plugin
//! process per source and relays the call to it
//! ([`svc_ingest::remote::relay`]).
//!
//! With `--join`, the worker registers in the cluster's etcd (under
//! `<prefix>/workers/<id>`, on a lease it keeps alive while it serves), and
//! the daemons assign it sources from the live set; without it, daemons
//! list it in their `[workers.members]`.
//!
//! Settings are flags (each also an `SVC_WORKER_*` variable): a worker
//! keeps no state and has no data directory, so it has no configuration
//! file.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use parking_lot::Mutex;
use svc_cluster::{Etcd, EtcdConfig, Lease, Member, Membership};
use svc_ingest::host::LaunchOptions;
use svc_ingest::remote::{Relay, TlsFiles, WorkerOptions, valid_source_name};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::Server;
use tracing::{info, warn};

/// What `svc worker` was started with.
pub struct WorkerArgs {
    pub join: Option<JoinArgs>,
    pub id: String,
    pub listen: SocketAddr,
    pub advertise: Option<String>,
    pub tls: TlsFiles,
    pub plugin_dir: PathBuf,
}

/// How a worker reaches etcd when it joins a cluster (`--join`).
pub struct JoinArgs {
    /// etcd's client URLs.
    pub endpoints: Vec<String>,
    /// The cluster's key prefix, as the daemons' `cluster.prefix`.
    pub prefix: String,
    /// The lease the registration hangs on: a worker that dies leaves the
    /// live set within this time.
    pub lease_ttl: Duration,
    /// etcd's TLS, as `[cluster]` has it.
    pub tls: Option<svc_cluster::TlsFiles>,
}

/// Checks `--join` and the etcd flags as `[cluster]`'s settings are checked.
pub fn join_args(
    endpoints: &str,
    prefix: String,
    lease_ttl: &str,
    ca: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    server_name: Option<String>,
) -> anyhow::Result<JoinArgs> {
    let endpoints: Vec<String> = endpoints
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect();
    if endpoints.is_empty() || endpoints.iter().any(|e| e.contains(char::is_whitespace)) {
        bail!("--join: list etcd's client URLs, comma-separated (https://etcd-1:2379,https://etcd-2:2379)");
    }
    if prefix.trim_matches('/').is_empty() {
        bail!("--cluster-prefix is empty");
    }
    let ttl =
        humantime::parse_duration(lease_ttl).with_context(|| format!("--lease-ttl {lease_ttl:?} is not a duration"))?;
    if !(Duration::from_secs(2)..=Duration::from_secs(300)).contains(&ttl) || ttl.subsec_nanos() != 0 {
        bail!("--lease-ttl must be whole seconds from 2s to 5m, got {lease_ttl:?}");
    }
    if cert.is_some() != key.is_some() {
        bail!("--etcd-cert and --etcd-key go together: mutual TLS needs both");
    }
    let tls = match ca {
        Some(ca) => Some(svc_cluster::TlsFiles {
            ca,
            cert,
            key,
            server_name,
        }),
        None if cert.is_some() => bail!("--etcd-cert needs --etcd-ca, the CA of etcd's certificates"),
        None => None,
    };
    Ok(JoinArgs {
        endpoints,
        prefix,
        lease_ttl: ttl,
        tls,
    })
}

/// The pause between attempts to register again after the lease was lost.
const RETRY: Duration = Duration::from_secs(1);

/// A worker's registration, kept while it serves; dropping it stops the
/// keep-alive, [`Registration::leave`] removes it at once.
struct Registration {
    lease: Arc<Mutex<Option<Lease>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Registration {
    /// Revokes the lease, which removes the worker from the live set now
    /// rather than after the lease time.
    async fn leave(self) {
        self.task.abort();
        let lease = self.lease.lock().take();
        if let Some(lease) = lease
            && let Err(e) = lease.revoke().await
        {
            warn!(error = %e, "could not leave the cluster; the registration expires with its lease");
        }
    }
}

async fn register(membership: &Membership, etcd: &Etcd, ttl: Duration, me: &Member) -> svc_cluster::Result<Lease> {
    let lease = Lease::grant(etcd, ttl).await?;
    membership.register(&lease, me).await?;
    Ok(lease)
}

/// Registers `me` with the etcd cluster under a lease kept alive while the
/// worker runs (so it leaves the live set within the lease time when it
/// dies). The first registration must succeed: a worker that cannot reach
/// etcd at start says so and exits. A lease lost later (etcd unreachable
/// beyond the lease time) is replaced: the worker registers again as soon
/// as etcd answers, since it keeps no state that the loss made stale.
async fn join(args: &JoinArgs, me: Member) -> anyhow::Result<Registration> {
    let mut config = EtcdConfig::new(args.endpoints.clone());
    config.tls = args.tls.clone();
    let etcd = Etcd::connect(&config).context("cannot set up the etcd client of --join")?;
    let membership = Membership::new(&etcd, &crate::cluster::members_prefix(&args.prefix));
    let first = register(&membership, &etcd, args.lease_ttl, &me)
        .await
        .with_context(|| {
            format!(
                "cannot register worker {} with etcd at {}",
                me.id,
                args.endpoints.join(",")
            )
        })?;
    info!(id = %me.id, endpoints = ?args.endpoints, lease_ttl = ?first.ttl(), "joined the cluster");
    let held = Arc::new(Mutex::new(Some(first.clone())));
    let ttl = args.lease_ttl;
    let task = tokio::spawn({
        let held = held.clone();
        async move {
            let mut lease = first;
            loop {
                lease.lost().await;
                warn!(id = %me.id, "the worker's etcd lease was lost; registering again");
                lease = loop {
                    match register(&membership, &etcd, ttl, &me).await {
                        Ok(lease) => break lease,
                        Err(e) => {
                            warn!(error = %e, "cannot register with etcd; trying again");
                            tokio::time::sleep(RETRY).await;
                        }
                    }
                };
                info!(id = %me.id, "registered with the cluster again");
                *held.lock() = Some(lease.clone());
            }
        }
    });
    Ok(Registration { lease: held, task })
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
    // What it can run: its plugins by name (a source's `plugin`).
    let me = Member {
        id: args.id.clone(),
        addr: advertise.clone(),
        sources: relay.plugins(),
    };
    let registration = match &args.join {
        Some(join_args) => {
            if args.advertise.is_none() && local.ip().is_unspecified() {
                bail!("--advertise is needed with --join when listening on {local}: daemons cannot dial it");
            }
            Some(join(join_args, me.clone()).await?)
        }
        None => None,
    };
    let (provider, remediator) = relay.services();
    info!(id = %me.id, advertise = %me.addr, plugins = ?me.sources, plugin_dir = %args.plugin_dir.display(),
        "svc worker {} listening on {local}", me.id);
    let served = server
        .add_service(provider)
        .add_service(remediator)
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), crate::daemon::shutdown_signal())
        .await;
    if let Some(registration) = registration {
        registration.leave().await;
    }
    relay.shutdown().await;
    served.context("the worker's server failed")?;
    info!(id = %me.id, "svc worker stopped");
    Ok(())
}
