//! Command-line verbs. Every verb but `daemon` talks to a running daemon
//! over its REST API.
//!
//! `args` is the grammar clap parses (`values`: the flags' fixed choices;
//! `remote`: the global flags, `--url`, `--token`, `--ca-file`, `-o`) and
//! `dispatch` hands each verb to the module that carries it out: `verbs`
//! (stats, nodes, node, history, plugins, ask, mcp), `scan` (a scan
//! followed with its progress), `explore` (waste, anomalies, blast, at,
//! diff, oracle, traffic, config, history summary and prune), `docs`
//! (version, completion, man), `remediation`, `policy`, `registry`,
//! `ledger`, `notify` (`svc notify test`), `tokens` (`svc token`),
//! `bench` (`svc bench`: figures of daemons it starts, comparisons, PERF.md rows) and `soak`
//! (`svc bench soak`). Those talk to the daemon through `client`, reach it as `remote`
//! says, and print with `output` (tables, JSON, YAML) and `time` (durations
//! in, RFC 3339 with how long ago out).

/// The answer of a request to the daemon, or the verb's exit with the
/// failure reported (the exit codes of `client`).
macro_rules! call {
    ($e:expr) => {
        match $e.await {
            Ok(v) => v,
            Err(f) => return Ok(f.report()),
        }
    };
}

mod args;
mod bench;
mod client;
mod dispatch;
mod docs;
mod explore;
mod iac;
mod ledger;
mod notify;
mod output;
mod page;
mod policy;
mod registry;
mod remediation;
mod remote;
mod scan;
mod soak;
pub(crate) mod time;
mod tokens;
mod values;
mod verbs;

pub use args::Cli;
pub use dispatch::run;
