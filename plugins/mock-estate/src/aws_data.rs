//! The AWS data and edge tier of an application stack: load balancer, DNS
//! record, database, cache, table, buckets, and functions with their log
//! groups and the role that grants them access.

use svc_engine::Relation::{Contains, FlowsTo, Grants, SecuredBy, Uses};

use super::catalog::{self, CACHE, RDS, RDS_ENGINES};
use super::clock::{epoch_time, rfc3339};
use super::emit::{H, Unit};
use super::names::text;
use super::names::{BUCKET_PURPOSES, FUNCTIONS};
use super::rng::Rng;

/// Which data resources a stack has; `true` marks an idle (waste) one.
pub(crate) struct DataTier {
    db: Option<bool>,
    cache: Option<bool>,
    table: Option<bool>,
    buckets: Vec<bool>,
    functions: Vec<bool>,
    orphan_logs: usize,
}

impl DataTier {
    pub(crate) fn shape(r: &mut Rng) -> DataTier {
        DataTier {
            db: r.chance(0.85).then(|| r.chance(0.2)),
            cache: r.chance(0.4).then(|| r.chance(0.2)),
            table: r.chance(0.5).then(|| r.chance(0.2)),
            buckets: (0..1 + r.below(2)).map(|_| r.chance(0.15)).collect(),
            functions: (0..1 + r.below(3)).map(|_| r.chance(0.3)).collect(),
            orphan_logs: [0, 0, 1, 2][r.below(4)],
        }
    }

    /// Writes the tier; `clients` are the instances that use the database
    /// and cache, `sg` guards the data stores.
    pub(crate) fn write(
        &self,
        u: &mut Unit<'_>,
        app: &str,
        clients: &[Option<H>],
        subnets: &[Option<H>],
        sgs: &[Option<H>],
    ) {
        let s = u.s;
        let k = &s.k;
        let region = u.scope.region.name;
        let acct = u.scope.account.name;
        let subnet = subnets.first().copied().flatten();

        let role = super::ec2::role(
            u,
            &text!("arn:aws:iam::{acct}:role/{app}-service-role"),
            "lambda.amazonaws.com",
        );

        let db = self.db.map(|idle| {
            let slot = u.slot(false);
            let (mut r, mut v) = (slot.rng(), slot.vrng());
            let class = r.pick(RDS);
            let (engine, version) = *r.pick(RDS_ENGINES);
            let gib = r.range(20, 1000);
            let multi_az = r.chance(0.4);
            let state = match (idle, v.below(10)) {
                (false, 0) => s.st.backing_up,
                (false, 1) => s.st.modifying,
                _ => s.st.available,
            };
            let (conns, cpu) = if idle {
                (0, v.float(0.2, 2.0))
            } else {
                (v.range(20, 50_000), v.float(8.0, 70.0))
            };
            let copies = if multi_az { 2.0 } else { 1.0 };
            let cost = copies * (class.usd_mo + gib as f64 * catalog::RDS_STORAGE_GIB);
            let n = u
                .at(s.t.rds_db, state)
                .cost(cost)
                .created(u.old(&slot, 90, 1200))
                .waste(idle);
            let h = u.node(&slot, n, format_args!("arn:aws:rds:{region}:{acct}:db:{app}-db"), |w| {
                w.str(k.db_class, class.name);
                w.str(k.engine, engine);
                w.str(k.engine_version, version);
                w.int(k.allocated_gib, gib as i64);
                w.bool(k.multi_az, multi_az);
                w.int(k.connections_7d, conns as i64);
                w.float(k.cpu_avg_7d, cpu);
                w.str(
                    k.endpoint,
                    &text!("{app}-db.c{:010x}.{region}.rds.amazonaws.com", slot.h >> 24),
                );
            });
            u.edge(subnet, h, Contains, "CONTAINS");
            for sg in sgs {
                u.edge(h, *sg, SecuredBy, "SECURED_BY");
            }
            (h, idle)
        });

        let cache = self.cache.and_then(|idle| {
            let slot = u.slot(false);
            let (mut r, mut v) = (slot.rng(), slot.vrng());
            let tier = r.pick(CACHE);
            let nodes = 1 + r.below(3) as i64;
            let (conns, cpu, hits) = if idle {
                (0, v.float(0.5, 2.0), 0.0)
            } else {
                (v.range(50, 90_000), v.float(5.0, 60.0), v.float(0.6, 0.99))
            };
            let n = u
                .at(s.t.elasticache_cache, s.st.available)
                .cost(tier.usd_mo * nodes as f64);
            let n = n.created(u.old(&slot, 60, 900)).waste(idle);
            let h = u.node(&slot, n, format_args!("{app}-redis-001"), |w| {
                w.str(k.node_type, tier.name);
                w.str(k.engine, "redis");
                w.str(k.engine_version, "7.1");
                w.int(k.cache_nodes, nodes);
                w.int(k.connections_7d, conns as i64);
                w.float(k.cpu_avg_7d, cpu);
                w.float(k.hit_rate, hits);
            });
            u.edge(subnet, h, Contains, "CONTAINS");
            for sg in sgs {
                u.edge(h, *sg, SecuredBy, "SECURED_BY");
            }
            if idle {
                return None;
            }
            for c in clients {
                u.edge(*c, h, Uses, "READS");
            }
            h
        });
        if let Some((h, false)) = db {
            for c in clients {
                u.edge(*c, h, Uses, "DEPENDS_ON");
            }
        }

        let table = self.table.and_then(|idle| {
            let slot = u.slot(false);
            let (mut r, mut v) = (slot.rng(), slot.vrng());
            let provisioned = idle || r.chance(0.5);
            let (rcu, wcu) = if provisioned {
                (r.range(5, 400), r.range(5, 200))
            } else {
                (0, 0)
            };
            let (reads, writes) = if idle {
                (0, 0)
            } else {
                (v.range(10_000, 90_000_000), v.range(1_000, 9_000_000))
            };
            let gib = v.float(0.1, 300.0);
            let cost = rcu as f64 * catalog::DYNAMO_RCU + wcu as f64 * catalog::DYNAMO_WCU + gib * 0.25;
            let n = u
                .at(s.t.dynamodb_table, s.st.active_upper)
                .cost(cost)
                .created(u.old(&slot, 60, 1100))
                .waste(idle);
            let h = u.node(
                &slot,
                n,
                format_args!("arn:aws:dynamodb:{region}:{acct}:table/{app}-events"),
                |w| {
                    w.str(
                        k.billing_mode,
                        if provisioned { "PROVISIONED" } else { "PAY_PER_REQUEST" },
                    );
                    w.int(k.read_capacity, rcu as i64);
                    w.int(k.write_capacity, wcu as i64);
                    w.int(k.consumed_read_7d, reads as i64);
                    w.int(k.consumed_write_7d, writes as i64);
                    w.float(k.size_gib, gib);
                },
            );
            u.edge(role, h, Grants, "GRANTS");
            h
        });

        let mut buckets = Vec::with_capacity(self.buckets.len());
        for (i, &stale) in self.buckets.iter().enumerate() {
            let slot = u.slot(false);
            let (mut r, mut v) = (slot.rng(), slot.vrng());
            let purpose = BUCKET_PURPOSES[(u.index as usize + i) % BUCKET_PURPOSES.len()];
            let ia = r.chance(0.2);
            let gib = if stale {
                r.float(50.0, 8000.0)
            } else {
                v.float(1.0, 3000.0)
            };
            let objects = (gib * 900.0) as i64 + 1;
            let requests = if stale { 0 } else { v.range(1_000, 40_000_000) as i64 };
            let accessed = rfc3339(if stale {
                u.old(&slot, 120, 900)
            } else {
                epoch_time(slot.since)
            });
            let cost = gib * if ia { 0.0125 } else { catalog::S3_GIB };
            let n = u
                .at(s.t.s3_bucket, s.st.active)
                .cost(cost)
                .created(u.old(&slot, 150, 1800))
                .waste(stale);
            let h = u.node(&slot, n, format_args!("acme-{app}-{purpose}"), |w| {
                w.float(k.size_gib, gib);
                w.int(k.object_count, objects);
                w.str(k.storage_class, if ia { "STANDARD_IA" } else { "STANDARD" });
                w.bool(k.versioning, slot.h.is_multiple_of(3));
                w.int(k.requests_30d, requests);
                w.str(k.last_accessed_at, accessed.as_str());
            });
            u.edge(role, h, Grants, "GRANTS");
            if !stale {
                // Every instance writes to the first bucket, the first instance to the others.
                let writers = if buckets.is_empty() {
                    clients
                } else {
                    &clients[..clients.len().min(1)]
                };
                for c in writers {
                    u.edge(*c, h, Uses, "WRITES");
                }
                buckets.push(h);
            }
        }

        for (i, &idle) in self.functions.iter().enumerate() {
            let slot = u.slot(true);
            let logs = u.follow(&slot);
            let (mut r, mut v) = (slot.rng(), slot.vrng());
            let fname = FUNCTIONS[(u.index as usize + i) % FUNCTIONS.len()];
            let suffix = if slot.k == 0 {
                String::new()
            } else {
                format!("-v{}", slot.k + 1)
            };
            let name = text!("{app}-{fname}{suffix}");
            let mem_mb = [128, 256, 512, 1024, 2048][r.below(5)];
            let gib = mem_mb as f64 / 1024.0;
            let runtime = *r.pick(&["python3.12", "nodejs20.x", "java21", "provided.al2023", "python3.11"]);
            let provisioned = if idle { 1 + r.below(4) as i64 } else { 0 };
            let (calls, last) = if idle {
                (0, u.old(&slot, 95, 500))
            } else {
                (
                    v.range(500, 60_000_000),
                    epoch_time(slot.since).saturating_sub(slot.h % 600),
                )
            };
            let secs = v.float(0.05, 2.0);
            let cost = if idle {
                provisioned as f64 * gib * catalog::LAMBDA_PROVISIONED_GIB
            } else {
                calls as f64 / 3.0 * (0.000_000_2 + secs * gib * 0.000_016_666_7)
            };
            let last = rfc3339(last);
            let n = u
                .at(s.t.lambda_function, s.st.active_title)
                .cost(cost)
                .created(u.created(&slot, 30, 900));
            let f = u.node(
                &slot,
                n.waste(idle),
                format_args!("arn:aws:lambda:{region}:{acct}:function:{name}"),
                |w| {
                    w.str(k.runtime, runtime);
                    w.int(k.memory_mb, mem_mb);
                    w.int(k.invocations_90d, calls as i64);
                    w.str(k.last_invoked_at, last.as_str());
                    w.int(k.provisioned_concurrency, provisioned);
                    w.float(k.duration_avg_s, secs);
                },
            );
            u.edge(role, f, Grants, "GRANTS");
            if let Some((h, false)) = db {
                u.edge(f, h, Uses, if slot.h.is_multiple_of(2) { "READS" } else { "WRITES" });
            }
            u.edge(f, table, Uses, "WRITES");
            if let Some(b) = buckets.first() {
                u.edge(f, *b, Uses, "READS");
            }
            u.edge(f, cache, Uses, "READS");
            if slot.h.is_multiple_of(2) {
                u.edge(f, sgs.first().copied().flatten(), SecuredBy, "SECURED_BY");
            }
            let l = log_group(u, logs, &text!("/aws/lambda/{name}"), idle);
            u.edge(f, l, Uses, "WRITES");
        }
        for i in 0..self.orphan_logs {
            let slot = u.slot(false);
            log_group(u, slot, &text!("/aws/lambda/{app}-legacy-{i}"), true);
        }
    }
}

/// The log group at `path`; one that took no logs for 30 days is waste.
pub(crate) fn log_group(u: &mut Unit<'_>, slot: super::emit::Slot, path: &str, silent: bool) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let (region, acct) = (u.scope.region.name, u.scope.account.name);
    let (mut r, mut v) = (slot.rng(), slot.vrng());
    let stored = if silent {
        r.float(5.0, 600.0)
    } else {
        v.float(0.5, 200.0)
    };
    let ingested = if silent {
        0
    } else {
        v.range(10_000_000, 40_000_000_000) as i64
    };
    let retention = (!silent && r.chance(0.7)).then(|| *r.pick(&[7i64, 14, 30, 90, 365]));
    let cost = stored * catalog::LOGS_GIB + ingested as f64 / 1e9 * 0.5;
    let created = if silent {
        u.old(&slot, 120, 1500)
    } else {
        u.created(&slot, 30, 900)
    };
    let n = u
        .at(s.t.logs_log_group, s.st.active)
        .cost(cost)
        .created(created)
        .waste(silent);
    u.node(
        &slot,
        n,
        format_args!("arn:aws:logs:{region}:{acct}:log-group:{path}"),
        |w| {
            w.float(k.stored_gib, stored);
            w.int(k.ingested_bytes_30d, ingested);
            match retention {
                Some(d) => w.int(k.retention_days, d),
                None => w.null(k.retention_days),
            }
        },
    )
}

/// An application load balancer in front of `targets`; an idle one (no
/// targets, no requests for a week) is waste. Returns it and its DNS name.
pub(crate) fn load_balancer(
    u: &mut Unit<'_>,
    app: &str,
    targets: &[Option<H>],
    subnets: &[Option<H>],
    sgs: &[Option<H>],
    idle: bool,
) -> (Option<H>, String) {
    let s = u.s;
    let k = &s.k;
    let (region, acct) = (u.scope.region.name, u.scope.account.name);
    let slot = u.slot(false);
    let mut v = slot.vrng();
    let name = if idle { text!("{app}-old") } else { text!("{app}-alb") };
    let dns = format!(
        "{name}-{}.{region}.elb.amazonaws.com",
        1_000_000_000 + slot.h % 8_999_999_999
    );
    let healthy = targets.iter().filter(|t| t.is_some()).count() as i64;
    let (requests, conns, lcu) = if idle {
        (0, 0, 0.0)
    } else {
        (
            v.range(10_000, 500_000_000),
            v.range(1_000, 9_000_000),
            v.float(2.0, 45.0),
        )
    };
    let created = if idle {
        u.old(&slot, 120, 1200)
    } else {
        u.old(&slot, 30, 1200)
    };
    let n = u
        .at(s.t.elb_load_balancer, s.st.active)
        .cost(catalog::ALB_USD_MO + lcu)
        .created(created)
        .waste(idle);
    let lb = u.node(
        &slot,
        n,
        format_args!(
            "arn:aws:elasticloadbalancing:{region}:{acct}:loadbalancer/app/{name}/{:016x}",
            slot.ih()
        ),
        |w| {
            w.str(k.lb_type, "application");
            w.str(k.scheme, "internet-facing");
            w.str(k.dns_name, &dns);
            w.int(k.healthy_targets, healthy);
            w.int(k.request_count_7d, requests as i64);
            w.int(k.connections_7d, conns as i64);
        },
    );
    for sn in subnets {
        u.edge(*sn, lb, Contains, "CONTAINS");
    }
    for sg in sgs {
        u.edge(lb, *sg, SecuredBy, "SECURED_BY");
    }
    for t in targets {
        u.edge(lb, *t, FlowsTo, "ROUTES_TO");
    }
    (lb, dns)
}

/// A DNS alias record pointing at a load balancer.
pub(crate) fn record(u: &mut Unit<'_>, app: &str, i: usize, lb: Option<H>, dns: &str) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let slot = u.slot(false);
    let zone = text!(
        "Z{:013X}",
        (u.index.wrapping_mul(0x9E37_79B9) ^ u.seed) & 0xF_FFFF_FFFF_FFFF
    );
    let name = if i == 0 {
        text!("{app}.acme.io")
    } else {
        text!("api.{app}.acme.io")
    };
    let n = u
        .at(s.t.route53_record, s.st.insync)
        .region(s.global)
        .created(u.old(&slot, 30, 1500));
    let r = u.node(&slot, n, format_args!("{zone}/{name}./A"), |w| {
        w.str(k.record_name, &text!("{name}."));
        w.str(k.record_type, "A");
        w.bool(k.alias, true);
        w.str(k.record_value, dns);
        w.str(k.hosted_zone_id, &zone);
    });
    u.edge(r, lb, FlowsTo, "ROUTES_TO");
    r
}
