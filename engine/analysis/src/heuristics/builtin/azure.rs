//! Azure rules.

use std::fmt;

use super::machine::{disk_on_unused_machine, machine_facts, unused_machine};
use super::rule::{GRACE_DAYS, Hit, Rule, Why, rule_constructors};
use super::storage::{stale_storage, storage_facts};
use super::units::{self, days, usd};
use super::view::{Node, Unused};
use svc_graph::relation::Relation::{AttachedTo, FlowsTo};

rule_constructors!("azure": waste => Waste);

pub(super) static RULES: &[Rule] = &[
    waste(
        "azure-disk-unattached",
        &["compute:disk"],
        90,
        "delete",
        "snapshot the managed disk, then delete it",
        "a managed disk attached to no VM for 7 days or more",
        disk_unattached,
    ),
    waste(
        "azure-disk-on-unused-vm",
        &["compute:disk"],
        80,
        "snapshot_delete",
        "snapshot the disk and remove it with its VM",
        "a managed disk attached to a VM stopped for 30 days or idle over 7",
        disk_on_unused,
    ),
    waste(
        "azure-vm-stopped",
        &["compute:vm"],
        85,
        "delete",
        "delete the VM, or at least deallocate it: a stopped VM that is not deallocated still bills compute",
        "a VM stopped for 30 days or more",
        vm_stopped,
    ),
    waste(
        "azure-vm-idle",
        &["compute:vm"],
        85,
        "stop",
        "deallocate the VM (or resize it if something still needs it)",
        "a running VM under 5% CPU and 100 MB of network over 7 days",
        vm_idle,
    ),
    waste(
        "azure-public-ip-unassociated",
        &["network:public-ip"],
        90,
        "release",
        "delete the public IP address",
        "a public IP attached to nothing that no DNS record points at",
        public_ip_unassociated,
    ),
    waste(
        "azure-lb-idle",
        &["network:load-balancer"],
        85,
        "delete",
        "delete the load balancer",
        "a load balancer with an empty backend pool or no bytes over 7 days",
        lb_idle,
    ),
    waste(
        "azure-sql-idle",
        &["sql:sql-database"],
        85,
        "snapshot_delete",
        "export the database, then delete it (or move it to serverless)",
        "a SQL database with no connections over 7 days",
        sql_idle,
    ),
    waste(
        "azure-storage-stale",
        &["storage:storage-account"],
        80,
        "quarantine",
        "block access for a while, then move the data to the Archive tier or delete the account",
        "a storage account with no transactions for 30 days and no access for 90",
        storage_stale,
    ),
];

fn disk_facts<'a>(n: &'a Node<'_>) -> impl fmt::Display + 'a {
    storage_facts(n, [n.keys().sku, None], "disk")
}

fn disk_unattached(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let unattached = n.state() == "Unattached" || n.str(k.attachment_state) == Some("Unattached");
    if !unattached || n.out(AttachedTo).next().is_some() || !n.is_empty(k.attached_to) {
        return None;
    }
    let d = n.days_since_prop(k.last_detached_at).unwrap_or_else(|| n.age_days());
    (d >= GRACE_DAYS).then(|| {
        why.hit(
            n.cost(),
            format_args!("attached to nothing ({} old), {}", days(d), disk_facts(n)),
        )
    })
}

fn disk_on_unused(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    disk_on_unused_machine(n, why, disk_facts(n))
}

fn vm_stopped(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let Unused::Stopped(d) = unused_machine(n)? else {
        return None;
    };
    let deallocated = n.str(n.keys().power_state).is_some_and(|p| p.ends_with("deallocated"));
    let cost = n.cost();
    let billing = fmt::from_fn(move |f| {
        if deallocated {
            f.write_str("deallocated")
        } else {
            write!(f, "not deallocated, so compute still bills {}", usd(cost))
        }
    });
    Some(why.hit(cost, format_args!("stopped for {}, {billing}", days(d))))
}

fn vm_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let idle @ Unused::Idle(..) = unused_machine(n)? else {
        return None;
    };
    Some(why.hit(n.cost(), format_args!("{} {}", idle.describe(), machine_facts(n))))
}

fn public_ip_unassociated(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.out(AttachedTo).next().is_some() || !n.is_empty(k.attached_to) {
        return None;
    }
    let ip = n.str(k.address).unwrap_or("");
    if n.dns_points_at(ip) {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!(
            "{ip} attached to nothing ({} old), {}",
            days(n.age_days()),
            usd(n.cost())
        ),
    ))
}

fn lb_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let pool = n.num(k.backend_pool_size);
    let bytes = n.num(k.bytes_processed_7d);
    let empty = pool == Some(0.0) && n.out(FlowsTo).next().is_none();
    if !(empty || bytes == Some(0.0)) || n.age_days() < GRACE_DAYS {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!(
            "{} backends, {} processed in 7 days, {}",
            pool.unwrap_or(0.0),
            units::bytes(bytes.unwrap_or(0.0)),
            usd(n.cost())
        ),
    ))
}

fn sql_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.num(k.connections_7d)? > 0.0 {
        return None;
    }
    let dtu = n.num(k.dtu_avg_7d).unwrap_or(0.0);
    Some(why.hit(
        n.cost(),
        format_args!("no connections in 7 days ({dtu:.1}% DTU), {}", usd(n.cost())),
    ))
}

fn storage_stale(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    stale_storage(n, why, n.keys().transactions_30d)
}
