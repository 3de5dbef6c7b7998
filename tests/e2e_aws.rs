//! An AWS account through a real daemon: `svc-plugin-aws` installed with
//! `svc plugins install-local`, activated in `config.toml` with two
//! regions, scanning a real `moto_server` with the credentials and endpoint
//! in the daemon's environment, as an operator would run it; then acting
//! on what it found through the remediation API (approve, revert,
//! quarantine), the plugin carrying it out in moto.
//!
//! moto stamps creation and stop times with its own clock, so it runs
//! under libfaketime (Debian `faketime`, installed by `scripts/test`) with
//! a timestamp file the test rewrites: the "old" resources are seeded 40
//! days in the past, the young ones now, and the rules' grace periods (7
//! days unattached, 30 days stopped or orphaned) are exercised for real.
//! The account is seeded by `tests/aws/seed.py` (boto3, which comes with
//! moto), which also reads moto back for the remediation checks, apart
//! from the plugin.
//!
//! The plugin binary is built beside `svc` by `cargo test --workspace`
//! (or `cargo build -p svc-plugin-aws`), like the other plugins' tests.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Api, Daemon, POLL_PAUSE, SVC, Sources, encode_segment, run_cli, running};
use serde_json::{Value, json};

const A: &str = "us-east-1";
const B: &str = "eu-west-1";
/// The account moto answers for.
const ACCOUNT: &str = "123456789012";
/// How far in the past the old resources are made.
const OLD: &str = "-40d";
/// How long moto may take to answer once started.
const MOTO_DEADLINE: Duration = Duration::from_secs(60);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `svc-plugin-aws`, built beside `svc`.
fn aws_plugin() -> PathBuf {
    let path = PathBuf::from(SVC).with_file_name("svc-plugin-aws");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build -p svc-plugin-aws` first (cargo test --workspace builds it)",
        path.display()
    );
    path
}

/// The library `faketime` preloads, as the `faketime` wrapper names it.
fn libfaketime() -> String {
    let out = Command::new("faketime")
        .args(["-f", "+0d", "printenv", "LD_PRELOAD"])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run faketime ({e}): install Debian's faketime (scripts/test does), which moto runs under")
        });
    assert!(
        out.status.success(),
        "faketime: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lib = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(!lib.is_empty(), "faketime set no LD_PRELOAD");
    lib
}

/// A `moto_server` on a free port whose clock the test sets; killed on drop.
struct Moto {
    child: std::process::Child,
    endpoint: String,
    /// libfaketime's timestamp file: an offset such as `-40d`, read at every
    /// clock call (`FAKETIME_NO_CACHE`).
    clock: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    async fn start() -> Moto {
        let dir = tempfile::tempdir().unwrap();
        let clock = dir.path().join("faketime");
        std::fs::write(&clock, "+0\n").unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
            .env("LD_PRELOAD", libfaketime())
            .env("FAKETIME_TIMESTAMP_FILE", &clock)
            .env("FAKETIME_NO_CACHE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start moto_server ({e}): run the suite with scripts/test, which installs it into .venv")
            });
        let moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            clock,
            _dir: dir,
        };
        let http = reqwest::Client::new();
        let end = Instant::now() + MOTO_DEADLINE;
        while http.get(format!("{}/moto-api/", moto.endpoint)).send().await.is_err() {
            assert!(Instant::now() < end, "moto_server did not answer on {}", moto.endpoint);
            tokio::time::sleep(POLL_PAUSE).await;
        }
        moto
    }

    /// Sets moto's clock to now plus `offset` (`-40d`, `+0`).
    fn set_clock(&self, offset: &str) {
        std::fs::write(&self.clock, format!("{offset}\n")).unwrap();
    }

    /// Runs a command of `tests/aws/seed.py` on this moto: its JSON answer.
    fn python(&self, args: &[&str]) -> Value {
        let out = Command::new("python3")
            .arg(repo().join("tests/aws/seed.py"))
            .arg(&self.endpoint)
            .args(args)
            .output()
            .expect("run python3 tests/aws/seed.py (scripts/test puts .venv first on PATH)");
        assert!(
            out.status.success(),
            "seed.py {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Runs a phase of the seeding: what it created, by region and role.
    fn seed(&self, phase: &str) -> Value {
        self.python(&[phase, A, B])
    }

    /// What moto holds of `region`'s EC2 resources, read with boto3, not
    /// through the plugin: `volumes`, `snapshots`, `instances` and
    /// `groups`, each by id.
    fn look(&self, region: &str) -> Value {
        self.python(&["look", region])
    }

    /// The account as the test seeds it: old resources 40 days back, then
    /// young ones now.
    fn seed_estate(&self) -> Estate {
        self.set_clock(OLD);
        let old = self.seed("old");
        self.set_clock("+0");
        let young = self.seed("young");
        Estate { old, young }
    }
}

/// What was seeded, by phase, region and role.
struct Estate {
    old: Value,
    young: Value,
}

impl Estate {
    fn id(&self, region: &str, role: &str) -> String {
        let v = &self.old[region][role];
        let v = if v.is_null() { &self.young[region][role] } else { v };
        v.as_str()
            .unwrap_or_else(|| panic!("nothing seeded as {role} in {region}"))
            .to_owned()
    }
}

/// The graph-form CRN of an AWS resource of the test account.
fn crn(region: &str, service: &str, kind: &str, id: &str) -> String {
    format!("crn:svc:aws:{region}:{service}:{kind}:{ACCOUNT}:{id}")
}

/// Installs `svc-plugin-aws` into `dir` with the CLI; returns the manifest text.
fn install(dir: &Path) -> String {
    let out = Command::new(SVC)
        .args(["plugins", "install-local"])
        .arg(aws_plugin())
        .env("SVC_DATA_DIR", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("svc plugins toggle aws"), "{stdout}");
    std::fs::read_to_string(dir.join("plugins/svc-plugin-aws.yaml")).unwrap()
}

/// The daemon's configuration: hourly scans (only those the test asks for
/// run after the first), the AWS plugin active over regions A and B.
fn config() -> String {
    format!(
        "[daemon]\nscan_interval = \"1h\"\n[plugins]\nactive = [\"aws\"]\n\
         [plugins.config.aws]\nregions = [\"{A}\", \"{B}\"]\nmax_in_flight = 4\nmax_attempts = 2\n"
    )
}

/// The AWS environment of the daemon (and so of the plugin): moto's
/// endpoint, no profile files, no instance metadata, plus `creds`.
fn aws_env(moto: &Moto, creds: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("AWS_ENDPOINT_URL", moto.endpoint.as_str()),
        ("AWS_REGION", A),
        ("AWS_CONFIG_FILE", "/nonexistent/svc-e2e/config"),
        ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/svc-e2e/credentials"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    for (k, v) in creds {
        env.retain(|(key, _)| key != k);
        env.push(((*k).to_owned(), (*v).to_owned()));
    }
    env
}

const KEYS: [(&str, &str); 2] = [("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")];

/// A daemon on `dir` with the AWS plugin installed and active, without
/// `--mock` and with only the AWS credentials of `env`; not started.
fn daemon(dir: &Path, env: Vec<(String, String)>) -> Daemon {
    std::fs::write(dir.join("config.toml"), config()).unwrap();
    let mut d = Daemon::configure(dir, 300);
    // No credentials from the test's environment, HOME the data directory.
    d.sources = Sources::Fallback;
    d.env = env;
    d
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

async fn node(api: &Api, crn: &str) -> Value {
    api.get_ok(&format!("/api/v1/graph/nodes/{}", encode_segment(crn)))
        .await
}

/// The CRNs at the other end of `crn`'s edges of type `ty`, outgoing.
async fn outgoing(api: &Api, crn: &str, ty: &str) -> BTreeSet<String> {
    let edges = api
        .get_ok(&format!("/api/v1/graph/nodes/{}/edges", encode_segment(crn)))
        .await;
    edges["outgoing"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == ty)
        .map(|e| e["target_crn"].as_str().unwrap().to_owned())
        .collect()
}

/// The waste verdict of a node: its rule, and the reason of that finding.
fn verdict(n: &Value) -> Option<(String, String)> {
    if n["is_waste"] != true {
        return None;
    }
    let rule = n["verdict"].as_str().unwrap().to_owned();
    let finding = n["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule.as_str())
        .unwrap_or_else(|| panic!("no finding of the verdict's rule: {n}"));
    Some((rule, finding["reason"].as_str().unwrap().to_owned()))
}

/// A scan through the API, waited for: its report, after checking that the
/// AWS plugin was its one source and how it did.
async fn scan_aws(api: &Api, ok: bool) -> Value {
    let r = api.scan_wait().await;
    let sources = r["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1, "the AWS plugin alone, no simulated estate: {r}");
    assert_eq!(
        (&sources[0]["name"], &sources[0]["providers"], &sources[0]["ok"]),
        (&json!("aws"), &json!(["aws"]), &json!(ok)),
        "{r}"
    );
    r
}

/// The item of `crn` if the remediation queue lists it at `stage`.
async fn at_stage(api: &Api, stage: &str, crn: &str) -> Option<Value> {
    let q = api
        .get_query_ok("/api/v1/remediation/queue", &[("stage", stage), ("limit", "1000")])
        .await;
    q["stages"][stage].as_array()?.iter().find(|i| i["crn"] == crn).cloned()
}

/// The ledger's events of type `kind` on `crn`, newest first.
async fn events_of(api: &Api, kind: &str, crn: &str) -> Vec<Value> {
    api.history_all(&[("type", kind), ("crn", crn)])
        .await
        .into_iter()
        .filter(|e| e["crn"] == crn)
        .collect()
}

/// The ids of `map` (an object by id) whose entry satisfies `pred`.
fn ids_where(map: &Value, pred: impl Fn(&Value) -> bool) -> Vec<String> {
    map.as_object()
        .unwrap()
        .iter()
        .filter(|(_, v)| pred(v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Waits until no process runs `exe`.
async fn wait_gone(exe: &Path) {
    let end = Instant::now() + MOTO_DEADLINE;
    while !running(exe).is_empty() {
        assert!(Instant::now() < end, "{} still runs", exe.display());
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

#[tokio::test]
async fn an_aws_account_is_scanned_and_its_waste_found() {
    let moto = Moto::start().await;
    let estate = moto.seed_estate();
    let dir = tempfile::tempdir().unwrap();

    // Installed as a provider of the cloud category, its hash recorded.
    let manifest = install(dir.path());
    for line in ["name: aws", "role: provider", "category: cloud", "type: plugin"] {
        assert!(manifest.contains(line), "{line:?} in\n{manifest}");
    }
    let installed = dir.path().join("plugins/svc-plugin-aws");
    let sha = common::sha256_hex(&std::fs::read(&installed).unwrap());
    assert!(manifest.contains(&format!("sha256: {sha}")), "{manifest}");

    let mut d = daemon(dir.path(), aws_env(&moto, &KEYS));
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    let p = &first["payload"];
    assert_eq!(p["sources"].as_array().unwrap().len(), 1, "{first}");
    assert_eq!(
        (&p["sources"][0]["name"], &p["sources"][0]["ok"]),
        (&json!("aws"), &json!(true)),
        "{first}"
    );
    let log = d.log.text();
    for line in [
        "cloud credentials found credentials=[\"aws (AWS_ACCESS_KEY_ID)\"]",
        "aws credentials found and the aws plugin is active: aws is scanned through it",
        "scan sources and heuristic plugins sources=[\"aws\"]",
    ] {
        assert!(log.contains(line), "{line:?} not in the log:\n{log}");
    }
    assert!(!log.contains("mock mode"), "nothing simulated:\n{log}");
    assert!(
        log.contains("scan started plugin=\"aws\"") && log.contains("account=123456789012"),
        "the plugin's own lines are in the log:\n{log}"
    );

    let api = d.api();
    let nodes = api.all_nodes(None).await;
    let by_crn: BTreeMap<String, &Value> = nodes
        .iter()
        .map(|n| (n["crn"].as_str().unwrap().to_owned(), n))
        .collect();
    assert!(by_crn.keys().all(|c| c.starts_with("crn:svc:aws:")), "AWS only");
    let regions: BTreeSet<&str> = nodes.iter().map(|n| n["region"].as_str().unwrap()).collect();
    assert_eq!(regions, BTreeSet::from([A, B]), "the two configured regions");

    // Waste: each seeded kind, in both regions, with its rule and reason.
    let vol = |r: &str, role: &str| crn(r, "ec2", "volume", &estate.id(r, role));
    let expected: BTreeMap<String, (&str, String)> = [
        (
            vol(A, "loose_volume"),
            ("aws-ebs-unattached", "unattached for 40 days, 100 GiB".to_owned()),
        ),
        (
            vol(B, "loose_volume"),
            ("aws-ebs-unattached", "unattached for 40 days, 30 GiB".to_owned()),
        ),
        (
            crn(A, "ec2", "instance", &estate.id(A, "stopped")),
            (
                "aws-ec2-stopped",
                "stopped for 40 days; its 1 volume still bills".to_owned(),
            ),
        ),
        (
            vol(A, "stopped_root"),
            (
                "aws-ebs-on-stopped-instance",
                format!("attached to {}", estate.id(A, "stopped")),
            ),
        ),
        (
            crn(A, "ec2", "snapshot", &estate.id(A, "orphan_snapshot")),
            (
                "aws-ebs-snapshot-orphaned",
                format!("40 days old, volume {} no longer exists", estate.id(A, "gone_volume")),
            ),
        ),
        (
            crn(A, "ec2", "eip", &estate.id(A, "eip_loose")),
            ("aws-eip-unassociated", "associated with nothing".to_owned()),
        ),
        (
            crn(B, "ec2", "eip", &estate.id(B, "eip_loose")),
            ("aws-eip-unassociated", "associated with nothing".to_owned()),
        ),
    ]
    .into_iter()
    .collect();
    for (crn, (rule, reason)) in &expected {
        assert!(by_crn.contains_key(crn), "{crn} not in the graph");
        let n = &node(&api, crn).await;
        let (got_rule, got_reason) = verdict(n).unwrap_or_else(|| panic!("{crn} is not flagged: {n}"));
        assert_eq!(got_rule, *rule, "{n}");
        assert!(got_reason.contains(reason.as_str()), "{reason:?} not in {got_reason:?}");
    }
    // Nothing else is waste but the load balancer without targets (below).
    let lb_crn = crn(A, "elb", "load-balancer", &estate.id(A, "lb"));
    for n in &nodes {
        let c = n["crn"].as_str().unwrap();
        if n["is_waste"] == true && !expected.contains_key(c) {
            assert_eq!(c, lb_crn, "{c} is flagged, and is not seeded as waste: {n}");
        }
    }
    // Not waste: in use, excluded by tag, or inside its grace period.
    let not_waste = [
        crn(A, "ec2", "instance", &estate.id(A, "running")),
        crn(B, "ec2", "instance", &estate.id(B, "running")),
        vol(A, "data_volume"),
        vol(A, "ignored_volume"),
        vol(A, "young_volume"),
        vol(B, "young_volume"),
        crn(A, "ec2", "snapshot", &estate.id(A, "kept_snapshot")),
        crn(A, "ec2", "eip", &estate.id(A, "eip_associated")),
    ];
    for c in &not_waste {
        let n = node(&api, c).await;
        assert_eq!(n["is_waste"], false, "{n}");
        assert_eq!(n["findings"], json!([]), "{c} has no finding: {n}");
    }
    let young = node(&api, &vol(A, "young_volume")).await;
    assert_eq!(young["state"], "available", "attached to nothing, yet young: {young}");
    // The load balancer without targets: idle by its request metrics
    // (CloudWatch has no request for it over the week: none, not unknown).
    let lb = node(&api, &lb_crn).await;
    assert_eq!(lb["properties"]["registered_targets"], 0, "{lb}");
    assert_eq!(lb["properties"]["request_count_7d"], 0, "{lb}");
    let (rule, _) = verdict(&lb).unwrap_or_else(|| panic!("the idle load balancer is not flagged: {lb}"));
    assert_eq!(rule, "aws-elb-idle", "{lb}");

    // Relations, in the graph API.
    let web = crn(A, "ec2", "instance", &estate.id(A, "running"));
    let stopped = crn(A, "ec2", "instance", &estate.id(A, "stopped"));
    assert_eq!(
        outgoing(&api, &vol(A, "data_volume"), "AttachedTo").await,
        BTreeSet::from([web.clone()])
    );
    assert_eq!(
        outgoing(&api, &vol(A, "stopped_root"), "AttachedTo").await,
        BTreeSet::from([stopped.clone()])
    );
    assert!(outgoing(&api, &vol(A, "loose_volume"), "AttachedTo").await.is_empty());
    let eip = crn(A, "ec2", "eip", &estate.id(A, "eip_associated"));
    assert!(
        outgoing(&api, &eip, "AttachedTo").await.contains(&web),
        "the address is on the instance"
    );
    let subnet = crn(A, "ec2", "subnet", &estate.id(A, "subnet"));
    let contained = outgoing(&api, &subnet, "Contains").await;
    assert!(
        contained.contains(&web) && contained.contains(&stopped),
        "{contained:?}"
    );
    let vpc = crn(A, "ec2", "vpc", &estate.id(A, "vpc"));
    assert!(outgoing(&api, &vpc, "Contains").await.contains(&subnet));
    let tg = crn(A, "elb", "target-group", &estate.id(A, "tg"));
    assert!(
        outgoing(&api, &tg, "AttachedTo")
            .await
            .contains(lb["crn"].as_str().unwrap())
    );

    // Costs from the price table: a volume by its size and class, and the
    // finding saves what it costs.
    let gp3 = svc_engine::prices::rate("aws", "gp3", A).expect("a gp3 price in us-east-1");
    let loose = node(&api, &vol(A, "loose_volume")).await;
    assert!((f(&loose["cost_usd_mo"]) - 100.0 * gp3).abs() < 0.01, "{loose}");
    assert!((f(&loose["findings"][0]["projected_savings_usd_mo"]) - f(&loose["cost_usd_mo"])).abs() < 0.01);
    let stats = api.get_ok("/api/v1/graph/stats").await;
    let total: f64 = nodes.iter().map(|n| f(&n["cost_usd_mo"])).sum();
    assert!(
        (f(&stats["total_cost_usd_mo"]) - total).abs() < 0.05 * nodes.len() as f64,
        "{stats}"
    );
    assert!(f(&stats["projected_savings_usd_mo"]) >= 100.0 * gp3, "{stats}");

    // Where the graph came from: the AWS plugin, nothing simulated.
    assert_eq!(stats["simulated"], false, "{stats}");
    let providers: Vec<&str> = stats["providers"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(providers, ["aws"], "{stats}");
    let sources = stats["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1, "{stats}");
    assert_eq!(
        (&sources[0]["name"], &sources[0]["providers"], &sources[0]["simulated"]),
        (&json!("aws"), &json!(["aws"]), &json!(false)),
        "{stats}"
    );
    assert_eq!(
        (&sources[0]["last_scan"]["ok"], &sources[0]["last_scan"]["nodes"]),
        (&json!(true), &json!(nodes.len())),
        "{stats}"
    );
    let data = dir.path().to_str().unwrap();
    let base = d.base();
    let (code, out, err) = run_cli(&["stats"], &[("SVC_URL", &base), ("SVC_DATA_DIR", data)]).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("source         aws (real; aws): last scan 1 ok"), "{out}");
    assert!(out.contains("simulated      no"), "{out}");

    // The plugin proves reversibility from the resources themselves: what
    // a snapshot can bring back waits for a decision (`pending`); an
    // address, an orphaned snapshot and an instance to terminate cannot
    // come back, and wait at `sau_gate` with the plugin's reason.
    let q = api
        .get_query_ok("/api/v1/remediation/queue", &[("limit", "1000")])
        .await;
    for stage in ["flagged", "analyzed", "codegen", "applied", "rejected"] {
        assert_eq!(q["counts"][stage], 0, "{stage}: {q}");
    }
    let listed = |stage: &str| -> BTreeMap<String, Value> {
        q["stages"][stage]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["crn"].as_str().unwrap().to_owned(), i.clone()))
            .collect()
    };
    let (pending, gated) = (listed("pending"), listed("sau_gate"));
    let snapshotted = "a snapshot is taken before the volume is deleted and it is restored from it on rollback; \
                       it has no snapshot yet";
    let mut expect_pending: BTreeMap<String, (&str, &str, String)> = [
        (vol(A, "loose_volume"), ("aws-ebs-unattached", "delete")),
        (vol(B, "loose_volume"), ("aws-ebs-unattached", "delete")),
        (
            vol(A, "stopped_root"),
            ("aws-ebs-on-stopped-instance", "snapshot_delete"),
        ),
    ]
    .into_iter()
    .map(|(c, (rule, action))| (c, (rule, action, snapshotted.to_owned())))
    .collect();
    expect_pending.insert(
        lb_crn.clone(),
        (
            "aws-elb-idle",
            "delete",
            "deletion protection is off; a load balancer holds no data and its target groups are kept \
             (a recreated one has another DNS name)"
                .to_owned(),
        ),
    );
    let mut released = BTreeMap::new();
    for region in [A, B] {
        let eip = node(&api, &crn(region, "ec2", "eip", &estate.id(region, "eip_loose"))).await;
        let ip = eip["properties"]["public_ip"].as_str().unwrap().to_owned();
        released.insert(
            region,
            format!("a released Elastic IP's address ({ip}) cannot be had back: a new allocation gets another address"),
        );
    }
    let expect_gated: BTreeMap<String, (&str, &str, String)> = [
        (
            crn(A, "ec2", "eip", &estate.id(A, "eip_loose")),
            ("aws-eip-unassociated", "release", released[A].clone()),
        ),
        (
            crn(B, "ec2", "eip", &estate.id(B, "eip_loose")),
            ("aws-eip-unassociated", "release", released[B].clone()),
        ),
        (
            crn(A, "ec2", "snapshot", &estate.id(A, "orphan_snapshot")),
            (
                "aws-ebs-snapshot-orphaned",
                "snapshot_delete",
                "a deleted snapshot cannot be restored (unless a Recycle Bin retention rule keeps it)".to_owned(),
            ),
        ),
        (
            stopped.clone(),
            (
                "aws-ec2-stopped",
                "delete",
                format!(
                    "terminating an instance cannot be undone: volumes {} are deleted with it (DeleteOnTermination); \
                     the aws plugin stops instances but does not terminate them",
                    estate.id(A, "stopped_root")
                ),
            ),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        pending.keys().collect::<Vec<_>>(),
        expect_pending.keys().collect::<Vec<_>>(),
        "pending: {q}"
    );
    assert_eq!(
        gated.keys().collect::<Vec<_>>(),
        expect_gated.keys().collect::<Vec<_>>(),
        "sau_gate: {q}"
    );
    for (items, expected, safe) in [(&pending, &expect_pending, true), (&gated, &expect_gated, false)] {
        for (c, (rule, action, reason)) in expected {
            let i = &items[c];
            assert_eq!((&i["rule"], &i["action"]), (&json!(rule), &json!(action)), "{i}");
            assert_eq!(
                i["proof"],
                json!({"safe": safe, "source": "plugin", "reason": reason}),
                "the plugin's proof: {i}"
            );
            let blockers = if safe {
                json!([])
            } else {
                json!([format!("unsafe: {reason}")])
            };
            assert_eq!(i["blockers"], blockers, "{i}");
            assert_eq!(i["plan_hash"].as_str().unwrap().len(), 64, "planned: {i}");
        }
    }
    // Approving what waits at the gate is refused, even on its plan.
    let eip_a = &gated[&crn(A, "ec2", "eip", &estate.id(A, "eip_loose"))];
    let refused = api
        .post_json(
            "/api/v1/remediation/approve",
            &json!({"crn": eip_a["crn"], "plan_hash": eip_a["plan_hash"]}),
        )
        .await
        .expect_error(409, "conflict");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is at sau_gate, not pending"),
        "{refused}"
    );

    // The plugin killed between scans: the next scan starts it again and
    // finds the same account; nothing is retired.
    let pids = running(&installed);
    assert_eq!(pids.len(), 1, "one plugin process: {pids:?}");
    let status = Command::new("kill")
        .args(["-9", &pids[0].to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    wait_gone(&installed).await;
    let again = scan_aws(&api, true).await;
    assert_eq!(
        (u(&again["node_count"]), u(&again["nodes_deleted"])),
        (nodes.len() as u64, 0),
        "{again}"
    );
    let relaunched = running(&installed);
    assert!(
        relaunched.len() == 1 && relaunched != pids,
        "relaunched: {relaunched:?}"
    );
    let after = api.all_nodes(None).await;
    assert_eq!(after.len(), nodes.len());
    assert_eq!(
        node(&api, &vol(A, "loose_volume")).await["verdict"],
        "aws-ebs-unattached"
    );
}

/// Remediation through the API against moto, checked in moto with boto3
/// (`seed.py look`), not through the plugin: an unattached volume approved
/// on its plan is snapshotted then deleted, and its revert restores it from
/// that snapshot; a running instance quarantined is in the deny-all group
/// alone, and its revert puts back exactly its groups; a saga whose second
/// step fails is compensated; a volume found attached to a running
/// instance at approval is left alone.
#[tokio::test]
async fn aws_waste_is_remediated_reverted_and_quarantined_through_the_api() {
    let moto = Moto::start().await;
    let estate = moto.seed_estate();
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(dir.path(), aws_env(&moto, &KEYS));
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    assert_eq!(first["payload"]["sources"][0]["ok"], true, "{first}");
    let api = d.api();

    // An unattached volume, approved on the plan the operator was shown:
    // one step, `delete` (the plugin snapshots, then deletes), undone by
    // `restore`.
    let vol_id = estate.id(A, "loose_volume");
    let volume = crn(A, "ec2", "volume", &vol_id);
    let item = at_stage(&api, "pending", &volume)
        .await
        .unwrap_or_else(|| panic!("{volume} waits at pending"));
    let plan = api.get_query_ok("/api/v1/plan", &[("crn", &volume)]).await;
    assert_eq!(plan["plan_hash"], item["plan_hash"], "queue and plan agree: {plan}");
    assert_eq!(plan["intent"], "delete", "{plan}");
    let steps: Vec<(&Value, &Value)> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (&s["action"], &s["inverse"]))
        .collect();
    assert_eq!(steps, [(&json!("delete"), &json!("restore"))], "{plan}");
    assert!(
        plan["cli"][0]
            .as_str()
            .unwrap()
            .starts_with(&format!("aws ec2 create-snapshot --region {A} --volume-id {vol_id}")),
        "{plan}"
    );
    let plan_hash = plan["plan_hash"].as_str().unwrap().to_owned();
    let done = api
        .post_json(
            "/api/v1/remediation/approve",
            &json!({"crn": volume, "plan_hash": plan_hash, "actor": "alice"}),
        )
        .await
        .expect(200);
    assert_eq!(
        (&done["applied"], &done["stage"], &done["failure"]),
        (&json!(true), &json!("applied"), &Value::Null),
        "{done}"
    );
    assert_eq!(done["steps"].as_array().unwrap().len(), 1, "{done}");
    assert_eq!(
        (&done["steps"][0]["action"], &done["steps"][0]["status"]),
        (&json!("delete"), &json!("SUCCESS")),
        "{done}"
    );
    let saga = done["saga_id"].as_str().unwrap().to_owned();
    let step_hash = done["steps"][0]["compensating_payload_hash"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(step_hash.len(), 64, "{done}");
    api.post_json(
        "/api/v1/remediation/approve",
        &json!({"crn": volume, "plan_hash": plan_hash}),
    )
    .await
    .expect_error(409, "conflict");

    // In moto: the volume is gone, and one completed snapshot of it holds
    // its tags and what a restore needs.
    let ec2 = moto.look(A);
    assert!(
        ec2["volumes"].get(&vol_id).is_none(),
        "{vol_id} deleted: {}",
        ec2["volumes"]
    );
    let made = ids_where(&ec2["snapshots"], |s| s["volume"] == vol_id.as_str());
    assert_eq!(made.len(), 1, "one snapshot of {vol_id}: {}", ec2["snapshots"]);
    let snap_id = made[0].clone();
    let snap = &ec2["snapshots"][&snap_id];
    assert_eq!(
        (&snap["state"], &snap["size"]),
        (&json!("completed"), &json!(100)),
        "{snap}"
    );
    let tags = snap["tags"].as_object().unwrap();
    for (k, v) in [
        ("team", "ml"),
        ("svc:remediation:volume", vol_id.as_str()),
        ("svc:remediation:zone", "us-east-1a"),
        ("svc:remediation:volume-type", "gp3"),
    ] {
        assert_eq!(tags.get(k), Some(&json!(v)), "{k} on {snap_id}: {snap}");
    }
    assert!(tags.get("svc:remediation:token").is_some_and(|t| t != ""), "{snap}");
    assert!(
        tags.keys().all(|k| k == "team" || k.starts_with("svc:remediation:")),
        "its own tags and the remediation's: {snap}"
    );
    assert!(
        !tags.contains_key("svc:remediation:attached-to"),
        "attached to nothing: {snap}"
    );

    // In the ledger: the approval on that plan, and the step committed
    // with the hash of what undoes it.
    let approvals = events_of(&api, "APPROVAL", &volume).await;
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    assert_eq!(
        (
            &approvals[0]["status"],
            &approvals[0]["actor"],
            &approvals[0]["meta"]["plan_hash"]
        ),
        (&json!("APPROVED"), &json!("admin"), &json!(plan_hash)),
        "{approvals:?}"
    );
    let commits = events_of(&api, "EXECUTION_COMMIT", &volume).await;
    assert_eq!(commits.len(), 1, "{commits:?}");
    let c = &commits[0]["meta"];
    for (k, v) in [
        ("saga_id", json!(saga)),
        ("crn", json!(volume)),
        ("intent", json!("delete")),
        ("step_index", json!(0)),
        ("status", json!("SUCCESS")),
        ("compensating_payload_hash", json!(step_hash)),
        ("action", json!("delete")),
        ("provider_status", json!("deleted")),
    ] {
        assert_eq!(c[k], v, "{k}: {c}");
    }
    assert!(c["duration_ms"].is_u64() && c["blast_radius"].is_u64(), "{c}");

    // A running instance quarantined: in moto its groups are the VPC's
    // deny-all group alone, the ones it had recorded on it.
    let web_id = estate.id(A, "running");
    let web = crn(A, "ec2", "instance", &web_id);
    let groups_of = |ec2: &Value| -> BTreeSet<String> {
        ec2["instances"][&web_id]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap().to_owned())
            .collect()
    };
    let original = BTreeSet::from([estate.id(A, "web_group"), estate.id(A, "admin_group")]);
    assert_eq!(groups_of(&ec2), original, "as seeded");
    let q = api
        .post_json(
            "/api/v1/remediation/quarantine",
            &json!({"crn": web, "action": "ISOLATE", "reason": "suspected compromise, ticket 7", "actor": "sec"}),
        )
        .await
        .expect(200);
    let q_hash = q["compensating_payload_hash"].as_str().unwrap().to_owned();
    assert_eq!(
        (q_hash.len(), &q["crn"], &q["action"]),
        (64, &json!(web), &json!("ISOLATE")),
        "{q}"
    );
    let ec2 = moto.look(A);
    let vpc = estate.id(A, "vpc");
    let deny = ids_where(&ec2["groups"], |g| g["name"] == "svc-quarantine");
    assert_eq!(deny.len(), 1, "one deny-all group: {}", ec2["groups"]);
    let deny_id = deny[0].clone();
    assert_eq!(
        ec2["groups"][&deny_id],
        json!({"name": "svc-quarantine", "vpc": vpc, "ingress": 0, "egress": 0, "tags": {"svc:quarantine": "deny-all"}}),
        "no rule in or out"
    );
    let isolated = &ec2["instances"][&web_id];
    // DescribeInstances' groups of the instance (moto adds the group to its
    // primary interface's without removing the others; AWS replaces them).
    assert_eq!(isolated["groups"], json!([deny_id]), "{isolated}");
    assert_eq!(isolated["state"], "running", "isolated, not stopped: {isolated}");
    let recorded: BTreeSet<String> = isolated["tags"]["svc:quarantine:groups"]
        .as_str()
        .unwrap_or_else(|| panic!("its groups recorded: {isolated}"))
        .split(',')
        .map(str::to_owned)
        .collect();
    assert_eq!(recorded, original, "{isolated}");
    // The body's actor is a note on the reason; the ledger's actor is the token's name.
    assert_eq!(
        isolated["tags"]["svc:quarantined"],
        "suspected compromise, ticket 7 (actor note: sec)"
    );
    let quarantined = events_of(&api, "QUARANTINE", &web).await;
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    assert_eq!(
        (
            &quarantined[0]["status"],
            &quarantined[0]["meta"]["compensating_payload_hash"]
        ),
        (&json!("QUARANTINED"), &json!(q_hash)),
        "{quarantined:?}"
    );
    assert_eq!(quarantined[0]["meta"]["action"], "ISOLATE");

    // The next scan: the volume retired, its snapshot a new node (young:
    // not waste), the volume out of the pipeline, the instance secured by
    // the deny-all group alone.
    let scan = scan_aws(&api, true).await;
    assert_eq!(scan["nodes_deleted"], 1, "the volume: {scan}");
    let retired = node(&api, &volume).await;
    assert!(u(&retired["valid_to"]) > 0, "logically deleted: {retired}");
    let snap_crn = crn(A, "ec2", "snapshot", &snap_id);
    let snap_node = node(&api, &snap_crn).await;
    assert_eq!(snap_node["valid_to"], 0, "{snap_node}");
    assert_eq!(
        (
            &snap_node["properties"]["source_volume_id"],
            &snap_node["properties"]["size_gib"]
        ),
        (&json!(vol_id), &json!(100)),
        "{snap_node}"
    );
    assert_eq!(snap_node["is_waste"], false, "{snap_node}");
    assert_eq!(
        scan["remediation"]["left_reasons"],
        json!({"remediated; no longer waste": 1}),
        "{scan}"
    );
    let left = events_of(&api, "PIPELINE_MOVE", &volume).await;
    assert!(
        left.iter().any(|m| m["meta"]["to"] == "removed"),
        "the volume left the pipeline: {left:?}"
    );
    assert_eq!(
        outgoing(&api, &web, "SecuredBy").await,
        BTreeSet::from([crn(A, "ec2", "security-group", &deny_id)])
    );

    // The remediation reverted by its hash: the compensating restore
    // makes a volume from the snapshot in the same zone, of the same size
    // and type, with the same tags (a new id).
    let r = api
        .post_json(
            "/api/v1/remediation/revert",
            &json!({"hash": step_hash, "actor": "alice"}),
        )
        .await
        .expect(200);
    assert_eq!(
        r,
        json!({"action": "restore", "compensating_payload_hash": step_hash, "crn": volume, "kind": "step", "reverted": "delete"})
    );
    let ec2 = moto.look(A);
    let back = ids_where(&ec2["volumes"], |v| {
        v["tags"]["svc:remediation:restored-from"] == snap_id.as_str()
    });
    assert_eq!(back.len(), 1, "one volume restored: {}", ec2["volumes"]);
    let restored_id = back[0].clone();
    assert_eq!(
        ec2["volumes"][&restored_id],
        json!({
            "zone": "us-east-1a", "size": 100, "type": "gp3", "state": "available",
            "snapshot": snap_id, "attached_to": [],
            "tags": {"team": "ml", "svc:remediation:restored-from": snap_id},
        })
    );
    let rollbacks = events_of(&api, "EXECUTION_ROLLBACK", &volume).await;
    assert_eq!(rollbacks.len(), 1, "{rollbacks:?}");
    let rb = &rollbacks[0]["meta"];
    for (k, v) in [
        ("saga_id", json!(saga)),
        ("compensating_action", json!("restore")),
        ("status", json!("COMPENSATED")),
        ("reason", json!("reverted by admin")),
        ("compensating_payload_hash", json!(step_hash)),
    ] {
        assert_eq!(rb[k], v, "{k}: {rb}");
    }
    api.post_json("/api/v1/remediation/revert", &json!({"hash": step_hash}))
        .await
        .expect_error(409, "conflict");

    // The quarantine reverted: exactly the groups it had, its tags gone;
    // the deny-all group stays for the VPC's next quarantine.
    let r = api
        .post_json("/api/v1/remediation/revert", &json!({"hash": q_hash, "actor": "sec"}))
        .await
        .expect(200);
    assert_eq!(
        (&r["kind"], &r["reverted"], &r["crn"]),
        (&json!("quarantine"), &json!("ISOLATE"), &json!(web))
    );
    let ec2 = moto.look(A);
    assert_eq!(groups_of(&ec2), original);
    assert_eq!(ec2["instances"][&web_id]["groups"].as_array().unwrap().len(), 2);
    let tags = ec2["instances"][&web_id]["tags"].as_object().unwrap();
    assert!(tags.keys().all(|k| !k.starts_with("svc:")), "{tags:?}");
    assert!(ec2["groups"].get(&deny_id).is_some());
    let reverted = events_of(&api, "QUARANTINE_REVERTED", &web).await;
    assert_eq!(reverted.len(), 1, "{reverted:?}");
    assert_eq!(reverted[0]["meta"]["compensating_payload_hash"], q_hash);

    // The scan after: the restored volume a new node, the instance secured
    // by its own groups again.
    scan_aws(&api, true).await;
    let restored = node(&api, &crn(A, "ec2", "volume", &restored_id)).await;
    assert_eq!(
        (
            &restored["state"],
            &restored["properties"]["size_gib"],
            &restored["is_waste"]
        ),
        (&json!("available"), &json!(100), &json!(false)),
        "young again: {restored}"
    );
    assert_eq!(
        outgoing(&api, &web, "SecuredBy").await,
        original.iter().map(|g| crn(A, "ec2", "security-group", g)).collect()
    );

    // A saga whose second step fails is compensated. The stopped instance's
    // plan is `stop`, then `delete`; the plugin does not terminate
    // instances, so the delete is refused at its dry run. Started after the
    // scan that planned it, the instance is really stopped by step 0, and
    // the compensation (`start`, with the state step 0 found) runs it again.
    let stopped_id = estate.id(A, "stopped");
    let stopped = crn(A, "ec2", "instance", &stopped_id);
    let item = at_stage(&api, "sau_gate", &stopped)
        .await
        .unwrap_or_else(|| panic!("{stopped} waits at sau_gate"));
    let plan = api.get_query_ok("/api/v1/plan", &[("crn", &stopped)]).await;
    let steps: Vec<(&Value, &Value)> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (&s["action"], &s["inverse"]))
        .collect();
    assert_eq!(
        steps,
        [(&json!("stop"), &json!("start")), (&json!("delete"), &json!("restore"))],
        "{plan}"
    );
    let plan_hash = item["plan_hash"].as_str().unwrap().to_owned();
    let overridden = api
        .post_json(
            "/api/v1/remediation/override",
            &json!({"crn": stopped, "plan_hash": plan_hash, "reason": "owner asked for it, ticket 9", "actor": "carol"}),
        )
        .await
        .expect(200);
    assert_eq!(overridden["stage"], "pending", "{overridden}");
    let started = moto.python(&["start", A, &stopped_id]);
    assert_eq!(started[&stopped_id], "running", "{started}");
    let out = api
        .post_json(
            "/api/v1/remediation/approve",
            &json!({"crn": stopped, "plan_hash": plan_hash, "actor": "carol"}),
        )
        .await
        .expect(200);
    assert_eq!(
        (&out["applied"], &out["stage"]),
        (&json!(false), &json!("pending")),
        "{out}"
    );
    let failure = out["failure"].as_str().unwrap();
    assert!(
        failure.starts_with(&format!(
            "step 1 (delete) failed its dry run: delete of {stopped}: the aws plugin does not delete a"
        )),
        "{failure}"
    );
    assert_eq!(
        (&out["steps"][0]["status"], &out["steps"][1]["status"]),
        (&json!("COMPENSATED"), &json!("pending")),
        "the stop undone, the delete never run: {out}"
    );
    let ec2 = moto.look(A);
    assert_eq!(ec2["instances"][&stopped_id]["state"], "running", "started again");
    let root = estate.id(A, "stopped_root");
    assert_eq!(
        ec2["volumes"][&root]["attached_to"],
        json!([stopped_id]),
        "its volume untouched"
    );
    let commits = events_of(&api, "EXECUTION_COMMIT", &stopped).await;
    assert_eq!(commits.len(), 1, "only the stop committed: {commits:?}");
    let c = &commits[0]["meta"];
    assert_eq!(
        (&c["step_index"], &c["action"], &c["provider_status"], &c["status"]),
        (&json!(0), &json!("stop"), &json!("stopped"), &json!("SUCCESS")),
        "{c}"
    );
    let rollbacks = events_of(&api, "EXECUTION_ROLLBACK", &stopped).await;
    assert_eq!(rollbacks.len(), 1, "{rollbacks:?}");
    let rb = &rollbacks[0]["meta"];
    assert_eq!(
        (
            &rb["saga_id"],
            &rb["step_index"],
            &rb["compensating_action"],
            &rb["status"],
            &rb["error"]
        ),
        (
            &c["saga_id"],
            &json!(0),
            &json!("start"),
            &json!("COMPENSATED"),
            &Value::Null
        ),
        "{rb}"
    );
    assert_eq!(rb["reason"], failure, "{rb}");
    let back = at_stage(&api, "pending", &stopped)
        .await
        .unwrap_or_else(|| panic!("{stopped} back at pending"));
    assert_eq!(back["failure"], failure, "{back}");

    // A volume attached to a running instance after the scan that planned
    // its deletion: the plugin refuses at the dry run, before any
    // snapshot; nothing ran, so nothing is compensated.
    let b_vol = estate.id(B, "loose_volume");
    let b_volume = crn(B, "ec2", "volume", &b_vol);
    let b_web = estate.id(B, "running");
    let item = at_stage(&api, "pending", &b_volume)
        .await
        .unwrap_or_else(|| panic!("{b_volume} waits at pending"));
    let attached = moto.python(&["attach", B, &b_vol, &b_web, "/dev/sdf"]);
    assert_eq!(attached[&b_vol], json!([b_web]), "{attached}");
    let out = api
        .post_json(
            "/api/v1/remediation/approve",
            &json!({"crn": b_volume, "plan_hash": item["plan_hash"]}),
        )
        .await
        .expect(200);
    assert_eq!(
        (&out["applied"], &out["stage"]),
        (&json!(false), &json!("pending")),
        "{out}"
    );
    let failure = out["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("step 0 (delete) failed its dry run: ")
            && failure.contains(&format!(
                "volume {b_vol} is attached to instance {b_web}, which is running: stop the instance first"
            )),
        "{failure}"
    );
    assert_eq!(out["steps"][0]["status"], "pending", "{out}");
    assert!(events_of(&api, "EXECUTION_COMMIT", &b_volume).await.is_empty());
    assert!(events_of(&api, "EXECUTION_ROLLBACK", &b_volume).await.is_empty());
    let ec2 = moto.look(B);
    assert_eq!(ec2["volumes"][&b_vol]["attached_to"], json!([b_web]), "still there");
    assert!(
        ids_where(&ec2["snapshots"], |s| s["volume"] == b_vol.as_str()).is_empty(),
        "no snapshot taken: {}",
        ec2["snapshots"]
    );
}

/// Credentials from a profile and from web identity work end to end; with
/// none at all, the scan fails at the plugin's preflight check with the
/// reason, and nothing already in the graph is deleted.
#[tokio::test]
async fn credentials_come_from_the_standard_chain_and_their_absence_deletes_nothing() {
    let moto = Moto::start().await;
    let estate = moto.seed_estate();
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());

    // A named profile in a shared credentials file.
    let profile = dir.path().join("aws-credentials");
    std::fs::write(
        &profile,
        "[e2e]\naws_access_key_id = AKIAE2EPROFILE\naws_secret_access_key = secret\n",
    )
    .unwrap();
    let profile = profile.to_str().unwrap();
    let mut d = daemon(
        dir.path(),
        aws_env(
            &moto,
            &[("AWS_PROFILE", "e2e"), ("AWS_SHARED_CREDENTIALS_FILE", profile)],
        ),
    );
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    assert_eq!(first["payload"]["sources"][0]["ok"], true, "{first}");
    let nodes = u(&first["payload"]["node_count"]);
    assert!(nodes > 20, "{first}");
    let log = d.log.text();
    let found = format!("aws (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE={profile})");
    assert!(log.contains(&found), "{found:?} not in the log:\n{log}");
    assert!(log.contains("aws plugin is active: aws is scanned through it"), "{log}");
    let api = d.api();
    let loose = crn(A, "ec2", "volume", &estate.id(A, "loose_volume"));
    assert_eq!(node(&api, &loose).await["verdict"], "aws-ebs-unattached");

    // Web identity: a token file and a role, exchanged with STS.
    let token = dir.path().join("web-identity-token");
    std::fs::write(&token, "eyJhbGciOiJub25lIn0.eyJzdWIiOiJlMmUifQ.").unwrap();
    d.env = aws_env(
        &moto,
        &[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
            ("AWS_ROLE_ARN", &format!("arn:aws:iam::{ACCOUNT}:role/svc-scan")),
            ("AWS_ROLE_SESSION_NAME", "svc-e2e"),
        ],
    );
    d.restart().await;
    let second = d.wait_scan_after(u(&first["seq"])).await;
    assert_eq!(
        (&second["payload"]["sources"][0]["ok"], &second["payload"]["node_count"]),
        (&json!(true), &json!(nodes)),
        "{second}"
    );
    assert!(
        d.log.text().contains("aws (AWS_WEB_IDENTITY_TOKEN_FILE)"),
        "{}",
        d.log.text()
    );

    // No credentials at all: no keys, no profile, profile files pointing at
    // nothing, no instance metadata.
    d.env = aws_env(&moto, &[]);
    d.restart().await;
    let third = d.wait_scan_after(u(&second["seq"])).await;
    let src = &third["payload"]["sources"][0];
    assert_eq!((&src["name"], &src["ok"]), (&json!("aws"), &json!(false)), "{third}");
    let error = src["error"].as_str().unwrap();
    for part in [
        "plugin aws preflight check failed",
        "no usable AWS credentials",
        "(missing: credentials)",
    ] {
        assert!(error.contains(part), "{part:?} not in {error:?}");
    }
    assert_eq!(third["payload"]["nodes_deleted"], 0, "{third}");
    let log = d.log.text();
    assert!(!log.contains("mock mode"), "no simulated estate stands in:\n{log}");
    let api = d.api();
    let stats = api.get_ok("/api/v1/graph/stats").await;
    assert_eq!(u(&stats["active_nodes"]), nodes, "nothing deleted: {stats}");
    assert_eq!(stats["simulated"], false, "{stats}");
    let last = &stats["sources"][0]["last_scan"];
    assert_eq!(last["ok"], false, "{stats}");
    assert!(
        last["error"].as_str().unwrap().contains("no usable AWS credentials"),
        "{stats}"
    );
    assert_eq!(
        node(&api, &loose).await["verdict"],
        "aws-ebs-unattached",
        "findings kept"
    );
}

/// A Terraform state written for the scanned account drifts as people
/// change the account by hand: a tag changed, an address released, a
/// volume made outside Terraform. The state is read from the data
/// directory, configured through the API while the daemon runs.
#[tokio::test]
async fn terraform_drift_follows_changes_made_by_hand_in_the_account() {
    use common::terraform::{AWS_MAPPED, AWS_PROVIDER, attributes, state};

    let moto = Moto::start().await;
    let estate = moto.seed_estate();
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(dir.path(), aws_env(&moto, &KEYS));
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();

    // Terraform declares the web tier of region A as the plugin reports it.
    let data = node(&api, &crn(A, "ec2", "volume", &estate.id(A, "data_volume"))).await;
    let loose = node(&api, &crn(A, "ec2", "volume", &estate.id(A, "loose_volume"))).await;
    let web = node(&api, &crn(A, "ec2", "instance", &estate.id(A, "running"))).await;
    let vpc = node(&api, &crn(A, "ec2", "vpc", &estate.id(A, "vpc"))).await;
    let group = node(&api, &crn(A, "ec2", "security-group", &estate.id(A, "web_group"))).await;
    let spare = node(&api, &crn(A, "ec2", "eip", &estate.id(A, "eip_loose"))).await;
    let one = |tf: &str, name: &str, n: &Value| {
        json!({"mode": "managed", "type": tf, "name": name, "provider": AWS_PROVIDER,
               "instances": [{"schema_version": 0, "attributes": attributes(tf, n)}]})
    };
    let resources = json!([
        {"module": "module.storage", "mode": "managed", "type": "aws_ebs_volume", "name": "disk", "each": "map",
         "provider": AWS_PROVIDER, "instances": [
            {"index_key": "data", "schema_version": 0, "attributes": attributes("aws_ebs_volume", &data)},
            {"index_key": "scratch", "schema_version": 0, "attributes": attributes("aws_ebs_volume", &loose)}
         ]},
        one("aws_instance", "web", &web),
        one("aws_vpc", "main", &vpc),
        one("aws_security_group", "web", &group),
        one("aws_eip", "spare", &spare),
    ]);
    std::fs::write(dir.path().join("web.tfstate"), state(3, resources)).unwrap();
    api.put_json("/api/v1/config", &json!({"iac": {"terraform_states": ["web.tfstate"]}}))
        .await
        .expect(200);
    let declared: BTreeSet<String> = [&data, &loose, &web, &vpc, &group, &spare]
        .iter()
        .map(|n| n["crn"].as_str().unwrap().to_owned())
        .collect();
    let live_ec2 = |nodes: &[Value]| {
        nodes
            .iter()
            .filter(|n| n["valid_to"] == 0 && AWS_MAPPED.contains(&n["type"].as_str().unwrap()))
            .filter(|n| !declared.contains(n["crn"].as_str().unwrap()))
            .count()
    };
    let limit = [("limit", "10000")];
    let r = api.get_query_ok("/api/v1/drift/report", &limit).await;
    let before = live_ec2(&api.all_nodes(None).await);
    assert_eq!(
        (
            &r["totals"]["declared"],
            &r["totals"]["in_sync"],
            &r["totals"]["changed"],
            &r["totals"]["gone"]
        ),
        (&json!(6), &json!(6), &json!(0), &json!(0)),
        "as written, in sync: {r}"
    );
    assert_eq!(r["totals"]["unmanaged"], before, "{r}");

    // Changes by hand, behind Terraform's back.
    moto.python(&["retag", A, &estate.id(A, "data_volume"), "role", "scratch"]);
    moto.python(&["release", A, &estate.id(A, "eip_loose")]);
    let made = moto.python(&["by-hand", A, &format!("{A}a"), "5"]);
    let made = crn(A, "ec2", "volume", made["volume"].as_str().unwrap());
    scan_aws(&api, true).await;

    let r = api.get_query_ok("/api/v1/drift/report", &limit).await;
    assert_eq!(
        (
            &r["totals"]["in_sync"],
            &r["totals"]["changed"],
            &r["totals"]["gone"],
            &r["totals"]["attributes"]
        ),
        (&json!(4), &json!(1), &json!(1), &json!(1)),
        "{r}"
    );
    assert_eq!(
        r["changed"][0]["address"], "module.storage.aws_ebs_volume.disk[\"data\"]",
        "{r}"
    );
    assert_eq!(
        r["changed"][0]["attributes"],
        json!([{"attribute": "tags.role", "property": "tags.role", "declared": "data", "live": "scratch"}])
    );
    let gone = &r["gone"][0];
    assert_eq!(
        (&gone["address"], &gone["crn"]),
        (&json!("aws_eip.spare"), &spare["crn"])
    );
    assert_eq!(gone["removed_by_svc"], false, "released by hand: {r}");
    assert_eq!(gone["code_change"]["kind"], "remove_block");
    assert!(
        gone["code_change"]["diff"].is_null(),
        "no repository configured: {gone}"
    );
    assert_eq!(r["totals"]["unmanaged"], before + 1, "{r}");
    assert!(
        r["unmanaged"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["crn"] == made && u["terraform_type"] == "aws_ebs_volume"),
        "the volume made by hand: {r}"
    );
    // The volume made by hand has no declaration; the retagged one has.
    let p = api.get_query_ok("/api/v1/provenance", &[("crn", &made)]).await;
    assert_eq!(p["managed"], false, "{p}");
    let p = api
        .get_query_ok("/api/v1/provenance", &[("crn", data["crn"].as_str().unwrap())])
        .await;
    assert_eq!(p["address"], "module.storage.aws_ebs_volume.disk[\"data\"]", "{p}");
    assert_eq!(p["missing"], "no repository is configured (iac.repository)", "{p}");
}
