//! AWS rules.

use std::fmt;

use super::machine::{attached_machine, machine_facts, unused_machine};
use super::rule::{GRACE_DAYS, Hit, Rule, Why, rule_constructors};
use super::storage::{stale_storage, storage_facts};
use super::units::{bytes, days, usd};
use super::view::{Days, Node, Unused};
use crate::prices;
use svc_graph::relation::Relation::{AttachedTo, Contains, Uses};

rule_constructors!("aws": waste => Waste, optimize => Optimize);

pub(super) static RULES: &[Rule] = &[
    waste(
        "aws-ebs-unattached",
        &["ec2:volume"],
        90,
        "delete",
        "snapshot the volume, then delete it",
        "an EBS volume attached to nothing for 7 days or more",
        ebs_unattached,
    ),
    waste(
        "aws-ebs-on-stopped-instance",
        &["ec2:volume"],
        85,
        "snapshot_delete",
        "snapshot the volume and delete it with its instance",
        "an EBS volume attached to an instance stopped for 30 days or more",
        ebs_on_stopped,
    ),
    waste(
        "aws-ebs-on-idle-instance",
        &["ec2:volume"],
        80,
        "snapshot_delete",
        "snapshot the volume and remove it with its idle instance",
        "an EBS volume attached to an instance idle by CPU and network over 7 days",
        ebs_on_idle,
    ),
    optimize(
        "aws-ebs-gp2-to-gp3",
        &["ec2:volume"],
        30,
        "resize",
        "change the volume type to gp3 (same baseline performance, 20% cheaper)",
        "a gp2 volume in use",
        ebs_gp2,
    ),
    waste(
        "aws-ec2-idle",
        &["ec2:instance"],
        85,
        "stop",
        "stop the instance (or downsize it if something still needs it)",
        "a running instance under 5% CPU and 100 MB of network over 7 days",
        ec2_idle,
    ),
    waste(
        "aws-ec2-stopped",
        &["ec2:instance"],
        85,
        "delete",
        "create an AMI, then terminate the instance and its volumes",
        "an instance stopped for 30 days or more",
        ec2_stopped,
    ),
    waste(
        "aws-eip-unassociated",
        &["ec2:eip"],
        90,
        "release",
        "release the address",
        "an Elastic IP associated with nothing that no DNS record points at",
        eip_unassociated,
    ),
    waste(
        "aws-ebs-snapshot-orphaned",
        &["ec2:snapshot"],
        80,
        "snapshot_delete",
        "delete the snapshot (copy it to cold storage first if it must be kept)",
        "an EBS snapshot 30 days or older whose volume no longer exists",
        snapshot_orphaned,
    ),
    waste(
        "aws-ami-unused",
        &["ec2:image"],
        80,
        "delete",
        "deregister the image and delete its snapshots",
        "a machine image 90 days or older that no instance runs from",
        ami_unused,
    ),
    waste(
        "aws-logs-silent",
        &["logs:log-group"],
        80,
        "delete",
        "export what must be kept, then delete the log group",
        "a log group that received nothing for 30 days but still stores data",
        logs_silent,
    ),
    optimize(
        "aws-logs-never-expire",
        &["logs:log-group"],
        40,
        "resize",
        "set a retention period (30 days keeps about one month of logs)",
        "a log group that is growing and never expires its events",
        logs_never_expire,
    ),
    waste(
        "aws-nat-idle",
        &["ec2:nat-gateway"],
        85,
        "delete",
        "delete the NAT gateway and release its address",
        "a NAT gateway that processed no bytes over 7 days",
        nat_idle,
    ),
    waste(
        "aws-elb-idle",
        &["elb:load-balancer"],
        85,
        "delete",
        "delete the load balancer",
        "a load balancer with no requests and no connections over 7 days",
        elb_idle,
    ),
    waste(
        "aws-vpc-endpoint-idle",
        &["ec2:vpc-endpoint"],
        80,
        "delete",
        "delete the interface endpoint",
        "an interface VPC endpoint that processed no bytes over 7 days",
        vpce_idle,
    ),
    waste(
        "aws-rds-idle",
        &["rds:db"],
        85,
        "snapshot_delete",
        "take a final snapshot and delete the database",
        "an available database with no connections over 7 days",
        rds_idle,
    ),
    waste(
        "aws-rds-stopped",
        &["rds:db"],
        80,
        "snapshot_delete",
        "take a final snapshot and delete the database (stopped databases restart by themselves after 7 days)",
        "a stopped database, still billed for its storage",
        rds_stopped,
    ),
    waste(
        "aws-elasticache-idle",
        &["elasticache:cache"],
        85,
        "delete",
        "delete the cache cluster",
        "a cache cluster with no connections over 7 days",
        cache_idle,
    ),
    optimize(
        "aws-elasticache-overprovisioned",
        &["elasticache:cache"],
        40,
        "resize",
        "remove a node from the cluster",
        "a cache cluster of several nodes under 10% CPU over 7 days",
        cache_overprovisioned,
    ),
    waste(
        "aws-dynamodb-idle",
        &["dynamodb:table"],
        80,
        "snapshot_delete",
        "back the table up, then delete it",
        "a provisioned table with no reads and no writes over 7 days",
        dynamodb_idle,
    ),
    optimize(
        "aws-dynamodb-overprovisioned",
        &["dynamodb:table"],
        45,
        "resize",
        "switch the table to on-demand capacity",
        "a provisioned table using under 20% of its read and write capacity",
        dynamodb_overprovisioned,
    ),
    waste(
        "aws-lambda-uninvoked",
        &["lambda:function"],
        80,
        "delete",
        "delete the function (and its provisioned concurrency)",
        "a function not invoked for 90 days",
        lambda_uninvoked,
    ),
    waste(
        "aws-s3-stale",
        &["s3:bucket"],
        80,
        "quarantine",
        "block access for a while, then archive or delete the bucket",
        "a bucket with no requests for 30 days and no access for 90",
        s3_stale,
    ),
    optimize(
        "aws-s3-incomplete-multipart",
        &["s3:bucket"],
        50,
        "delete",
        "abort incomplete multipart uploads and add a lifecycle rule that does so after 7 days",
        "a bucket holding parts of multipart uploads that never completed",
        s3_multipart,
    ),
    waste(
        "aws-eks-cluster-empty",
        &["eks:cluster"],
        80,
        "delete",
        "delete the cluster",
        "an EKS cluster with no node groups",
        eks_empty,
    ),
    waste(
        "aws-eks-nodegroup-idle",
        &["eks:nodegroup"],
        80,
        "resize",
        "scale the node group to zero or delete it",
        "a node group whose instances are all idle or stopped",
        nodegroup_idle,
    ),
];

fn volume_facts<'a>(n: &'a Node<'_>) -> impl fmt::Display + 'a {
    storage_facts(n, [n.keys().volume_type, None], "unknown type")
}

/// Days a volume has been attached to nothing, when that is past the grace period.
fn unattached_days<'a>(n: &Node<'a>) -> Option<Days<'a>> {
    let k = n.keys();
    let attached = n.out(AttachedTo).next().is_some()
        || !n.is_empty(k.attached_to)
        || matches!(n.str(k.attachment_state), Some("attached" | "attaching"));
    if attached || !matches!(n.state(), "available" | "error") {
        return None;
    }
    let d = n.days_since_prop(k.last_attached_at).unwrap_or_else(|| n.age_days());
    (d >= GRACE_DAYS).then_some(d)
}

fn ebs_unattached(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let d = unattached_days(n)?;
    Some(why.hit(
        n.cost(),
        format_args!("unattached for {}, {}", days(d), volume_facts(n)),
    ))
}

fn ebs_on_stopped(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let (instance, Unused::Stopped(d)) = attached_machine(n)? else {
        return None;
    };
    Some(why.hit(
        n.cost(),
        format_args!("attached to {instance}, stopped for {}; {}", days(d), volume_facts(n)),
    ))
}

fn ebs_on_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let (instance, idle @ Unused::Idle(..)) = attached_machine(n)? else {
        return None;
    };
    Some(why.hit(
        n.cost(),
        format_args!("attached to {instance}, {}; {}", idle.describe(), volume_facts(n)),
    ))
}

fn ebs_gp2(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.str(k.volume_type) != Some("gp2") {
        return None;
    }
    // Waste rules speak for volumes nobody uses.
    if unattached_days(n).is_some() || attached_machine(n).is_some() {
        return None;
    }
    let size = n.num(k.size_gib)?;
    let per_gib = prices::rate("aws", "gp2", n.region())? - prices::rate("aws", "gp3", n.region())?;
    let savings = size * per_gib;
    (savings >= 0.01).then(|| {
        why.hit(
            savings,
            format_args!("{size:.0} GiB gp2; gp3 costs {} less", usd(savings)),
        )
    })
}

fn ec2_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let Unused::Idle(cpu, net) = unused_machine(n)? else {
        return None;
    };
    Some(why.hit(
        n.cost(),
        format_args!("{} {}", Unused::Idle(cpu, net).describe(), machine_facts(n)),
    ))
}

fn ec2_stopped(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let Unused::Stopped(d) = unused_machine(n)? else {
        return None;
    };
    // What is attached to it: volumes, and also interfaces and addresses.
    let volumes: Vec<Node<'_>> = n.inc(AttachedTo).filter(|v| v.ty() == "ec2:volume").collect();
    let held: f64 = volumes.iter().map(Node::cost).sum();
    // The instance bills nothing while stopped; its volumes are their own findings.
    Some(why.hit(
        n.cost(),
        format_args!(
            "stopped for {}; its {} {} {}",
            days(d),
            volumes.len(),
            if volumes.len() == 1 {
                "volume still bills"
            } else {
                "volumes still bill"
            },
            usd(held)
        ),
    ))
}

fn eip_unassociated(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.out(AttachedTo).next().is_some() || !n.is_empty(k.association_id) || !n.is_empty(k.attached_to) {
        return None;
    }
    let ip = n.str(k.public_ip).unwrap_or("");
    if n.dns_points_at(ip) {
        return None;
    }
    let d = n.age_days();
    Some(why.hit(
        n.cost(),
        format_args!("{ip} associated with nothing ({} old), {}", days(d), usd(n.cost())),
    ))
}

fn snapshot_orphaned(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let source = n.str(k.source_volume_id)?;
    let d = n.age_days();
    if n.volume_exists(source) || d < 30 {
        return None;
    }
    let size = n.num(k.size_gib).unwrap_or(0.0);
    Some(why.hit(
        n.cost(),
        format_args!(
            "{} old, volume {source} no longer exists, {size:.0} GiB, {}",
            days(d),
            usd(n.cost())
        ),
    ))
}

fn ami_unused(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let d = n.age_days();
    if d < 90 || n.inc(Uses).any(|u| u.ty() == "ec2:instance") {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!("{} old, no instance runs from it, {}", days(d), usd(n.cost())),
    ))
}

fn logs_silent(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let ingested = n.num(k.ingested_bytes_30d)?;
    let stored = n.num(k.stored_gib).unwrap_or(0.0);
    if ingested > 0.0 || stored <= 0.0 || n.age_days() < 30 {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!("nothing written for 30 days, {stored:.1} GiB stored, {}", usd(n.cost())),
    ))
}

fn logs_never_expire(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let ingested = n.num(k.ingested_bytes_30d)?;
    let stored = n.num(k.stored_gib)?;
    let retention = n.num(k.retention_days).unwrap_or(0.0);
    if retention > 0.0 || ingested <= 0.0 {
        return None;
    }
    // With 30 days of retention about one month of ingest stays stored.
    let excess = stored - ingested / 1_073_741_824.0;
    let savings = excess * prices::rate("aws", "logs-storage", n.region())?;
    (savings >= 0.01).then(|| {
        why.hit(
            savings,
            format_args!(
                "never expires, {stored:.1} GiB stored and {} written in 30 days; 30-day retention saves {}",
                bytes(ingested),
                usd(savings)
            ),
        )
    })
}

/// Every named metric present and zero.
fn all_zero(n: &Node<'_>, keys: &[Option<svc_graph::ids::Sym>]) -> bool {
    let mut present = false;
    for v in keys.iter().filter_map(|k| n.num(*k)) {
        if v != 0.0 {
            return false;
        }
        present = true;
    }
    present
}

fn nat_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.state() != "available" || !all_zero(n, &[k.bytes_processed_7d, k.connections_7d]) {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!("no bytes processed in 7 days, {}", usd(n.cost())),
    ))
}

fn elb_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if !all_zero(n, &[k.request_count_7d, k.connections_7d]) {
        return None;
    }
    let targets = n.num(k.healthy_targets).unwrap_or(0.0);
    Some(why.hit(
        n.cost(),
        format_args!(
            "no requests or connections in 7 days, {targets:.0} healthy targets, {}",
            usd(n.cost())
        ),
    ))
}

fn vpce_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if !all_zero(n, &[k.bytes_processed_7d]) {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!("no bytes processed in 7 days, {}", usd(n.cost())),
    ))
}

fn rds_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.state() != "available" || !all_zero(n, &[k.connections_7d]) {
        return None;
    }
    let cpu = n.num(k.cpu_avg_7d).unwrap_or(0.0);
    Some(why.hit(
        n.cost(),
        format_args!("no connections in 7 days ({cpu:.1}% CPU), {}", usd(n.cost())),
    ))
}

fn rds_stopped(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    if n.state() != "stopped" {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!("stopped, storage still billed: {}", usd(n.cost())),
    ))
}

fn cache_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if !all_zero(n, &[k.connections_7d]) {
        return None;
    }
    let nodes = n.num(k.cache_nodes).unwrap_or(1.0);
    Some(why.hit(
        n.cost(),
        format_args!("no connections in 7 days, {nodes:.0} node(s), {}", usd(n.cost())),
    ))
}

fn cache_overprovisioned(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    let nodes = n.num(k.cache_nodes)?;
    let cpu = n.num(k.cpu_avg_7d)?;
    let conns = n.num(k.connections_7d)?;
    if nodes < 2.0 || cpu >= 10.0 || conns <= 0.0 {
        return None;
    }
    let savings = n.cost() / nodes;
    Some(why.hit(
        savings,
        format_args!("{nodes:.0} nodes at {cpu:.1}% CPU; one fewer saves {}", usd(savings)),
    ))
}

fn provisioned(n: &Node<'_>) -> bool {
    n.str(n.keys().billing_mode) == Some("PROVISIONED")
}

fn dynamodb_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if !provisioned(n) || !all_zero(n, &[k.consumed_read_7d, k.consumed_write_7d]) {
        return None;
    }
    let (rcu, wcu) = (
        n.num(k.read_capacity).unwrap_or(0.0),
        n.num(k.write_capacity).unwrap_or(0.0),
    );
    Some(why.hit(
        n.cost(),
        format_args!(
            "no reads or writes in 7 days, {rcu:.0} RCU / {wcu:.0} WCU provisioned, {}",
            usd(n.cost())
        ),
    ))
}

/// Seconds in 7 days: capacity units are per second.
const WEEK_S: f64 = 604_800.0;

fn dynamodb_overprovisioned(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if !provisioned(n) {
        return None;
    }
    let (rcu, wcu) = (n.num(k.read_capacity)?, n.num(k.write_capacity)?);
    let (reads, writes) = (n.num(k.consumed_read_7d)?, n.num(k.consumed_write_7d)?);
    if reads + writes == 0.0 || rcu + wcu == 0.0 {
        return None;
    }
    let used = |consumed: f64, units: f64| if units > 0.0 { consumed / (units * WEEK_S) } else { 0.0 };
    let (ru, wu) = (used(reads, rcu), used(writes, wcu));
    if ru >= 0.2 || wu >= 0.2 {
        return None;
    }
    let region = n.region();
    let capacity =
        rcu * prices::rate("aws", "dynamodb-rcu", region)? + wcu * prices::rate("aws", "dynamodb-wcu", region)?;
    // On-demand: $0.25 per million reads, $1.25 per million writes.
    let month = 30.0 / 7.0;
    let on_demand = reads * month / 1e6 * 0.25 + writes * month / 1e6 * 1.25;
    let savings = capacity - on_demand;
    (savings >= 1.0).then(|| {
        why.hit(
            savings,
            format_args!(
                "uses {:.0}% of read and {:.0}% of write capacity; on-demand saves {}",
                ru * 100.0,
                wu * 100.0,
                usd(savings)
            ),
        )
    })
}

fn lambda_uninvoked(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let k = n.keys();
    if n.num(k.invocations_90d)? > 0.0 {
        return None;
    }
    let since = fmt::from_fn(|f| match n.days_since_prop(k.last_invoked_at) {
        Some(d) => write!(f, "last invoked {} ago", days(d)),
        None => f.write_str("never invoked"),
    });
    let pc = fmt::from_fn(|f| write!(f, "{:.0}", n.num(k.provisioned_concurrency).unwrap_or(0.0)));
    Some(why.hit(
        n.cost(),
        format_args!(
            "no invocations in 90 days ({since}), provisioned concurrency {pc}, {}",
            usd(n.cost())
        ),
    ))
}

fn s3_stale(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    stale_storage(n, why, n.keys().requests_30d)
}

fn s3_multipart(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let gib = n.num(n.keys().incomplete_multipart_gib)?;
    if gib <= 0.0 {
        return None;
    }
    let savings = gib * prices::rate("aws", "s3-standard", n.region())?;
    Some(why.hit(
        savings,
        format_args!("{gib:.1} GiB of incomplete multipart uploads, {}", usd(savings)),
    ))
}

fn eks_empty(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    if n.out(Contains).any(|g| g.ty() == "eks:nodegroup") || n.age_days() < GRACE_DAYS {
        return None;
    }
    Some(why.hit(
        n.cost(),
        format_args!("no node groups; the control plane alone bills {}", usd(n.cost())),
    ))
}

fn nodegroup_idle(n: &Node<'_>, why: &mut Why<'_>) -> Option<Hit> {
    let members: Vec<Node<'_>> = n.out(Contains).filter(|m| m.ty() == "ec2:instance").collect();
    if members.is_empty() || !members.iter().all(|m| unused_machine(m).is_some()) {
        return None;
    }
    let held: f64 = members.iter().map(Node::cost).sum();
    // Its instances are findings of their own; counting them again would double the savings.
    Some(why.hit(
        0.0,
        format_args!(
            "all {} instances idle or stopped ({} between them)",
            members.len(),
            usd(held)
        ),
    ))
}
