//! Carries out a parsed command line: each verb is handed to the module
//! that implements it, `daemon` to the daemon.

use std::process::ExitCode;

use super::args::{
    BenchCommand, Cli, Command, LedgerCommand, NotifyCommand, PluginsCommand, PolicyCommand, RegistryCommand,
    RemediationCommand, TokenCommand,
};
use super::{bench, iac, ledger, notify, policy, registry, remediation, soak, tokens, verbs};
use crate::daemon::{self, DaemonOptions};

/// Carries out the verb `cli` names; the exit code tells how it went.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Daemon {
            mock,
            mock_scale,
            mock_seed,
            listen,
            otlp_endpoint,
        } => {
            let telemetry = crate::logging::init(&cli.log_format, otlp_endpoint.as_deref())?;
            let result = daemon::run(DaemonOptions {
                listen,
                mock,
                mock_scale,
                mock_seed,
            })
            .await;
            if let Some(telemetry) = telemetry {
                // The last spans leave on a blocking thread (the exporter's
                // HTTP client blocks).
                let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
            }
            match result? {
                daemon::Exit::Stopped => Ok(ExitCode::SUCCESS),
                daemon::Exit::Restart => Err(start_again()),
            }
        }
        Command::Worker {
            join,
            etcd,
            id,
            listen,
            advertise,
            tls_cert,
            tls_key,
            tls_ca,
            plugin_dir,
            otlp_endpoint,
        } => {
            let join = join
                .map(|endpoints| {
                    let etcd = *etcd;
                    crate::worker::join_args(
                        &endpoints,
                        etcd.cluster_prefix,
                        &etcd.lease_ttl,
                        etcd.etcd_ca,
                        etcd.etcd_cert,
                        etcd.etcd_key,
                        etcd.etcd_server_name,
                    )
                })
                .transpose()?;
            let telemetry = crate::logging::init(&cli.log_format, otlp_endpoint.as_deref())?;
            let result = crate::worker::run(crate::worker::WorkerArgs {
                join,
                id,
                listen,
                advertise,
                tls: svc_ingest::remote::TlsFiles {
                    cert: tls_cert,
                    key: tls_key,
                    ca: tls_ca,
                },
                plugin_dir,
            })
            .await;
            if let Some(telemetry) = telemetry {
                let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
            }
            result?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Scan {
            remote,
            no_wait,
            timeout,
        } => verbs::scan(&remote, !no_wait, timeout.as_deref()).await,
        Command::Stats { remote } => verbs::stats(&remote).await,
        Command::Mcp { remote } => verbs::mcp(&remote).await,
        Command::Drift { remote, crn, limit } => iac::drift(&remote, crn.as_deref(), limit).await,
        Command::Provenance { remote, crn } => iac::provenance(&remote, &crn).await,
        Command::Ask {
            remote,
            question,
            conversation,
        } => verbs::ask(&remote, &question, conversation.as_deref()).await,
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
        Command::Remediation { command } => match command {
            RemediationCommand::Queue { remote, stage, limit } => {
                remediation::queue(&remote, stage.as_deref(), limit).await
            }
            RemediationCommand::Plan { remote, crn } => remediation::plan(&remote, &crn).await,
            RemediationCommand::Approve { remote, crn, plan_hash } => {
                remediation::decide(&remote, "approve", &crn, plan_hash.as_deref(), None, None).await
            }
            RemediationCommand::Reject {
                remote,
                crn,
                plan_hash,
                reason,
            } => remediation::decide(&remote, "reject", &crn, plan_hash.as_deref(), reason.as_deref(), None).await,
            RemediationCommand::Move {
                remote,
                crn,
                to,
                plan_hash,
                reason,
            } => {
                remediation::decide(
                    &remote,
                    "move",
                    &crn,
                    plan_hash.as_deref(),
                    reason.as_deref(),
                    Some(&to),
                )
                .await
            }
            RemediationCommand::Override {
                remote,
                crn,
                reason,
                plan_hash,
            } => remediation::decide(&remote, "override", &crn, plan_hash.as_deref(), Some(&reason), None).await,
            RemediationCommand::Bulk {
                remote,
                action,
                crns,
                reason,
            } => remediation::bulk(&remote, &action, &crns, reason.as_deref()).await,
            RemediationCommand::Quarantine {
                remote,
                crn,
                action,
                reason,
            } => remediation::quarantine(&remote, &crn, &action, &reason).await,
        },
        Command::Ignore {
            remote,
            crn,
            reason,
            ttl,
            remove,
        } => remediation::ignore(&remote, &crn, &reason, ttl, remove).await,
        Command::Revert { remote, hash } => remediation::revert(&remote, &hash).await,
        Command::Policy { command } => match command {
            PolicyCommand::Add {
                remote,
                id,
                condition,
                action,
                message,
                shadow,
            } => policy::add(&remote, &id, &condition, &action, &message, shadow).await,
            PolicyCommand::List { remote } => policy::list(&remote).await,
            PolicyCommand::Rm { remote, id } => policy::rm(&remote, &id).await,
            PolicyCommand::Toggle { remote, id } => policy::toggle(&remote, &id).await,
            PolicyCommand::Reorder { remote, ids } => policy::reorder(&remote, &ids).await,
            PolicyCommand::DryRun {
                remote,
                condition,
                limit,
            } => policy::dry_run(&remote, &condition, limit).await,
            PolicyCommand::Install { path } => {
                let info =
                    svc_ingest::packs::install(&path, &crate::paths::data_dir().join(crate::paths::POLICIES_DIR))?;
                println!(
                    "policy pack {} {} installed ({} rules); evaluated from the next scan",
                    info.pack.name,
                    info.pack.version,
                    info.pack.rules.len()
                );
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
        Command::Registry { command } => match command {
            RegistryCommand::Search { remote, q, refresh } => registry::search(&remote, q.as_deref(), refresh).await,
            RegistryCommand::Install {
                remote,
                name,
                activate,
                force,
            } => registry::install(&remote, &name, activate, force).await,
            RegistryCommand::Installed { remote } => registry::installed(&remote).await,
            RegistryCommand::Remove { remote, name } => registry::remove(&remote, &name).await,
            RegistryCommand::Refresh { remote } => registry::refresh(&remote).await,
        },
        Command::Token { command } => match command {
            TokenCommand::Create { remote, name, role } => tokens::create(&remote, &name, &role).await,
            TokenCommand::List { remote } => tokens::list(&remote).await,
            TokenCommand::Revoke { remote, name } => tokens::revoke(&remote, &name).await,
        },
        Command::Notify { command } => match command {
            NotifyCommand::Test { remote, all } => notify::test(&remote, all).await,
        },
        Command::Bench(cli) => match cli.command {
            None => bench::run(cli.run).await,
            Some(BenchCommand::Soak(args)) => soak::run(args).await,
            Some(BenchCommand::Compare {
                current,
                baseline,
                output,
            }) => bench::compare_files(&current, &baseline, output == "json"),
            Some(BenchCommand::Table { file }) => bench::table_file(&file),
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

/// Replaces this process with a fresh start of the same command line (a
/// demoted cluster node starts again as a standby). Returns only when
/// that fails, with why.
fn start_again() -> anyhow::Error {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return anyhow::anyhow!("cannot find this program to start it again as a standby: {e}"),
    };
    let e = std::process::Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .exec();
    anyhow::anyhow!("cannot start {} again as a standby: {e}", exe.display())
}
