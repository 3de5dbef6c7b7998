//! `svc bench`: measures svc on the machine it runs on and prints one JSON
//! document of figures (`schemas/bench.schema.json`).
//!
//! For each scale a fresh daemon (this binary, `svc daemon`, a temporary
//! data directory, its own port, its admin token) scans the seeded mock
//! estate through `svc-plugin-mock` processes over the plugin protocol;
//! `measure` takes the figures from it. `report` reads documents back,
//! compares one with a baseline (`--compare`, `svc bench compare`) and
//! prints PERF.md's rows (`--markdown`, `svc bench table`); `figures`
//! names every figure with its unit and which way it improves.
//!
//! Every daemon started is stopped with SIGTERM when the run ends, fails,
//! or is interrupted (Ctrl-C, SIGTERM), and killed if it does not exit.

mod daemon;
mod figures;
mod measure;
mod report;
mod rules;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use self::daemon::{BenchDaemon, Setup};
use self::measure::{Plan, Run};
use super::output;

/// `svc bench` options (the run itself).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Estate sizes to measure, in nodes, comma-separated; each on a fresh daemon.
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000,10000000")]
    pub scales: Vec<usize>,
    /// Seed of the mock estate (the same seed and scale give the same estate).
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Write the JSON document to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print each figure beside this earlier document's, with the ratio.
    #[arg(long, value_name = "BASELINE.json")]
    pub compare: Option<PathBuf>,
    /// Print PERF.md's table rows for the figures measured.
    #[arg(long)]
    pub markdown: bool,
    /// Fewer repetitions (later scans, samples, requests, clients): a
    /// short run to check the harness, not figures to publish.
    #[arg(long)]
    pub quick: bool,
    /// Mock plugin processes streaming at once, each a share of the estate.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub plugins: u16,
    /// Later scans timed (median reported) [default: 5; 2 with --quick].
    #[arg(long)]
    pub later_scans: Option<usize>,
    /// Pause before each later scan, after the snapshot written behind
    /// the last commit is in place [default: 5s; 1s with --quick].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub scan_pause: Option<Duration>,
    /// Resources whose blast radius is asked for [default: 1000; 100 with --quick].
    #[arg(long)]
    pub blast_samples: Option<usize>,
    /// Concurrent clients of the HTTP load [default: 8; 4 with --quick].
    #[arg(long)]
    pub http_clients: Option<usize>,
    /// Requests per endpoint of the HTTP load [default: 2000; 100 with --quick].
    #[arg(long)]
    pub http_requests: Option<usize>,
    /// WebSocket clients on /events while a scan runs [default: 32; 4 with --quick].
    #[arg(long)]
    pub ws_clients: Option<usize>,
    /// The `svc-plugin-mock` binary [default: beside this program, else on PATH].
    #[arg(long, value_name = "PATH")]
    pub mock_plugin: Option<PathBuf>,
    /// Address the daemons listen on (port 0: one the system picks).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where the daemons' data directories are made [default: the system's temporary directory].
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Keep the daemons' data directories (with their logs).
    #[arg(long)]
    pub keep: bool,
    /// Longest a scan (the first included) may take.
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    pub scan_timeout: Duration,
}

impl RunArgs {
    fn plan(&self) -> Plan {
        let q = self.quick;
        Plan {
            later_scans: self.later_scans.unwrap_or(if q { 2 } else { 5 }),
            scan_pause: self.scan_pause.unwrap_or(Duration::from_secs(if q { 1 } else { 5 })),
            blast_samples: self.blast_samples.unwrap_or(if q { 100 } else { 1000 }).max(1),
            http_clients: self.http_clients.unwrap_or(if q { 4 } else { 8 }).max(1),
            http_requests: self.http_requests.unwrap_or(if q { 100 } else { 2000 }).max(1),
            ws_clients: self.ws_clients.unwrap_or(if q { 4 } else { 32 }).max(1),
            start_deadline: Duration::from_secs(600),
            scan_deadline: self.scan_timeout,
        }
    }
}

/// The `svc-plugin-mock` to run: as given, beside this program, or on PATH.
fn find_plugin(given: Option<&Path>, exe: &Path) -> anyhow::Result<PathBuf> {
    const NAME: &str = "svc-plugin-mock";
    if let Some(p) = given {
        if !p.is_file() {
            bail!("--mock-plugin {}: no such file", p.display());
        }
        return Ok(p.to_owned());
    }
    let beside = exe.with_file_name(NAME);
    if beside.is_file() {
        return Ok(beside);
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(NAME);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    bail!(
        "{NAME} is not beside {} nor on PATH: build it (`cargo build --release -p svc-plugin-mock`) \
         or pass --mock-plugin PATH",
        exe.display()
    )
}

/// Resolves on Ctrl-C or SIGTERM; what came.
async fn interrupted() -> &'static str {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupted (Ctrl-C)",
        () = term => "terminated (SIGTERM)",
    }
}

/// Exit code of a run cut short by a signal.
const EXIT_INTERRUPTED: u8 = 130;

/// How the measuring of one scale ended.
enum End {
    Done(anyhow::Result<Map<String, Value>>),
    Interrupted(&'static str),
}

/// The figures of one scale; the daemon it runs stays in `slot` so that
/// whoever called can stop it however this ends.
async fn measure_scale(
    setup: &Setup,
    plan: &Plan,
    http: &reqwest::Client,
    slot: &mut Option<BenchDaemon>,
) -> anyhow::Result<Map<String, Value>> {
    let label = report::scale_name(setup.scale as u64);
    let progress = move |what: &str| eprintln!("svc bench [{label}]: {what}");
    progress(&format!(
        "starting a daemon on {} ({} mock plugin process(es))",
        setup.data_dir.display(),
        setup.plugins
    ));
    setup.prepare()?;
    let mut run = Run {
        http,
        plan,
        figures: Map::new(),
        progress: &progress,
        // The daemon's own scan at start is its first.
        last_scan: AtomicU64::new(1),
    };
    let d = slot.insert(BenchDaemon::start(setup, setup.listen, plan.start_deadline).await?);
    d.wait_ready(http, plan.start_deadline).await?;
    let nodes = run.first_scan(d, setup).await?;
    run.later_scans(d, setup).await?;
    run.settle(d, setup).await;
    run.memory(d, nodes)?;
    run.policy(d).await?;
    run.settle(d, setup).await;
    let crns = Arc::new(run.pool(d, plan.blast_samples).await?);
    run.blast_radius(d, &crns).await?;
    run.topology(d).await?;
    run.http_load(d, &crns).await?;
    run.websocket(d).await?;

    progress("restart: SIGTERM, then a start on the same data directory");
    let addr = d.addr;
    let Some(first) = slot.take() else {
        bail!("the daemon is gone");
    };
    let stopped = first.stop().await?;
    measure::put_ms(&mut run.figures, "stop_ms", stopped);
    let started = Instant::now();
    let d = slot.insert(BenchDaemon::start(setup, addr, plan.start_deadline).await?);
    d.wait_ready(http, plan.start_deadline).await?;
    measure::put_ms(&mut run.figures, "restart_to_ready_ms", started.elapsed());
    if let Some(last) = slot.take() {
        last.stop().await?;
    }
    Ok(run.figures)
}

/// `svc bench` spelled as the user ran it, for the document and the table rows.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("svc {}", args.join(" "))
}

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    if args.scales.is_empty() || args.scales.contains(&0) {
        bail!("--scales needs one or more sizes above zero, such as 100000,1000000");
    }
    // A bad baseline is refused before minutes of measuring.
    let baseline = args
        .compare
        .as_deref()
        .map(report::load)
        .transpose()
        .context("--compare")?;
    let exe = std::env::current_exe().context("cannot find this program to start the daemons")?;
    let plugin = find_plugin(args.mock_plugin.as_deref(), &exe)?;
    let work = args.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let plan = args.plan();
    let started_at = chrono::Utc::now();
    let http = reqwest::Client::builder()
        .user_agent(concat!("svc-bench/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(plan.http_clients + 4)
        .build()
        .context("cannot build the HTTP client")?;
    let mut runs = Vec::new();
    for &scale in &args.scales {
        let data_dir = work.join(format!(
            "svc-bench-{}-{}-{scale}",
            std::process::id(),
            started_at.timestamp()
        ));
        if data_dir.exists() {
            bail!("{} exists already; pick another --work-dir", data_dir.display());
        }
        let setup = Setup {
            exe: exe.clone(),
            plugin: plugin.clone(),
            data_dir: data_dir.clone(),
            scale,
            seed: args.seed,
            plugins: usize::from(args.plugins),
            listen: args.listen,
        };
        let mut slot = None;
        let end = tokio::select! {
            r = measure_scale(&setup, &plan, &http, &mut slot) => End::Done(r),
            why = interrupted() => End::Interrupted(why),
        };
        if let Some(d) = slot.take()
            && let Err(e) = d.stop().await
        {
            eprintln!("svc bench: {e:#}");
        }
        if args.keep {
            eprintln!("svc bench: data directory kept: {}", data_dir.display());
        } else if data_dir.exists()
            && let Err(e) = std::fs::remove_dir_all(&data_dir)
        {
            eprintln!("svc bench: cannot remove {}: {e}", data_dir.display());
        }
        match end {
            End::Done(Ok(figures)) => runs.push(json!({ "scale": scale, "figures": figures })),
            End::Done(Err(e)) => return Err(e.context(format!("svc bench at {scale} nodes"))),
            End::Interrupted(why) => {
                eprintln!("svc bench: {why}; the daemon was stopped");
                return Ok(ExitCode::from(EXIT_INTERRUPTED));
            }
        }
    }
    let finished_at = chrono::Utc::now();
    let doc = json!({
        "schema_version": report::SCHEMA_VERSION,
        "svc_version": env!("CARGO_PKG_VERSION"),
        "git_commit": option_env!("SVC_GIT_COMMIT"),
        "build_profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "started_at": started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "finished_at": finished_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "machine": report::machine(),
        "args": {
            "command": command_line(),
            "scales": args.scales,
            "seed": args.seed,
            "plugins": args.plugins,
            "quick": args.quick,
            "later_scans": plan.later_scans,
            "scan_pause_ms": plan.scan_pause.as_millis() as u64,
            "blast_samples": plan.blast_samples,
            "http_clients": plan.http_clients,
            "http_requests": plan.http_requests,
            "ws_clients": plan.ws_clients,
        },
        "runs": runs,
    });
    let text = serde_json::to_string_pretty(&doc)?;
    let printing = baseline.is_some() || args.markdown;
    let out = match (&args.out, printing) {
        (Some(p), _) => Some(p.clone()),
        // The tables take standard output: the document goes to a file.
        (None, true) => Some(PathBuf::from(format!(
            "svc-bench-{}.json",
            started_at.format("%Y%m%dT%H%M%SZ")
        ))),
        (None, false) => None,
    };
    match &out {
        Some(path) => {
            std::fs::write(path, format!("{text}\n")).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("svc bench: document written to {}", path.display());
        }
        None => println!("{text}"),
    }
    if let Some(base) = &baseline {
        let rows = report::compare(&doc, base);
        output::table(&report::COMPARE_HEADER, &report::compare_text(&rows));
    }
    if args.markdown {
        if baseline.is_some() {
            println!();
        }
        print!("{}", report::markdown(&doc));
    }
    Ok(ExitCode::SUCCESS)
}

/// `svc bench compare CURRENT BASELINE`: a table, or the rows as `-o json` or `-o yaml`.
pub fn compare_files(current: &Path, baseline: &Path, remote: &super::remote::Remote) -> anyhow::Result<ExitCode> {
    let cur = report::load(current)?;
    let base = report::load(baseline)?;
    let rows = report::compare(&cur, &base);
    if output::structured(remote, &report::compare_json(&rows)) {
    } else {
        output::table(&report::COMPARE_HEADER, &report::compare_text(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

/// `svc bench table FILE`.
pub fn table_file(path: &Path) -> anyhow::Result<ExitCode> {
    let doc = report::load(path)?;
    print!("{}", report::markdown(&doc));
    Ok(ExitCode::SUCCESS)
}
