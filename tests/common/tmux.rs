//! A program in a detached `tmux` session of a fixed size (Debian's
//! `tmux`, installed by `scripts/test`): keys go in with `send-keys`, the
//! screen comes out with `capture-pane`. Each session has a server of its
//! own (`-L`), killed on drop.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::POLL_PAUSE;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Printed by the pane's shell when the program ends, with its exit code.
pub const EXITED: &str = "program-exited-";

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Runs `command` (a shell command line) in a `width` x `height` pane.
    /// When it ends the pane prints [`EXITED`] and its exit code, and stays.
    pub fn start(command: &str, width: u16, height: u16) -> Tmux {
        let socket = format!(
            "svc-e2e-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let t = Tmux { socket };
        let line = format!("{command}; echo {EXITED}$?; read _");
        let out = t.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            &line,
        ]);
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run tmux ({e}): run the suite with scripts/test, which installs Debian's tmux")
            })
    }

    /// Sends tmux key names (`Enter`, `Escape`, `j`, `C-c`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "main"];
        args.extend_from_slice(keys);
        let out = self.run(&args);
        assert!(
            out.status.success(),
            "send-keys {keys:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        let out = self.run(&["send-keys", "-t", "main", "-l", text]);
        assert!(
            out.status.success(),
            "send-keys -l {text:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The pane's text as it shows now.
    pub fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "main"]);
        assert!(
            out.status.success(),
            "capture-pane: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A pane variable (`#{alternate_on}`, `#{pane_width}`).
    pub fn display(&self, format: &str) -> String {
        let out = self.run(&["display-message", "-p", "-t", "main", format]);
        assert!(
            out.status.success(),
            "display-message: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Polls the screen until `ok` holds for it, and returns it; fails
    /// with `what` and the last screen at the deadline.
    pub async fn wait_until(&self, what: &str, within: Duration, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {what} within {within:?}; it shows:\n{s}"
            );
            tokio::time::sleep(POLL_PAUSE).await;
        }
    }

    /// Polls the screen until it contains `needle`.
    pub async fn wait_for(&self, needle: &str, within: Duration) -> String {
        self.wait_until(&format!("{needle:?}"), within, |s| s.contains(needle))
            .await
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}
