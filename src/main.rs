//! `svc`: the one binary. `svc daemon` runs the daemon; every other verb is
//! a client of its REST API.

mod cli;
mod cluster;
mod config;
mod daemon;
mod logging;
mod paths;
mod plugins;
mod registry;
mod retention;
mod settings;
mod telemetry;
mod tui;
mod worker;
mod workers;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    svc_engine::malloc::tune();
    let args = cli::Cli::parse();
    match cli::run(args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
