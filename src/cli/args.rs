//! The command line's grammar: every verb with its arguments and flags, as
//! clap parses them. `dispatch` carries each verb out.

use std::net::SocketAddr;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use super::page::Page;
use super::remote::Remote;
use super::time::{Time, parse_duration, parse_time};
use super::values::{BulkAction, PluginCategory, PluginRole, QuarantineAction, Role, RuleAction, Shell, Stage};
use super::{bench, soak};

/// The command line as parsed: the grammar below, with the client flags
/// hidden from and refused by the commands that are no client of a
/// daemon's REST API ([`LOCAL`]).
#[derive(Debug)]
pub struct Cli(pub(super) Grammar);

/// The commands that are no client of a daemon's REST API, each with the
/// client flags (`Remote`'s: `--url`, `--token`, `--ca-file`, `-o`,
/// `--json`) it still takes: `bench compare` prints as `-o` says, `bench
/// soak --attach` sends `--token`. The client flags a command does not take
/// are hidden from its help, its manual page and the completions; given on
/// its command line they are a usage error, from the environment
/// (`SVC_URL`, ...) they are ignored.
const LOCAL: &[(&str, &[&str])] = &[
    ("daemon", &[]),
    ("worker", &[]),
    ("completion", &[]),
    ("man", &[]),
    ("bench", &[]),
    ("bench compare", &["output", "json"]),
    ("bench table", &[]),
    ("bench soak", &["token"]),
    ("plugins install-local", &[]),
    ("policy install", &[]),
];

/// The ids of the client flags.
fn client_flags() -> Vec<String> {
    <Remote as clap::Args>::augment_args(clap::Command::new("remote"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

impl CommandFactory for Cli {
    fn command() -> clap::Command {
        hide_client_flags(Grammar::command())
    }

    fn command_for_update() -> clap::Command {
        hide_client_flags(Grammar::command_for_update())
    }
}

impl FromArgMatches for Cli {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        refuse_client_flags(matches)?;
        Grammar::from_arg_matches(matches).map(Cli)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        refuse_client_flags(matches)?;
        self.0.update_from_arg_matches(matches)
    }
}

impl Parser for Cli {}

/// The command at `path` (verbs separated by spaces) under `cmd`.
fn find<'a>(cmd: &'a mut clap::Command, path: &str) -> Option<&'a mut clap::Command> {
    path.split(' ').try_fold(cmd, |cmd, name| cmd.find_subcommand_mut(name))
}

/// `cmd` built (the global flags copied into every command), with the
/// client flags hidden where [`LOCAL`] says they mean nothing.
fn hide_client_flags(mut cmd: clap::Command) -> clap::Command {
    cmd.build();
    let client = client_flags();
    for (path, takes) in LOCAL {
        let Some(sub) = find(&mut cmd, path) else {
            continue;
        };
        // `mut_args` keeps the arguments in place (their keys index them
        // in a built command).
        *sub = std::mem::take(sub).mut_args(|a| {
            let id = a.get_id().as_str();
            if client.iter().any(|c| c == id) && !takes.contains(&id) {
                a.hide(true)
            } else {
                a
            }
        });
    }
    cmd
}

/// A usage error when a client flag was given on the command line to a
/// command of [`LOCAL`] that does not take it.
fn refuse_client_flags(matches: &clap::ArgMatches) -> Result<(), clap::Error> {
    let mut verbs = Vec::new();
    let mut at = matches;
    while let Some((name, sub)) = at.subcommand() {
        verbs.push(name);
        at = sub;
    }
    let path = verbs.join(" ");
    let Some((_, takes)) = LOCAL.iter().find(|(p, _)| *p == path) else {
        return Ok(());
    };
    for id in client_flags() {
        if takes.contains(&id.as_str()) {
            continue;
        }
        // Global flags given anywhere on the line are recorded at the top.
        if matches.value_source(&id) != Some(clap::parser::ValueSource::CommandLine) {
            continue;
        }
        let mut cmd = Cli::command();
        let arg = find(&mut cmd, &path).and_then(|sub| sub.get_arguments().find(|a| a.get_id() == id.as_str()));
        let flag = match (arg.and_then(|a| a.get_short()), arg.and_then(|a| a.get_long())) {
            (Some(short), Some(long)) => format!("-{short}/--{long}"),
            (None, Some(long)) => format!("--{long}"),
            _ => id.clone(),
        };
        let hint = match (verbs.first().copied(), id.as_str()) {
            (Some("daemon" | "worker"), "url") => "; it listens where --listen says",
            (Some("daemon" | "worker"), "output" | "json") => "; its logs are formatted as --log-format says",
            _ => "",
        };
        let message =
            format!("`svc {path}` does not take {flag}: it is a flag of the verbs that talk to a running daemon{hint}");
        let err = clap::Error::raw(clap::error::ErrorKind::UnknownArgument, message);
        return Err(match find(&mut cmd, &path) {
            Some(sub) => err.format(sub),
            None => err.format(&mut cmd),
        });
    }
    Ok(())
}

// The grammar as clap derives it (no doc comment: it would become the
// long help of `svc --help`).
#[derive(Parser, Debug)]
#[command(
    name = "svc",
    version,
    about = "Finds the cloud resources you pay for and do not use"
)]
pub(super) struct Grammar {
    /// Log format of the daemon: `text` or `json`.
    #[arg(long, global = true, default_value = "text", env = "SVC_LOG_FORMAT")]
    pub(super) log_format: String,
    #[command(flatten)]
    pub(super) remote: Remote,
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand, Debug)]
pub(super) enum Command {
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
        /// Export traces over OTLP/HTTP (protobuf) to this collector: a base
        /// address such as `http://127.0.0.1:4318` (spans go to its
        /// `/v1/traces`) or the full traces URL. Read at start only.
        #[arg(long, value_name = "URL")]
        otlp_endpoint: Option<String>,
    },
    /// Run a scan worker: provider plugins for the sources a daemon asks
    /// it to scan, served over the provider protocol with mutual TLS.
    Worker {
        /// etcd endpoints of the cluster to join (comma-separated URLs);
        /// without it the worker is listed in the daemon's `[workers.members]`.
        #[arg(long, value_name = "URLS", env = "SVC_WORKER_JOIN")]
        join: Option<String>,
        #[command(flatten)]
        etcd: Box<WorkerEtcd>,
        /// The worker's id, unique in the cluster.
        #[arg(long, env = "SVC_WORKER_ID")]
        id: String,
        /// Address to serve on.
        #[arg(long, default_value = "0.0.0.0:7443", env = "SVC_WORKER_LISTEN")]
        listen: SocketAddr,
        /// `host:port` daemons dial (default: the address listened on); the
        /// name or address must be in the worker's certificate.
        #[arg(long, value_name = "HOST:PORT", env = "SVC_WORKER_ADVERTISE")]
        advertise: Option<String>,
        /// The worker's certificate (PEM).
        #[arg(long, value_name = "FILE", env = "SVC_WORKER_TLS_CERT")]
        tls_cert: std::path::PathBuf,
        /// Its private key (PEM).
        #[arg(long, value_name = "FILE", env = "SVC_WORKER_TLS_KEY")]
        tls_key: std::path::PathBuf,
        /// The CA that signs the daemons' client certificates (PEM).
        #[arg(long, value_name = "FILE", env = "SVC_WORKER_TLS_CA")]
        tls_ca: std::path::PathBuf,
        /// Where its `svc-plugin-<name>` binaries and manifests are.
        #[arg(long, value_name = "DIR", env = "SVC_WORKER_PLUGIN_DIR")]
        plugin_dir: std::path::PathBuf,
        /// Export traces over OTLP/HTTP to this collector, as the daemon's flag.
        #[arg(long, value_name = "URL")]
        otlp_endpoint: Option<String>,
    },
    /// The remediation pipeline: queue, plans and decisions.
    Remediation {
        #[command(subcommand)]
        command: RemediationCommand,
    },
    /// Add a resource to the ignore list (or take it off with --remove).
    Ignore {
        crn: String,
        /// Why (recorded as the entry's reason code).
        #[arg(long, default_value = "operator")]
        reason: String,
        /// How long until the entry expires (`7d`, `12h`, or seconds); 0 is permanent.
        #[arg(long, default_value = "0", value_parser = parse_duration)]
        ttl: std::time::Duration,
        #[arg(long)]
        remove: bool,
    },
    /// Undo a quarantine or a committed saga step by its payload hash.
    Revert { hash: String },
    /// CEL policy rules.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Run a scan now and follow it: a progress bar on a terminal, a line
    /// per phase otherwise. Ctrl-C stops following; the scan goes on.
    Scan {
        /// Return as soon as the scan has started.
        #[arg(long)]
        no_wait: bool,
        /// How long each source may scan before it is cancelled (`10m`,
        /// `1h30m`, or seconds; default 10m).
        #[arg(long, value_parser = parse_duration)]
        timeout: Option<std::time::Duration>,
    },
    /// Ask a question about the estate in plain language; the answer
    /// streams as it is made (`-o json` or `-o yaml`: its events as they come).
    Ask {
        /// The question, for example "what depends on crn:svc:aws:...?".
        question: String,
        /// Continue this conversation.
        #[arg(long)]
        conversation: Option<String>,
    },
    /// Serve the assistant's read-only tools over the Model Context
    /// Protocol on stdin and stdout (for assistants and editors that speak
    /// MCP); each tool call is a read of the daemon at `--url`.
    Mcp {},
    /// The terminal UI: the estate by category, a resource's detail, the
    /// remediation queue and the ledger live.
    Tui {},
    /// Where the estate differs from its Terraform states: declared but
    /// gone, changed by hand, live but declared nowhere (`iac` settings).
    Drift {
        /// Only this resource, with where it is declared.
        crn: Option<String>,
        /// Resources listed in each part (the totals count them all).
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Where a resource is declared in Terraform and who wrote that line.
    Provenance { crn: String },
    /// Graph totals.
    Stats {},
    /// List resources.
    Nodes {
        /// Only this provider (aws, gcp, azure, kubernetes, ...).
        #[arg(long)]
        provider: Option<String>,
        #[command(flatten)]
        page: Page,
    },
    /// Show one resource.
    Node {
        /// Its CRN, with or without the `svc` segment.
        crn: String,
    },
    /// One resource's versions through time, newest first.
    Versions {
        crn: String,
        /// Most versions listed.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Installed plugins.
    Plugins {
        #[command(subcommand)]
        command: PluginsCommand,
    },
    /// The package registry: search, install, list and remove plugins and policy packs.
    Registry {
        #[command(subcommand)]
        command: RegistryCommand,
    },
    /// The audit ledger: verify the hash chain, tail events, export now.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
    /// API tokens with roles (viewer, operator, admin); an admin's work.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Notifications (`[notify]`): send a test message.
    Notify {
        #[command(subcommand)]
        command: NotifyCommand,
    },
    /// Measure svc on this machine: daemons on the seeded mock estates,
    /// scanned through plugin processes; one JSON document of figures.
    Bench(Box<BenchCli>),
    /// Ledger history, newest first; `summary` and `prune` below.
    History(Box<HistoryCli>),
    /// What waste costs, by resource type, largest saving first.
    Waste {
        /// Only this provider.
        #[arg(long)]
        provider: Option<String>,
        /// Resources listed per type.
        #[arg(long, default_value_t = 5)]
        top: usize,
    },
    /// Cost anomalies: resource types whose spend moved against their history.
    Anomalies {
        /// Only this resource type (`ec2:volume` or `volume`).
        #[arg(long = "type")]
        resource_type: Option<String>,
        /// Only this provider.
        #[arg(long)]
        provider: Option<String>,
        /// How many.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// What removing a resource would affect.
    Blast {
        crn: String,
        /// Most affected resources listed (the totals count them all).
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// The graph as it was at TIME: RFC 3339 (`2026-11-30T10:00:00Z`), a
    /// duration ago (`2h`, `3d`, `1h30m`), `now` or `yesterday`.
    At {
        #[arg(value_parser = parse_time)]
        time: Time,
        #[command(flatten)]
        page: Page,
    },
    /// What changed between FROM and TO (each as `svc at` takes TIME).
    Diff {
        #[arg(value_parser = parse_time)]
        from: Time,
        #[arg(value_parser = parse_time, default_value = "now")]
        to: Time,
        /// Most entries per list (the counts are complete).
        #[arg(long, default_value_t = 1000)]
        limit: usize,
    },
    /// The oracle's verdict on a resource, with its proof.
    Oracle { crn: String },
    /// Observed traffic between resources.
    Traffic {
        /// Edges listed.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// The daemon's configuration: read it, or change one key live.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// This client's version and the daemon's.
    Version,
    /// A shell completion script on stdout: `source <(svc completion bash)`.
    Completion {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Manual pages: the top page on stdout, or one page per verb in DIR.
    Man {
        /// Write `svc.1`, `svc-VERB.1`, ... here.
        #[arg(long, value_name = "DIR")]
        out: Option<std::path::PathBuf>,
    },
}

/// `svc history`: the events (its flags), or one of its subcommands.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub(super) struct HistoryCli {
    #[command(subcommand)]
    pub(super) command: Option<HistoryCommand>,
    #[command(flatten)]
    pub(super) list: HistoryList,
}

#[derive(Subcommand, Debug)]
pub(super) enum HistoryCommand {
    /// Counts and savings over the whole ledger.
    Summary,
    /// Remove events older than a number of days (recorded in the ledger; admin).
    Prune {
        /// Remove events older than this (`90d`, whole days, at least 1d).
        #[arg(long, value_parser = parse_duration)]
        older_than: std::time::Duration,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum ConfigCommand {
    /// The configuration, or one key of it (dotted: `sau.audit_bucket`).
    Get { key: Option<String> },
    /// Set one key (dotted) live; VALUE is JSON (`true`, `5`, `"text"`),
    /// else text; `null` puts the default back.
    Set { key: String, value: String },
}

/// `svc history`'s filters.
#[derive(clap::Args, Debug)]
pub(super) struct HistoryList {
    /// Only this event type (SCAN_COMPLETED, s.a.u_ACTION, ...).
    #[arg(long = "type")]
    pub event_type: Option<String>,
    /// Only events after this: a duration (3d, 12h) or RFC 3339.
    #[arg(long)]
    pub since: Option<String>,
    /// Only this resource.
    #[arg(long)]
    pub crn: Option<String>,
    #[command(flatten)]
    pub page: Page,
}

#[derive(Subcommand, Debug)]
pub(super) enum NotifyCommand {
    /// Send a test message to the Slack webhook now and show the receiver's answer.
    Test {
        /// Send it to every generic webhook too.
        #[arg(long)]
        all: bool,
    },
}

/// `svc bench`: the run itself (its flags), or one of its subcommands.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub(super) struct BenchCli {
    #[command(subcommand)]
    pub(super) command: Option<BenchCommand>,
    #[command(flatten)]
    pub(super) run: bench::RunArgs,
}

#[derive(Subcommand, Debug)]
pub(super) enum BenchCommand {
    /// Run a daemon for a long time under scans, API readers and
    /// WebSocket clients, with a burst of readers near the end; print its
    /// resident memory every minute.
    Soak(Box<soak::SoakArgs>),
    /// Print each figure of a bench document beside a baseline's, with the ratio.
    Compare {
        /// The document of the run to judge.
        current: std::path::PathBuf,
        /// The document to compare it with.
        baseline: std::path::PathBuf,
    },
    /// Print PERF.md's table rows from a bench document.
    Table {
        /// A document written by `svc bench`.
        file: std::path::PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum RemediationCommand {
    /// Every stage with its items.
    Queue {
        /// Only this stage.
        #[arg(long, value_enum)]
        stage: Option<Stage>,
        /// Items per stage.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// The plan of one resource: steps, inverses, CLI and Terraform.
    Plan { crn: String },
    /// Approve a pending item and run its saga.
    Approve {
        crn: String,
        /// The plan hash reviewed (default: the current plan's, printed).
        #[arg(long)]
        plan_hash: Option<String>,
    },
    /// Reject an item.
    Reject {
        crn: String,
        #[arg(long)]
        plan_hash: Option<String>,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Move an item: pending -> sau_gate, sau_gate -> pending, or back to flagged.
    Move {
        crn: String,
        /// The stage to move to.
        #[arg(value_enum)]
        to: Stage,
        #[arg(long)]
        plan_hash: Option<String>,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Let one item past sau_gate (break-glass), with a reason.
    Override {
        crn: String,
        #[arg(long)]
        reason: String,
        #[arg(long)]
        plan_hash: Option<String>,
    },
    /// Approve or reject many items at once.
    Bulk {
        #[arg(value_enum)]
        action: BulkAction,
        crns: Vec<String>,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Quarantine a resource (ISOLATE, STOP or DELETE); prints the hash that undoes it.
    Quarantine {
        crn: String,
        #[arg(long, value_enum, default_value = "ISOLATE", ignore_case = true)]
        action: QuarantineAction,
        #[arg(long)]
        reason: String,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum PolicyCommand {
    /// Add a CEL rule (enforcing unless --shadow).
    Add {
        /// Rule id.
        id: String,
        /// CEL condition, for example `kind == "volume" && out["AttachedTo"] == 0`.
        condition: String,
        /// What a violation does.
        #[arg(long, value_enum, default_value = "warn")]
        action: RuleAction,
        /// Text reported on a violation.
        #[arg(long, default_value = "")]
        message: String,
        /// Only count and record what the rule would do.
        #[arg(long)]
        shadow: bool,
    },
    /// List the rules in priority order, with what they last matched.
    List {},
    /// Remove a rule.
    Rm { id: String },
    /// Switch a rule between enforcing and shadow.
    Toggle { id: String },
    /// Put these rules first, in this order.
    Reorder {
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Evaluate a condition against the live graph; nothing is stored.
    DryRun {
        condition: String,
        /// Most CRNs to print.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Check a policy pack and install it into `$SVC_DATA_DIR/policies`;
    /// the daemon evaluates it from its next scan.
    Install {
        /// The pack directory (manifest.yaml and rule files).
        path: std::path::PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum LedgerCommand {
    /// Check the hash chain and the sequence; report the first broken link.
    /// Asks the running daemon; when it cannot be reached, reads
    /// `$SVC_DATA_DIR/events.redb` directly. Exit code 1 when broken.
    Verify {
        /// Verify this events.redb directly, without a daemon (the file must
        /// not be open in a running daemon).
        #[arg(long)]
        file: Option<std::path::PathBuf>,
    },
    /// Print the newest events, oldest first (`-o json`: a JSON line each;
    /// `-o yaml`: a YAML document each).
    Tail {
        /// How many events.
        #[arg(short = 'n', long = "lines", default_value_t = 20)]
        lines: u64,
        /// Keep printing new events as they are committed (over the
        /// WebSocket), reconnecting without gap when the daemon restarts.
        #[arg(short, long)]
        follow: bool,
    },
    /// Write every event not yet exported to `sau.audit_bucket` now.
    Export {},
}

#[derive(Subcommand, Debug)]
pub(super) enum TokenCommand {
    /// Create a token; it is printed this once.
    Create {
        /// Its name: 1 to 64 characters of A-Z a-z 0-9 . _ - (the ledger's actor for what it does).
        #[arg(long)]
        name: String,
        /// What it may do.
        #[arg(long, value_enum)]
        role: Role,
    },
    /// List the tokens: name, role, created.
    List {},
    /// Revoke a token: refused from then on, its dashboard sessions ended.
    Revoke { name: String },
}

#[derive(Subcommand, Debug)]
pub(super) enum PluginsCommand {
    /// List the installed plugins (asks the running daemon).
    List {},
    /// Switch a plugin between active and inactive (asks the running daemon).
    Toggle {
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
        /// Its category.
        #[arg(long, value_enum, default_value = "cloud")]
        category: PluginCategory,
        /// What it does.
        #[arg(long, value_enum, default_value = "provider")]
        role: PluginRole,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum RegistryCommand {
    /// Packages whose name, description, type or category contains Q (all without Q).
    Search {
        q: Option<String>,
        /// Fetch the index again first.
        #[arg(long)]
        refresh: bool,
    },
    /// Install NAME, NAME@vX.Y.Z or OWNER/NAME@vX.Y.Z (a release of a source repository).
    Install {
        name: String,
        /// Add a plugin to plugins.active once installed.
        #[arg(long)]
        activate: bool,
        /// Replace an installed plugin whose binary fails verification.
        #[arg(long)]
        force: bool,
    },
    /// Installed plugins and policy packs.
    Installed {},
    /// Uninstall a plugin (deactivated first) or a policy pack.
    Remove { name: String },
    /// Fetch the index now and replace the cache.
    Refresh {},
}

/// How `svc worker --join` reaches etcd, as `[cluster]` does for a daemon.
#[derive(Debug, clap::Args)]
pub(super) struct WorkerEtcd {
    /// The cluster's etcd key prefix (the daemons' `cluster.prefix`).
    #[arg(long, default_value = "svc", env = "SVC_WORKER_CLUSTER_PREFIX")]
    pub cluster_prefix: String,
    /// The lease the worker's registration hangs on: a worker that dies
    /// loses its sources to the others within this time.
    #[arg(long, default_value = "10s", value_name = "DURATION", env = "SVC_WORKER_LEASE_TTL")]
    pub lease_ttl: String,
    /// The CA of etcd's certificates (PEM), as `cluster.ca_file`.
    #[arg(long, value_name = "FILE", env = "SVC_WORKER_ETCD_CA")]
    pub etcd_ca: Option<std::path::PathBuf>,
    /// The worker's client certificate for etcd (PEM), as `cluster.cert_file`.
    #[arg(long, value_name = "FILE", env = "SVC_WORKER_ETCD_CERT")]
    pub etcd_cert: Option<std::path::PathBuf>,
    /// Its key (PEM), as `cluster.key_file`.
    #[arg(long, value_name = "FILE", env = "SVC_WORKER_ETCD_KEY")]
    pub etcd_key: Option<std::path::PathBuf>,
    /// The name etcd's certificate is checked against, when not the
    /// endpoint's host.
    #[arg(long, value_name = "NAME", env = "SVC_WORKER_ETCD_SERVER_NAME")]
    pub etcd_server_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;

    /// The long help of the command at `path` (verbs separated by spaces).
    fn help(path: &str) -> String {
        let mut cmd = Cli::command();
        let sub = find(&mut cmd, path).unwrap_or_else(|| panic!("no `svc {path}`"));
        sub.render_long_help().to_string()
    }

    const CLIENT: [&str; 5] = ["--url", "--token", "--ca-file", "--output", "--json"];

    #[test]
    fn the_client_flags_show_only_where_they_mean_something() {
        for path in ["stats", "ask", "ledger tail", "remediation queue", "mcp", "tui"] {
            let text = help(path);
            for flag in CLIENT {
                assert!(text.contains(flag), "`svc {path} --help` shows {flag}:\n{text}");
            }
        }
        for (path, takes) in LOCAL {
            let text = help(path);
            for flag in CLIENT {
                let id = flag.trim_start_matches("--").replace('-', "_");
                assert_eq!(
                    text.contains(flag),
                    takes.contains(&id.as_str()),
                    "`svc {path} --help` and {flag}:\n{text}"
                );
            }
        }
        let daemon = help("daemon");
        assert!(
            daemon.contains("--log-format") && daemon.contains("--listen"),
            "{daemon}"
        );
    }

    #[test]
    fn every_client_flag_is_in_the_table() {
        let mut ids = client_flags();
        ids.sort();
        assert_eq!(ids, ["ca_file", "json", "output", "token", "url"]);
        let mut cmd = Cli::command();
        for (path, takes) in LOCAL {
            assert!(find(&mut cmd, path).is_some(), "`svc {path}` is a command");
            assert!(takes.iter().all(|t| ids.iter().any(|id| id == t)), "{path}: {takes:?}");
        }
    }

    #[test]
    fn client_flags_go_anywhere_on_a_client_verbs_line() {
        for line in [
            &["svc", "-o", "json", "stats"][..],
            &["svc", "stats", "-o", "json"],
            &[
                "svc",
                "--url",
                "http://h:1",
                "ledger",
                "tail",
                "--token",
                "t",
                "--output=yaml",
            ],
            &["svc", "bench", "compare", "a.json", "b.json", "-o", "yaml"],
            &["svc", "-o", "json", "bench", "compare", "a.json", "b.json"],
            &[
                "svc",
                "--token",
                "t",
                "bench",
                "soak",
                "--attach",
                "http://h:1",
                "--pid",
                "1",
            ],
            &[
                "svc",
                "bench",
                "soak",
                "--attach",
                "http://h:1",
                "--pid",
                "1",
                "--token",
                "t",
            ],
        ] {
            if let Err(e) = Cli::try_parse_from(line) {
                panic!("{line:?}: {e}");
            }
        }
        let Ok(Cli(cli)) = Cli::try_parse_from(["svc", "--url", "http://h:1", "ledger", "tail", "-o", "yaml"]) else {
            panic!("parses");
        };
        assert_eq!(cli.remote.url, "http://h:1");
        assert_eq!(cli.remote.format(), super::super::remote::Format::Yaml);
    }

    #[test]
    fn commands_that_are_no_client_refuse_client_flags() {
        for line in [
            &["svc", "daemon", "--url", "http://h:1"][..],
            &["svc", "--url", "http://h:1", "daemon"],
            &["svc", "daemon", "--mock", "--token", "t"],
            &["svc", "-o", "json", "daemon"],
            &["svc", "daemon", "--json"],
            &["svc", "completion", "bash", "--url", "http://h:1"],
            &["svc", "man", "-o", "yaml"],
            &["svc", "bench", "table", "a.json", "--ca-file", "ca.pem"],
            &["svc", "bench", "soak", "--url", "http://h:1"],
            &["svc", "plugins", "install-local", "p", "--token", "t"],
        ] {
            match Cli::try_parse_from(line) {
                Ok(_) => panic!("{line:?} parsed"),
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::UnknownArgument, "{line:?}: {e}");
                    assert_eq!(e.exit_code(), 2, "{line:?}");
                }
            }
        }
        let Err(e) = Cli::try_parse_from(["svc", "daemon", "--url", "http://h:1"]) else {
            panic!("parsed");
        };
        let text = e.to_string();
        assert!(
            text.contains("`svc daemon` does not take --url")
                && text.contains("--listen")
                && text.contains("Usage: svc daemon"),
            "{text}"
        );
        let Err(e) = Cli::try_parse_from(["svc", "daemon", "-o", "json"]) else {
            panic!("parsed");
        };
        assert!(e.to_string().contains("does not take -o/--output"), "{e}");
    }
}
