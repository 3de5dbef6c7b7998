//! `svc version`, `svc completion SHELL` and `svc man`: what the command
//! line says about itself.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::CommandFactory;
use serde_json::json;

use super::args::Cli;
use super::client::Client;
use super::output;
use super::remote::Remote;
use super::values::Shell;

/// `svc version`: this client's version and the running daemon's, read
/// from its open `/metrics` (`svc_build_info`).
pub async fn version(remote: &Remote) -> anyhow::Result<ExitCode> {
    let client = Client::new(remote)?;
    let daemon = match client.get_text("/metrics").await {
        Ok(text) => build_info(&text).unwrap_or_else(|| ("unknown".to_owned(), String::new())),
        Err(super::client::Failure::Unreachable(_)) => ("unreachable".to_owned(), String::new()),
        Err(_) => ("unknown".to_owned(), String::new()),
    };
    let v = json!({
        "client": {"version": env!("CARGO_PKG_VERSION")},
        "daemon": {"url": client.base(), "version": daemon.0, "commit": daemon.1},
    });
    if output::structured(remote, &v) {
        return Ok(ExitCode::SUCCESS);
    }
    println!("client: {}", env!("CARGO_PKG_VERSION"));
    let commit = if daemon.1.is_empty() {
        String::new()
    } else {
        format!(" (commit {})", daemon.1)
    };
    println!("daemon: {}{commit} at {}", daemon.0, client.base());
    Ok(ExitCode::SUCCESS)
}

/// The version and commit of the `svc_build_info` metric.
fn build_info(metrics: &str) -> Option<(String, String)> {
    let line = metrics.lines().find(|l| l.starts_with("svc_build_info{"))?;
    let labels = &line[line.find('{')? + 1..line.find('}')?];
    let label = |name: &str| {
        labels.split(',').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k.trim() == name).then(|| output::printable(v.trim().trim_matches('"')))
        })
    };
    Some((label("version")?, label("commit").unwrap_or_default()))
}

/// `svc completion SHELL`: the script on stdout.
pub fn completion(shell: Shell) -> anyhow::Result<ExitCode> {
    use clap_complete::{Shell as S, generate};
    let shell = match shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
    };
    generate(shell, &mut Cli::command(), "svc", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// `svc man`: the top page on stdout, or with `out` a page per verb
/// (`svc.1`, `svc-remediation-queue.1`, ...) written there.
pub fn man(out: Option<&Path>) -> anyhow::Result<ExitCode> {
    let cmd = Cli::command();
    let Some(dir) = out else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        std::io::stdout().write_all(&page)?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut cmd = cmd;
    cmd.build();
    let written = write_pages(&cmd, "svc", dir)?;
    eprintln!("{written} manual pages written to {}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `cmd` (built) and of each subcommand under it; the count.
fn write_pages(cmd: &clap::Command, name: &str, dir: &Path) -> anyhow::Result<usize> {
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone().display_name(name.to_owned())).render(&mut page)?;
    std::fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
    let mut count = 1;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        count += write_pages(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_holds_together() {
        // Global flags against every verb's own: a clash panics here, not at a user's.
        Cli::command().debug_assert();
    }

    #[test]
    fn the_daemon_version_is_read_from_build_info() {
        let metrics = "# HELP svc_build_info x\nsvc_build_info{version=\"1.2.3\",commit=\"abc\"} 1\n";
        assert_eq!(build_info(metrics), Some(("1.2.3".to_owned(), "abc".to_owned())));
        assert_eq!(build_info("svc_ready 1\n"), None);
    }
}
