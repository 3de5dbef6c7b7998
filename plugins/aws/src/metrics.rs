//! Usage figures of one region's resources from CloudWatch `GetMetricData`:
//! the properties the built-in idle rules read (`cpu_avg_7d`,
//! `network_bytes_7d`, `request_count_7d`, `connections_7d`,
//! `bytes_processed_7d`, `invocations_90d`, ...), in the units and windows
//! the mock estate's AWS half writes them.
//!
//! [`PROFILES`] says, per node type, which metrics make which property over
//! which window. Every query asks one statistic of one metric of one
//! resource in daily periods; all of a region's queries share one window
//! (the longest any of them needs) and go in requests of
//! [`QUERIES_PER_CALL`], each paginated by `NextToken`: never one request
//! per resource or metric. A property folds the daily values of its own
//! window as its statistic means (the sum of the daily sums, the largest
//! daily maximum, the mean of the daily averages), then adds its metrics
//! or takes the greatest where it has several.
//!
//! What a missing figure means is decided here, because the rules read an
//! absent property as unknown (never idle) and a present zero as idle:
//! - a resource is judged over a window only when it existed for all of
//!   it: created (an instance: last launched; a function: last changed) at
//!   or before the window's start, or with a datapoint of one of its
//!   metrics in the window's first day. A younger one gets no figure for
//!   that window;
//! - a metric CloudWatch publishes only when something happens (requests,
//!   invocations, bytes through a gateway or endpoint) reads as zero when
//!   it has no datapoint; one published all the time (CPU, network of an
//!   instance, connections of a database or cache) is then left out;
//! - a query CloudWatch answers with an error status is left out, and so
//!   is every figure of a region whose requests fail (see [`usage`]).

use aws_sdk_cloudwatch::operation::get_metric_data::GetMetricDataOutput;
use aws_sdk_cloudwatch::primitives::DateTime;
use aws_sdk_cloudwatch::types::{Dimension, Metric as CwMetric, MetricDataQuery, MetricStat, StatusCode};

use crate::calls::{CallError, Calls, Op, pages};
use crate::discover::RegionData;
use crate::elb;
use crate::emit::{Usage, parse_lambda_time, parse_time, secs};

/// Metric queries per `GetMetricData` request (the API's maximum).
pub const QUERIES_PER_CALL: usize = 500;
/// The period of every query: one value a day.
const DAY: i64 = 86_400;
/// Windows end at the last whole hour (CloudWatch answers aligned windows fastest).
const HOUR: i64 = 3_600;

/// The statistic a query asks, and how a window's daily values fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// Summed: counts and bytes.
    Sum,
    /// Averaged: utilisation in percent.
    Average,
    /// The largest: concurrent connections.
    Maximum,
}

impl Stat {
    fn name(self) -> &'static str {
        match self {
            Stat::Sum => "Sum",
            Stat::Average => "Average",
            Stat::Maximum => "Maximum",
        }
    }

    /// The window's figure from its daily values; `None` when there are none.
    fn fold(self, daily: impl Iterator<Item = f64>) -> Option<f64> {
        let (mut n, mut sum, mut max) = (0_u32, 0.0, f64::MIN);
        for v in daily.filter(|v| v.is_finite()) {
            n += 1;
            sum += v;
            max = max.max(v);
        }
        match self {
            _ if n == 0 => None,
            Stat::Sum => Some(sum),
            Stat::Average => Some(sum / f64::from(n)),
            Stat::Maximum => Some(max),
        }
    }
}

/// What a metric without a datapoint in the window means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absent {
    /// Nothing happened: CloudWatch publishes it only when something does.
    Zero,
    /// Unknown: it is published all the time, so none is a gap.
    Unknown,
}

/// One metric of a property.
#[derive(Debug)]
pub struct Metric {
    pub name: &'static str,
    pub stat: Stat,
    pub absent: Absent,
}

/// A count published only when something happens.
const fn count(name: &'static str) -> Metric {
    Metric {
        name,
        stat: Stat::Sum,
        absent: Absent::Zero,
    }
}

/// A metric published all the time.
const fn gauge(name: &'static str, stat: Stat) -> Metric {
    Metric {
        name,
        stat,
        absent: Absent::Unknown,
    }
}

/// How the figures of a property's metrics make one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    Add,
    Greatest,
}

/// One usage property: its key, its window and the metrics it is made of.
#[derive(Debug)]
pub struct Prop {
    pub key: &'static str,
    pub days: i64,
    pub metrics: &'static [Metric],
    pub combine: Combine,
}

const fn prop(key: &'static str, days: i64, metrics: &'static [Metric], combine: Combine) -> Prop {
    Prop {
        key,
        days,
        metrics,
        combine,
    }
}

/// What CloudWatch reports of one node type.
#[derive(Debug)]
pub struct Profile {
    /// The node's kind, as `Out` writes it (`instance`, `load-balancer`).
    pub kind: &'static str,
    /// The resource's own type where it decides the namespace (a load
    /// balancer's `application`, an endpoint's `Interface`).
    pub variant: Option<&'static str>,
    pub namespace: &'static str,
    /// The dimension whose value is the node's id.
    pub dimension: &'static str,
    pub props: &'static [Prop],
}

/// Flows of a network or gateway load balancer: new ones, or one still
/// open from before (the peak of the active ones).
const FLOWS: &[Prop] = &[prop(
    "connections_7d",
    7,
    &[
        count("NewFlowCount"),
        Metric {
            name: "ActiveFlowCount",
            stat: Stat::Maximum,
            absent: Absent::Zero,
        },
    ],
    Combine::Greatest,
)];

/// The usage properties of every node type CloudWatch reports on, keyed by
/// node kind (and variant). DynamoDB tables (`table`) and ElastiCache
/// clusters (`cache`) apply as soon as the region's listing has them.
pub static PROFILES: &[Profile] = &[
    Profile {
        kind: "instance",
        variant: None,
        namespace: "AWS/EC2",
        dimension: "InstanceId",
        props: &[
            prop("cpu_avg_7d", 7, &[gauge("CPUUtilization", Stat::Average)], Combine::Add),
            prop(
                "network_bytes_7d",
                7,
                &[gauge("NetworkIn", Stat::Sum), gauge("NetworkOut", Stat::Sum)],
                Combine::Add,
            ),
        ],
    },
    Profile {
        kind: "load-balancer",
        variant: Some("application"),
        namespace: "AWS/ApplicationELB",
        dimension: "LoadBalancer",
        props: &[
            prop("request_count_7d", 7, &[count("RequestCount")], Combine::Add),
            prop("connections_7d", 7, &[count("NewConnectionCount")], Combine::Add),
        ],
    },
    Profile {
        kind: "load-balancer",
        variant: Some("network"),
        namespace: "AWS/NetworkELB",
        dimension: "LoadBalancer",
        props: FLOWS,
    },
    Profile {
        kind: "load-balancer",
        variant: Some("gateway"),
        namespace: "AWS/GatewayELB",
        dimension: "LoadBalancer",
        props: FLOWS,
    },
    Profile {
        kind: "nat-gateway",
        variant: None,
        namespace: "AWS/NATGateway",
        dimension: "NatGatewayId",
        props: &[
            prop(
                "bytes_processed_7d",
                7,
                &[count("BytesInFromSource"), count("BytesInFromDestination")],
                Combine::Add,
            ),
            prop(
                "connections_7d",
                7,
                &[count("ConnectionEstablishedCount")],
                Combine::Add,
            ),
        ],
    },
    Profile {
        kind: "vpc-endpoint",
        variant: Some("Interface"),
        namespace: "AWS/PrivateLinkEndpoints",
        dimension: "VPC Endpoint Id",
        props: &[prop("bytes_processed_7d", 7, &[count("BytesProcessed")], Combine::Add)],
    },
    Profile {
        kind: "vpc-endpoint",
        variant: Some("GatewayLoadBalancer"),
        namespace: "AWS/PrivateLinkEndpoints",
        dimension: "VPC Endpoint Id",
        props: &[prop("bytes_processed_7d", 7, &[count("BytesProcessed")], Combine::Add)],
    },
    Profile {
        kind: "db",
        variant: None,
        namespace: "AWS/RDS",
        dimension: "DBInstanceIdentifier",
        props: &[
            prop(
                "connections_7d",
                7,
                &[gauge("DatabaseConnections", Stat::Maximum)],
                Combine::Add,
            ),
            prop("cpu_avg_7d", 7, &[gauge("CPUUtilization", Stat::Average)], Combine::Add),
        ],
    },
    Profile {
        kind: "function",
        variant: None,
        namespace: "AWS/Lambda",
        dimension: "FunctionName",
        props: &[prop("invocations_90d", 90, &[count("Invocations")], Combine::Add)],
    },
    Profile {
        kind: "log-group",
        variant: None,
        namespace: "AWS/Logs",
        dimension: "LogGroupName",
        props: &[prop("ingested_bytes_30d", 30, &[count("IncomingBytes")], Combine::Add)],
    },
    Profile {
        kind: "table",
        variant: None,
        namespace: "AWS/DynamoDB",
        dimension: "TableName",
        props: &[
            prop(
                "consumed_read_7d",
                7,
                &[count("ConsumedReadCapacityUnits")],
                Combine::Add,
            ),
            prop(
                "consumed_write_7d",
                7,
                &[count("ConsumedWriteCapacityUnits")],
                Combine::Add,
            ),
        ],
    },
    Profile {
        kind: "cache",
        variant: None,
        namespace: "AWS/ElastiCache",
        dimension: "CacheClusterId",
        props: &[
            prop(
                "connections_7d",
                7,
                &[gauge("CurrConnections", Stat::Maximum)],
                Combine::Add,
            ),
            prop("cpu_avg_7d", 7, &[gauge("CPUUtilization", Stat::Average)], Combine::Add),
        ],
    },
];

/// One resource whose usage is asked.
#[derive(Debug)]
pub struct Target {
    profile: &'static Profile,
    /// The node's id, the value of the profile's dimension.
    id: String,
    /// Dimensions besides the id's (an endpoint's type, service and VPC).
    extra: Vec<(&'static str, String)>,
    /// Since when (Unix seconds) the resource has existed as it is, when known.
    since: Option<i64>,
}

impl Target {
    /// Node `kind` (of type `variant`) named `id`, when CloudWatch reports
    /// on that kind.
    pub fn of(kind: &str, variant: Option<&str>, id: &str, since: Option<i64>) -> Option<Target> {
        let profile = PROFILES.iter().find(|p| p.kind == kind && p.variant == variant)?;
        Some(Target {
            profile,
            id: id.to_owned(),
            extra: Vec::new(),
            since,
        })
    }

    fn with(mut self, dimension: &'static str, value: &str) -> Target {
        self.extra.push((dimension, value.to_owned()));
        self
    }

    /// The query of metric `m` of this resource, named `id`. Its
    /// dimensions go in name order, as CloudWatch lists them (moto matches
    /// them in the order given).
    fn query(&self, m: &Metric, id: String) -> MetricDataQuery {
        let mut dims: Vec<(&str, &str)> = self.extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
        dims.push((self.profile.dimension, &self.id));
        dims.sort_unstable();
        let mut metric = CwMetric::builder()
            .namespace(self.profile.namespace)
            .metric_name(m.name);
        for (name, value) in dims {
            metric = metric.dimensions(Dimension::builder().name(name).value(value).build());
        }
        let stat = MetricStat::builder()
            .metric(metric.build())
            .period(DAY as i32)
            .stat(m.stat.name())
            .build();
        MetricDataQuery::builder()
            .id(id)
            .metric_stat(stat)
            .return_data(true)
            .build()
    }
}

/// The resources of a listed region whose usage the rules read, in the
/// states that have any: running instances, active load balancers,
/// available NAT gateways and interface (or Gateway Load Balancer)
/// endpoints, databases that are not stopped, every function and log group.
pub fn targets(data: &RegionData) -> Vec<Target> {
    let mut out = Vec::new();
    for i in &data.instances {
        let running = i
            .state()
            .and_then(|s| s.name())
            .is_some_and(|n| n.as_str() == "running");
        if let (true, Some(id)) = (running, i.instance_id()) {
            out.extend(Target::of("instance", None, id, secs(i.launch_time())));
        }
    }
    for lb in &data.elb.load_balancers {
        let active = lb
            .state()
            .and_then(|s| s.code())
            .is_some_and(|c| c.as_str() == "active");
        let id = lb.load_balancer_arn().and_then(|arn| elb::id_of(arn, "load-balancer"));
        if let (true, Some(id)) = (active, id) {
            let variant = lb.r#type().map(|t| t.as_str());
            out.extend(Target::of("load-balancer", variant, id, secs(lb.created_time())));
        }
    }
    for n in &data.nat_gateways {
        let available = n.state().is_some_and(|s| s.as_str() == "available");
        if let (true, Some(id)) = (available, n.nat_gateway_id()) {
            out.extend(Target::of("nat-gateway", None, id, secs(n.create_time())));
        }
    }
    for e in &data.endpoints {
        let available = e.state().is_some_and(|s| s.as_str().eq_ignore_ascii_case("available"));
        let (Some(id), Some(ty), Some(service), Some(vpc)) =
            (e.vpc_endpoint_id(), e.vpc_endpoint_type(), e.service_name(), e.vpc_id())
        else {
            continue;
        };
        let target = Target::of("vpc-endpoint", Some(ty.as_str()), id, secs(e.creation_timestamp()));
        if let (true, Some(t)) = (available, target) {
            out.push(
                t.with("Endpoint Type", ty.as_str())
                    .with("Service Name", service)
                    .with("VPC Id", vpc),
            );
        }
    }
    for db in &data.rds.instances {
        let stopped = matches!(db.db_instance_status(), Some("stopped" | "stopping"));
        if let (false, Some(id)) = (stopped, db.db_instance_identifier()) {
            out.extend(Target::of("db", None, id, secs(db.instance_create_time())));
        }
    }
    for f in &data.lambda.functions {
        let changed = f
            .last_modified()
            .and_then(parse_lambda_time)
            .and_then(|t| parse_time(Some(&t)));
        if let Some(name) = f.function_name() {
            out.extend(Target::of("function", None, name, changed));
        }
    }
    for g in &data.logs.groups {
        if let Some(name) = g.log_group_name() {
            out.extend(Target::of(
                "log-group",
                None,
                name,
                g.creation_time().map(|ms| ms / 1000),
            ));
        }
    }
    for t in &data.dynamodb.tables {
        let active = t.table_status().is_some_and(|s| s.as_str() == "ACTIVE");
        if let (true, Some(name)) = (active, t.table_name()) {
            out.extend(Target::of("table", None, name, secs(t.creation_date_time())));
        }
    }
    for c in &data.elasticache.clusters {
        let available = c.cache_cluster_status() == Some("available");
        if let (true, Some(id)) = (available, c.cache_cluster_id()) {
            out.extend(Target::of("cache", None, id, secs(c.cache_cluster_create_time())));
        }
    }
    out
}

/// The span every query of one region covers: `days` whole days up to `end`.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub end: i64,
    pub days: i64,
}

impl Window {
    /// The window of `targets` at `now`: the longest any of their
    /// properties needs, up to the last whole hour.
    pub fn of(targets: &[Target], now: i64) -> Window {
        let days = targets
            .iter()
            .flat_map(|t| t.profile.props.iter().map(|p| p.days))
            .max()
            .unwrap_or(7);
        Window {
            end: now - now.rem_euclid(HOUR),
            days,
        }
    }

    pub fn start(self) -> i64 {
        self.end - self.days * DAY
    }
}

/// One query of the plan: metric `metric` of property `prop` of target `target`.
#[derive(Clone, Copy, Debug)]
struct Planned {
    target: usize,
    prop: usize,
    metric: usize,
}

/// Every query the targets need, target by target.
fn plan(targets: &[Target]) -> Vec<Planned> {
    let mut out = Vec::new();
    for (target, t) in targets.iter().enumerate() {
        for (prop, p) in t.profile.props.iter().enumerate() {
            for metric in 0..p.metrics.len() {
                out.push(Planned { target, prop, metric });
            }
        }
    }
    out
}

/// What CloudWatch answered for one query: its datapoints (period start,
/// value) and whether it failed.
#[derive(Clone, Debug, Default)]
struct Series {
    points: Vec<(i64, f64)>,
    failed: bool,
}

/// How a region's fetch went, for the log.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fetched {
    pub targets: usize,
    pub queries: usize,
    pub requests: usize,
    pub days: i64,
}

/// Asks CloudWatch for the usage of `targets` in `region` over the window
/// at `now`: requests of [`QUERIES_PER_CALL`] queries, all at once under
/// the shared bound, each followed through its pages. The first failed
/// request fails it all.
pub async fn fetch(calls: &Calls, region: &str, targets: &[Target], now: i64) -> Result<(Usage, Fetched), CallError> {
    let planned = plan(targets);
    let window = Window::of(targets, now);
    let mut fetched = Fetched {
        targets: targets.len(),
        queries: planned.len(),
        requests: 0,
        days: window.days,
    };
    if planned.is_empty() {
        return Ok((Usage::new(), fetched));
    }
    let c = calls.cloudwatch(region);
    let op = Op {
        service: "cloudwatch",
        operation: "GetMetricData",
        region,
    };
    let batches = planned.chunks(QUERIES_PER_CALL).enumerate().map(|(b, batch)| {
        let first = b * QUERIES_PER_CALL;
        let queries: Vec<MetricDataQuery> = batch
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let t = &targets[q.target];
                t.query(&t.profile.props[q.prop].metrics[q.metric], format!("q{}", first + i))
            })
            .collect();
        let stream = c
            .get_metric_data()
            .start_time(DateTime::from_secs(window.start()))
            .end_time(DateTime::from_secs(window.end))
            .set_metric_data_queries(Some(queries))
            .into_paginator()
            .send();
        async move { pages!(calls, op, stream, |o| o.metric_data_results().len()) }
    });
    let answers = futures::future::try_join_all(batches).await?;
    let pages: Vec<&GetMetricDataOutput> = answers.iter().flatten().collect();
    fetched.requests = pages.len();
    let series = collect(&pages, planned.len());
    Ok((figures(targets, &planned, &series, window), fetched))
}

/// The answers of every page to the `n` queries named `q0`..: a series
/// split over pages is joined; one with an error status on any page failed.
fn collect(pages: &[&GetMetricDataOutput], n: usize) -> Vec<Series> {
    let mut series = vec![Series::default(); n];
    for r in pages.iter().flat_map(|p| p.metric_data_results()) {
        let at = r.id().and_then(|id| id.strip_prefix('q')?.parse::<usize>().ok());
        let Some(s) = at.and_then(|i| series.get_mut(i)) else {
            continue;
        };
        s.failed |= !matches!(r.status_code(), Some(StatusCode::Complete | StatusCode::PartialData));
        let times = r.timestamps().iter().map(DateTime::secs);
        s.points.extend(times.zip(r.values().iter().copied()));
    }
    series
}

/// The usage properties of `targets` from the answers to their queries
/// (`series`, in the order of `planned`).
fn figures(targets: &[Target], planned: &[Planned], series: &[Series], window: Window) -> Usage {
    let mut usage = Usage::new();
    let mut at = 0;
    for (ti, t) in targets.iter().enumerate() {
        // The plan lists each target's queries together.
        let begin = at;
        while at < planned.len() && planned[at].target == ti {
            at += 1;
        }
        let own = &series[begin..at];
        let mut props = Vec::new();
        let mut next = begin;
        for p in t.profile.props {
            let metrics = &series[next..next + p.metrics.len()];
            next += p.metrics.len();
            let from = window.end - p.days * DAY;
            let seen_then = |s: &Series| s.points.iter().any(|(ts, _)| (from..from + DAY).contains(ts));
            let existed = t.since.is_some_and(|s| s <= from) || own.iter().any(seen_then);
            if !existed {
                continue;
            }
            let values = p.metrics.iter().zip(metrics).map(|(m, s)| {
                if s.failed {
                    return None;
                }
                let daily = s.points.iter().filter(|(ts, _)| (from..window.end).contains(ts));
                m.stat
                    .fold(daily.map(|(_, v)| *v))
                    .or((m.absent == Absent::Zero).then_some(0.0))
            });
            let figure = values.reduce(|a, b| match (a?, b?) {
                (a, b) if p.combine == Combine::Add => Some(a + b),
                (a, b) => Some(a.max(b)),
            });
            if let Some(Some(v)) = figure {
                props.push((p.key, v));
            }
        }
        if !props.is_empty() {
            usage.entry(t.profile.kind).or_default().insert(t.id.clone(), props);
        }
    }
    usage
}

/// The usage figures of a listed region, logged with what it took. When
/// CloudWatch fails (no `cloudwatch:GetMetricData` permission, throttled
/// past the retries), the region is reported without them: every rule
/// reads a missing figure as unknown, so nothing is called idle for it,
/// and the failure is logged at warn.
pub async fn usage(calls: &Calls, region: &str, data: &RegionData) -> Usage {
    let targets = targets(data);
    let now = chrono::Utc::now().timestamp();
    match fetch(calls, region, &targets, now).await {
        Ok((usage, f)) => {
            tracing::info!(
                region,
                targets = f.targets,
                queries = f.queries,
                requests = f.requests,
                window_days = f.days,
                "usage metrics"
            );
            usage
        }
        Err(e) => {
            tracing::warn!(
                region,
                error = %e,
                "usage metrics failed; the region's resources are reported without usage figures"
            );
            Usage::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    const NOW: i64 = 1_767_225_600 + 1_234; // 2026-01-01T00:20:34Z
    const END: i64 = 1_767_225_600;

    fn target(kind: &str, variant: Option<&str>, id: &str, since: Option<i64>) -> Target {
        Target::of(kind, variant, id, since).unwrap()
    }

    /// A daily datapoint `days_ago` whole days before the window's end.
    fn at(days_ago: i64, v: f64) -> (i64, f64) {
        (END - days_ago * DAY, v)
    }

    fn series(points: &[(i64, f64)]) -> Series {
        Series {
            points: points.to_vec(),
            failed: false,
        }
    }

    fn props(usage: &Usage, kind: &str, id: &str) -> Option<HashMap<&'static str, f64>> {
        Some(usage.get(kind)?.get(id)?.iter().copied().collect())
    }

    #[test]
    fn window_ends_at_the_hour_and_spans_the_longest_property() {
        let ts = [target("instance", None, "i-1", None)];
        let w = Window::of(&ts, NOW);
        assert_eq!((w.end, w.days, w.start()), (END, 7, END - 7 * DAY));
        let ts = [
            target("instance", None, "i-1", None),
            target("function", None, "f", None),
            target("log-group", None, "/g", None),
        ];
        assert_eq!(Window::of(&ts, NOW).days, 90);
        assert!(Target::of("vpc-endpoint", Some("Gateway"), "vpce-1", None).is_none());
        assert!(Target::of("volume", None, "vol-1", None).is_none());
    }

    #[test]
    fn queries_name_the_resource_and_one_statistic() {
        let t = target("vpc-endpoint", Some("Interface"), "vpce-1", None)
            .with("Endpoint Type", "Interface")
            .with("VPC Id", "vpc-1");
        let q = t.query(&t.profile.props[0].metrics[0], "q7".into());
        assert_eq!(q.id(), Some("q7"));
        let stat = q.metric_stat().unwrap();
        assert_eq!((stat.period(), stat.stat()), (Some(86_400), Some("Sum")));
        let m = stat.metric().unwrap();
        assert_eq!(m.namespace(), Some("AWS/PrivateLinkEndpoints"));
        assert_eq!(m.metric_name(), Some("BytesProcessed"));
        let dims: Vec<(&str, &str)> = m
            .dimensions()
            .iter()
            .map(|d| (d.name().unwrap(), d.value().unwrap()))
            .collect();
        assert_eq!(
            dims,
            [
                ("Endpoint Type", "Interface"),
                ("VPC Endpoint Id", "vpce-1"),
                ("VPC Id", "vpc-1")
            ]
        );
    }

    #[test]
    fn folds_each_property_over_its_own_window() {
        let old = Some(END - 200 * DAY);
        let ts = [
            target("instance", None, "i-busy", old),
            target("function", None, "f", old),
        ];
        let planned = plan(&ts);
        assert_eq!(planned.len(), 4);
        let window = Window::of(&ts, NOW);
        let s = [
            // CPU: the mean of the daily averages of the last 7 days only.
            series(&[at(1, 10.0), at(2, 20.0), at(30, 90.0)]),
            // Network in and out add up.
            series(&[at(1, 1e9), at(3, 1e9)]),
            series(&[at(1, 5e8)]),
            // Invocations over 90 days.
            series(&[at(80, 3.0), at(2, 4.0), at(95, 100.0)]),
        ];
        let u = figures(&ts, &planned, &s, window);
        let i = props(&u, "instance", "i-busy").unwrap();
        assert_eq!(i["cpu_avg_7d"], 15.0);
        assert_eq!(i["network_bytes_7d"], 2.5e9);
        assert_eq!(props(&u, "function", "f").unwrap()["invocations_90d"], 7.0);
    }

    #[test]
    fn a_missing_count_is_zero_a_missing_gauge_unknown() {
        let old = Some(END - 200 * DAY);
        let ts = [
            target("load-balancer", Some("application"), "app/old/1", old),
            target("instance", None, "i-quiet", old),
            target("db", None, "orders", old),
        ];
        let planned = plan(&ts);
        let none = vec![Series::default(); planned.len()];
        let u = figures(&ts, &planned, &none, Window::of(&ts, NOW));
        let lb = props(&u, "load-balancer", "app/old/1").unwrap();
        assert_eq!((lb["request_count_7d"], lb["connections_7d"]), (0.0, 0.0));
        assert!(props(&u, "instance", "i-quiet").is_none());
        assert!(props(&u, "db", "orders").is_none());
    }

    #[test]
    fn a_resource_younger_than_the_window_is_not_judged() {
        let young = Some(END - 2 * DAY);
        let ts = [
            // Created two days ago, nothing since: no figure at all.
            target("nat-gateway", None, "nat-new", young),
            // Launched two days ago, idle since: no figure either.
            target("instance", None, "i-new", young),
            // Creation unknown, but seen on the window's first day.
            target("instance", None, "i-seen", None),
        ];
        let planned = plan(&ts);
        let mut s = vec![Series::default(); planned.len()];
        s[3] = series(&[at(1, 1.0), at(2, 1.0)]);
        s[4] = series(&[at(1, 1e6)]);
        s[5] = series(&[at(1, 1e6)]);
        s[6] = series(&[at(7, 2.0), at(1, 4.0)]);
        s[7] = series(&[at(1, 1e6)]);
        s[8] = series(&[at(7, 1e6)]);
        let u = figures(&ts, &planned, &s, Window::of(&ts, NOW));
        assert!(props(&u, "nat-gateway", "nat-new").is_none());
        assert!(props(&u, "instance", "i-new").is_none());
        let seen = props(&u, "instance", "i-seen").unwrap();
        assert_eq!((seen["cpu_avg_7d"], seen["network_bytes_7d"]), (3.0, 2e6));
    }

    #[test]
    fn a_failed_query_leaves_its_property_out() {
        let old = Some(END - 200 * DAY);
        let ts = [target("nat-gateway", None, "nat-1", old)];
        let planned = plan(&ts);
        let mut s = vec![Series::default(); planned.len()];
        s[1].failed = true;
        s[2] = series(&[at(1, 0.0)]);
        let u = figures(&ts, &planned, &s, Window::of(&ts, NOW));
        let nat = props(&u, "nat-gateway", "nat-1").unwrap();
        assert!(!nat.contains_key("bytes_processed_7d"), "{nat:?}");
        assert_eq!(nat["connections_7d"], 0.0);
    }

    #[test]
    fn flows_take_the_greater_of_new_and_active() {
        let old = Some(END - 200 * DAY);
        let ts = [target("load-balancer", Some("network"), "net/tcp/1", old)];
        let planned = plan(&ts);
        // A flow opened before the window and still open: no new flow.
        let s = [Series::default(), series(&[at(3, 1.0), at(2, 1.0)])];
        let u = figures(&ts, &planned, &s, Window::of(&ts, NOW));
        assert_eq!(props(&u, "load-balancer", "net/tcp/1").unwrap()["connections_7d"], 1.0);
    }

    #[test]
    fn joins_a_series_split_over_pages() {
        use aws_sdk_cloudwatch::types::MetricDataResult;
        let result = |id: &str, status: StatusCode, points: &[(i64, f64)]| {
            let mut r = MetricDataResult::builder().id(id).status_code(status);
            for (t, v) in points {
                r = r.timestamps(DateTime::from_secs(*t)).values(*v);
            }
            r.build()
        };
        let first = GetMetricDataOutput::builder()
            .metric_data_results(result("q0", StatusCode::PartialData, &[at(2, 1.0)]))
            .metric_data_results(result("q1", StatusCode::Forbidden, &[]))
            .metric_data_results(result("q9", StatusCode::Complete, &[at(1, 5.0)]))
            .next_token("more")
            .build();
        let second = GetMetricDataOutput::builder()
            .metric_data_results(result("q0", StatusCode::Complete, &[at(1, 2.0)]))
            .metric_data_results(result("q2", StatusCode::Complete, &[]))
            .build();
        let s = collect(&[&first, &second], 3);
        assert_eq!(s[0].points, [at(2, 1.0), at(1, 2.0)]);
        assert!(!s[0].failed && s[1].failed && !s[2].failed);
        assert!(s[2].points.is_empty());
    }

    #[test]
    fn every_profile_has_a_window_and_metrics() {
        for p in PROFILES {
            for prop in p.props {
                assert!(matches!(prop.days, 7 | 30 | 90), "{}", prop.key);
                assert!(!prop.metrics.is_empty(), "{}", prop.key);
                assert!(prop.key.ends_with(&format!("_{}d", prop.days)), "{}", prop.key);
            }
        }
        for kind in ["table", "cache"] {
            assert!(Target::of(kind, None, "x", None).is_some(), "{kind}");
        }
    }
}
