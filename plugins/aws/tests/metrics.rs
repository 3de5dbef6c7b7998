//! Usage figures from CloudWatch `GetMetricData`, against a real
//! `moto_server`: the test seeds resources, stores their metrics with
//! `PutMetricData` (busy ones, idle ones, ones too young to judge, ones
//! without any), scans through the plugin binary and checks the usage
//! properties of each node, and, from the plugin's debug log, that the
//! metrics were asked in requests of up to 500 queries, not one per
//! resource.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeMap;

use aws_sdk_cloudwatch::primitives::DateTime;
use aws_sdk_cloudwatch::types::{Dimension, MetricDatum};
use aws_sdk_ec2::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_ec2::types::{InstanceType, VpcEndpointType};
use serde_json::Value;

use common::*;

const DAY: i64 = 86_400;
const HOUR: i64 = 3_600;
/// Queries per `GetMetricData` request.
const PER_CALL: usize = 500;

// --------------------------------------------------------------- seeding

/// Times the metrics are stored at, relative to the last whole hour
/// before the test (the plugin's windows end at the last whole hour of
/// the scan, which is that one or the next).
struct Times {
    hour: i64,
}

impl Times {
    fn now() -> Times {
        let s = now_ms() / 1000;
        Times { hour: s - s % HOUR }
    }
    /// Six hours into the first day of a window of `days`.
    fn first_day(&self, days: i64) -> i64 {
        self.hour - days * DAY + 6 * HOUR
    }
    /// Six hours before the window's end.
    fn recent(&self) -> i64 {
        self.hour - 6 * HOUR
    }
}

/// Stores datapoints `(metric, time, value)` of one resource (`dims`) in
/// `namespace`.
async fn put(cw: &aws_sdk_cloudwatch::Client, namespace: &str, dims: &[(&str, &str)], points: &[(&str, i64, f64)]) {
    let mut call = cw.put_metric_data().namespace(namespace);
    for (metric, at, value) in points {
        let mut datum = MetricDatum::builder()
            .metric_name(*metric)
            .timestamp(DateTime::from_secs(*at))
            .value(*value);
        for (name, v) in dims {
            datum = datum.dimensions(Dimension::builder().name(*name).value(*v).build());
        }
        call = call.metric_data(datum.build());
    }
    call.send().await.unwrap();
}

fn cloudwatch(moto: &Moto, region: &str) -> aws_sdk_cloudwatch::Client {
    client!(aws_sdk_cloudwatch, moto, region)
}

/// What the test made in region A, by role.
#[derive(Default)]
struct Estate {
    busy: String,
    idle: String,
    young: String,
    silent: String,
    stopped: String,
    alb_busy: String,
    alb_idle: String,
    nlb: String,
    nat_busy: String,
    nat_idle: String,
    endpoint: String,
    db_busy: String,
    db_idle: String,
    fn_busy: String,
    fn_idle: String,
    logs_busy: String,
    logs_silent: String,
}

/// Queries per resource of each kind (the README's table).
const EC2_QUERIES: usize = 3;
const ALB_QUERIES: usize = 2;
const NLB_QUERIES: usize = 2;
const NAT_QUERIES: usize = 3;
const ENDPOINT_QUERIES: usize = 1;
const DB_QUERIES: usize = 2;
const FUNCTION_QUERIES: usize = 1;
const LOG_GROUP_QUERIES: usize = 1;

/// The queries of region A's seeded estate: four running instances (the
/// stopped one has none), two application and one network load
/// balancer, two NAT gateways, an interface endpoint, two databases, two
/// functions, two log groups.
const A_QUERIES: usize = 4 * EC2_QUERIES
    + 2 * ALB_QUERIES
    + NLB_QUERIES
    + 2 * NAT_QUERIES
    + ENDPOINT_QUERIES
    + 2 * DB_QUERIES
    + 2 * FUNCTION_QUERIES
    + 2 * LOG_GROUP_QUERIES;

async fn seed_a(moto: &Moto, t: &Times) -> Estate {
    use aws_sdk_elasticloadbalancingv2::types::LoadBalancerTypeEnum;
    let ec2 = moto.ec2(A);
    let mut s = Seeded::default();
    network(&ec2, &mut s, "10.1").await;
    let mut e = Estate::default();
    let image = "ami-0123456789abcdef0";
    (e.busy, _) = run(&ec2, &s, image, "busy").await;
    (e.idle, _) = run(&ec2, &s, image, "idle").await;
    (e.young, _) = run(&ec2, &s, image, "young").await;
    (e.silent, _) = run(&ec2, &s, image, "silent").await;
    (e.stopped, _) = run(&ec2, &s, image, "stopped").await;
    ec2.stop_instances().instance_ids(&e.stopped).send().await.unwrap();

    let subnet2 = ec2
        .create_subnet()
        .vpc_id(&s.vpc)
        .cidr_block("10.1.2.0/24")
        .availability_zone(format!("{A}b"))
        .send()
        .await
        .unwrap();
    let subnet2 = subnet2.subnet().unwrap().subnet_id().unwrap().to_owned();
    let elb = client!(aws_sdk_elasticloadbalancingv2, moto, A);
    let mut lbs = Vec::new();
    for (name, ty) in [
        ("web", LoadBalancerTypeEnum::Application),
        ("old", LoadBalancerTypeEnum::Application),
        ("tcp", LoadBalancerTypeEnum::Network),
    ] {
        let lb = elb
            .create_load_balancer()
            .name(name)
            .r#type(ty)
            .subnets(&s.subnet)
            .subnets(&subnet2)
            .send()
            .await
            .unwrap();
        lbs.push(elb_id(lb.load_balancers()[0].load_balancer_arn().unwrap()));
    }
    [e.alb_busy, e.alb_idle, e.nlb] = lbs.try_into().unwrap();

    let mut nats = Vec::new();
    for _ in 0..2 {
        let eip = allocate(&ec2).await;
        let nat = ec2
            .create_nat_gateway()
            .subnet_id(&s.subnet)
            .allocation_id(eip)
            .send()
            .await
            .unwrap();
        nats.push(nat.nat_gateway().unwrap().nat_gateway_id().unwrap().to_owned());
    }
    [e.nat_busy, e.nat_idle] = nats.try_into().unwrap();
    let service = format!("com.amazonaws.{A}.sqs");
    let ep = ec2
        .create_vpc_endpoint()
        .vpc_id(&s.vpc)
        .service_name(&service)
        .vpc_endpoint_type(VpcEndpointType::Interface)
        .subnet_ids(&s.subnet)
        .send()
        .await
        .unwrap();
    e.endpoint = ep.vpc_endpoint().unwrap().vpc_endpoint_id().unwrap().to_owned();

    let rds = client!(aws_sdk_rds, moto, A);
    (e.db_busy, e.db_idle) = ("orders".into(), "reports".into());
    for name in [&e.db_busy, &e.db_idle] {
        rds.create_db_instance()
            .db_instance_identifier(name)
            .db_instance_class("db.t3.micro")
            .engine("postgres")
            .allocated_storage(20)
            .master_username("admin")
            .master_user_password("password123")
            .send()
            .await
            .unwrap();
    }

    let role = lambda_role(moto).await;
    let lambda = client!(aws_sdk_lambda, moto, A);
    (e.fn_busy, e.fn_idle) = ("resize".into(), "cron".into());
    for name in [&e.fn_busy, &e.fn_idle] {
        use aws_sdk_lambda::primitives::Blob;
        use aws_sdk_lambda::types::{FunctionCode, Runtime};
        lambda
            .create_function()
            .function_name(name)
            .runtime(Runtime::Python312)
            .role(&role)
            .handler("app.handler")
            .code(FunctionCode::builder().zip_file(Blob::new(empty_zip())).build())
            .send()
            .await
            .unwrap();
    }
    let logs = client!(aws_sdk_cloudwatchlogs, moto, A);
    (e.logs_busy, e.logs_silent) = ("/app/api".into(), "/app/legacy".into());
    for group in [&e.logs_busy, &e.logs_silent] {
        logs.create_log_group().log_group_name(group).send().await.unwrap();
    }

    // The metrics: each resource judged is seen on its window's first day
    // (moto creates everything now, so its age cannot vouch for it).
    let cw = cloudwatch(moto, A);
    let (w7, w30, w90, recent) = (t.first_day(7), t.first_day(30), t.first_day(90), t.recent());
    let ec2_ns = "AWS/EC2";
    put(
        &cw,
        ec2_ns,
        &[("InstanceId", &e.busy)],
        &[
            ("CPUUtilization", w7, 40.0),
            ("CPUUtilization", recent, 60.0),
            ("NetworkIn", w7, 0.0),
            ("NetworkIn", recent, 3e9),
            ("NetworkOut", recent, 1e9),
        ],
    )
    .await;
    put(
        &cw,
        ec2_ns,
        &[("InstanceId", &e.idle)],
        &[
            ("CPUUtilization", w7, 1.0),
            ("CPUUtilization", recent, 2.0),
            ("NetworkIn", w7, 1e6),
            ("NetworkOut", recent, 2e6),
        ],
    )
    .await;
    // Launched within the window: only recent datapoints.
    put(
        &cw,
        ec2_ns,
        &[("InstanceId", &e.young)],
        &[
            ("CPUUtilization", recent, 1.0),
            ("NetworkIn", recent, 1e3),
            ("NetworkOut", recent, 1e3),
        ],
    )
    .await;
    let alb = "AWS/ApplicationELB";
    put(
        &cw,
        alb,
        &[("LoadBalancer", &e.alb_busy)],
        &[
            ("RequestCount", w7, 5.0),
            ("RequestCount", recent, 1000.0),
            ("NewConnectionCount", recent, 300.0),
        ],
    )
    .await;
    put(&cw, alb, &[("LoadBalancer", &e.alb_idle)], &[("RequestCount", w7, 0.0)]).await;
    put(
        &cw,
        "AWS/NetworkELB",
        &[("LoadBalancer", &e.nlb)],
        &[("ActiveFlowCount", w7, 1.0), ("ActiveFlowCount", recent, 2.0)],
    )
    .await;
    let nat = "AWS/NATGateway";
    put(
        &cw,
        nat,
        &[("NatGatewayId", &e.nat_busy)],
        &[
            ("BytesInFromSource", recent, 5e9),
            ("BytesInFromDestination", w7, 1e9),
            ("ConnectionEstablishedCount", recent, 40.0),
        ],
    )
    .await;
    put(
        &cw,
        nat,
        &[("NatGatewayId", &e.nat_idle)],
        &[("BytesInFromSource", w7, 0.0)],
    )
    .await;
    let endpoint_dims = [
        ("Endpoint Type", "Interface"),
        ("Service Name", service.as_str()),
        ("VPC Endpoint Id", e.endpoint.as_str()),
        ("VPC Id", s.vpc.as_str()),
    ];
    put(
        &cw,
        "AWS/PrivateLinkEndpoints",
        &endpoint_dims,
        &[("BytesProcessed", w7, 0.0)],
    )
    .await;
    let rds_ns = "AWS/RDS";
    put(
        &cw,
        rds_ns,
        &[("DBInstanceIdentifier", &e.db_busy)],
        &[
            ("DatabaseConnections", w7, 12.0),
            ("DatabaseConnections", recent, 30.0),
            ("CPUUtilization", w7, 40.0),
            ("CPUUtilization", recent, 20.0),
        ],
    )
    .await;
    put(
        &cw,
        rds_ns,
        &[("DBInstanceIdentifier", &e.db_idle)],
        &[
            ("DatabaseConnections", w7, 0.0),
            ("DatabaseConnections", recent, 0.0),
            ("CPUUtilization", w7, 1.0),
        ],
    )
    .await;
    let fns = "AWS/Lambda";
    put(
        &cw,
        fns,
        &[("FunctionName", &e.fn_busy)],
        &[("Invocations", w90, 100.0), ("Invocations", recent, 50.0)],
    )
    .await;
    put(&cw, fns, &[("FunctionName", &e.fn_idle)], &[("Invocations", w90, 0.0)]).await;
    let logs_ns = "AWS/Logs";
    put(
        &cw,
        logs_ns,
        &[("LogGroupName", &e.logs_busy)],
        &[("IncomingBytes", w30, 0.0), ("IncomingBytes", recent, 2048.0)],
    )
    .await;
    put(
        &cw,
        logs_ns,
        &[("LogGroupName", &e.logs_silent)],
        &[("IncomingBytes", w30, 0.0)],
    )
    .await;
    e
}

/// Region B: `n` running instances; every tenth, and the last, with
/// metrics of a busy instance. Returns their ids, those with metrics
/// first flagged.
async fn seed_many(moto: &Moto, t: &Times, n: i32) -> Vec<(String, bool)> {
    let ec2 = moto.ec2(B);
    let r = ec2
        .run_instances()
        .image_id("ami-0123456789abcdef0")
        .instance_type(InstanceType::T3Micro)
        .min_count(n)
        .max_count(n)
        .send()
        .await
        .unwrap();
    let ids: Vec<String> = r
        .instances()
        .iter()
        .map(|i| i.instance_id().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), n as usize);
    let cw = cloudwatch(moto, B);
    let mut out = Vec::new();
    for (k, id) in ids.into_iter().enumerate() {
        let measured = k % 10 == 0 || k == n as usize - 1;
        if measured {
            put(
                &cw,
                "AWS/EC2",
                &[("InstanceId", &id)],
                &[
                    ("CPUUtilization", t.first_day(7), 30.0),
                    ("NetworkIn", t.first_day(7), 2e9),
                    ("NetworkOut", t.recent(), 1e9),
                ],
            )
            .await;
        }
        out.push((id, measured));
    }
    out
}

// ----------------------------------------------------------------- checks

/// The plugin's log once it holds a line that `done` accepts (its stderr
/// is read as it comes, so the last lines may lag the scan's end).
async fn log_with(plugin: &Plugin, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let end = std::time::Instant::now() + DEADLINE;
    loop {
        let log = plugin.log();
        if log.iter().any(&done) {
            return log;
        }
        assert!(std::time::Instant::now() < end, "no such line in {log:?}");
        tokio::time::sleep(POLL_PAUSE).await;
    }
}

/// Whether `l` is the `usage metrics` line of `region`.
fn summary_of(l: &Value, region: &str) -> bool {
    l["@message"] == "usage metrics" && l["region"] == region
}

/// The `aws call` lines of GetMetricData by region: the `items` of each.
fn metric_calls(log: &[Value]) -> BTreeMap<String, Vec<u64>> {
    let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for l in log {
        if l["@message"] == "aws call" && l["operation"] == "GetMetricData" {
            assert_eq!(l["service"], "cloudwatch", "{l}");
            let region = l["region"].as_str().unwrap().to_owned();
            out.entry(region).or_default().push(l["items"].as_u64().unwrap());
        }
    }
    out
}

/// The `usage metrics` line of `region`.
fn summary(log: &[Value], region: &str) -> Value {
    let lines: Vec<&Value> = log.iter().filter(|l| summary_of(l, region)).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0].clone()
}

/// The usage property `key` of a node, which must be there.
fn figure(node: &Value, key: &str) -> f64 {
    node[key].as_f64().unwrap_or_else(|| panic!("no {key} in {node}"))
}

const USAGE_KEYS: [&str; 8] = [
    "cpu_avg_7d",
    "network_bytes_7d",
    "request_count_7d",
    "connections_7d",
    "bytes_processed_7d",
    "invocations_90d",
    "ingested_bytes_30d",
    "consumed_read_7d",
];

fn has_no_usage(node: &Value) -> bool {
    USAGE_KEYS.iter().all(|k| node.get(k).is_none())
}

// ------------------------------------------------------------------ tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_properties_come_from_get_metric_data_in_batches() {
    let moto = Moto::start().await;
    let t = Times::now();
    let e = seed_a(&moto, &t).await;
    let many = seed_many(&moto, &t, 170).await;
    let mut plugin = Plugin::against(&moto).await;
    let regions = format!(r#"["{A}", "{B}"]"#);
    let (scan, status) = plugin.scan(&[("regions", &regions)]).await;
    status.expect("the scan succeeds");

    // Instances: busy and idle judged over 7 days; one launched within the
    // window, one without metrics and a stopped one are not.
    let busy = scan.node(A, "instance", &e.busy);
    assert_eq!(figure(busy, "cpu_avg_7d"), 50.0);
    assert_eq!(figure(busy, "network_bytes_7d"), 4e9);
    let idle = scan.node(A, "instance", &e.idle);
    assert_eq!(figure(idle, "cpu_avg_7d"), 1.5);
    assert_eq!(figure(idle, "network_bytes_7d"), 3e6);
    for quiet in [&e.young, &e.silent, &e.stopped] {
        let n = scan.node(A, "instance", quiet);
        assert!(has_no_usage(n), "{n}");
    }

    // Load balancers: requests and connections; an idle one reads zero
    // (ELB publishes nothing while nothing flows); a network one's open
    // flows count as connections.
    let alb = scan.node(A, "load-balancer", &e.alb_busy);
    assert_eq!(figure(alb, "request_count_7d"), 1005.0);
    assert_eq!(figure(alb, "connections_7d"), 300.0);
    let old = scan.node(A, "load-balancer", &e.alb_idle);
    assert_eq!(figure(old, "request_count_7d"), 0.0);
    assert_eq!(figure(old, "connections_7d"), 0.0);
    let nlb = scan.node(A, "load-balancer", &e.nlb);
    assert_eq!(figure(nlb, "connections_7d"), 2.0);
    assert!(nlb.get("request_count_7d").is_none(), "{nlb}");

    // NAT gateways: bytes in from both sides, connections; the bytes are
    // in the gateway's cost.
    let nat = scan.node(A, "nat-gateway", &e.nat_busy);
    assert_eq!(figure(nat, "bytes_processed_7d"), 6e9);
    assert_eq!(figure(nat, "connections_7d"), 40.0);
    let nat_idle = scan.node(A, "nat-gateway", &e.nat_idle);
    assert_eq!(figure(nat_idle, "bytes_processed_7d"), 0.0);
    assert_eq!(figure(nat_idle, "connections_7d"), 0.0);
    assert!(
        scan.cost(A, "nat-gateway", &e.nat_busy) > scan.cost(A, "nat-gateway", &e.nat_idle),
        "processed bytes are priced"
    );
    let ep = scan.node(A, "vpc-endpoint", &e.endpoint);
    assert_eq!(figure(ep, "bytes_processed_7d"), 0.0);

    // Databases: peak connections, mean CPU.
    let db = scan.node(A, "db", &e.db_busy);
    assert_eq!(figure(db, "connections_7d"), 30.0);
    assert_eq!(figure(db, "cpu_avg_7d"), 30.0);
    let db_idle = scan.node(A, "db", &e.db_idle);
    assert_eq!(figure(db_idle, "connections_7d"), 0.0);
    assert_eq!(figure(db_idle, "cpu_avg_7d"), 1.0);

    // Functions over 90 days, log groups over 30.
    assert_eq!(figure(scan.node(A, "function", &e.fn_busy), "invocations_90d"), 150.0);
    assert_eq!(figure(scan.node(A, "function", &e.fn_idle), "invocations_90d"), 0.0);
    let logs = scan.node(A, "log-group", &e.logs_busy);
    assert_eq!(figure(logs, "ingested_bytes_30d"), 2048.0);
    let silent = scan.node(A, "log-group", &e.logs_silent);
    assert_eq!(figure(silent, "ingested_bytes_30d"), 0.0);

    // Region B: the measured instances, wherever their batch.
    for (id, measured) in &many {
        let n = scan.node(B, "instance", id);
        if *measured {
            assert_eq!(figure(n, "cpu_avg_7d"), 30.0, "{id}");
            assert_eq!(figure(n, "network_bytes_7d"), 3e9, "{id}");
        } else {
            assert!(has_no_usage(n), "{n}");
        }
    }

    // The requests: ceil(queries / 500) per region, each of at most 500
    // queries, all of them answered.
    let b_queries = many.len() * EC2_QUERIES;
    // Region A's line comes after region B's, or B's after A's.
    log_with(&plugin, |l| summary_of(l, A)).await;
    let log = log_with(&plugin, |l| summary_of(l, B)).await;
    let calls = metric_calls(&log);
    for (region, queries) in [(A, A_QUERIES), (B, b_queries)] {
        let items = &calls[region];
        assert_eq!(items.len(), queries.div_ceil(PER_CALL), "{region}: {items:?}");
        assert!(items.iter().all(|i| *i as usize <= PER_CALL), "{region}: {items:?}");
        assert_eq!(items.iter().sum::<u64>() as usize, queries, "{region}: {items:?}");
        let line = summary(&log, region);
        assert_eq!(line["queries"], queries as u64, "{line}");
        assert_eq!(line["requests"], items.len() as u64, "{line}");
    }
    assert_eq!(calls[B].len(), 2, "510 queries for 170 instances: two requests");
    assert_eq!(summary(&log, A)["window_days"], 90);
    assert_eq!(summary(&log, B)["window_days"], 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cloudwatch_the_region_is_reported_without_usage() {
    let moto = Moto::start().await;
    let t = Times::now();
    let many = seed_many(&moto, &t, 1).await;
    let (id, measured) = &many[0];
    assert!(measured);
    // CloudWatch alone answers nowhere.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let mut plugin = Plugin::start(&[
        ("AWS_ENDPOINT_URL", &moto.endpoint),
        ("AWS_ENDPOINT_URL_CLOUDWATCH", &closed),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", A),
    ])
    .await;
    let (scan, status) = plugin.scan(&[("regions", B), ("max_attempts", "1")]).await;
    status.expect("the scan succeeds without usage figures");
    let n = scan.node(B, "instance", id);
    assert_eq!(n["state"], "running");
    assert!(has_no_usage(n), "{n}");
    let warning = |l: &Value| {
        let message = l["@message"].as_str().unwrap_or("");
        message.starts_with("usage metrics failed") && l["region"] == B
    };
    let log = log_with(&plugin, warning).await;
    let failed: Vec<&Value> = log
        .iter()
        .filter(|l| l["@message"] == "aws call failed" && l["operation"] == "GetMetricData")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["region"], B);
    // The same instance, with CloudWatch answering, has its figures.
    let mut plugin = Plugin::against(&moto).await;
    let (scan, status) = plugin.scan(&[("regions", B)]).await;
    status.unwrap();
    assert_eq!(figure(scan.node(B, "instance", id), "cpu_avg_7d"), 30.0);
}
