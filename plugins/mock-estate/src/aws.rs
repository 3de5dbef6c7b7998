//! AWS application stacks: a VPC with subnets and security groups,
//! instances behind a load balancer and a DNS record, a data tier,
//! snapshots, and the forgotten resources that make up their waste.

use svc_engine::Relation::{Contains, FlowsTo};

use super::aws_data::{self, DataTier};
use super::catalog::{self, EC2};
use super::ec2::{Attach, Ec2Spec, Placement, eip, instance, role, snapshot, volume};
use super::emit::{H, Scope, Unit, Usage};
use super::names::APPS;
use super::names::text;

/// An application stack: network, instances behind a load balancer and a
/// DNS record, a data tier, snapshots, and forgotten resources (waste).
pub(crate) fn app_stack(u: &mut Unit<'_>) {
    let s = u.s;
    let k = &s.k;
    let mut r = u.rng(1);
    let acct = r.pick(&s.aws_accounts);
    let region = r.pick(&s.aws_regions);
    u.scope = Scope {
        provider: s.aws,
        region: region.s,
        account: acct.s(),
    };
    u.label(acct.env, &mut r);
    let app = text!("{}-{:x}", r.pick(APPS), u.index);
    let subnets = 2 + r.below(2);
    let nat = r.chance(0.6).then(|| r.chance(0.25));
    let image = r.chance(0.5);
    let orphan_images = usize::from(r.chance(0.3));
    let data_volumes = [r.chance(0.4), r.chance(0.4)];
    let workers = 1 + r.below(4);
    let spot = r.chance(0.3);
    let stopped = [0, 0, 1, 1, 2][r.below(5)];
    let loose_volumes = [0, 1, 1, 2, 3][r.below(5)];
    let eips = r.chance(0.7);
    let loose_eips = [0, 0, 1, 2][r.below(4)];
    let idle_lb = r.chance(0.15);
    let records = 1 + r.below(2);
    let tier = DataTier::shape(&mut r);
    let snapshots = 1 + r.below(2);
    let old_snapshots = [0, 1, 1, 2, 3][r.below(5)];

    let vpc_slot = u.slot(false);
    let cidr = vpc_slot.h % 200;
    let vpc = u.node(
        &vpc_slot,
        u.at(s.t.ec2_vpc, s.st.available).created(u.old(&vpc_slot, 400, 1500)),
        format_args!("vpc-0{:016x}", vpc_slot.ih()),
        |w| {
            w.str(k.cidr_block, &text!("10.{cidr}.0.0/16"));
            w.bool(k.is_default, false);
        },
    );
    let vpc_id = u.id(vpc);
    let mut nets = Vec::with_capacity(subnets);
    for i in 0..subnets {
        let slot = u.slot(false);
        let zone = region.zones[i % region.zones.len()];
        let n = u.at(s.t.ec2_subnet, s.st.available).created(u.old(&slot, 300, 1500));
        let h = u.node(&slot, n, format_args!("subnet-0{:016x}", slot.ih()), |w| {
            w.str(k.cidr_block, &text!("10.{cidr}.{}.0/24", i * 16));
            w.str(k.availability_zone, zone);
            w.str(k.vpc_id, &vpc_id);
            w.int(k.available_ips, (slot.h % 200) as i64 + 40);
        });
        u.edge(vpc, h, Contains, "CONTAINS");
        nets.push((h, zone));
    }
    let mut sgs = [None; 3];
    for (i, name) in ["web", "data", "default"].into_iter().enumerate() {
        let slot = u.slot(false);
        let n = u
            .at(s.t.ec2_security_group, s.st.active)
            .created(u.old(&slot, 300, 1500));
        sgs[i] = u.node(&slot, n, format_args!("sg-0{:016x}", slot.ih()), |w| {
            w.str(k.group_name, &text!("{app}-{name}"));
            w.str(k.vpc_id, &vpc_id);
            w.int(k.ingress_rules, 1 + (slot.h % 6) as i64);
        });
        u.edge(vpc, sgs[i], Contains, "CONTAINS");
    }
    let subnet_handles: Vec<Option<H>> = nets.iter().map(|n| n.0).collect();
    if let Some(idle) = nat {
        nat_gateway(u, &subnet_handles, idle);
    }
    let acct = u.scope.account.name;
    let role = role(
        u,
        &text!("arn:aws:iam::{acct}:role/{app}-instance-role"),
        "ec2.amazonaws.com",
    );
    let log_slot = u.slot(false);
    let logs = aws_data::log_group(u, log_slot, &text!("/aws/ec2/{app}"), false);
    let mut at = Placement {
        zone: nets[0].1,
        subnet: nets[0].0,
        sgs: [sgs[0], sgs[2]],
        role,
        logs,
        ..Placement::default()
    };
    if image {
        at.image = ami(u, &app, false);
        at.image_id = u.id(at.image);
    }
    for _ in 0..orphan_images {
        ami(u, &app, true);
    }
    let mut serving = Vec::with_capacity(2 + workers);
    let mut roots = Vec::with_capacity(2);
    for data_volume in data_volumes {
        let slot = u.slot(false);
        let (h, root) = instance(
            u,
            slot,
            &Ec2Spec {
                types: EC2,
                usage: Usage::Busy,
                spot: false,
                data_volume,
            },
            &at,
        );
        serving.push(h);
        roots.push(u.id(root));
    }
    let first_id = u.id(serving[0]);
    for i in 0..workers {
        let slot = u.slot(true);
        (at.zone, at.subnet) = (nets[(i + 1) % nets.len()].1, nets[(i + 1) % nets.len()].0);
        serving.push(
            instance(
                u,
                slot,
                &Ec2Spec {
                    types: EC2,
                    usage: Usage::Busy,
                    spot,
                    data_volume: false,
                },
                &at,
            )
            .0,
        );
    }
    (at.image, at.logs) = (None, None);
    at.image_id.clear();
    for _ in 0..stopped {
        let slot = u.slot(false);
        instance(
            u,
            slot,
            &Ec2Spec {
                types: EC2,
                usage: Usage::Stopped,
                spot: false,
                data_volume: false,
            },
            &at,
        );
    }
    for _ in 0..loose_volumes {
        let slot = u.slot(true);
        volume(u, slot, &Attach::Detached, at.zone, (20, 500), true, "");
    }
    if eips {
        let slot = u.slot(false);
        eip(u, slot, Some((serving[0], &first_id)));
    }
    for _ in 0..loose_eips {
        let slot = u.slot(false);
        eip(u, slot, None);
    }
    let front = [sgs[0], sgs[2]];
    let (lb, dns) = aws_data::load_balancer(u, &app, &serving, &subnet_handles, &front, false);
    if idle_lb {
        aws_data::load_balancer(u, &app, &[], &subnet_handles, &front, true);
    }
    for i in 0..records {
        aws_data::record(u, &app, i, lb, &dns);
    }
    tier.write(u, &app, &serving, &subnet_handles, &[sgs[1], sgs[2]]);
    for i in 0..snapshots {
        let slot = u.slot(true);
        snapshot(u, slot, &roots[i % roots.len()], 8 + slot.h % 100, false);
    }
    for _ in 0..old_snapshots {
        let slot = u.slot(false);
        snapshot(u, slot, "", 20 + slot.h % 500, true);
    }
}

/// A NAT gateway in the first subnet that the others route through; an
/// idle one (no routes, no traffic for a week) is waste.
fn nat_gateway(u: &mut Unit<'_>, subnets: &[Option<H>], idle: bool) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let slot = u.slot(false);
    let mut v = slot.vrng();
    let gb = if idle { 0 } else { v.range(5, 4000) };
    let conns = if idle { 0 } else { v.range(1_000, 2_000_000) as i64 };
    let cost = catalog::NAT_USD_MO + gb as f64 * 30.0 / 7.0 * catalog::NAT_USD_GB;
    let n = u
        .at(s.t.ec2_nat_gateway, s.st.available)
        .cost(cost)
        .created(u.old(&slot, 100, 900))
        .waste(idle);
    let h = u.node(&slot, n, format_args!("nat-0{:016x}", slot.ih()), |w| {
        w.int(k.bytes_processed_7d, (gb * 1_073_741_824) as i64);
        w.int(k.connections_7d, conns);
    });
    u.edge(subnets.first().copied().flatten(), h, Contains, "CONTAINS");
    if !idle {
        for sn in subnets.iter().skip(1) {
            u.edge(*sn, h, FlowsTo, "ROUTES_TO");
        }
    }
    h
}

/// A machine image; an orphan one (no instance boots from it, years old) is waste.
fn ami(u: &mut Unit<'_>, app: &str, orphan: bool) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let slot = u.slot(false);
    let size = 8 + slot.h % 40;
    let created = if orphan {
        u.old(&slot, 200, 1400)
    } else {
        u.created(&slot, 10, 120)
    };
    let n = u
        .at(s.t.ec2_image, s.st.available)
        .cost(size as f64 * catalog::EBS_SNAPSHOT_GIB)
        .created(created);
    u.node(&slot, n.waste(orphan), format_args!("ami-0{:016x}", slot.ih()), |w| {
        w.str(k.name, &text!("{app}-base-{}", slot.h % 1000));
        w.int(k.size_gib, size as i64);
        w.str(
            k.architecture,
            if slot.h.is_multiple_of(3) { "arm64" } else { "x86_64" },
        );
    })
}
