//! The services beyond EC2 that the plugin discovers (DynamoDB, ElastiCache,
//! EKS) and the tags it reads through the Resource Groups Tagging API for
//! the resources whose list calls carry none (functions, log groups,
//! buckets, tables, cache clusters), against a real `moto_server` and the
//! plugin binary, in two regions.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_ec2::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_ec2::types::{InstanceType, ResourceType};
use serde_json::json;
use svc_engine::prices;

use common::*;

/// Log groups of region A beyond one page of the tagging API (100
/// resources), each tagged with its number.
const BULK_LOGS: usize = 120;

/// The kinds this test names every node and edge of.
const KINDS: [&str; 7] = [
    "table",
    "cache",
    "cluster",
    "nodegroup",
    "function",
    "log-group",
    "bucket",
];

/// What one region holds beyond its network.
#[derive(Default)]
struct Estate {
    net: Seeded,
    /// The instance EKS runs as a node of `prod/pool-0` (region A).
    worker: String,
}

fn tags_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// Tables: in A `orders` (provisioned 10/5, two items, `env=prod`) and
/// `events` (on demand, `svc:ignore`); in B `audit` (provisioned 1/1, untagged).
async fn seed_tables(moto: &Moto) {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, ProvisionedThroughput,
        ScalarAttributeType, Tag,
    };
    for (region, name, capacity, tags) in [
        (A, "orders", Some((10, 5)), &[("env", "prod")][..]),
        (A, "events", None, &[("svc:ignore", "true")][..]),
        (B, "audit", Some((1, 1)), &[][..]),
    ] {
        let ddb = client!(aws_sdk_dynamodb, moto, region);
        let mut call = ddb
            .create_table()
            .table_name(name)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("id")
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("id")
                    .key_type(KeyType::Hash)
                    .build()
                    .unwrap(),
            );
        call = match capacity {
            Some((r, w)) => call.billing_mode(BillingMode::Provisioned).provisioned_throughput(
                ProvisionedThroughput::builder()
                    .read_capacity_units(r)
                    .write_capacity_units(w)
                    .build()
                    .unwrap(),
            ),
            None => call.billing_mode(BillingMode::PayPerRequest),
        };
        for (k, v) in tags {
            call = call.tags(Tag::builder().key(*k).value(*v).build().unwrap());
        }
        call.send().await.unwrap();
    }
    let ddb = client!(aws_sdk_dynamodb, moto, A);
    for id in ["o-1", "o-2"] {
        ddb.put_item()
            .table_name("orders")
            .item("id", AttributeValue::S(id.into()))
            .send()
            .await
            .unwrap();
    }
}

/// Cache clusters of A: `sessions` (Redis, one cache.t3.micro, in a subnet
/// group of A's subnet and A's group, `team=web`) and `pages` (Memcached,
/// three cache.m5.large, `svc:ignore`).
async fn seed_caches(moto: &Moto, a: &Seeded) {
    use aws_sdk_elasticache::types::Tag;
    let ec = client!(aws_sdk_elasticache, moto, A);
    ec.create_cache_subnet_group()
        .cache_subnet_group_name("cache")
        .cache_subnet_group_description("cache tier")
        .subnet_ids(&a.subnet)
        .send()
        .await
        .unwrap();
    ec.create_cache_cluster()
        .cache_cluster_id("sessions")
        .engine("redis")
        .engine_version("7.1")
        .cache_node_type("cache.t3.micro")
        .num_cache_nodes(1)
        .cache_subnet_group_name("cache")
        .security_group_ids(&a.sg)
        .tags(Tag::builder().key("team").value("web").build())
        .send()
        .await
        .unwrap();
    ec.create_cache_cluster()
        .cache_cluster_id("pages")
        .engine("memcached")
        .cache_node_type("cache.m5.large")
        .num_cache_nodes(3)
        .tags(Tag::builder().key("svc:ignore").value("true").build())
        .send()
        .await
        .unwrap();
}

/// EKS: in A cluster `prod` (A's subnet and group, `env=prod`) with node
/// group `pool-0` (1..3, 2 desired, m5.large, `team=platform`) and an
/// instance EKS tagged as its node; in B cluster `lab` with no node group.
async fn seed_eks(moto: &Moto, a: &Seeded, b: &Seeded) -> String {
    use aws_sdk_eks::types::{CapacityTypes, NodegroupScalingConfig, VpcConfigRequest};
    for (region, name, net, tags) in [(A, "prod", a, &[("env", "prod")][..]), (B, "lab", b, &[][..])] {
        let eks = client!(aws_sdk_eks, moto, region);
        let mut call = eks
            .create_cluster()
            .name(name)
            .version("1.30")
            .role_arn(format!("arn:aws:iam::{ACCOUNT}:role/eks"))
            .resources_vpc_config(
                VpcConfigRequest::builder()
                    .subnet_ids(&net.subnet)
                    .security_group_ids(&net.sg)
                    .build(),
            );
        for (k, v) in tags {
            call = call.tags(*k, *v);
        }
        call.send().await.unwrap();
    }
    let eks = client!(aws_sdk_eks, moto, A);
    eks.create_nodegroup()
        .cluster_name("prod")
        .nodegroup_name("pool-0")
        .node_role(format!("arn:aws:iam::{ACCOUNT}:role/node"))
        .subnets(&a.subnet)
        .scaling_config(
            NodegroupScalingConfig::builder()
                .min_size(1)
                .max_size(3)
                .desired_size(2)
                .build(),
        )
        .instance_types("m5.large")
        .capacity_type(CapacityTypes::OnDemand)
        .tags("team", "platform")
        .send()
        .await
        .unwrap();
    let r = moto
        .ec2(A)
        .run_instances()
        .image_id("ami-0123456789abcdef0")
        .instance_type(InstanceType::M5Large)
        .min_count(1)
        .max_count(1)
        .subnet_id(&a.subnet)
        .tag_specifications(tags(
            ResourceType::Instance,
            &[("eks:cluster-name", "prod"), ("eks:nodegroup-name", "pool-0")],
        ))
        .send()
        .await
        .unwrap();
    r.instances()[0].instance_id().unwrap().to_owned()
}

/// Functions (`resize` in A with `team=media`, `cron` in B with
/// `svc:ignore`), log groups (`/app/web` in A with `env=prod` and the
/// [`BULK_LOGS`] numbered ones, `/app/batch` in B with `svc:ignore`) and
/// buckets (`acme-assets` in A with `env=prod`, `acme-plain` in A untagged,
/// `acme-archive` in B with `svc:ignore`).
async fn seed_tagged(moto: &Moto) {
    use aws_sdk_lambda::primitives::Blob;
    use aws_sdk_lambda::types::{FunctionCode, Runtime};
    use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration, Tagging};
    let role = lambda_role(moto).await;
    for (region, name, tag) in [(A, "resize", ("team", "media")), (B, "cron", ("svc:ignore", "true"))] {
        client!(aws_sdk_lambda, moto, region)
            .create_function()
            .function_name(name)
            .runtime(Runtime::Python312)
            .role(&role)
            .handler("app.handler")
            .memory_size(512)
            .code(FunctionCode::builder().zip_file(Blob::new(empty_zip())).build())
            .tags(tag.0, tag.1)
            .send()
            .await
            .unwrap();
    }
    let logs_a = client!(aws_sdk_cloudwatchlogs, moto, A);
    logs_a
        .create_log_group()
        .log_group_name("/app/web")
        .tags("env", "prod")
        .send()
        .await
        .unwrap();
    for i in 0..BULK_LOGS {
        logs_a
            .create_log_group()
            .log_group_name(format!("/bulk/{i:03}"))
            .tags("n", i.to_string())
            .send()
            .await
            .unwrap();
    }
    client!(aws_sdk_cloudwatchlogs, moto, B)
        .create_log_group()
        .log_group_name("/app/batch")
        .tags("svc:ignore", "true")
        .send()
        .await
        .unwrap();

    let s3 = client!(aws_sdk_s3, moto, A);
    for (name, region, tag) in [
        ("acme-assets", A, Some(("env", "prod"))),
        ("acme-plain", A, None),
        ("acme-archive", B, Some(("svc:ignore", "true"))),
    ] {
        let mut call = s3.create_bucket().bucket(name);
        if region != "us-east-1" {
            let at = CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::from(region))
                .build();
            call = call.create_bucket_configuration(at);
        }
        call.send().await.unwrap();
        if let Some((k, v)) = tag {
            let t = aws_sdk_s3::types::Tag::builder().key(k).value(v).build().unwrap();
            s3.put_bucket_tagging()
                .bucket(name)
                .tagging(Tagging::builder().tag_set(t).build().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
}

fn near(got: f64, want: f64) -> bool {
    (got - want).abs() < CENT
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_caches_clusters_and_tags_in_two_regions() {
    let moto = Moto::start().await;
    let (mut a, mut b) = (Estate::default(), Estate::default());
    network(&moto.ec2(A), &mut a.net, "10.1").await;
    network(&moto.ec2(B), &mut b.net, "10.2").await;
    seed_tables(&moto).await;
    seed_caches(&moto, &a.net).await;
    a.worker = seed_eks(&moto, &a.net, &b.net).await;
    seed_tagged(&moto).await;

    let mut plugin = Plugin::against(&moto).await;
    let regions = format!(r#"["{A}", "{B}"]"#);
    let (scan, status) = plugin.scan(&[("regions", &regions)]).await;
    status.expect("the scan succeeds");

    // The exact nodes of the kinds under test.
    let mut want: BTreeSet<String> = [
        (A, "table", "orders"),
        (A, "table", "events"),
        (B, "table", "audit"),
        (A, "cache", "sessions"),
        (A, "cache", "pages"),
        (A, "cluster", "prod"),
        (A, "nodegroup", "prod/pool-0"),
        (B, "cluster", "lab"),
        (A, "function", "resize"),
        (B, "function", "cron"),
        (A, "log-group", "/app/web"),
        (B, "log-group", "/app/batch"),
        (A, "bucket", "acme-assets"),
        (A, "bucket", "acme-plain"),
        (B, "bucket", "acme-archive"),
    ]
    .iter()
    .map(|(r, k, id)| crn(r, k, id))
    .collect();
    want.extend((0..BULK_LOGS).map(|i| crn(A, "log-group", &format!("/bulk/{i:03}"))));
    let got: BTreeSet<String> = scan
        .nodes
        .keys()
        .filter(|c| KINDS.contains(&kind_of(c)))
        .cloned()
        .collect();
    assert_eq!(got, want);
    assert!(scan.nodes.contains_key(&crn(A, "instance", &a.worker)));

    // Tables: capacity as the rules read it, priced by the table.
    let orders = scan.node(A, "table", "orders");
    assert_eq!(orders["state"], "ACTIVE");
    assert_eq!(orders["billing_mode"], "PROVISIONED");
    assert_eq!(
        (orders["read_capacity"].clone(), orders["write_capacity"].clone()),
        (10.into(), 5.into())
    );
    assert_eq!(orders["item_count"], 2);
    assert_eq!(orders["size_bytes"], 0);
    assert_eq!(orders["size_gib"], 0.0);
    assert_eq!(orders["arn"], format!("arn:aws:dynamodb:{A}:{ACCOUNT}:table/orders"));
    assert_eq!(orders["tags"], json!({"env": "prod"}));
    assert!(
        orders["creation_timestamp"].as_i64().unwrap() > 1_700_000_000,
        "{orders}"
    );
    assert!(orders["created_at"].as_str().unwrap().ends_with('Z'), "{orders}");
    let priced =
        10.0 * prices::rate("aws", "dynamodb-rcu", A).unwrap() + 5.0 * prices::rate("aws", "dynamodb-wcu", A).unwrap();
    let cost = scan.cost(A, "table", "orders");
    assert!(near(cost, priced), "{cost} != {priced}");
    let events = scan.node(A, "table", "events");
    assert_eq!(events["billing_mode"], "PAY_PER_REQUEST");
    assert_eq!(
        (events["read_capacity"].clone(), events["write_capacity"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(events["tags"], json!({"svc:ignore": "true"}));
    assert_eq!(scan.cost(A, "table", "events"), 0.0);
    let audit = scan.node(B, "table", "audit");
    assert_eq!(audit["tags"], json!({}));
    let priced = prices::rate("aws", "dynamodb-rcu", B).unwrap() + prices::rate("aws", "dynamodb-wcu", B).unwrap();
    assert!(near(scan.cost(B, "table", "audit"), priced), "{priced}");

    // Cache clusters: node type times nodes.
    let sessions = scan.node(A, "cache", "sessions");
    assert_eq!(sessions["state"], "available");
    assert_eq!(
        (
            sessions["node_type"].clone(),
            sessions["engine"].clone(),
            sessions["engine_version"].clone()
        ),
        ("cache.t3.micro".into(), "redis".into(), "7.1".into())
    );
    assert_eq!(sessions["cache_nodes"], 1);
    assert_eq!(sessions["subnet_group"], "cache");
    assert_eq!(sessions["subnet_ids"], json!([a.net.subnet]));
    assert_eq!(
        sessions["arn"],
        format!("arn:aws:elasticache:{A}:{ACCOUNT}:cluster:sessions")
    );
    assert_eq!(sessions["tags"], json!({"team": "web"}));
    assert!(
        sessions["creation_timestamp"].as_i64().unwrap() > 1_700_000_000,
        "{sessions}"
    );
    let priced = prices::machine_monthly("aws", "cache.t3.micro", A).unwrap();
    assert!(near(scan.cost(A, "cache", "sessions"), priced), "{priced}");
    let pages = scan.node(A, "cache", "pages");
    assert_eq!(
        (pages["engine"].clone(), pages["cache_nodes"].clone()),
        ("memcached".into(), 3.into())
    );
    assert_eq!(pages["tags"], json!({"svc:ignore": "true"}));
    let priced = 3.0 * prices::machine_monthly("aws", "cache.m5.large", A).unwrap();
    assert!(near(scan.cost(A, "cache", "pages"), priced), "{priced}");

    // EKS: the control plane is priced, the node group is not (its
    // instances are).
    let prod = scan.node(A, "cluster", "prod");
    assert_eq!(prod["state"], "ACTIVE");
    assert_eq!(prod["kubernetes_version"], "1.30");
    assert_eq!(prod["arn"], format!("arn:aws:eks:{A}:{ACCOUNT}:cluster/prod"));
    assert_eq!(prod["subnet_ids"], json!([a.net.subnet]));
    assert_eq!(prod["security_groups"], json!([a.net.sg]));
    assert_eq!(prod["nodegroups"], 1);
    assert_eq!(prod["tags"], json!({"env": "prod"}));
    assert!(prod["creation_timestamp"].as_i64().unwrap() > 1_700_000_000, "{prod}");
    let priced = prices::rate("aws", "eks-cluster", A).unwrap();
    assert!(near(scan.cost(A, "cluster", "prod"), priced), "{priced}");
    let lab = scan.node(B, "cluster", "lab");
    assert_eq!((lab["nodegroups"].clone(), lab["tags"].clone()), (0.into(), json!({})));
    let priced = prices::rate("aws", "eks-cluster", B).unwrap();
    assert!(near(scan.cost(B, "cluster", "lab"), priced), "{priced}");
    let pool = scan.node(A, "nodegroup", "prod/pool-0");
    assert_eq!(pool["state"], "ACTIVE");
    assert_eq!(pool["cluster"], "prod");
    assert_eq!(
        (
            pool["desired_size"].clone(),
            pool["min_size"].clone(),
            pool["max_size"].clone()
        ),
        (2.into(), 1.into(), 3.into())
    );
    assert_eq!(pool["instance_types"], json!(["m5.large"]));
    assert_eq!(pool["capacity_type"], "ON_DEMAND");
    assert_eq!(pool["subnet_ids"], json!([a.net.subnet]));
    assert!(
        pool["arn"]
            .as_str()
            .is_some_and(|arn| arn.starts_with(&format!("arn:aws:eks:{A}:{ACCOUNT}:nodegroup/prod/pool-0/"))),
        "{pool}"
    );
    assert_eq!(pool["tags"], json!({"team": "platform"}));
    assert_eq!(scan.cost(A, "nodegroup", "prod/pool-0"), 0.0);

    // Tags read through the tagging API, `svc:ignore` among them.
    for (region, kind, id, pairs) in [
        (A, "function", "resize", &[("team", "media")][..]),
        (B, "function", "cron", &[("svc:ignore", "true")][..]),
        (A, "log-group", "/app/web", &[("env", "prod")][..]),
        (B, "log-group", "/app/batch", &[("svc:ignore", "true")][..]),
        (A, "bucket", "acme-assets", &[("env", "prod")][..]),
        (A, "bucket", "acme-plain", &[][..]),
        (B, "bucket", "acme-archive", &[("svc:ignore", "true")][..]),
    ] {
        let node = scan.node(region, kind, id);
        let got: BTreeMap<String, String> = serde_json::from_value(node["tags"].clone()).unwrap();
        assert_eq!(got, tags_of(pairs), "{kind} {id}: {node}");
    }
    for i in 0..BULK_LOGS {
        let node = scan.node(A, "log-group", &format!("/bulk/{i:03}"));
        assert_eq!(node["tags"], json!({"n": i.to_string()}), "{node}");
    }
    let resize = scan.node(A, "function", "resize");
    assert_eq!(resize["memory_mb"], 512);
    assert_eq!(resize.get("provisioned_concurrency"), None, "{resize}");

    // Every edge touching the kinds under test, exactly.
    let mut want = BTreeSet::new();
    want.insert(edge(A, ("subnet", &a.net.subnet), "CONTAINS", ("cache", "sessions")));
    want.insert(edge(A, ("subnet", &a.net.subnet), "CONTAINS", ("cluster", "prod")));
    want.insert(edge(
        A,
        ("cluster", "prod"),
        "SECURED_BY",
        ("security-group", &a.net.sg),
    ));
    want.insert(edge(A, ("cluster", "prod"), "CONTAINS", ("nodegroup", "prod/pool-0")));
    want.insert(edge(
        A,
        ("nodegroup", "prod/pool-0"),
        "CONTAINS",
        ("instance", &a.worker),
    ));
    want.insert(edge(B, ("subnet", &b.net.subnet), "CONTAINS", ("cluster", "lab")));
    want.insert(edge(B, ("cluster", "lab"), "SECURED_BY", ("security-group", &b.net.sg)));
    // moto leaves a cache cluster's security groups out of its answer;
    // where AWS reports them, the cluster is SECURED_BY each.
    if !sessions["security_groups"].as_array().unwrap().is_empty() {
        assert_eq!(sessions["security_groups"], json!([a.net.sg]));
        want.insert(edge(
            A,
            ("cache", "sessions"),
            "SECURED_BY",
            ("security-group", &a.net.sg),
        ));
    }
    let touching: BTreeSet<_> = scan
        .edges
        .iter()
        .filter(|(s, _, t)| KINDS.contains(&kind_of(s)) || KINDS.contains(&kind_of(t)))
        .cloned()
        .collect();
    assert_eq!(touching, want);

    // The calls: each list once per region (one page), one describe per
    // table, cluster and node group, and the tagging API paged (A's
    // tagged resources fill more than one page of 100).
    let calls: Vec<(String, String, String)> = plugin
        .log()
        .iter()
        .filter(|l| l["@message"] == "aws call")
        .map(|l| {
            let f = |k: &str| l[k].as_str().unwrap().to_owned();
            (f("service"), f("operation"), f("region"))
        })
        .collect();
    let count = |service: &str, op: &str, region: &str| {
        calls
            .iter()
            .filter(|c| c.0 == service && c.1 == op && c.2 == region)
            .count()
    };
    for (service, op, in_a, in_b) in [
        ("dynamodb", "ListTables", 1, 1),
        ("dynamodb", "DescribeTable", 2, 1),
        ("elasticache", "DescribeCacheClusters", 1, 1),
        ("elasticache", "DescribeCacheSubnetGroups", 1, 1),
        ("eks", "ListClusters", 1, 1),
        ("eks", "DescribeCluster", 1, 1),
        ("eks", "ListNodegroups", 1, 1),
        ("eks", "DescribeNodegroup", 1, 0),
        ("tag", "GetResources", 2, 1),
    ] {
        assert_eq!(
            (count(service, op, A), count(service, op, B)),
            (in_a, in_b),
            "{service} {op}: {calls:?}"
        );
    }
    assert!(
        !plugin.log().iter().any(|l| l["@message"] == "aws call failed"),
        "no call fails"
    );
}

/// The tagging API refusing (here: not answering) fails the region like
/// any other call: its resources would otherwise be reported without their
/// `svc:ignore` tags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_tagging_api_the_services_it_tags_are_left_out_and_named() {
    let moto = Moto::start().await;
    let mut a = Seeded::default();
    network(&moto.ec2(A), &mut a, "10.1").await;
    seed_tables(&moto).await;
    // Every service but the tagging API answers.
    let refused = format!("http://127.0.0.1:{}", free_port());
    let mut plugin = Plugin::start(&[
        ("AWS_ENDPOINT_URL", &moto.endpoint),
        ("AWS_ENDPOINT_URL_RESOURCE_GROUPS_TAGGING_API", &refused),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", A),
        ("AWS_MAX_ATTEMPTS", "1"),
    ])
    .await;
    let (scan, status) = plugin.scan(&[("regions", A), ("max_attempts", "1")]).await;
    status.expect("the services not tagged through the API are listed");
    let unlisted = scan.unlisted.expect("the services left out are named");
    let services: Vec<&str> = unlisted
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["region"], A, "{p}");
            assert!(
                p["error"].as_str().unwrap().contains("tag GetResources in us-east-1"),
                "{p}"
            );
            p["service"].as_str().unwrap()
        })
        .collect();
    assert_eq!(services, ["lambda", "logs", "s3", "dynamodb", "elasticache"]);
    // Tables (tagged through the API) are not sent; the network is.
    assert!(
        !scan.nodes.keys().any(|c| c.contains(":table:")),
        "{:?}",
        scan.nodes.keys()
    );
    assert!(scan.nodes.contains_key(&crn(A, "vpc", &a.vpc)));
    assert!(scan.nodes.contains_key(&crn(A, "subnet", &a.subnet)));
}
