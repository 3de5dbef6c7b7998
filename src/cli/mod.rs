//! Command-line verbs. Every verb but `daemon` talks to a running daemon
//! over its REST API.

mod client;
mod ledger;
mod output;
mod verbs;

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::daemon::{self, DaemonOptions};

#[derive(Parser, Debug)]
#[command(
    name = "svc",
    version,
    about = "Finds the cloud resources you pay for and do not use"
)]
pub struct Cli {
    /// Log format of the daemon: `text` or `json`.
    #[arg(long, global = true, default_value = "text", env = "SVC_LOG_FORMAT")]
    log_format: String,
    #[command(subcommand)]
    command: Command,
}

/// Where the daemon is and how to authenticate.
#[derive(clap::Args, Debug, Clone)]
pub struct Remote {
    /// Address of the daemon.
    #[arg(long, env = "SVC_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// Operator token; defaults to the contents of `$SVC_DATA_DIR/token`.
    #[arg(long, env = "SVC_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the raw JSON answer.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the daemon.
    Daemon {
        /// Scan a simulated estate instead of real clouds.
        #[arg(long)]
        mock: bool,
        /// Approximate number of resources in the simulated estate.
        #[arg(long, default_value_t = 300)]
        mock_scale: usize,
        /// Seed of the simulated estate.
        #[arg(long, default_value_t = 42)]
        mock_seed: u64,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
    },
    /// Run a scan now and wait for it.
    Scan {
        #[command(flatten)]
        remote: Remote,
        /// Return as soon as the scan has started.
        #[arg(long)]
        no_wait: bool,
        /// How long each source may scan before it is cancelled (default 10m).
        #[arg(long)]
        timeout: Option<String>,
    },
    /// Graph totals.
    Stats {
        #[command(flatten)]
        remote: Remote,
    },
    /// List resources.
    Nodes {
        #[command(flatten)]
        remote: Remote,
        /// Only this provider (aws, gcp, azure, kubernetes, ...).
        #[arg(long)]
        provider: Option<String>,
        /// How many to list.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Show one resource.
    Node {
        #[command(flatten)]
        remote: Remote,
        /// Its CRN, with or without the `svc` segment.
        crn: String,
    },
    /// Installed plugins.
    Plugins {
        #[command(subcommand)]
        command: PluginsCommand,
    },
    /// The audit ledger: verify the hash chain, tail events, export now.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
    /// Ledger history, newest first.
    History {
        #[command(flatten)]
        remote: Remote,
        /// Only this event type (SCAN_COMPLETED, s.a.u_ACTION, ...).
        #[arg(long = "type")]
        event_type: Option<String>,
        /// Only events after this: a duration (3d, 12h) or RFC 3339.
        #[arg(long)]
        since: Option<String>,
        /// Only this resource.
        #[arg(long)]
        crn: Option<String>,
        /// How many events.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

#[derive(Subcommand, Debug)]
enum LedgerCommand {
    /// Check the hash chain and the sequence; report the first broken link.
    /// Asks the running daemon; when it cannot be reached, reads
    /// `$SVC_DATA_DIR/events.redb` directly. Exit code 1 when broken.
    Verify {
        #[command(flatten)]
        remote: Remote,
        /// Verify this events.redb directly, without a daemon (the file must
        /// not be open in a running daemon).
        #[arg(long)]
        file: Option<std::path::PathBuf>,
    },
    /// Print the newest events, oldest first.
    Tail {
        #[command(flatten)]
        remote: Remote,
        /// How many events.
        #[arg(short = 'n', long = "lines", default_value_t = 20)]
        lines: u64,
        /// Keep printing new events as they are committed (over the
        /// WebSocket), reconnecting without gap when the daemon restarts.
        #[arg(short, long)]
        follow: bool,
    },
    /// Write every event not yet exported to `sau.audit_bucket` now.
    Export {
        #[command(flatten)]
        remote: Remote,
    },
}

#[derive(Subcommand, Debug)]
enum PluginsCommand {
    /// List the installed plugins (asks the running daemon).
    List {
        #[command(flatten)]
        remote: Remote,
    },
    /// Switch a plugin between active and inactive (asks the running daemon).
    Toggle {
        #[command(flatten)]
        remote: Remote,
        /// The plugin's name (`svc-plugin-<name>`).
        name: String,
    },
    /// Copy a plugin binary into `$SVC_DATA_DIR/plugins` and write its
    /// manifest; the daemon discovers it at its next start.
    InstallLocal {
        /// The plugin binary.
        path: std::path::PathBuf,
        /// Its name; defaults to the file name without `svc-plugin-`.
        #[arg(long)]
        name: Option<String>,
        /// cloud, database, infrastructure, saas, iot, devops or security.
        #[arg(long, default_value = "cloud")]
        category: String,
        /// provider or heuristic.
        #[arg(long, default_value = "provider")]
        role: String,
    },
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Daemon {
            mock,
            mock_scale,
            mock_seed,
            listen,
        } => {
            crate::logging::init(&cli.log_format)?;
            daemon::run(DaemonOptions {
                listen,
                mock,
                mock_scale,
                mock_seed,
            })
            .await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Scan {
            remote,
            no_wait,
            timeout,
        } => verbs::scan(&remote, !no_wait, timeout.as_deref()).await,
        Command::Stats { remote } => verbs::stats(&remote).await,
        Command::Plugins { command } => match command {
            PluginsCommand::List { remote } => verbs::plugins_list(&remote).await,
            PluginsCommand::Toggle { remote, name } => verbs::plugins_toggle(&remote, &name).await,
            PluginsCommand::InstallLocal {
                path,
                name,
                category,
                role,
            } => {
                crate::plugins::install_local(&path, name.as_deref(), &category, &role)?;
                Ok(ExitCode::SUCCESS)
            }
        },
        Command::Nodes {
            remote,
            provider,
            limit,
        } => verbs::nodes(&remote, provider.as_deref(), limit).await,
        Command::Node { remote, crn } => verbs::node(&remote, &crn).await,
        Command::Ledger { command } => match command {
            LedgerCommand::Verify { remote, file } => ledger::verify(&remote, file.as_deref()).await,
            LedgerCommand::Tail { remote, lines, follow } => ledger::tail(&remote, lines, follow).await,
            LedgerCommand::Export { remote } => ledger::export(&remote).await,
        },
        Command::History {
            remote,
            event_type,
            since,
            crn,
            limit,
        } => verbs::history(&remote, event_type.as_deref(), since.as_deref(), crn.as_deref(), limit).await,
    }
}
