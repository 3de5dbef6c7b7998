//! Command-line verbs. Every verb but `daemon` talks to a running daemon
//! over its REST API.
//!
//! `args` is the grammar clap parses and `dispatch` hands each verb to the
//! module that carries it out: `verbs` (scan, stats, nodes, node, history,
//! plugins), `remediation`, `policy`, `registry`, `ledger`, `notify` (`svc notify test`), `tokens` (`svc token`),
//! `bench` (`svc bench`: figures of daemons it starts, comparisons, PERF.md rows) and `soak`
//! (`svc bench soak`). Those talk to the daemon through `client`, reach it as `remote`
//! says, and print with `output`.

mod args;
mod bench;
mod client;
mod dispatch;
mod iac;
mod ledger;
mod notify;
mod output;
mod policy;
mod registry;
mod remediation;
mod remote;
mod soak;
mod tokens;
mod verbs;

pub use args::Cli;
pub use dispatch::run;
