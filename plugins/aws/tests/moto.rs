//! `svc-plugin-aws` as the daemon runs it, against a real `moto_server`
//! (PyPI `moto[server]`, installed into `.venv` by `scripts/test`): the
//! test seeds two regions through the AWS SDK, starts the plugin binary
//! over the go-plugin handshake with `AWS_ENDPOINT_URL` pointing at moto
//! and dummy credentials, and checks what Scan and PreflightCheck answer.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeSet;

use aws_sdk_ec2::config::{BehaviorVersion, Credentials, Region};
use serde_json::Value;
use svc_engine::prices;
use svc_proto::provider::v1::ScanRequest;

use common::*;

// ------------------------------------------------------------------ tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_reports_two_regions_exactly() {
    let moto = Moto::start().await;
    let (ea, eb) = (moto.ec2(A), moto.ec2(B));
    let a = seed_full(&ea).await;
    let b = seed_small(&eb).await;
    let lb = seed_elb(&moto, &ea, &a).await;
    let tier = seed_data(&moto, &a, &lb).await;
    seed_buckets(&moto).await;
    let mut plugin = Plugin::against(&moto).await;
    let regions = format!(r#"["{A}", "{B}"]"#);
    let (scan, status) = plugin.scan(&[("regions", &regions)]).await;
    status.expect("the scan succeeds");

    // The exact node set: what the test made, and the network moto lists.
    let mut expected = BTreeSet::new();
    for (kind, id) in [
        ("instance", &a.running),
        ("instance", &a.stopped),
        ("volume", &a.running_root),
        ("volume", &a.stopped_root),
        ("volume", &a.data_volume),
        ("volume", &a.loose_volume),
        ("snapshot", &a.snapshot),
        ("snapshot", &a.image_snapshot),
        ("image", &a.image),
        ("eip", &a.eip_associated),
        ("eip", &a.eip_loose),
        ("eip", &a.eip_nat),
        ("nat-gateway", &a.nat),
        ("vpc-endpoint", &a.endpoint),
        ("load-balancer", &lb.web),
        ("load-balancer", &lb.old),
        ("target-group", &lb.web_tg),
        ("target-group", &lb.old_tg),
        ("target-group", &lb.loose_tg),
        ("db", &tier.db),
        ("db", &tier.db_stopped),
        ("function", &tier.function),
        ("function", &tier.function_plain),
        ("log-group", &tier.logs),
        ("log-group", &tier.logs_loose),
    ] {
        expected.insert(crn(A, kind, id));
    }
    expected.insert(crn(A, "bucket", BUCKETS[0].0));
    expected.insert(crn(B, "bucket", BUCKETS[1].0));
    for (kind, id) in [
        ("instance", &b.running),
        ("volume", &b.running_root),
        ("volume", &b.loose_volume),
    ] {
        expected.insert(crn(B, kind, id));
    }
    expected.extend(network_crns(&ea, A).await);
    expected.extend(network_crns(&eb, B).await);
    let got: BTreeSet<String> = scan.nodes.keys().cloned().collect();
    assert_eq!(got, expected);

    // Key properties, as the built-in rules read them.
    let run = scan.node(A, "instance", &a.running);
    assert_eq!(run["state"], "running");
    assert_eq!(run["instance_type"], "t3.small");
    assert_eq!(run["lifecycle"], "on-demand");
    assert_eq!(run["subnet_id"], a.subnet.as_str());
    assert_eq!(run["image_id"], a.image.as_str());
    assert_eq!(run["vcpus"], 2);
    assert_eq!(run["tags"]["env"], "prod");
    assert_eq!(run["arn"], format!("arn:aws:ec2:{A}:{ACCOUNT}:instance/{}", a.running));
    assert!(run["creation_timestamp"].as_i64().unwrap() > 1_700_000_000, "{run}");
    assert!(run["created_at"].as_str().unwrap().ends_with('Z'), "{run}");
    let priced = prices::machine_monthly("aws", "t3.small", A).unwrap();
    let cost = scan.cost(A, "instance", &a.running);
    assert!((cost - priced).abs() < CENT, "{cost} != {priced}");
    let stopped = scan.node(A, "instance", &a.stopped);
    assert_eq!(stopped["state"], "stopped");
    assert!(
        stopped["stopped_at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{stopped}"
    );
    assert_eq!(scan.cost(A, "instance", &a.stopped), 0.0);

    let data = scan.node(A, "volume", &a.data_volume);
    assert_eq!(data["state"], "in-use");
    assert_eq!(data["attached_to"], a.running.as_str());
    assert_eq!(data["attachment_state"], "attached");
    assert_eq!(data["device"], "/dev/sdf");
    assert_eq!(
        (data["size_gib"].clone(), data["volume_type"].clone()),
        (10.into(), "gp3".into())
    );
    let priced = 10.0 * prices::rate("aws", "gp3", A).unwrap();
    assert!(
        (scan.cost(A, "volume", &a.data_volume) - priced).abs() < CENT,
        "{priced}"
    );
    let loose = scan.node(A, "volume", &a.loose_volume);
    assert_eq!(loose["state"], "available");
    assert_eq!(loose["attached_to"], Value::Null);
    assert_eq!(loose["attachment_state"], "detached");
    assert_eq!(loose["tags"]["svc:ignore"], "true");
    assert_eq!(loose["volume_type"], "gp2");

    let snap = scan.node(A, "snapshot", &a.snapshot);
    assert_eq!(snap["source_volume_id"], a.data_volume.as_str());
    assert_eq!(snap["size_gib"], 10);
    assert_eq!(snap["arn"], format!("arn:aws:ec2:{A}::snapshot/{}", a.snapshot));
    let image = scan.node(A, "image", &a.image);
    assert_eq!(image["name"], "base");
    assert_eq!(image["state"], "available");
    assert_eq!(image["snapshot_ids"], serde_json::json!([a.image_snapshot]));

    let eip = scan.node(A, "eip", &a.eip_associated);
    assert_eq!(eip["state"], "in-use");
    assert_eq!(eip["attached_to"], a.running.as_str());
    assert!(eip["association_id"].is_string(), "{eip}");
    assert!(eip["public_ip"].is_string(), "{eip}");
    let eip = scan.node(A, "eip", &a.eip_loose);
    assert_eq!(eip["state"], "available");
    assert_eq!(
        (eip["attached_to"].clone(), eip["association_id"].clone()),
        (Value::Null, Value::Null)
    );
    let priced = prices::rate("aws", "eip", A).unwrap();
    assert!((scan.cost(A, "eip", &a.eip_loose) - priced).abs() < CENT, "{priced}");

    let nat = scan.node(A, "nat-gateway", &a.nat);
    assert_eq!(nat["state"], "available");
    assert_eq!(nat["subnet_id"], a.subnet.as_str());
    assert!(scan.cost(A, "nat-gateway", &a.nat) > 30.0);
    let vpce = scan.node(A, "vpc-endpoint", &a.endpoint);
    assert_eq!(vpce["vpc_endpoint_type"], "Interface");
    assert_eq!(vpce["service_name"], format!("com.amazonaws.{A}.s3"));
    let subnet = scan.node(A, "subnet", &a.subnet);
    assert_eq!(
        (subnet["vpc_id"].clone(), subnet["cidr_block"].clone()),
        (a.vpc.as_str().into(), "10.1.1.0/24".into())
    );
    assert_eq!(scan.node(A, "vpc", &a.vpc)["tags"]["Name"], "app");
    assert_eq!(scan.node(A, "security-group", &a.sg)["group_name"], "web");
    assert_eq!(scan.node(B, "instance", &b.running)["state"], "running");

    // Load balancers: the one in front of a running and a stopped
    // instance has one healthy target of two; the idle one none.
    let web = scan.node(A, "load-balancer", &lb.web);
    assert_eq!(web["state"], "active");
    assert_eq!(web["name"], "web");
    assert_eq!(web["lb_type"], "application");
    assert_eq!(web["scheme"], "internet-facing");
    assert!(web["dns_name"].as_str().is_some_and(|d| d.starts_with("web-")), "{web}");
    assert_eq!(web["vpc_id"], a.vpc.as_str());
    assert_eq!(web["security_groups"], serde_json::json!([a.sg]));
    assert_eq!(
        (
            web["target_groups"].clone(),
            web["registered_targets"].clone(),
            web["healthy_targets"].clone()
        ),
        (1.into(), 2.into(), 1.into())
    );
    assert_eq!(web["tags"]["env"], "prod");
    assert_eq!(
        web["arn"],
        format!("arn:aws:elasticloadbalancing:{A}:{ACCOUNT}:loadbalancer/{}", lb.web)
    );
    assert!(web["creation_timestamp"].as_i64().unwrap() > 1_700_000_000, "{web}");
    let priced = prices::rate("aws", "alb", A).unwrap();
    assert!(
        (scan.cost(A, "load-balancer", &lb.web) - priced).abs() < CENT,
        "{priced}"
    );
    let old = scan.node(A, "load-balancer", &lb.old);
    assert_eq!(
        (old["registered_targets"].clone(), old["healthy_targets"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(old["tags"]["env"], "legacy");
    let tg = scan.node(A, "target-group", &lb.web_tg);
    assert_eq!(tg["state"], "active");
    assert_eq!((tg["protocol"].clone(), tg["port"].clone()), ("HTTP".into(), 80.into()));
    assert_eq!(tg["target_type"], "instance");
    assert_eq!(
        (tg["registered_targets"].clone(), tg["healthy_targets"].clone()),
        (2.into(), 1.into())
    );
    assert_eq!(scan.node(A, "target-group", &lb.loose_tg)["state"], "unused");
    assert_eq!(scan.cost(A, "target-group", &lb.web_tg), 0.0);

    // Databases, functions and log groups.
    let db = scan.node(A, "db", &tier.db);
    assert_eq!(db["state"], "available");
    assert_eq!(db["db_class"], "db.t3.micro");
    assert_eq!(
        (db["engine"].clone(), db["engine_version"].clone()),
        ("postgres".into(), "16.3".into())
    );
    assert_eq!(db["allocated_gib"], 50);
    assert_eq!(db["multi_az"], false);
    assert!(
        db["endpoint"].as_str().is_some_and(|e| e.starts_with("orders.")),
        "{db}"
    );
    assert_eq!(db["vpc_id"], a.vpc.as_str());
    // The subnet group has one subnet (moto does not always report the
    // zones of a group's subnets; the zone match is a unit test of rds.rs).
    assert_eq!(db["subnet_ids"], serde_json::json!([lb.subnet2]), "{db}");
    assert_eq!(db["tags"]["team"], "data");
    assert_eq!(db["arn"], format!("arn:aws:rds:{A}:{ACCOUNT}:db:orders"));
    assert!(db["creation_timestamp"].as_i64().unwrap() > 1_700_000_000, "{db}");
    assert!(scan.cost(A, "db", &tier.db) > 0.0);
    let stopped = scan.node(A, "db", &tier.db_stopped);
    assert_eq!(stopped["state"], "stopped");
    assert!(
        scan.cost(A, "db", &tier.db_stopped) < scan.cost(A, "db", &tier.db),
        "a stopped database bills its storage only"
    );
    let f = scan.node(A, "function", &tier.function);
    assert_eq!(f["state"], "Active");
    assert_eq!(
        (f["runtime"].clone(), f["memory_mb"].clone()),
        ("python3.12".into(), 256.into())
    );
    // moto answers a fixed VPC id for any function in a VPC.
    assert!(f["vpc_id"].is_string(), "{f}");
    assert_eq!(f["log_group"], tier.logs.as_str());
    assert!(f["last_modified"].as_str().is_some_and(|t| t.ends_with('Z')), "{f}");
    assert_eq!(f["arn"], format!("arn:aws:lambda:{A}:{ACCOUNT}:function:resize"));
    let plain = scan.node(A, "function", &tier.function_plain);
    assert_eq!(plain.get("vpc_id"), None, "{plain}");
    let logs = scan.node(A, "log-group", &tier.logs);
    assert_eq!(logs["retention_days"], 14);
    assert_eq!(logs["stored_bytes"], 1000);
    assert_eq!(
        logs["arn"],
        format!("arn:aws:logs:{A}:{ACCOUNT}:log-group:{}", tier.logs)
    );
    let loose = scan.node(A, "log-group", &tier.logs_loose);
    assert_eq!(loose["retention_days"], Value::Null);
    assert_eq!(loose["stored_gib"], 0.0);
    // Buckets, each in its own region.
    let bucket = scan.node(A, "bucket", "acme-logs");
    assert_eq!(bucket["state"], "active");
    assert_eq!(bucket["arn"], "arn:aws:s3:::acme-logs");
    assert!(
        bucket["creation_timestamp"].as_i64().unwrap() > 1_700_000_000,
        "{bucket}"
    );
    assert_eq!(scan.node(B, "bucket", "acme-eu")["arn"], "arn:aws:s3:::acme-eu");

    // The relations: every edge touching a compute or storage resource,
    // exactly, and the network's own.
    let (run_eni, stop_eni, b_eni) = (
        eni_of(&ea, &a.running).await,
        eni_of(&ea, &a.stopped).await,
        eni_of(&eb, &b.running).await,
    );
    let mut want = BTreeSet::new();
    for i in [&a.running, &a.stopped] {
        want.insert(edge(A, ("instance", i), "MEMBER_OF", ("subnet", &a.subnet)));
        want.insert(edge(A, ("instance", i), "SECURED_BY", ("security-group", &a.sg)));
        want.insert(edge(A, ("instance", i), "DEPENDS_ON", ("image", &a.image)));
    }
    for (v, i) in [
        (&a.running_root, &a.running),
        (&a.data_volume, &a.running),
        (&a.stopped_root, &a.stopped),
    ] {
        want.insert(edge(A, ("volume", v), "ATTACHED_TO", ("instance", i)));
    }
    want.insert(edge(
        A,
        ("network-interface", &run_eni),
        "ATTACHED_TO",
        ("instance", &a.running),
    ));
    want.insert(edge(
        A,
        ("network-interface", &stop_eni),
        "ATTACHED_TO",
        ("instance", &a.stopped),
    ));
    want.insert(edge(
        A,
        ("snapshot", &a.snapshot),
        "CHILD_OF",
        ("volume", &a.data_volume),
    ));
    want.insert(edge(
        A,
        ("image", &a.image),
        "DEPENDS_ON",
        ("snapshot", &a.image_snapshot),
    ));
    want.insert(edge(
        A,
        ("eip", &a.eip_associated),
        "ATTACHED_TO",
        ("instance", &a.running),
    ));
    want.insert(edge(
        A,
        ("eip", &a.eip_associated),
        "ATTACHED_TO",
        ("network-interface", &run_eni),
    ));
    want.insert(edge(
        A,
        ("eip", &a.eip_nat),
        "ATTACHED_TO",
        ("network-interface", &a.nat_eni),
    ));
    want.insert(edge(A, ("subnet", &a.subnet), "CONTAINS", ("nat-gateway", &a.nat)));
    want.insert(edge(
        A,
        ("network-interface", &a.nat_eni),
        "ATTACHED_TO",
        ("nat-gateway", &a.nat),
    ));
    want.insert(edge(
        A,
        ("subnet", &a.subnet),
        "CONTAINS",
        ("vpc-endpoint", &a.endpoint),
    ));
    want.insert(edge(
        A,
        ("vpc-endpoint", &a.endpoint),
        "SECURED_BY",
        ("security-group", &a.sg),
    ));
    want.insert(edge(
        A,
        ("network-interface", &a.endpoint_eni),
        "ATTACHED_TO",
        ("vpc-endpoint", &a.endpoint),
    ));
    for l in [&lb.web, &lb.old] {
        want.insert(edge(A, ("subnet", &a.subnet), "CONTAINS", ("load-balancer", l)));
        want.insert(edge(A, ("subnet", &lb.subnet2), "CONTAINS", ("load-balancer", l)));
        want.insert(edge(A, ("load-balancer", l), "SECURED_BY", ("security-group", &a.sg)));
    }
    want.insert(edge(
        A,
        ("target-group", &lb.web_tg),
        "ATTACHED_TO",
        ("load-balancer", &lb.web),
    ));
    want.insert(edge(
        A,
        ("target-group", &lb.old_tg),
        "ATTACHED_TO",
        ("load-balancer", &lb.old),
    ));
    for i in [&a.running, &a.stopped] {
        want.insert(edge(A, ("target-group", &lb.web_tg), "ROUTES_TO", ("instance", i)));
        want.insert(edge(A, ("load-balancer", &lb.web), "ROUTES_TO", ("instance", i)));
    }
    for db in [&tier.db, &tier.db_stopped] {
        want.insert(edge(A, ("subnet", &lb.subnet2), "CONTAINS", ("db", db)));
        want.insert(edge(A, ("db", db), "SECURED_BY", ("security-group", &a.sg)));
    }
    want.insert(edge(
        A,
        ("function", &tier.function),
        "SECURED_BY",
        ("security-group", &a.sg),
    ));
    want.insert(edge(
        A,
        ("function", &tier.function),
        "WRITES",
        ("log-group", &tier.logs),
    ));
    want.insert(edge(B, ("instance", &b.running), "MEMBER_OF", ("subnet", &b.subnet)));
    want.insert(edge(
        B,
        ("instance", &b.running),
        "SECURED_BY",
        ("security-group", &b.sg),
    ));
    want.insert(edge(
        B,
        ("volume", &b.running_root),
        "ATTACHED_TO",
        ("instance", &b.running),
    ));
    want.insert(edge(
        B,
        ("network-interface", &b_eni),
        "ATTACHED_TO",
        ("instance", &b.running),
    ));
    let touching: BTreeSet<_> = scan
        .edges
        .iter()
        .filter(|(s, _, t)| COMPUTE.contains(&kind_of(s)) || COMPUTE.contains(&kind_of(t)))
        .cloned()
        .collect();
    assert_eq!(touching, want);
    for e in [
        edge(A, ("vpc", &a.vpc), "CONTAINS", ("subnet", &a.subnet)),
        edge(A, ("vpc", &a.vpc), "CONTAINS", ("security-group", &a.sg)),
        edge(A, ("network-interface", &run_eni), "MEMBER_OF", ("subnet", &a.subnet)),
        edge(
            A,
            ("network-interface", &run_eni),
            "SECURED_BY",
            ("security-group", &a.sg),
        ),
        edge(B, ("vpc", &b.vpc), "CONTAINS", ("subnet", &b.subnet)),
    ] {
        assert!(scan.edges.contains(&e), "missing {e:?}");
    }
    // Every edge joins two reported nodes.
    for (s, _, t) in &scan.edges {
        assert!(
            scan.nodes.contains_key(s) && scan.nodes.contains_key(t),
            "dangling {s} -> {t}"
        );
    }

    // Every AWS call is in the log with its service, operation and region.
    let calls: Vec<(String, String, String)> = plugin
        .log()
        .iter()
        .filter(|l| l["@message"] == "aws call")
        .map(|l| {
            let f = |k: &str| l[k].as_str().unwrap_or_else(|| panic!("{k} missing in {l}")).to_owned();
            (f("service"), f("operation"), f("region"))
        })
        .collect();
    assert!(
        calls.contains(&("sts".into(), "GetCallerIdentity".into(), A.into())),
        "{calls:?}"
    );
    for region in [A, B] {
        for op in [
            "DescribeInstances",
            "DescribeVolumes",
            "DescribeSnapshots",
            "DescribeImages",
            "DescribeAddresses",
            "DescribeNatGateways",
            "DescribeVpcEndpoints",
            "DescribeVpcs",
            "DescribeSubnets",
            "DescribeSecurityGroups",
            "DescribeNetworkInterfaces",
        ] {
            let n = calls
                .iter()
                .filter(|c| c.0 == "ec2" && c.1 == op && c.2 == region)
                .count();
            // One page each: every list fits in a page of 1000.
            assert_eq!(n, 1, "{op} in {region}: {calls:?}");
        }
    }
    // ELBv2: the two lists in each region, the health of each of A's three
    // groups, and one DescribeTags for A's five resources (B has none).
    let count = |service: &str, op: &str, region: &str| {
        calls
            .iter()
            .filter(|c| c.0 == service && c.1 == op && c.2 == region)
            .count()
    };
    let elb = "elasticloadbalancing";
    for region in [A, B] {
        assert_eq!(count(elb, "DescribeLoadBalancers", region), 1, "{calls:?}");
        assert_eq!(count(elb, "DescribeTargetGroups", region), 1, "{calls:?}");
    }
    assert_eq!(count(elb, "DescribeTargetHealth", A), 3, "{calls:?}");
    assert_eq!(count(elb, "DescribeTags", A), 1, "{calls:?}");
    assert_eq!(count(elb, "DescribeTags", B) + count(elb, "DescribeTargetHealth", B), 0);
    // One list call per region for each of RDS, Lambda and Logs.
    for region in [A, B] {
        for (service, op) in [
            ("rds", "DescribeDBInstances"),
            ("lambda", "ListFunctions"),
            ("logs", "DescribeLogGroups"),
        ] {
            assert_eq!(count(service, op, region), 1, "{op} in {region}: {calls:?}");
        }
    }
    // S3 once, from the home region: the list and each bucket's location
    // (moto leaves `BucketRegion` out of the listing).
    assert_eq!(count("s3", "ListBuckets", A), 1, "{calls:?}");
    assert_eq!(count("s3", "GetBucketLocation", A), BUCKETS.len(), "{calls:?}");
    // The services this test seeds nothing in answer one list each per
    // region (ListTables, DescribeCacheClusters, DescribeCacheSubnetGroups,
    // ListClusters), and the tagging API one page (tests/discovery.rs
    // covers them).
    // The usage metrics of each region's resources: one GetMetricData
    // (tests/metrics.rs checks what it asks and answers).
    for region in [A, B] {
        assert_eq!(count("cloudwatch", "GetMetricData", region), 1, "{calls:?}");
    }
    assert_eq!(
        calls.len(),
        1 + 2 * 11 + (2 * 2 + 3 + 1) + 2 * 3 + 1 + BUCKETS.len() + 2 * 5 + 2,
        "{calls:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ec2_endpoint_that_refuses_fails_only_ec2_in_its_region() {
    let moto = Moto::start().await;
    let b = seed_small(&moto.ec2(B)).await;
    let mut plugin = Plugin::against(&moto).await;
    let refused = format!("http://127.0.0.1:{}", free_port());
    let (scan, status) = plugin
        .scan(&[
            ("regions", "us-west-2, eu-west-1"),
            ("endpoint_url.us-west-2", &refused),
            ("max_attempts", "2"),
        ])
        .await;
    status.expect("a scan that listed the rest ends OK");
    // The trailer names the part not listed, with the call that failed.
    let unlisted = scan.unlisted.as_ref().expect("a trailer naming what was not listed");
    let parts = unlisted.as_array().unwrap();
    assert_eq!(parts.len(), 1, "{unlisted}");
    assert_eq!(parts[0]["region"], "us-west-2", "{unlisted}");
    assert_eq!(parts[0]["service"], "ec2", "{unlisted}");
    assert_eq!(parts[0]["account"], ACCOUNT, "{unlisted}");
    let error = parts[0]["error"].as_str().unwrap();
    assert!(error.starts_with("ec2 Describe"), "{error}");
    // The region that answered was sent whole; nothing of EC2 in the other.
    assert!(scan.nodes.contains_key(&crn(B, "instance", &b.running)));
    assert!(scan.nodes.contains_key(&crn(B, "volume", &b.loose_volume)));
    assert!(!scan.nodes.keys().any(|c| c.contains(":us-west-2:")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_the_accounts_it_assumes_roles_in() {
    let moto = Moto::start().await;
    let own = seed_small(&moto.ec2(B)).await;
    // Account OTHER, reached by assuming any role there (moto needs none).
    let sts = client!(aws_sdk_sts, moto, A);
    let role = format!("arn:aws:iam::{OTHER}:role/svc-read");
    let assumed = sts
        .assume_role()
        .role_arn(&role)
        .role_session_name("seed")
        .send()
        .await
        .unwrap();
    let c = assumed.credentials().unwrap();
    let conf = aws_sdk_ec2::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(B))
        .endpoint_url(&moto.endpoint)
        .credentials_provider(Credentials::new(
            c.access_key_id(),
            c.secret_access_key(),
            Some(c.session_token().to_owned()),
            None,
            "assumed",
        ))
        .build();
    let theirs = seed_small(&aws_sdk_ec2::Client::from_conf(conf)).await;

    let mut plugin = Plugin::against(&moto).await;
    let accounts = format!(r#"["{role}"]"#);
    let (scan, status) = plugin.scan(&[("regions", B), ("accounts", &accounts)]).await;
    status.expect("both accounts listed");
    assert!(scan.unlisted.is_none(), "{:?}", scan.unlisted);
    let in_account = |account: &str, kind: &str, id: &str| format!("crn:svc:aws:{B}:{account}:{kind}:{id}");
    assert!(scan.nodes.contains_key(&in_account(ACCOUNT, "instance", &own.running)));
    assert!(scan.nodes.contains_key(&in_account(OTHER, "instance", &theirs.running)));
    assert!(
        scan.nodes
            .contains_key(&in_account(OTHER, "volume", &theirs.loose_volume))
    );
    assert!(
        !scan
            .nodes
            .contains_key(&in_account(ACCOUNT, "instance", &theirs.running))
    );
    let props = &scan.nodes[&in_account(OTHER, "volume", &theirs.loose_volume)].0;
    assert!(
        props["arn"].as_str().unwrap().contains(&format!(":{OTHER}:volume/")),
        "{props}"
    );
    // Each account's start is in the log, with who the plugin is there.
    let log = plugin.log();
    let started: BTreeSet<(&str, &str)> = log
        .iter()
        .filter(|l| l["@message"] == "scan started")
        .map(|l| (l["account"].as_str().unwrap(), l["identity"].as_str().unwrap()))
        .collect();
    assert_eq!(started.len(), 2, "{started:?}");
    assert!(
        started
            .iter()
            .any(|(a, who)| *a == OTHER && who.contains(":assumed-role/svc-read/svc-scan")),
        "{started:?}"
    );

    // Only the other account.
    let (scan, status) = plugin
        .scan(&[
            ("regions", B),
            ("accounts", &accounts),
            ("include_caller_account", "false"),
        ])
        .await;
    status.unwrap();
    assert!(scan.nodes.keys().all(|c| c.contains(&format!(":{OTHER}:"))));
    assert!(scan.nodes.contains_key(&in_account(OTHER, "instance", &theirs.running)));

    let preflight = plugin.preflight(&[("regions", B), ("accounts", &accounts)]).await;
    assert!(preflight.ok, "{preflight:?}");
    assert!(
        preflight.message.contains(&format!(
            "account {OTHER} as arn:aws:sts::{OTHER}:assumed-role/svc-read/"
        )),
        "{}",
        preflight.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_checks_credentials_and_each_region() {
    let moto = Moto::start().await;
    let mut plugin = Plugin::against(&moto).await;
    let good = plugin.preflight(&[("regions", r#"["us-east-1", "eu-west-1"]"#)]).await;
    assert!(good.ok, "{good:?}");
    assert!(good.missing.is_empty(), "{good:?}");
    assert!(
        good.message.starts_with(&format!("account {ACCOUNT} as arn:aws:")),
        "{}",
        good.message
    );
    assert!(good.message.ends_with("2 of 2 regions answer"), "{}", good.message);

    let refused = format!("http://127.0.0.1:{}", free_port());
    let bad = plugin
        .preflight(&[
            ("regions", "us-east-1, us-west-2"),
            ("endpoint_url.us-west-2", &refused),
            ("max_attempts", "1"),
        ])
        .await;
    // A region that does not answer fails only itself in a scan.
    assert!(bad.ok, "{bad:?}");
    assert_eq!(bad.missing, ["region us-west-2 (unreachable)"]);
    assert!(bad.message.contains("1 of 2 regions answer"), "{}", bad.message);
    assert!(
        bad.message.contains("ec2 DescribeAvailabilityZones in us-west-2"),
        "{}",
        bad.message
    );

    // Without regions configured, the account's enabled regions.
    let all = plugin.preflight(&[]).await;
    assert!(all.ok, "{all:?}");
    let n: usize = all
        .message
        .rsplit(" of ")
        .next()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(n > 10, "{}", all.message);

    let bad_config = plugin.preflight(&[("regions", "[]")]).await;
    assert!(!bad_config.ok && bad_config.message.contains("empty"), "{bad_config:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_credentials_preflight_and_scan_say_so() {
    let moto = Moto::start().await;
    let mut plugin = Plugin::start(&[("AWS_ENDPOINT_URL", &moto.endpoint), ("AWS_REGION", A)]).await;
    let r = plugin.preflight(&[("regions", A)]).await;
    assert!(!r.ok, "{r:?}");
    assert_eq!(r.missing, ["credentials"]);
    assert!(
        r.message
            .starts_with("no usable AWS credentials: sts GetCallerIdentity"),
        "{}",
        r.message
    );
    let e = plugin
        .provider
        .scan(ScanRequest {
            config: [("regions".to_owned(), A.to_owned())].into(),
        })
        .await
        .expect_err("no scan without credentials");
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
}
