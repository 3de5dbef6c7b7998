//! A scan of a moto estate of about 10,000 resources through the plugin
//! binary, as the daemon runs it: `cargo bench -p svc-plugin-aws --bench
//! moto_scan` (needs `moto_server` on PATH: `scripts/test` installs it
//! into `.venv`).
//!
//! Criterion times whole scans (the stream read to its end). Beside that
//! the bench prints, from the plugin's debug log of the last scan, the
//! AWS requests it made per resource and moto's own time (the sum of the
//! requests' `ms`, and the same list calls made one after another from
//! here), so the plugin's own cost is the difference.

#![allow(clippy::unwrap_used, reason = "bench code: a failed unwrap is a failed bench")]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use aws_sdk_ec2::types::{InstanceType, VolumeType};
use common::*;
use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use futures::stream::FuturesUnordered;

/// Instances, each with its root volume and network interface.
const INSTANCES: i32 = 2000;
/// Instances asked for per `RunInstances`.
const PER_RUN: i32 = 100;
const VOLUMES: usize = 2400;
/// Snapshots, of the first loose volumes.
const SNAPSHOTS: usize = 1000;
const ADDRESSES: usize = 400;
const GROUPS: usize = 200;
/// Requests in flight while seeding.
const SEEDERS: usize = 16;

/// Runs `n` requests made by `make`, `SEEDERS` at a time.
async fn many<F, Fut>(n: usize, make: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut next = 0;
    let mut running = FuturesUnordered::new();
    while next < n || !running.is_empty() {
        while next < n && running.len() < SEEDERS {
            running.push(make(next));
            next += 1;
        }
        running.next().await;
    }
}

/// Seeds region A; returns how many resources the plugin should report.
async fn seed(moto: &Moto) -> usize {
    let ec2 = moto.ec2(A);
    // A subnet with room for every instance's address.
    let vpc = ec2.create_vpc().cidr_block("10.9.0.0/16").send().await.unwrap();
    let vpc = vpc.vpc().unwrap().vpc_id().unwrap().to_owned();
    let subnet = ec2
        .create_subnet()
        .vpc_id(&vpc)
        .cidr_block("10.9.0.0/18")
        .send()
        .await
        .unwrap();
    let subnet = subnet.subnet().unwrap().subnet_id().unwrap().to_owned();
    let sg = security_group(&ec2, &vpc, "web", "web tier").await;
    let s = Seeded {
        vpc,
        subnet,
        sg,
        ..Seeded::default()
    };
    for _ in 0..INSTANCES / PER_RUN {
        ec2.run_instances()
            .image_id("ami-0123456789abcdef0")
            .instance_type(InstanceType::T3Small)
            .min_count(PER_RUN)
            .max_count(PER_RUN)
            .subnet_id(&s.subnet)
            .security_group_ids(&s.sg)
            .send()
            .await
            .unwrap();
    }
    let volumes = std::sync::Mutex::new(Vec::new());
    many(VOLUMES, |i| {
        let (ec2, volumes) = (&ec2, &volumes);
        async move {
            let class = if i % 2 == 0 { VolumeType::Gp3 } else { VolumeType::Gp2 };
            let id = volume(ec2, &format!("{A}a"), 10 + (i % 50) as i32, class, &[("team", "bench")]).await;
            volumes.lock().unwrap().push(id);
        }
    })
    .await;
    let volumes = volumes.into_inner().unwrap();
    many(SNAPSHOTS, |i| {
        let (ec2, v) = (&ec2, volumes[i].clone());
        async move {
            ec2.create_snapshot().volume_id(v).send().await.unwrap();
        }
    })
    .await;
    many(ADDRESSES, |_| {
        let ec2 = &ec2;
        async move {
            allocate(ec2).await;
        }
    })
    .await;
    many(GROUPS, |i| {
        let (ec2, vpc) = (&ec2, s.vpc.clone());
        async move {
            security_group(ec2, &vpc, &format!("bench-{i}"), "bench").await;
        }
    })
    .await;
    // The network as moto lists it (default VPC, subnets, groups and the
    // instances' interfaces included), then the rest.
    network_crns(&ec2, A).await.len() + INSTANCES as usize * 2 + VOLUMES + SNAPSHOTS + ADDRESSES
}

/// The same EC2 list calls as the plugin's, one after another, pages of
/// 1000: moto's time to answer them.
async fn moto_alone(moto: &Moto) -> (Duration, usize) {
    let ec2 = moto.ec2(A);
    let t = Instant::now();
    let mut requests = 0;
    macro_rules! list {
        ($call:expr) => {{
            let mut pages = $call.max_results(1000).into_paginator().send();
            while let Some(page) = pages.next().await {
                page.unwrap();
                requests += 1;
            }
        }};
    }
    list!(ec2.describe_instances());
    list!(ec2.describe_volumes());
    list!(ec2.describe_snapshots().owner_ids("self"));
    list!(ec2.describe_images().owners("self"));
    list!(ec2.describe_nat_gateways());
    list!(ec2.describe_vpc_endpoints());
    list!(ec2.describe_vpcs());
    list!(ec2.describe_subnets());
    list!(ec2.describe_security_groups());
    list!(ec2.describe_network_interfaces());
    ec2.describe_addresses().send().await.unwrap();
    requests += 1;
    (t.elapsed(), requests)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let moto = rt.block_on(Moto::start());
    let t = Instant::now();
    let expected = rt.block_on(seed(&moto));
    eprintln!(
        "seeded about {expected} resources in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let mut plugin = rt.block_on(Plugin::against(&moto));
    let config = [("regions", A)];
    let mut last = (0, 0);
    let mut group = c.benchmark_group("aws_plugin_moto");
    group.sample_size(10).measurement_time(Duration::from_secs(60));
    group.bench_function("scan_10k_resources", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let before = plugin.log().len();
                let t = Instant::now();
                let (scan, status) = rt.block_on(plugin.scan(&config));
                total += t.elapsed();
                status.unwrap();
                last = (scan.nodes.len(), before);
            }
            total
        });
    });
    group.finish();
    let (nodes, from) = last;
    let log = plugin.log();
    let calls: Vec<_> = log[from..].iter().filter(|l| l["@message"] == "aws call").collect();
    let call_ms: u64 = calls.iter().filter_map(|l| l["ms"].as_u64()).sum();
    let (alone, alone_requests) = rt.block_on(moto_alone(&moto));
    eprintln!(
        "last scan: {nodes} resources (about {expected} seeded), {} AWS requests = {:.4} per resource; \
         moto's answers summed {call_ms} ms over the scan's requests; the EC2 list calls alone, one after \
         another: {alone_requests} requests in {} ms",
        calls.len(),
        calls.len() as f64 / nodes.max(1) as f64,
        alone.as_millis()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
