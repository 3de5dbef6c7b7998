//! A known answer for every built-in rule on a small hand-built estate: the
//! resource each rule is about is flagged by it, and the look-alikes that
//! are in use (or in their grace period, or named by DNS) are not. Also the
//! `svc:ignore` tag in its four forms, and savings priced from the table
//! when a provider reports no cost.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use svc_engine::Graph;
use svc_engine::analysis::traffic;
use svc_engine::heuristics::builtin::{self, BuiltinOutcome, RuleKind, ignore};
use svc_engine::relation::Relation::{AttachedTo, Contains, FlowsTo, Grants, Runs, Uses};

mod common;

use common::{AWS, AZ, DAY, Estate, GCP, K8S, NOW, ago};

fn run(e: Estate) -> (Graph, BuiltinOutcome, BTreeMap<&'static str, String>) {
    let (g, crns) = e.graph();
    let out = builtin::run(&g, NOW * 1_000_000, NOW, &Default::default());
    (g, out, crns)
}

fn estate() -> Estate {
    let mut e = Estate::new();
    let busy_machine = json!({"cpu_avg_7d": 40.0, "network_bytes_7d": 5_000_000_000_i64, "instance_type": "m5.large"});
    // AWS compute and block storage.
    e.node(
        AWS,
        "ec2:instance",
        "i-busy",
        "running",
        70.08,
        300,
        busy_machine.clone(),
        &[],
    );
    e.node(
        AWS,
        "ec2:instance",
        "i-idle",
        "running",
        70.08,
        300,
        json!({"cpu_avg_7d": 1.2, "network_bytes_7d": 20_000_000, "instance_type": "m5.large"}),
        &[],
    );
    e.node(
        AWS,
        "ec2:instance",
        "i-idle2",
        "running",
        70.08,
        300,
        json!({"cpu_avg_7d": 0.4, "network_bytes_7d": 3_000_000, "instance_type": "m5.large"}),
        &[],
    );
    e.node(
        AWS,
        "ec2:instance",
        "i-cpu-quiet",
        "running",
        70.08,
        300,
        json!({"cpu_avg_7d": 2.0, "network_bytes_7d": 5_000_000_000_i64}),
        &[],
    );
    e.node(
        AWS,
        "ec2:instance",
        "i-stopped",
        "stopped",
        0.0,
        400,
        json!({"stopped_at": ago(45)}),
        &[],
    );
    e.node(
        AWS,
        "ec2:instance",
        "i-stopped-recent",
        "stopped",
        0.0,
        400,
        json!({"stopped_at": ago(3)}),
        &[],
    );
    let vol = |state: &str, class: &str, extra: Value| {
        let mut p = json!({"size_gib": 500, "volume_type": class, "attachment_state": state});
        p.as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        p
    };
    let detached = |days: u64| {
        vol(
            "detached",
            "gp2",
            json!({"attached_to": null, "last_attached_at": ago(days)}),
        )
    };
    e.node(
        AWS,
        "ec2:volume",
        "vol-loose",
        "available",
        50.0,
        300,
        detached(43),
        &[],
    );
    e.node(AWS, "ec2:volume", "vol-new", "available", 50.0, 3, detached(2), &[]);
    e.node(
        AWS,
        "ec2:volume",
        "vol-nocost",
        "available",
        0.0,
        300,
        json!({"size_gib": 100, "volume_type": "gp2", "attached_to": null}),
        &[],
    );
    e.node(
        AWS,
        "ec2:volume",
        "vol-ignored",
        "available",
        50.0,
        300,
        detached(43),
        &[("svc:ignore", "true")],
    );
    e.node(
        AWS,
        "ec2:volume",
        "vol-snoozed",
        "available",
        50.0,
        300,
        detached(43),
        &[("svc:ignore", "30d")],
    );
    e.node(
        AWS,
        "ec2:volume",
        "vol-justified",
        "available",
        50.0,
        300,
        detached(43),
        &[("svc:ignore", "justified: restore drill in March")],
    );
    e.node(
        AWS,
        "ec2:volume",
        "vol-expired",
        "available",
        50.0,
        300,
        detached(43),
        &[("svc:ignore", "2025-06-30")],
    );
    e.node(
        AWS,
        "ec2:volume",
        "vol-typo",
        "available",
        50.0,
        300,
        detached(43),
        &[("svc:ignore", "maybe")],
    );
    for (name, to) in [
        ("vol-busy", "i-busy"),
        ("vol-s", "i-stopped"),
        ("vol-i", "i-idle"),
        ("vol-sr", "i-stopped-recent"),
    ] {
        e.node(
            AWS,
            "ec2:volume",
            name,
            "in-use",
            50.0,
            300,
            vol("attached", "gp2", json!({"attached_to": to})),
            &[],
        );
        e.edge(name, AttachedTo, to);
    }
    e.node(
        AWS,
        "ec2:volume",
        "vol-gp3",
        "in-use",
        40.0,
        300,
        vol("attached", "gp3", json!({"attached_to": "i-busy"})),
        &[],
    );
    e.edge("vol-gp3", AttachedTo, "i-busy");
    // Addresses, DNS.
    e.node(
        AWS,
        "ec2:eip",
        "eip-free",
        "available",
        3.65,
        100,
        json!({"public_ip": "3.3.3.3", "association_id": null}),
        &[],
    );
    e.node(
        AWS,
        "ec2:eip",
        "eip-dns",
        "available",
        3.65,
        100,
        json!({"public_ip": "5.5.5.5", "association_id": null}),
        &[],
    );
    e.node(
        AWS,
        "ec2:eip",
        "eip-used",
        "in-use",
        3.65,
        100,
        json!({"public_ip": "6.6.6.6", "association_id": "eipassoc-1", "attached_to": "i-busy"}),
        &[],
    );
    e.edge("eip-used", AttachedTo, "i-busy");
    e.node(
        ("aws", "global", "123456789012"),
        "route53:record",
        "Z1/old.acme.io./A",
        "INSYNC",
        0.0,
        500,
        json!({"record_type": "A", "record_value": "5.5.5.5"}),
        &[],
    );
    e.node(
        ("aws", "global", "123456789012"),
        "route53:record",
        "Z1/addr.acme.io./A",
        "INSYNC",
        0.0,
        500,
        json!({"record_type": "A", "record_value": "34.2.2.2"}),
        &[],
    );
    // Snapshots and images.
    e.node(
        AWS,
        "ec2:snapshot",
        "snap-old",
        "completed",
        10.0,
        200,
        json!({"size_gib": 200, "source_volume_id": "vol-gone"}),
        &[],
    );
    e.node(
        AWS,
        "ec2:snapshot",
        "snap-live",
        "completed",
        10.0,
        200,
        json!({"size_gib": 200, "source_volume_id": "vol-busy"}),
        &[],
    );
    e.node(
        AWS,
        "ec2:snapshot",
        "snap-new",
        "completed",
        10.0,
        5,
        json!({"size_gib": 200, "source_volume_id": "vol-gone"}),
        &[],
    );
    e.node(
        AWS,
        "ec2:image",
        "ami-old",
        "available",
        1.5,
        400,
        json!({"size_gib": 30}),
        &[],
    );
    e.node(
        AWS,
        "ec2:image",
        "ami-used",
        "available",
        1.5,
        400,
        json!({"size_gib": 30}),
        &[],
    );
    e.node(
        AWS,
        "ec2:image",
        "ami-new",
        "available",
        1.5,
        20,
        json!({"size_gib": 30}),
        &[],
    );
    e.edge("i-busy", Uses, "ami-used");
    // Logs.
    e.node(
        AWS,
        "logs:log-group",
        "lg-silent",
        "active",
        1.2,
        200,
        json!({"ingested_bytes_30d": 0, "stored_gib": 40.0, "retention_days": null}),
        &[],
    );
    e.node(
        AWS,
        "logs:log-group",
        "lg-grow",
        "active",
        9.0,
        200,
        json!({"ingested_bytes_30d": 2_147_483_648_i64, "stored_gib": 300.0, "retention_days": null}),
        &[],
    );
    e.node(
        AWS,
        "logs:log-group",
        "lg-busy",
        "active",
        9.0,
        200,
        json!({"ingested_bytes_30d": 5_000_000_000_i64, "stored_gib": 5.0, "retention_days": 30}),
        &[],
    );
    // Network.
    e.node(
        AWS,
        "ec2:nat-gateway",
        "nat-idle",
        "available",
        32.85,
        200,
        json!({"bytes_processed_7d": 0, "connections_7d": 0}),
        &[],
    );
    e.node(
        AWS,
        "ec2:nat-gateway",
        "nat-busy",
        "available",
        60.0,
        200,
        json!({"bytes_processed_7d": 9_000_000_000_i64, "connections_7d": 5000}),
        &[],
    );
    e.node(
        AWS,
        "elb:load-balancer",
        "lb-idle",
        "active",
        16.43,
        200,
        json!({"request_count_7d": 0, "connections_7d": 0, "healthy_targets": 0}),
        &[],
    );
    e.node(
        AWS,
        "elb:load-balancer",
        "lb-busy",
        "active",
        30.0,
        200,
        json!({"request_count_7d": 90_000, "connections_7d": 1000, "healthy_targets": 2}),
        &[],
    );
    e.node(
        AWS,
        "ec2:vpc-endpoint",
        "vpce-idle",
        "available",
        7.3,
        200,
        json!({"bytes_processed_7d": 0}),
        &[],
    );
    e.node(
        AWS,
        "ec2:vpc-endpoint",
        "vpce-busy",
        "available",
        7.3,
        200,
        json!({"bytes_processed_7d": 1_000_000}),
        &[],
    );
    // Data.
    let db = |conns: i64| json!({"connections_7d": conns, "cpu_avg_7d": 1.0, "db_class": "db.m5.large"});
    e.node(AWS, "rds:db", "db-idle", "available", 124.1, 300, db(0), &[]);
    e.node(AWS, "rds:db", "db-busy", "available", 124.1, 300, db(5000), &[]);
    e.node(AWS, "rds:db", "db-stopped", "stopped", 23.0, 300, db(0), &[]);
    let cache =
        |nodes: i64, cpu: f64, conns: i64| json!({"cache_nodes": nodes, "cpu_avg_7d": cpu, "connections_7d": conns});
    e.node(
        AWS,
        "elasticache:cache",
        "cache-idle",
        "available",
        49.64,
        300,
        cache(1, 1.0, 0),
        &[],
    );
    e.node(
        AWS,
        "elasticache:cache",
        "cache-big",
        "available",
        339.45,
        300,
        cache(3, 4.0, 100),
        &[],
    );
    e.node(
        AWS,
        "elasticache:cache",
        "cache-busy",
        "available",
        49.64,
        300,
        cache(1, 40.0, 9000),
        &[],
    );
    let table = |mode: &str, rcu: i64, wcu: i64, reads: i64, writes: i64| {
        json!({"billing_mode": mode, "read_capacity": rcu, "write_capacity": wcu,
               "consumed_read_7d": reads, "consumed_write_7d": writes})
    };
    e.node(
        AWS,
        "dynamodb:table",
        "t-idle",
        "ACTIVE",
        30.0,
        300,
        table("PROVISIONED", 50, 20, 0, 0),
        &[],
    );
    e.node(
        AWS,
        "dynamodb:table",
        "t-od",
        "ACTIVE",
        1.0,
        300,
        table("PAY_PER_REQUEST", 0, 0, 0, 0),
        &[],
    );
    e.node(
        AWS,
        "dynamodb:table",
        "t-over",
        "ACTIVE",
        132.86,
        300,
        table("PROVISIONED", 400, 200, 1000, 100),
        &[],
    );
    e.node(
        AWS,
        "dynamodb:table",
        "t-busy",
        "ACTIVE",
        2.85,
        300,
        table("PROVISIONED", 5, 5, 3_000_000, 2_000_000),
        &[],
    );
    e.node(
        AWS,
        "lambda:function",
        "fn-idle",
        "Active",
        21.9,
        300,
        json!({"invocations_90d": 0, "provisioned_concurrency": 2, "memory_mb": 1024, "last_invoked_at": ago(120)}),
        &[],
    );
    e.node(
        AWS,
        "lambda:function",
        "fn-busy",
        "Active",
        3.0,
        300,
        json!({"invocations_90d": 90_000, "provisioned_concurrency": 0, "memory_mb": 256}),
        &[],
    );
    let bucket = |requests: i64, accessed: u64, extra: Value| {
        let mut p = json!({"requests_30d": requests, "last_accessed_at": ago(accessed), "size_gib": 800.0});
        p.as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        p
    };
    e.node(
        AWS,
        "s3:bucket",
        "b-stale",
        "active",
        18.4,
        900,
        bucket(0, 200, json!({})),
        &[],
    );
    e.node(
        AWS,
        "s3:bucket",
        "b-quiet-recent",
        "active",
        18.4,
        900,
        bucket(0, 20, json!({})),
        &[],
    );
    e.node(
        AWS,
        "s3:bucket",
        "b-busy",
        "active",
        18.4,
        900,
        bucket(1_000_000, 0, json!({})),
        &[],
    );
    e.node(
        AWS,
        "s3:bucket",
        "b-mp",
        "active",
        18.4,
        900,
        bucket(1_000_000, 0, json!({"incomplete_multipart_gib": 12.5})),
        &[],
    );
    // Containers on AWS.
    e.node(AWS, "eks:cluster", "eks-empty", "ACTIVE", 73.0, 100, json!({}), &[]);
    e.node(AWS, "eks:cluster", "eks-busy", "ACTIVE", 73.0, 100, json!({}), &[]);
    e.node(
        AWS,
        "eks:nodegroup",
        "ng-idle",
        "ACTIVE",
        0.0,
        100,
        json!({"desired_size": 1}),
        &[],
    );
    e.node(
        AWS,
        "eks:nodegroup",
        "ng-busy",
        "ACTIVE",
        0.0,
        100,
        json!({"desired_size": 1}),
        &[],
    );
    e.edge("eks-busy", Contains, "ng-busy");
    e.edge("ng-idle", Contains, "i-idle2");
    e.edge("ng-busy", Contains, "i-busy");

    // GCP.
    e.node(
        GCP,
        "compute:instance",
        "gi-busy",
        "RUNNING",
        70.9,
        300,
        json!({"cpu_avg_7d": 30.0, "network_bytes_7d": 900_000_000, "machine_type": "n2-standard-2"}),
        &[],
    );
    e.node(
        GCP,
        "compute:instance",
        "gi-idle",
        "RUNNING",
        70.9,
        300,
        json!({"cpu_avg_7d": 1.0, "network_bytes_7d": 1_000_000, "machine_type": "n2-standard-2"}),
        &[],
    );
    e.node(
        GCP,
        "compute:instance",
        "gi-term",
        "TERMINATED",
        0.0,
        300,
        json!({"stopped_at": ago(60)}),
        &[],
    );
    e.node(GCP, "compute:disk", "d-free", "READY", 20.0, 300,
        json!({"size_gib": 200, "disk_type": "pd-balanced", "users": [], "attached_to": null, "last_detached_at": ago(40)}), &[]);
    e.node(
        GCP,
        "compute:disk",
        "d-used",
        "READY",
        20.0,
        300,
        json!({"size_gib": 200, "disk_type": "pd-balanced", "users": ["gi-busy"], "attached_to": "gi-busy"}),
        &[],
    );
    e.node(
        GCP,
        "compute:disk",
        "d-on-idle",
        "READY",
        20.0,
        300,
        json!({"size_gib": 200, "disk_type": "pd-balanced", "users": ["gi-idle"], "attached_to": "gi-idle"}),
        &[],
    );
    e.edge("d-used", AttachedTo, "gi-busy");
    e.edge("d-on-idle", AttachedTo, "gi-idle");
    e.node(
        GCP,
        "compute:address",
        "addr-free",
        "RESERVED",
        7.3,
        100,
        json!({"address": "34.1.1.1", "users": []}),
        &[],
    );
    e.node(
        GCP,
        "compute:address",
        "addr-dns",
        "RESERVED",
        7.3,
        100,
        json!({"address": "34.2.2.2", "users": []}),
        &[],
    );
    e.node(
        GCP,
        "compute:snapshot",
        "gs-old",
        "READY",
        5.0,
        300,
        json!({"source_disk": "gone-disk", "size_gib": 100}),
        &[],
    );
    e.node(
        GCP,
        "compute:snapshot",
        "gs-live",
        "READY",
        5.0,
        300,
        json!({"source_disk": "d-used", "size_gib": 100}),
        &[],
    );
    e.node(
        GCP,
        "sql:sql-instance",
        "sql-idle",
        "RUNNABLE",
        98.67,
        300,
        json!({"connections_7d": 0, "cpu_avg_7d": 1.0}),
        &[],
    );
    e.node(
        GCP,
        "sql:sql-instance",
        "sql-busy",
        "RUNNABLE",
        98.67,
        300,
        json!({"connections_7d": 900, "cpu_avg_7d": 30.0}),
        &[],
    );
    e.node(
        GCP,
        "storage:bucket",
        "gb-stale",
        "active",
        16.0,
        900,
        bucket(0, 300, json!({})),
        &[],
    );
    e.node(
        GCP,
        "storage:bucket",
        "gb-busy",
        "active",
        16.0,
        900,
        bucket(500, 0, json!({})),
        &[],
    );
    e.node(
        GCP,
        "container:cluster",
        "gke-empty",
        "RUNNING",
        73.0,
        30,
        json!({"node_count": 0}),
        &[],
    );
    e.node(
        GCP,
        "container:cluster",
        "gke-busy",
        "RUNNING",
        73.0,
        30,
        json!({"node_count": 3}),
        &[],
    );
    e.edge("gke-busy", Contains, "gi-busy");

    // Azure.
    e.node(
        AZ,
        "compute:vm",
        "vm-busy",
        "running",
        70.08,
        300,
        json!({"cpu_avg_7d": 30.0, "network_bytes_7d": 900_000_000, "power_state": "PowerState/running"}),
        &[],
    );
    e.node(
        AZ,
        "compute:vm",
        "vm-idle",
        "running",
        70.08,
        300,
        json!({"cpu_avg_7d": 2.0, "network_bytes_7d": 1_000_000, "power_state": "PowerState/running"}),
        &[],
    );
    e.node(
        AZ,
        "compute:vm",
        "vm-stopped",
        "stopped",
        70.08,
        300,
        json!({"power_state": "PowerState/stopped", "stopped_at": ago(50)}),
        &[],
    );
    e.node(
        AZ,
        "compute:disk",
        "ad-free",
        "Unattached",
        9.0,
        300,
        json!({"size_gib": 128, "sku": "Standard_LRS", "attached_to": null, "attachment_state": "Unattached"}),
        &[],
    );
    e.node(
        AZ,
        "compute:disk",
        "ad-used",
        "Attached",
        9.0,
        300,
        json!({"size_gib": 128, "sku": "Standard_LRS", "attached_to": "vm-busy", "attachment_state": "Attached"}),
        &[],
    );
    e.node(
        AZ,
        "compute:disk",
        "ad-on-stopped",
        "Attached",
        9.0,
        300,
        json!({"size_gib": 128, "sku": "Standard_LRS", "attached_to": "vm-stopped", "attachment_state": "Attached"}),
        &[],
    );
    e.edge("ad-used", AttachedTo, "vm-busy");
    e.edge("ad-on-stopped", AttachedTo, "vm-stopped");
    e.node(
        AZ,
        "network:public-ip",
        "pip-free",
        "Succeeded",
        3.65,
        100,
        json!({"address": "20.1.1.1", "attached_to": null}),
        &[],
    );
    e.node(
        AZ,
        "network:public-ip",
        "pip-used",
        "Succeeded",
        3.65,
        100,
        json!({"address": "20.2.2.2", "attached_to": "vm-busy"}),
        &[],
    );
    e.edge("pip-used", AttachedTo, "vm-busy");
    e.node(
        AZ,
        "network:load-balancer",
        "alb-idle",
        "Succeeded",
        18.25,
        100,
        json!({"backend_pool_size": 0, "bytes_processed_7d": 0}),
        &[],
    );
    e.node(
        AZ,
        "network:load-balancer",
        "alb-busy",
        "Succeeded",
        25.0,
        100,
        json!({"backend_pool_size": 2, "bytes_processed_7d": 1_000_000_000}),
        &[],
    );
    e.edge("alb-busy", FlowsTo, "vm-busy");
    e.node(
        AZ,
        "sql:sql-database",
        "asql-idle",
        "Online",
        73.61,
        300,
        json!({"connections_7d": 0, "dtu_avg_7d": 0.5}),
        &[],
    );
    e.node(
        AZ,
        "sql:sql-database",
        "asql-busy",
        "Online",
        73.61,
        300,
        json!({"connections_7d": 100, "dtu_avg_7d": 30.0}),
        &[],
    );
    e.node(
        AZ,
        "storage:storage-account",
        "st-stale",
        "available",
        30.0,
        900,
        json!({"transactions_30d": 0, "last_accessed_at": ago(150), "size_gib": 1600.0}),
        &[],
    );
    e.node(
        AZ,
        "storage:storage-account",
        "st-busy",
        "available",
        30.0,
        900,
        json!({"transactions_30d": 10_000, "last_accessed_at": ago(0), "size_gib": 1600.0}),
        &[],
    );

    // Kubernetes.
    e.node(
        K8S,
        "core:node",
        "kn-idle",
        "Ready",
        0.0,
        90,
        json!({"unschedulable": true, "cpu_requests_pct": 0.0}),
        &[],
    );
    e.node(
        K8S,
        "core:node",
        "kn-busy",
        "Ready",
        0.0,
        90,
        json!({"unschedulable": false, "cpu_requests_pct": 60.0}),
        &[],
    );
    e.node(
        K8S,
        "core:node",
        "kn-draining",
        "Ready",
        0.0,
        90,
        json!({"unschedulable": true, "cpu_requests_pct": 20.0}),
        &[],
    );
    e.node(K8S, "core:pod", "shop/web-1", "Running", 0.0, 10, json!({}), &[]);
    e.node(K8S, "core:pod", "shop/web-2", "Running", 0.0, 10, json!({}), &[]);
    e.edge("shop/web-1", Runs, "kn-busy");
    e.edge("shop/web-2", Runs, "kn-draining");
    e.node(
        K8S,
        "core:pvc",
        "shop/data-old",
        "Bound",
        8.0,
        60,
        json!({"size_gib": 100, "mounted_by": null}),
        &[],
    );
    e.node(
        K8S,
        "core:pvc",
        "shop/data",
        "Bound",
        8.0,
        60,
        json!({"size_gib": 100, "mounted_by": "web"}),
        &[],
    );
    e.node(
        K8S,
        "core:pvc",
        "shop/data-2",
        "Bound",
        8.0,
        60,
        json!({"size_gib": 100}),
        &[],
    );
    e.edge("shop/web-1", Uses, "shop/data-2");
    e.node(
        K8S,
        "core:service",
        "shop/legacy-lb",
        "Active",
        18.25,
        100,
        json!({"service_type": "LoadBalancer", "endpoints": 0, "requests_7d": 0, "external_ip": "203.0.113.9"}),
        &[],
    );
    e.node(
        K8S,
        "core:service",
        "shop/lb",
        "Active",
        18.25,
        100,
        json!({"service_type": "LoadBalancer", "endpoints": 3, "requests_7d": 800}),
        &[],
    );
    e.node(
        K8S,
        "core:service",
        "shop/internal",
        "Active",
        0.0,
        100,
        json!({"service_type": "ClusterIP", "endpoints": 0}),
        &[],
    );
    e
}

/// For each rule: the resource it flags, and look-alikes it must not flag.
const CASES: &[(&str, &str, &[&str])] = &[
    ("aws-ebs-unattached", "vol-loose", &["vol-new", "vol-busy", "vol-s"]),
    ("aws-ebs-on-stopped-instance", "vol-s", &["vol-busy", "vol-sr", "vol-i"]),
    ("aws-ebs-on-idle-instance", "vol-i", &["vol-busy", "vol-s"]),
    ("aws-ebs-gp2-to-gp3", "vol-busy", &["vol-loose", "vol-gp3", "vol-i"]),
    ("aws-ec2-idle", "i-idle", &["i-busy", "i-cpu-quiet", "i-stopped"]),
    ("aws-ec2-stopped", "i-stopped", &["i-stopped-recent", "i-busy"]),
    ("aws-eip-unassociated", "eip-free", &["eip-dns", "eip-used"]),
    ("aws-ebs-snapshot-orphaned", "snap-old", &["snap-live", "snap-new"]),
    ("aws-ami-unused", "ami-old", &["ami-used", "ami-new"]),
    ("aws-logs-silent", "lg-silent", &["lg-busy", "lg-grow"]),
    ("aws-logs-never-expire", "lg-grow", &["lg-busy", "lg-silent"]),
    ("aws-nat-idle", "nat-idle", &["nat-busy"]),
    ("aws-elb-idle", "lb-idle", &["lb-busy"]),
    ("aws-vpc-endpoint-idle", "vpce-idle", &["vpce-busy"]),
    ("aws-rds-idle", "db-idle", &["db-busy", "db-stopped"]),
    ("aws-rds-stopped", "db-stopped", &["db-busy", "db-idle"]),
    ("aws-elasticache-idle", "cache-idle", &["cache-busy", "cache-big"]),
    (
        "aws-elasticache-overprovisioned",
        "cache-big",
        &["cache-busy", "cache-idle"],
    ),
    ("aws-dynamodb-idle", "t-idle", &["t-od", "t-busy"]),
    ("aws-dynamodb-overprovisioned", "t-over", &["t-busy", "t-idle", "t-od"]),
    ("aws-lambda-uninvoked", "fn-idle", &["fn-busy"]),
    ("aws-s3-stale", "b-stale", &["b-busy", "b-quiet-recent"]),
    ("aws-s3-incomplete-multipart", "b-mp", &["b-busy"]),
    ("aws-eks-cluster-empty", "eks-empty", &["eks-busy"]),
    ("aws-eks-nodegroup-idle", "ng-idle", &["ng-busy"]),
    ("gcp-disk-unattached", "d-free", &["d-used", "d-on-idle"]),
    ("gcp-disk-on-unused-instance", "d-on-idle", &["d-used", "d-free"]),
    ("gcp-instance-idle", "gi-idle", &["gi-busy", "gi-term"]),
    ("gcp-instance-stopped", "gi-term", &["gi-busy", "gi-idle"]),
    ("gcp-address-unused", "addr-free", &["addr-dns"]),
    ("gcp-snapshot-orphaned", "gs-old", &["gs-live"]),
    ("gcp-sql-idle", "sql-idle", &["sql-busy"]),
    ("gcp-bucket-stale", "gb-stale", &["gb-busy", "b-stale"]),
    ("gcp-gke-cluster-empty", "gke-empty", &["gke-busy"]),
    (
        "azure-disk-unattached",
        "ad-free",
        &["ad-used", "ad-on-stopped", "d-free"],
    ),
    ("azure-disk-on-unused-vm", "ad-on-stopped", &["ad-used", "ad-free"]),
    ("azure-vm-stopped", "vm-stopped", &["vm-busy", "vm-idle"]),
    ("azure-vm-idle", "vm-idle", &["vm-busy", "vm-stopped"]),
    ("azure-public-ip-unassociated", "pip-free", &["pip-used"]),
    ("azure-lb-idle", "alb-idle", &["alb-busy"]),
    ("azure-sql-idle", "asql-idle", &["asql-busy"]),
    ("azure-storage-stale", "st-stale", &["st-busy"]),
    ("k8s-node-empty", "kn-idle", &["kn-busy", "kn-draining"]),
    ("k8s-pvc-unmounted", "shop/data-old", &["shop/data", "shop/data-2"]),
    (
        "k8s-lb-service-no-endpoints",
        "shop/legacy-lb",
        &["shop/lb", "shop/internal"],
    ),
];

#[test]
fn every_rule_flags_its_resource_and_spares_the_look_alikes() {
    let (g, out, crns) = run(estate());
    let by_crn: BTreeMap<String, BTreeSet<&str>> = out.findings.iter().fold(BTreeMap::new(), |mut m, f| {
        m.entry(g.crn(f.node)).or_default().insert(&*f.rule);
        m
    });
    let rules_of = |name: &str| by_crn.get(&crns[name]).cloned().unwrap_or_default();
    let covered: BTreeSet<&str> = CASES.iter().map(|c| c.0).collect();
    let all: BTreeSet<&str> = builtin::rules().map(|r| r.name).collect();
    assert_eq!(covered, all, "every rule has a known-answer case");
    for (rule, flagged, spared) in CASES {
        assert!(
            rules_of(flagged).contains(rule),
            "{rule} does not flag {flagged}: {:?}",
            rules_of(flagged)
        );
        for name in *spared {
            assert!(!rules_of(name).contains(rule), "{rule} flags {name}");
        }
    }
    for f in &out.findings {
        let rule = builtin::rule(&f.rule).expect("a catalogued rule");
        assert_eq!(f.is_waste, rule.kind == RuleKind::Waste);
        assert_eq!(f.risk_score, rule.risk);
        assert!(!f.suggested_action.is_empty() && f.reason.len() > 15, "{f:?}");
    }
}

/// Deciding without reasons fires the same rules with the same savings as
/// the scan's pass, and rendering those hits later writes the same reasons.
#[test]
fn deciding_then_rendering_matches_the_scan_pass() {
    let (g, out, _) = run(estate());
    let now_us = NOW * 1_000_000;
    let decided = builtin::decide(&g, now_us, NOW, &Default::default());
    assert!(decided.reasons.is_empty(), "deciding formats nothing");
    assert_eq!((decided.evaluated, decided.checks), (out.evaluated, out.checks));
    assert_eq!(decided.ignored, out.ignored);
    let fired: Vec<_> = decided.hits.iter().map(|h| (h.node, h.rule.name)).collect();
    let found: Vec<_> = out.findings.iter().map(|f| (f.node, &*f.rule)).collect();
    assert_eq!(fired, found);
    // Savings too: a rendered finding carries its hit's.
    let rendered = builtin::render(&g, now_us, NOW, &decided.hits);
    assert_eq!(rendered, out.findings);
    assert!(out.findings.len() >= builtin::rules().count(), "every rule fires here");
}

#[test]
fn reasons_carry_the_numbers() {
    let (g, out, crns) = run(estate());
    let reason = |name: &str, rule: &str| {
        out.findings
            .iter()
            .find(|f| g.crn(f.node) == crns[name] && f.rule == rule)
            .map(|f| (f.reason.clone(), f.projected_savings_usd_mo))
            .unwrap_or_else(|| panic!("{rule} on {name}"))
    };
    assert_eq!(
        reason("vol-loose", "aws-ebs-unattached"),
        ("unattached for 43 days, 500 GiB gp2, $50.00/mo".to_owned(), 50.0)
    );
    assert_eq!(
        reason("vol-busy", "aws-ebs-gp2-to-gp3"),
        ("500 GiB gp2; gp3 costs $10.00/mo less".to_owned(), 10.0)
    );
    let (idle, _) = reason("i-idle", "aws-ec2-idle");
    assert!(
        idle.contains("1.2% CPU") && idle.contains("19 MiB") && idle.contains("m5.large"),
        "{idle}"
    );
    // No reported cost: the price table prices 100 GiB of gp2 in us-east-1.
    assert_eq!(reason("vol-nocost", "aws-ebs-unattached").1, 10.0);
}

#[test]
fn the_ignore_tag_in_each_form() {
    let (g, out, crns) = run(estate());
    let ignored: BTreeMap<String, ignore::Ignore> =
        out.ignored.iter().map(|(id, why)| (g.crn(*id), why.clone())).collect();
    let flagged: BTreeSet<String> = out.findings.iter().map(|f| g.crn(f.node)).collect();
    assert_eq!(ignored.get(&crns["vol-ignored"]), Some(&ignore::Ignore::Always));
    assert!(matches!(
        ignored.get(&crns["vol-snoozed"]),
        Some(ignore::Ignore::Until(_))
    ));
    assert_eq!(
        ignored.get(&crns["vol-justified"]),
        Some(&ignore::Ignore::Justified("restore drill in March".into()))
    );
    for name in ["vol-ignored", "vol-snoozed", "vol-justified"] {
        assert!(!flagged.contains(&crns[name]), "{name} is ignored");
    }
    // An expired date and a value that is not one of the forms ignore nothing.
    for name in ["vol-expired", "vol-typo"] {
        assert!(
            flagged.contains(&crns[name]) && !ignored.contains_key(&crns[name]),
            "{name}"
        );
    }
}

#[test]
fn the_selection_switches_rules_off() {
    let e = estate();
    let now_us = NOW * 1_000_000;
    let mut g = Graph::new(e.interner);
    g.ingest_nodes(&[e.nodes], now_us - 1, 1);
    g.ingest_edges(&[e.edges], now_us - 1, 1);
    g.rebuild_adjacency(now_us);
    let all = builtin::run(&g, now_us, NOW, &builtin::Selection::default());
    let without = builtin::Selection {
        enabled: true,
        disabled: vec!["aws-ebs-unattached".into()],
    };
    let some = builtin::run(&g, now_us, NOW, &without);
    let count = |o: &BuiltinOutcome, rule: &str| o.findings.iter().filter(|f| f.rule == rule).count();
    assert!(count(&all, "aws-ebs-unattached") > 0);
    assert_eq!(count(&some, "aws-ebs-unattached"), 0);
    assert_eq!(
        some.findings.len(),
        all.findings.len() - count(&all, "aws-ebs-unattached")
    );
    let none = builtin::run(
        &g,
        now_us,
        NOW,
        &builtin::Selection {
            enabled: false,
            disabled: Vec::new(),
        },
    );
    assert!(none.findings.is_empty() && none.evaluated == 0);
}

/// Every finding of a pass as `(node, rule, reason)`, sorted.
fn answers<'a>(findings: impl Iterator<Item = &'a svc_engine::heuristics::Finding>) -> BTreeSet<String> {
    findings
        .map(|f| format!("{:?} {} {}", f.node, f.rule, f.reason))
        .collect()
}

/// The hand-built estate with the built-in rule cache after a first pass
/// at [`NOW`].
struct Cached {
    g: Graph,
    crns: BTreeMap<&'static str, String>,
    cache: builtin::Cache,
    selection: builtin::Selection,
}

/// [`NOW`] as a scan time.
const NOW_US: u64 = NOW * 1_000_000;

impl Cached {
    fn new() -> Cached {
        let (g, crns) = estate().graph();
        let mut c = Cached {
            g,
            crns,
            cache: builtin::Cache::default(),
            selection: builtin::Selection::default(),
        };
        assert!(c.pass(NOW_US, NOW).full, "the first pass works out every answer");
        c
    }

    fn id(&self, name: &str) -> svc_engine::NodeId {
        let crn = svc_engine::Crn::parse(&self.crns[name]).expect("crn");
        self.g.find(&crn).expect("node")
    }

    /// An estate interning into the graph's interner that knows the names
    /// of the graph's nodes (for edges between them).
    fn estate(&self) -> Estate {
        let mut e = Estate::with(self.g.interner().clone());
        e.crns = self.crns.clone();
        e
    }

    /// A pass with the rows changed since the last one.
    fn pass(&mut self, now_us: u64, as_of: u64) -> builtin::cache::Pass {
        let changes = self.g.take_row_changes();
        self.cache.run(&self.g, &changes, now_us, as_of, &self.selection)
    }

    /// The kept answers are those of a fresh pass; returns its findings.
    fn matches_fresh(&self, now_us: u64, as_of: u64) -> Vec<svc_engine::heuristics::Finding> {
        let fresh = builtin::run(&self.g, now_us, as_of, &self.selection);
        assert_eq!(answers(self.cache.findings()), answers(fresh.findings.iter()));
        // Grouped by node: each node once, with its findings and only them.
        let grouped = self.cache.findings_by_node();
        assert!(grouped.iter().all(|(id, list)| list.iter().all(|f| f.node == *id)));
        // In precedence order, so the findings set can hold the list as it is.
        assert!(
            grouped
                .iter()
                .all(|(_, list)| list.is_sorted_by(|a, b| svc_engine::heuristics::join::precedence(a, b).is_le()))
        );
        let mut nodes: Vec<_> = grouped.iter().map(|(id, _)| *id).collect();
        nodes.sort_unstable();
        nodes.dedup();
        assert_eq!(nodes.len(), grouped.len());
        assert_eq!(
            answers(grouped.iter().flat_map(|(_, l)| l.iter())),
            answers(fresh.findings.iter())
        );
        assert_eq!(
            self.cache.ignored().count(),
            fresh.ignored.len(),
            "the svc:ignore answers match too"
        );
        fresh.findings
    }
}

#[test]
fn a_later_pass_works_out_again_only_what_a_change_reaches() {
    let mut c = Cached::new();
    let eip = c.id("eip-free");
    assert!(
        c.cache
            .findings_of(eip)
            .iter()
            .any(|f| f.rule == "aws-eip-unassociated"),
        "an address nothing names is flagged"
    );
    c.matches_fresh(NOW_US, NOW);

    // A new DNS record names the address: the address's answer is worked
    // out again though its own row did not change.
    let mut e = c.estate();
    e.node(
        ("aws", "global", "123456789012"),
        "route53:record",
        "Z1/new.acme.io./A",
        "INSYNC",
        0.0,
        1,
        json!({"record_type": "A", "record_value": "3.3.3.3"}),
        &[],
    );
    c.g.ingest_nodes(&[e.nodes], NOW_US + 1, 2);
    c.g.rebuild_adjacency(NOW_US + 1);
    let pass = c.pass(NOW_US + 1, NOW);
    assert!(!pass.full);
    assert!(pass.touched.contains(&eip), "the named address is evaluated again");
    assert!(pass.evaluated <= 3, "{} evaluated", pass.evaluated);
    assert!(c.cache.findings_of(eip).is_empty(), "a DNS-named address is not waste");
    c.matches_fresh(NOW_US + 1, NOW);

    // A machine stops: the volume attached to it (unchanged) is evaluated
    // again with it.
    let vol = c.id("vol-gp3");
    let mut e = c.estate();
    e.node(
        AWS,
        "ec2:instance",
        "i-busy",
        "stopped",
        70.08,
        300,
        json!({"cpu_avg_7d": 40.0, "network_bytes_7d": 5_000_000_000_i64, "instance_type": "m5.large", "stopped_at": ago(45)}),
        &[],
    );
    c.g.ingest_nodes(&[e.nodes], NOW_US + 2, 3);
    c.g.rebuild_adjacency(NOW_US + 2);
    let pass = c.pass(NOW_US + 2, NOW);
    assert!(pass.touched.contains(&vol), "the attached volume is evaluated again");
    let fresh = c.matches_fresh(NOW_US + 2, NOW);
    assert!(
        fresh.iter().any(|f| f.node == vol),
        "a volume on a stopped machine is flagged"
    );

    // Forty days on with nothing changed: ages tick over and the answers
    // that read them are worked out again; the rest stand.
    let later = NOW + 40 * DAY;
    let pass = c.pass(NOW_US + 3, later);
    assert!(pass.evaluated > 0 && pass.kept > 0, "{pass:?}");
    c.matches_fresh(NOW_US + 3, later);
}

/// A copy of the kept answers (its time queues rebuilt from their lists)
/// goes on exactly as the original: the same rows worked out again, the
/// same answers, those of a fresh pass.
#[test]
fn a_copy_of_the_cache_goes_on_as_the_original() {
    let mut c = Cached::new();
    let mut copy = c.cache.clone();
    let later = NOW + 40 * DAY;
    let changes = c.g.take_row_changes();
    let original = c.cache.run(&c.g, &changes, NOW_US + 1, later, &c.selection);
    let copied = copy.run(&c.g, &changes, NOW_US + 1, later, &c.selection);
    assert!(!original.full && original.evaluated > 0, "{original:?}");
    assert_eq!(
        (
            copied.full,
            copied.evaluated,
            copied.kept,
            copied.findings,
            copied.ignored
        ),
        (
            original.full,
            original.evaluated,
            original.kept,
            original.findings,
            original.ignored
        )
    );
    let (mut a, mut b) = (original.touched, copied.touched);
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
    assert_eq!(answers(copy.findings()), answers(c.cache.findings()));
    c.matches_fresh(NOW_US + 1, later);
}

#[test]
fn a_later_pass_follows_only_the_edges_and_ages_an_answer_read() {
    let mut c = Cached::new();
    let (loose, new) = (c.id("vol-loose"), c.id("vol-new"));
    let unattached = |cache: &builtin::Cache, v| cache.findings_of(v).iter().any(|f| f.rule == "aws-ebs-unattached");
    assert!(unattached(&c.cache, loose) && !unattached(&c.cache, new));

    // An edge of a relation no answer at either end reads: nothing to redo.
    let mut e = c.estate();
    e.edge("vol-loose", Grants, "vol-nocost");
    c.g.ingest_edges(&[e.edges], NOW_US + 1, 2);
    c.g.rebuild_adjacency(NOW_US + 1);
    let pass = c.pass(NOW_US + 1, NOW);
    assert!(!pass.full);
    assert_eq!(pass.evaluated, 0, "{pass:?}");
    c.matches_fresh(NOW_US + 1, NOW);

    // An edge the volume's answer reads: it is attached now.
    let mut e = c.estate();
    e.edge("vol-loose", AttachedTo, "i-busy");
    c.g.ingest_edges(&[e.edges], NOW_US + 2, 3);
    c.g.rebuild_adjacency(NOW_US + 2);
    let pass = c.pass(NOW_US + 2, NOW);
    assert!(pass.touched.contains(&loose), "{pass:?}");
    assert!(!unattached(&c.cache, loose), "an attached volume is not unattached");
    c.matches_fresh(NOW_US + 2, NOW);

    // Traffic observed to the idle machine: the machine's answer (its
    // verdict from the pass's machine table) read its flow edges, so it is
    // worked out again, and so is the volume that read the machine.
    let (idle, vol) = (c.id("i-idle"), c.id("vol-i"));
    let flagged = |cache: &builtin::Cache, n| cache.findings_of(n).iter().any(|f| f.is_waste);
    assert!(flagged(&c.cache, idle) && flagged(&c.cache, vol));
    let record = traffic::FlowRecord {
        source: c.crns["i-busy"].clone(),
        destination: c.crns["i-idle"].clone(),
        bytes: 400_000_000,
        packets: 300_000,
        start_s: NOW - 3_600,
        end_s: NOW - 60,
    };
    let ips = traffic::IpIndex::build(&c.g, NOW_US + 3);
    let mut report = traffic::TrafficReport::default();
    traffic::apply(&mut c.g, &ips, &[record], NOW_US + 3, 4, &mut report);
    assert_eq!(report.edges_added, 1, "{report:?}");
    c.g.rebuild_adjacency(NOW_US + 3);
    let pass = c.pass(NOW_US + 3, NOW);
    assert!(pass.touched.contains(&idle) && pass.touched.contains(&vol), "{pass:?}");
    c.matches_fresh(NOW_US + 3, NOW);
    assert!(
        !flagged(&c.cache, idle) && !flagged(&c.cache, vol),
        "a busy machine and its volume"
    );

    // A day on, the volume detached 2 days ago is still inside its 7-day
    // grace: its answer read only that it was, which holds until day 7.
    let pass = c.pass(NOW_US + 4, NOW + DAY);
    assert!(!pass.touched.contains(&new), "{pass:?}");
    c.matches_fresh(NOW_US + 4, NOW + DAY);
    // On day 7 it is flagged.
    let pass = c.pass(NOW_US + 5, NOW + 5 * DAY);
    assert!(pass.touched.contains(&new) && unattached(&c.cache, new), "{pass:?}");
    c.matches_fresh(NOW_US + 5, NOW + 5 * DAY);
}

#[test]
fn a_later_pass_starts_over_when_changes_were_not_all_listed() {
    let mut c = Cached::new();

    // One node changed back and forth more often than its shard keeps a
    // list of: the pass cannot know which rows changed and redoes them all.
    let mut t = NOW_US;
    for i in 0..1200 {
        let mut e = c.estate();
        let state = if i % 2 == 0 { "in-use" } else { "available" };
        e.node(
            AWS,
            "ec2:volume",
            "vol-flip",
            state,
            5.0,
            300,
            json!({"volume_type": "gp3"}),
            &[],
        );
        t += 1;
        c.g.ingest_nodes(&[e.nodes], t, 2 + i);
    }
    c.g.rebuild_adjacency(t);
    let changes = c.g.take_row_changes();
    assert!(changes.nodes.iter().any(Option::is_none), "a list overflowed");
    let pass = c.cache.run(&c.g, &changes, t, NOW, &c.selection);
    assert!(pass.full);
    c.matches_fresh(t, NOW);

    // Every AWS row is retired as of a later time: visible until then, gone
    // after, with no write in between. Past that time the pass starts over.
    let aws = c.g.interner().intern("aws");
    let gone = t + 1_000;
    c.g.retire_unseen(&[aws], gone, 5_000);
    c.g.rebuild_adjacency(t + 1);
    let pass = c.pass(t + 1, NOW);
    assert!(!pass.full);
    c.matches_fresh(t + 1, NOW);
    let pass = c.pass(gone + 1, NOW);
    assert!(pass.full, "a stored future valid_to passed");
    let fresh = c.matches_fresh(gone + 1, NOW);
    assert!(
        fresh
            .iter()
            .all(|f| c.g.node(f.node).is_some_and(|n| n.provider() != aws))
    );
}

/// A volume's fact (its id, which snapshots name) holds while the volume
/// stays visible, whatever else of it changes, and goes when the volume
/// does: a snapshot of it is orphaned then, and only then.
#[test]
fn a_volume_fact_stays_with_the_volume_and_goes_with_it() {
    let mut c = Cached::new();
    // The volume is listed by a source of its own, so it can disappear
    // alone; the snapshot names it.
    let elsewhere = ("backup", "us-east-1", "123456789012");
    let mut e = c.estate();
    e.node(
        elsewhere,
        "ec2:volume",
        "vol-kept",
        "available",
        5.0,
        300,
        json!({"size_gib": 50}),
        &[],
    );
    e.node(
        AWS,
        "ec2:snapshot",
        "snap-of-kept",
        "completed",
        10.0,
        200,
        json!({"size_gib": 50, "source_volume_id": "vol-kept"}),
        &[],
    );
    c.crns.extend(e.crns.clone());
    c.g.ingest_nodes(&[e.nodes], NOW_US + 1, 2);
    c.g.rebuild_adjacency(NOW_US + 1);
    c.pass(NOW_US + 1, NOW);
    let snap = c.id("snap-of-kept");
    let orphaned = |c: &Cached| {
        c.cache
            .findings_of(snap)
            .iter()
            .any(|f| f.rule == "aws-ebs-snapshot-orphaned")
    };
    assert!(!orphaned(&c), "a snapshot of a volume that exists is not orphaned");
    c.matches_fresh(NOW_US + 1, NOW);

    // The volume changes and stays: its fact stands.
    let mut e = c.estate();
    e.node(
        elsewhere,
        "ec2:volume",
        "vol-kept",
        "in-use",
        5.0,
        300,
        json!({"size_gib": 80}),
        &[],
    );
    c.g.ingest_nodes(&[e.nodes], NOW_US + 2, 3);
    c.g.rebuild_adjacency(NOW_US + 2);
    let pass = c.pass(NOW_US + 2, NOW);
    assert!(pass.touched.contains(&c.id("vol-kept")));
    assert!(!orphaned(&c), "the volume still exists");
    c.matches_fresh(NOW_US + 2, NOW);

    // Its source lists it no more: the fact goes, the snapshot is orphaned.
    let backup = c.g.interner().intern("backup");
    c.g.retire_unseen(&[backup], NOW_US + 3, 4);
    c.g.rebuild_adjacency(NOW_US + 3);
    c.pass(NOW_US + 3, NOW);
    assert!(orphaned(&c), "a snapshot of a volume gone is orphaned");
    c.matches_fresh(NOW_US + 3, NOW);
}
