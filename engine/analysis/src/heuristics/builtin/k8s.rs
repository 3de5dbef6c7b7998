//! Kubernetes rules.

use super::rule::{GRACE_DAYS, Hit, Rule, Why, rule_constructors};
use super::units::{days, usd};
use super::view::Node;
use svc_graph::relation::Relation::{Runs, Uses};

rule_constructors!("kubernetes": waste => Waste);

pub(super) static RULES: &[Rule] = &[
    waste(
        "k8s-node-empty",
        &["core:node"],
        80,
        "delete",
        "drain the node and remove it from its pool",
        "a cordoned (or request-free) node that runs no pods",
        node_empty,
    ),
    waste(
        "k8s-pvc-unmounted",
        &["core:pvc"],
        85,
        "delete",
        "back up the claim's volume if needed, then delete the claim",
        "a bound volume claim that no pod or workload mounts, 7 days or older",
        pvc_unmounted,
    ),
    waste(
        "k8s-lb-service-no-endpoints",
        &["core:service"],
        90,
        "delete",
        "delete the service; its cloud load balancer goes with it",
        "a LoadBalancer service with no endpoints and no requests",
        lb_service_no_endpoints,
    ),
];

fn node_empty(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let cordoned = n.flag(k.unschedulable) == Some(true);
    let requests = n.num(k.cpu_requests_pct);
    if !(cordoned || requests == Some(0.0)) || n.inc(Runs).next().is_some() {
        return None;
    }
    let state = if cordoned { "cordoned" } else { "no CPU requested" };
    // The machine underneath carries the bill, and its own finding.
    Some(why.hit(
        n.cost(),
        format_args!("{state}, runs no pods ({} old)", days(n.age_days())),
    ))
}

fn pvc_unmounted(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let d = n.age_days();
    if !n.is_empty(k.mounted_by) || n.inc(Uses).next().is_some() || d < GRACE_DAYS {
        return None;
    }
    let size = n.num(k.size_gib).unwrap_or(0.0);
    Some(why.hit(
        n.cost(),
        format_args!("mounted by nothing, {size:.0} GiB, {} old, {}", days(d), usd(n.cost())),
    ))
}

fn lb_service_no_endpoints(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.str(k.service_type) != Some("LoadBalancer") || n.num(k.endpoints)? > 0.0 {
        return None;
    }
    if n.num(k.requests_7d).unwrap_or(0.0) > 0.0 {
        return None;
    }
    let ip = n.str(k.external_ip).unwrap_or("no external IP");
    Some(why.hit(
        n.cost(),
        format_args!(
            "LoadBalancer ({ip}) with no endpoints and no requests in 7 days, {}",
            usd(n.cost())
        ),
    ))
}
