//! `svc tui`: the estate in the terminal, over the daemon's REST API and
//! its `/events` stream.
//!
//! `app` holds the state and what each key does (no I/O), `model` the pure
//! functions over rows, `view` and `screens` draw the state, `client`
//! talks to the daemon (over HTTPS too, with the CLI's rustls client),
//! `wire` is the JSON it answers with. This file owns the terminal: raw
//! mode and the alternate screen are always left again, on quit, on error
//! and on a panic.

mod app;
mod client;
mod model;
mod screens;
mod theme;
mod view;
mod wire;

#[cfg(test)]
mod snapshots;

use std::io::{Stdout, Write};
use std::process::ExitCode;
use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyEventKind};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc;

use app::{App, Effect, Msg};
use client::Client;

/// How often the screen is drawn again without news (clock, stale state).
const REDRAW: Duration = Duration::from_secs(1);

/// Runs the terminal UI against the daemon at `url` with `token` until the
/// user quits.
pub async fn run(url: String, token: Option<String>) -> anyhow::Result<ExitCode> {
    let client = Client::new(&url, token)?;
    let app = App::new(
        url,
        colour_wanted(std::env::var_os("NO_COLOR"), std::env::var("TERM").ok()),
    );
    let mut guard = TerminalGuard::enter()?;
    let outcome = event_loop(&mut guard, app, client).await;
    drop(guard);
    outcome.map(|()| ExitCode::SUCCESS)
}

/// Colour unless `NO_COLOR` is set to anything non-empty or the terminal
/// is unknown or `dumb`.
fn colour_wanted(no_color: Option<std::ffi::OsString>, term: Option<String>) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    !matches!(term.as_deref(), None | Some("" | "dumb"))
}

/// Raw mode and the alternate screen while it lives; a panic restores the
/// terminal before its message is printed.
struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    fn enter() -> anyhow::Result<TerminalGuard> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        enable_raw_mode().map_err(|e| anyhow::anyhow!("svc tui needs a terminal: {e}"))?;
        let mut out = std::io::stdout();
        if let Err(e) = crossterm::execute!(out, EnterAlternateScreen) {
            restore();
            return Err(e.into());
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(e) => {
                restore();
                Err(e.into())
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves raw mode and the alternate screen and shows the cursor; harmless
/// when they are already left.
fn restore() {
    let _ = disable_raw_mode();
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(out, LeaveAlternateScreen, crossterm::cursor::Show);
    let _ = out.flush();
}

async fn event_loop(guard: &mut TerminalGuard, mut app: App, client: Client) -> anyhow::Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let stream = tokio::spawn(client.clone().stream(tx.clone()));
    let mut keys = EventStream::new();
    let mut redraw = tokio::time::interval(REDRAW);
    let result = loop {
        if let Err(e) = guard.terminal.draw(|f| view::draw(f, &app)) {
            break Err(e.into());
        }
        let effects = tokio::select! {
            ev = keys.next() => match ev {
                Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => app.on_key(k),
                Some(Ok(_)) => Vec::new(),
                Some(Err(e)) => break Err(e.into()),
                None => break Ok(()),
            },
            Some(msg) = rx.recv() => {
                let mut fx = app.apply(msg);
                // Apply whatever else already arrived before drawing again.
                while let Ok(more) = rx.try_recv() {
                    fx.extend(app.apply(more));
                }
                fx
            }
            _ = redraw.tick() => Vec::new(),
        };
        if effects.contains(&Effect::Quit) {
            break Ok(());
        }
        for e in dedup(effects) {
            tokio::spawn(client.clone().perform(e, tx.clone()));
        }
    };
    stream.abort();
    result
}

/// Effects in order, each once.
fn dedup(effects: Vec<Effect>) -> Vec<Effect> {
    let mut out: Vec<Effect> = Vec::with_capacity(effects.len());
    for e in effects {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_follows_no_color_and_term() {
        assert!(colour_wanted(None, Some("xterm-256color".into())));
        assert!(colour_wanted(Some("".into()), Some("xterm".into())));
        assert!(!colour_wanted(Some("1".into()), Some("xterm".into())));
        assert!(!colour_wanted(None, Some("dumb".into())));
        assert!(!colour_wanted(None, None));
    }

    #[test]
    fn effects_run_once() {
        let fx = dedup(vec![Effect::LoadSession, Effect::LoadQueue, Effect::LoadSession]);
        assert_eq!(fx, vec![Effect::LoadSession, Effect::LoadQueue]);
    }
}
