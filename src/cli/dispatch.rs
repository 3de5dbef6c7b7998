//! Carries out a parsed command line: each verb is handed to the module
//! that implements it, `daemon` to the daemon.

use std::process::ExitCode;

use super::args::{
    BenchCommand, Cli, Command, ConfigCommand, HistoryCommand, LedgerCommand, NotifyCommand, PluginsCommand,
    PolicyCommand, RegistryCommand, RemediationCommand, TokenCommand,
};
use super::values::name;
use super::{bench, docs, explore, iac, ledger, notify, policy, registry, remediation, scan, soak, tokens, verbs};
use crate::daemon::{self, DaemonOptions};

/// Carries out the verb `cli` names; the exit code tells how it went.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let cli = cli.0;
    let remote = cli.remote.clone();
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
        Command::Scan { no_wait, timeout } => scan::run(&remote, !no_wait, timeout).await,
        Command::Stats {} => verbs::stats(&remote).await,
        Command::Mcp {} => verbs::mcp(&remote).await,
        Command::Tui {} => crate::tui::run(remote.url.clone(), super::client::token_of(&remote)).await,
        Command::Drift { crn, limit } => iac::drift(&remote, crn.as_deref(), limit).await,
        Command::Provenance { crn } => iac::provenance(&remote, &crn).await,
        Command::Ask { question, conversation } => verbs::ask(&remote, &question, conversation.as_deref()).await,
        Command::Plugins { command } => match command {
            PluginsCommand::List {} => verbs::plugins_list(&remote).await,
            PluginsCommand::Toggle { name } => verbs::plugins_toggle(&remote, &name).await,
            PluginsCommand::InstallLocal {
                path,
                name,
                category,
                role,
            } => {
                crate::plugins::install_local(
                    &path,
                    name.as_deref(),
                    &super::values::name(&category),
                    &super::values::name(&role),
                )?;
                Ok(ExitCode::SUCCESS)
            }
        },
        Command::Remediation { command } => match command {
            RemediationCommand::Queue { stage, limit } => {
                remediation::queue(&remote, stage.map(|s| name(&s)).as_deref(), limit).await
            }
            RemediationCommand::Plan { crn } => remediation::plan(&remote, &crn).await,
            RemediationCommand::Approve { crn, plan_hash } => {
                remediation::decide(&remote, "approve", &crn, plan_hash.as_deref(), None, None).await
            }
            RemediationCommand::Reject { crn, plan_hash, reason } => {
                remediation::decide(&remote, "reject", &crn, plan_hash.as_deref(), reason.as_deref(), None).await
            }
            RemediationCommand::Move {
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
                    Some(&name(&to)),
                )
                .await
            }
            RemediationCommand::Override { crn, reason, plan_hash } => {
                remediation::decide(&remote, "override", &crn, plan_hash.as_deref(), Some(&reason), None).await
            }
            RemediationCommand::Bulk { action, crns, reason } => {
                remediation::bulk(&remote, &name(&action), &crns, reason.as_deref()).await
            }
            RemediationCommand::Quarantine { crn, action, reason } => {
                remediation::quarantine(&remote, &crn, &name(&action), &reason).await
            }
        },
        Command::Ignore {
            crn,
            reason,
            ttl,
            remove,
        } => remediation::ignore(&remote, &crn, &reason, ttl.as_secs(), remove).await,
        Command::Revert { hash } => remediation::revert(&remote, &hash).await,
        Command::Policy { command } => match command {
            PolicyCommand::Add {
                id,
                condition,
                action,
                message,
                shadow,
            } => policy::add(&remote, &id, &condition, &name(&action), &message, shadow).await,
            PolicyCommand::List {} => policy::list(&remote).await,
            PolicyCommand::Rm { id } => policy::rm(&remote, &id).await,
            PolicyCommand::Toggle { id } => policy::toggle(&remote, &id).await,
            PolicyCommand::Reorder { ids } => policy::reorder(&remote, &ids).await,
            PolicyCommand::DryRun { condition, limit } => policy::dry_run(&remote, &condition, limit).await,
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
        Command::Nodes { provider, page } => verbs::nodes(&remote, provider.as_deref(), &page).await,
        Command::Node { crn } => verbs::node(&remote, &crn).await,
        Command::Ledger { command } => match command {
            LedgerCommand::Verify { file } => ledger::verify(&remote, file.as_deref()).await,
            LedgerCommand::Tail { lines, follow } => ledger::tail(&remote, lines, follow).await,
            LedgerCommand::Export {} => ledger::export(&remote).await,
        },
        Command::Registry { command } => match command {
            RegistryCommand::Search { q, refresh } => registry::search(&remote, q.as_deref(), refresh).await,
            RegistryCommand::Install { name, activate, force } => {
                registry::install(&remote, &name, activate, force).await
            }
            RegistryCommand::Installed {} => registry::installed(&remote).await,
            RegistryCommand::Remove { name } => registry::remove(&remote, &name).await,
            RegistryCommand::Refresh {} => registry::refresh(&remote).await,
        },
        Command::Token { command } => match command {
            TokenCommand::Create { name: token, role } => tokens::create(&remote, &token, &name(&role)).await,
            TokenCommand::List {} => tokens::list(&remote).await,
            TokenCommand::Revoke { name } => tokens::revoke(&remote, &name).await,
        },
        Command::Notify { command } => match command {
            NotifyCommand::Test { all } => notify::test(&remote, all).await,
        },
        Command::Bench(cli) => match cli.command {
            None => bench::run(cli.run).await,
            Some(BenchCommand::Soak(mut args)) => {
                args.token = remote.token.clone();
                soak::run(*args).await
            }
            Some(BenchCommand::Compare { current, baseline }) => bench::compare_files(&current, &baseline, &remote),
            Some(BenchCommand::Table { file }) => bench::table_file(&file),
        },
        Command::History(history) => match history.command {
            None => verbs::history(&remote, &history.list).await,
            Some(HistoryCommand::Summary) => explore::history_summary(&remote).await,
            Some(HistoryCommand::Prune { older_than }) => explore::history_prune(&remote, older_than).await,
        },
        Command::Waste { provider, top } => explore::waste(&remote, provider.as_deref(), top).await,
        Command::Anomalies {
            resource_type,
            provider,
            limit,
        } => explore::anomalies(&remote, resource_type.as_deref(), provider.as_deref(), limit).await,
        Command::Blast { crn, limit } => explore::blast(&remote, &crn, limit).await,
        Command::At { time, page } => explore::at(&remote, &time, &page).await,
        Command::Diff { from, to, limit } => explore::diff(&remote, &from, &to, limit).await,
        Command::Versions { crn, limit } => explore::versions(&remote, &crn, limit).await,
        Command::Oracle { crn } => explore::oracle(&remote, &crn).await,
        Command::Traffic { limit } => explore::traffic(&remote, limit).await,
        Command::Config { command } => match command {
            ConfigCommand::Get { key } => explore::config_get(&remote, key.as_deref()).await,
            ConfigCommand::Set { key, value } => explore::config_set(&remote, &key, &value).await,
        },
        Command::Version => docs::version(&remote).await,
        Command::Completion { shell } => docs::completion(shell),
        Command::Man { out } => docs::man(out.as_deref()),
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
