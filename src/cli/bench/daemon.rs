//! The daemon a bench measures: this same binary as a child process, on a
//! data directory of its own, scanning the mock estate through
//! `svc-plugin-mock` processes (installed into that directory and listed in
//! `plugins.active`, so every node crosses the plugin protocol).
//!
//! A [`BenchDaemon`] is stopped with SIGTERM (SIGKILL past a deadline) by
//! [`BenchDaemon::stop`]; dropped while it runs, it is killed (the child is
//! spawned with `kill_on_drop`), so no error path leaves one behind.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::paths;

/// How long a stopped daemon may take to exit before it is killed.
const STOP_DEADLINE: Duration = Duration::from_secs(120);
/// Pause between two polls of the daemon's log or of `/readyz`.
const POLL: Duration = Duration::from_millis(5);
/// Lines of the daemon's log quoted when it fails.
const LOG_TAIL: usize = 30;

/// How a daemon of the bench is made.
pub struct Setup {
    /// This binary (`svc`).
    pub exe: PathBuf,
    /// `svc-plugin-mock`.
    pub plugin: PathBuf,
    /// The data directory, made fresh by the caller.
    pub data_dir: PathBuf,
    /// Nodes of the estate, split over `plugins` plugin processes.
    pub scale: usize,
    pub seed: u64,
    pub plugins: usize,
    /// Where it listens (port 0: one the system picks).
    pub listen: SocketAddr,
}

impl Setup {
    /// The plugin names, one a process: `mock`, `mock2`, `mock3`, ...
    pub fn plugin_names(&self) -> Vec<String> {
        (0..self.plugins.max(1))
            .map(|k| {
                if k == 0 {
                    "mock".to_owned()
                } else {
                    format!("mock{}", k + 1)
                }
            })
            .collect()
    }

    /// Installs the plugins and writes the configuration: no scheduled
    /// scan but the one at start, every plugin active with its share of
    /// the estate (each its own seed, so their resources differ).
    pub fn prepare(&self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("cannot create the data directory {}", self.data_dir.display()))?;
        let names = self.plugin_names();
        for name in &names {
            let out = std::process::Command::new(&self.exe)
                .args(["plugins", "install-local", "--name", name])
                .arg(&self.plugin)
                .env("SVC_DATA_DIR", &self.data_dir)
                .stdin(std::process::Stdio::null())
                .output()
                .context("cannot run `svc plugins install-local`")?;
            if !out.status.success() {
                bail!(
                    "cannot install {} as plugin {name}: {}",
                    self.plugin.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        }
        let share = self.scale.div_ceil(names.len());
        let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        let mut config = format!(
            "# Written by `svc bench`: the scans are the bench's own.\n[daemon]\nscan_interval = \"24h\"\n\n\
             [plugins]\nactive = [{}]\n",
            quoted.join(", ")
        );
        for (k, name) in names.iter().enumerate() {
            config.push_str(&format!(
                "\n[plugins.config.{name}]\nseed = {}\nscale = {share}\nbatch_size = 2000\n",
                self.seed + k as u64
            ));
        }
        let path = self.data_dir.join(paths::CONFIG_FILE);
        std::fs::write(&path, config).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }
}

/// A running daemon of the bench.
pub struct BenchDaemon {
    child: tokio::process::Child,
    pub pid: u32,
    pub addr: SocketAddr,
    pub base: String,
    pub token: String,
    log: PathBuf,
}

/// The address of a line with `listening on http://ADDR`.
fn listen_address(line: &str) -> Option<SocketAddr> {
    const MARK: &str = "listening on http://";
    let rest = &line[line.find(MARK)? + MARK.len()..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '"' || c == '\\' || c.is_control())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The last lines of a log file, for an error message.
pub fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n")
}

impl BenchDaemon {
    /// Starts `svc daemon` on the prepared data directory, listening on
    /// `listen`; returns once it has printed the address it listens on.
    pub async fn start(setup: &Setup, listen: SocketAddr, deadline: Duration) -> anyhow::Result<BenchDaemon> {
        let log = setup.data_dir.join("daemon.log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("cannot open {}", log.display()))?;
        // The log of an earlier start stays; only what follows is read.
        let skip = file.metadata().map(|m| m.len()).unwrap_or(0) as usize;
        let mut child = tokio::process::Command::new(&setup.exe)
            .args(["daemon", "--listen", &listen.to_string(), "--log-format", "text"])
            .env("SVC_DATA_DIR", &setup.data_dir)
            .env("NO_COLOR", "1")
            .env_remove("SVC_URL")
            .env_remove("SVC_TOKEN")
            .env_remove("SVC_LOG")
            .stdin(std::process::Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            // A group of its own: a Ctrl-C at the terminal reaches the
            // bench alone, which stops the daemon in order.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start the daemon {}", setup.exe.display()))?;
        let pid = child.id().context("the daemon exited at once")?;
        let until = Instant::now() + deadline;
        let addr = loop {
            let text = std::fs::read(&log).unwrap_or_default();
            let fresh = String::from_utf8_lossy(text.get(skip..).unwrap_or_default()).into_owned();
            if let Some(addr) = fresh.lines().find_map(listen_address) {
                break addr;
            }
            if let Ok(Some(status)) = child.try_wait() {
                bail!(
                    "the daemon exited while starting ({status}); is {listen} in use? the end of its log ({}):\n{}",
                    log.display(),
                    log_tail(&log)
                );
            }
            if Instant::now() > until {
                bail!(
                    "the daemon did not listen within {deadline:?}; the end of its log ({}):\n{}",
                    log.display(),
                    log_tail(&log)
                );
            }
            tokio::time::sleep(POLL).await;
        };
        let token = std::fs::read_to_string(setup.data_dir.join(paths::TOKEN_FILE))
            .context("the daemon wrote no token")?
            .trim()
            .to_owned();
        Ok(BenchDaemon {
            child,
            pid,
            addr,
            base: format!("http://{addr}"),
            token,
            log,
        })
    }

    /// Whether it still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The end of its log.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }

    /// An error saying it died, with the end of its log.
    pub fn died(&self, doing: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "the daemon died {doing}; the end of its log ({}):\n{}",
            self.log.display(),
            self.log_tail()
        )
    }

    /// Polls `/readyz` until it answers 200.
    pub async fn wait_ready(&mut self, http: &reqwest::Client, deadline: Duration) -> anyhow::Result<()> {
        let until = Instant::now() + deadline;
        let url = format!("{}/readyz", self.base);
        loop {
            if let Ok(r) = http.get(&url).timeout(Duration::from_secs(5)).send().await
                && r.status().is_success()
            {
                return Ok(());
            }
            if !self.alive() {
                return Err(self.died("before it was ready"));
            }
            if Instant::now() > until {
                bail!(
                    "the daemon was not ready within {deadline:?}; the end of its log:\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `VmRSS` and `VmHWM` of the daemon, in bytes.
    pub fn memory(&self) -> anyhow::Result<(u64, u64)> {
        let path = format!("/proc/{}/status", self.pid);
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        let field = |name: &str| -> anyhow::Result<u64> {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
                .map(|kib| kib * 1024)
                .with_context(|| format!("no {name} in {path}"))
        };
        Ok((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// Stops it with SIGTERM and waits for it to exit (SIGKILL past the
    /// deadline); how long it took to exit.
    pub async fn stop(mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        if let Ok(pid) = i32::try_from(self.pid) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
        }
        match tokio::time::timeout(STOP_DEADLINE, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(started.elapsed()),
            Ok(Ok(status)) => bail!(
                "the daemon exited with {status} when stopped; the end of its log:\n{}",
                self.log_tail()
            ),
            Ok(Err(e)) => Err(e).context("cannot wait for the daemon"),
            Err(_) => {
                let _ = self.child.kill().await;
                bail!("the daemon did not stop within {STOP_DEADLINE:?} of SIGTERM; killed")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_read_from_the_listening_line() {
        let line = "2026-11-29T19:00:00Z INFO svc listening on http://127.0.0.1:40123 addr=127.0.0.1:40123";
        assert_eq!(listen_address(line), Some("127.0.0.1:40123".parse().unwrap()));
        assert_eq!(listen_address("nothing here"), None);
    }

    #[test]
    fn plugins_are_named_mock_then_numbered() {
        let setup = Setup {
            exe: PathBuf::new(),
            plugin: PathBuf::new(),
            data_dir: PathBuf::new(),
            scale: 10,
            seed: 1,
            plugins: 3,
            listen: "127.0.0.1:0".parse().unwrap(),
        };
        assert_eq!(setup.plugin_names(), ["mock", "mock2", "mock3"]);
    }
}
