//! GCP rules.

use std::fmt;

use super::machine::{disk_on_unused_machine, machine_facts, unused_machine};
use super::rule::{GRACE_DAYS, Hit, Rule, Why, rule_constructors};
use super::storage::{stale_storage, storage_facts};
use super::units::{days, usd};
use super::view::{Node, Unused};
use svc_graph::relation::Relation::{AttachedTo, Contains};

rule_constructors!("gcp": waste => Waste);

pub(super) static RULES: &[Rule] = &[
    waste(
        "gcp-disk-unattached",
        &["compute:disk"],
        90,
        "delete",
        "snapshot the disk, then delete it",
        "a persistent disk with no users for 7 days or more",
        disk_unattached,
    ),
    waste(
        "gcp-disk-on-unused-instance",
        &["compute:disk"],
        80,
        "snapshot_delete",
        "snapshot the disk and remove it with its instance",
        "a persistent disk attached to an instance stopped for 30 days or idle over 7",
        disk_on_unused,
    ),
    waste(
        "gcp-instance-idle",
        &["compute:instance"],
        85,
        "stop",
        "stop the instance (or downsize it if something still needs it)",
        "a running instance under 5% CPU and 100 MB of network over 7 days",
        instance_idle,
    ),
    waste(
        "gcp-instance-stopped",
        &["compute:instance"],
        85,
        "delete",
        "create a machine image, then delete the instance and its disks",
        "an instance terminated (stopped) for 30 days or more",
        instance_stopped,
    ),
    waste(
        "gcp-address-unused",
        &["compute:address"],
        90,
        "release",
        "release the static address",
        "a reserved external address used by nothing that no DNS record points at",
        address_unused,
    ),
    waste(
        "gcp-snapshot-orphaned",
        &["compute:snapshot"],
        80,
        "snapshot_delete",
        "delete the snapshot (archive it first if it must be kept)",
        "a disk snapshot 30 days or older whose disk no longer exists",
        snapshot_orphaned,
    ),
    waste(
        "gcp-sql-idle",
        &["sql:sql-instance"],
        85,
        "snapshot_delete",
        "export or back up the instance, then delete it",
        "a Cloud SQL instance with no connections over 7 days",
        sql_idle,
    ),
    waste(
        "gcp-bucket-stale",
        &["storage:bucket"],
        80,
        "quarantine",
        "block access for a while, then move the data to Archive or delete the bucket",
        "a bucket with no requests for 30 days and no access for 90",
        bucket_stale,
    ),
    waste(
        "gcp-gke-cluster-empty",
        &["container:cluster"],
        80,
        "delete",
        "delete the cluster",
        "a GKE cluster with no nodes",
        gke_empty,
    ),
];

fn disk_facts<'a>(n: &'a Node<'_>) -> impl fmt::Display + 'a {
    storage_facts(n, [n.keys().disk_type, n.keys().volume_type], "disk")
}

fn disk_unattached(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.out(AttachedTo).next().is_some() || !n.is_empty(k.users) || !n.is_empty(k.attached_to) {
        return None;
    }
    let d = n.days_since_prop(k.last_detached_at).unwrap_or_else(|| n.age_days());
    (d >= GRACE_DAYS).then(|| why.hit(n.cost(), format_args!("no users for {}, {}", days(d), disk_facts(n))))
}

fn disk_on_unused(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    disk_on_unused_machine(n, why, disk_facts(n))
}

fn instance_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let idle @ Unused::Idle(..) = unused_machine(n)? else {
        return None;
    };
    Some(why.hit(n.cost(), format_args!("{} {}", idle.describe(), machine_facts(n))))
}

fn instance_stopped(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let Unused::Stopped(d) = unused_machine(n)? else {
        return None;
    };
    let disks: f64 = n.inc(AttachedTo).map(|d| d.cost()).sum();
    Some(why.hit(
        n.cost(),
        format_args!("terminated for {}; its disks still bill {}", days(d), usd(disks)),
    ))
}

fn address_unused(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.state() != "RESERVED" || !n.is_empty(k.users) || n.out(AttachedTo).next().is_some() {
        return None;
    }
    let ip = n.str(k.address).unwrap_or("");
    if n.dns_points_at(ip) {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!(
            "{ip} reserved and used by nothing ({} old), {}",
            days(n.age_days()),
            usd(n.cost())
        ),
    ))
}

fn snapshot_orphaned(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let source = n.str(k.source_disk)?;
    let d = n.age_days();
    if n.disk_exists(source) || d < 30 {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!("{} old, disk {source} no longer exists, {}", days(d), usd(n.cost())),
    ))
}

fn sql_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.state() != "RUNNABLE" || n.num(k.connections_7d)? > 0.0 {
        return None;
    }
    let cpu = n.num(k.cpu_avg_7d).unwrap_or(0.0);
    Some(why.hit(
        n.cost(),
        format_args!("no connections in 7 days ({cpu:.1}% CPU), {}", usd(n.cost())),
    ))
}

fn bucket_stale(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    stale_storage(n, why, n.keys().requests_30d)
}

fn gke_empty(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let nodes = n.num(k.node_count).unwrap_or(0.0);
    if nodes > 0.0 || n.out(Contains).next().is_some() || n.age_days() < GRACE_DAYS {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!("no nodes; the cluster fee alone is {}", usd(n.cost())),
    ))
}
