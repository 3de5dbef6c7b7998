//! EC2 building blocks shared by application stacks and Kubernetes worker
//! pools: instances with their volumes, snapshots, elastic IPs, and the IAM
//! roles their instance profiles carry.

use svc_engine::Relation::{AttachedTo, Contains, Grants, SecuredBy, Uses};

use super::catalog::{self, EBS, Machine};
use super::clock::{epoch_time, rfc3339};
use super::emit::{H, Slot, Unit, Usage};
use super::names::text;
/// Where an instance runs.
#[derive(Clone, Default)]
pub(crate) struct Placement {
    pub zone: &'static str,
    pub subnet: Option<H>,
    pub sgs: [Option<H>; 2],
    /// The image it boots from, and its id.
    pub image: Option<H>,
    pub image_id: String,
    /// Its node group, when it is a Kubernetes worker.
    pub group: Option<H>,
    /// The role of its instance profile.
    pub role: Option<H>,
    /// The log group its agent writes to.
    pub logs: Option<H>,
}

/// What kind of instance to write.
pub(crate) struct Ec2Spec {
    pub types: &'static [Machine],
    pub usage: Usage,
    pub spot: bool,
    pub data_volume: bool,
}

/// The private address of an instance, fixed for its incarnation.
pub(crate) fn private_ip(slot: &Slot) -> [u64; 3] {
    let h = slot.ih();
    [(h >> 8) % 64, (h >> 16) % 256, 4 + (h >> 24) % 250]
}

/// An instance with its root volume and maybe a data volume, which share
/// its lifecycle. Declares 2 or 3 slots; returns the instance and its root volume.
pub(crate) fn instance(u: &mut Unit<'_>, slot: Slot, spec: &Ec2Spec, at: &Placement) -> (Option<H>, Option<H>) {
    let s = u.s;
    let k = &s.k;
    let root = u.follow(&slot);
    let data = spec.data_volume.then(|| u.follow(&slot));
    let mut r = slot.rng();
    let mut v = slot.vrng();
    let base = r.below(spec.types.len());
    // Now and then a version is resized one size up.
    let waste = spec.usage != Usage::Busy;
    let stopped = spec.usage == Usage::Stopped;
    let resized = !waste && v.chance(0.15);
    let m = &spec.types[if resized {
        (base + 1).min(spec.types.len() - 1)
    } else {
        base
    }];
    let [b, c, d] = private_ip(&slot);
    let ip = text!("10.{b}.{c}.{d}");
    let price = if spec.spot { m.usd_mo * 0.35 } else { m.usd_mo };
    let (state, cost, cpu, net) = match spec.usage {
        Usage::Stopped => (s.st.stopped, 0.0, 0.0, 0),
        Usage::Idle => (
            s.st.running,
            price,
            v.float(0.2, 3.0),
            v.range(1_000_000, 80_000_000) as i64,
        ),
        Usage::Busy => (
            s.st.running,
            price,
            v.float(6.0, 78.0),
            v.range(200_000_000, 90_000_000_000) as i64,
        ),
    };
    let stopped_at = stopped.then(|| rfc3339(u.old(&slot, 35, 400)));
    let created = if waste {
        u.old(&slot, 420, 1100)
    } else {
        u.created(&slot, 20, 700)
    };
    let n = u.at(s.t.ec2_instance, state).cost(cost).created(created).waste(waste);
    let lifecycle = if spec.spot { "spot" } else { "on-demand" };
    let h = u.node(&slot, n, format_args!("i-0{:016x}", slot.ih()), |w| {
        w.str(k.instance_type, m.name);
        w.int(k.vcpus, m.vcpus);
        w.float(k.memory_gib, m.mem_gib);
        w.str(k.availability_zone, at.zone);
        w.str(k.private_ip, &ip);
        w.str(k.lifecycle, lifecycle);
        w.float(k.cpu_avg_7d, cpu);
        w.int(k.network_bytes_7d, net);
        if !at.image_id.is_empty() {
            w.str(k.image_id, &at.image_id);
        }
        if let Some(t) = &stopped_at {
            w.str(k.stopped_at, t.as_str());
        }
    });
    u.edge(at.subnet, h, Contains, "MEMBER_OF");
    u.edge(at.group, h, Contains, "CONTAINS");
    for sg in at.sgs {
        u.edge(h, sg, SecuredBy, "SECURED_BY");
    }
    u.edge(h, at.image, Uses, "DEPENDS_ON");
    u.edge(at.role, h, Grants, "GRANTS");
    u.edge(h, at.logs, Uses, "WRITES");
    let iid = u.id(h);
    let to = Attach::To { instance: h, id: &iid };
    let root = volume(u, root, &to, at.zone, (8, 100), waste, "/dev/xvda");
    if let Some(data) = data {
        volume(u, data, &to, at.zone, (50, 1000), waste, "/dev/sdf");
    }
    (h, root)
}

/// What a volume is attached to.
pub(crate) enum Attach<'x> {
    To {
        instance: Option<H>,
        id: &'x str,
    },
    /// Unattached for a month or more: waste.
    Detached,
}

/// An EBS volume of `size` GiB (`lo..hi`); attached volumes grow a little
/// with their versions.
pub(crate) fn volume(
    u: &mut Unit<'_>,
    slot: Slot,
    attach: &Attach<'_>,
    zone: &'static str,
    size: (u64, u64),
    waste: bool,
    device: &str,
) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let mut r = slot.rng();
    let class = r.pick(EBS);
    let base = r.range(size.0, size.1);
    let encrypted = r.chance(0.7);
    let io1_iops = r.range(10, 60) * 100;
    let (to, detached) = match attach {
        Attach::To { instance, id } => (Some((*instance, *id)), false),
        Attach::Detached => (None, true),
    };
    let size_gib = if detached {
        base
    } else {
        base + 10 * slot.version.min(6)
    };
    let iops = match class.name {
        "io1" => io1_iops,
        "gp3" => 3000,
        "gp2" => (size_gib * 3).clamp(100, 16_000),
        _ => 0,
    };
    let mut cost = size_gib as f64 * class.usd_gib_mo;
    if class.name == "io1" {
        cost += iops as f64 * catalog::EBS_IOPS_USD_MO;
    }
    let state = if detached { s.st.available } else { s.st.in_use };
    let created = if detached || waste {
        u.old(&slot, 320, 1000)
    } else {
        u.created(&slot, 20, 700)
    };
    let last_attached = detached.then(|| rfc3339(u.old(&slot, 31, 300)));
    let n = u
        .at(s.t.ec2_volume, state)
        .cost(cost)
        .created(created)
        .waste(waste || detached);
    let h = u.node(&slot, n, format_args!("vol-0{:016x}", slot.ih()), |w| {
        w.int(k.size_gib, size_gib as i64);
        w.str(k.volume_type, class.name);
        w.int(k.iops, iops as i64);
        w.str(k.availability_zone, zone);
        w.bool(k.encrypted, encrypted);
        match to {
            Some((_, id)) => {
                w.str(k.attached_to, id);
                w.str(k.attachment_state, "attached");
                w.str(k.device, device);
            }
            None => {
                w.null(k.attached_to);
                w.str(k.attachment_state, "detached");
            }
        }
        if let Some(t) = &last_attached {
            w.str(k.last_attached_at, t.as_str());
        }
    });
    if let Some((instance, _)) = to {
        u.edge(h, instance, AttachedTo, "ATTACHED_TO");
    }
    h
}

/// An EBS snapshot of `size_gib`; an old one whose volume is gone is waste.
pub(crate) fn snapshot(u: &mut Unit<'_>, slot: Slot, source: &str, size_gib: u64, old: bool) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let created = if old {
        u.old(&slot, 200, 1200)
    } else {
        u.created(&slot, 1, 25)
    };
    let deleted_source = text!("vol-0{:016x}", slot.ih().rotate_left(17));
    let source = if old || source.is_empty() {
        deleted_source.as_str()
    } else {
        source
    };
    let n = u
        .at(s.t.ec2_snapshot, s.st.completed)
        .cost(size_gib as f64 * catalog::EBS_SNAPSHOT_GIB);
    let n = n.created(created).waste(old);
    u.node(&slot, n, format_args!("snap-0{:016x}", slot.ih()), |w| {
        w.int(k.size_gib, size_gib as i64);
        w.str(k.source_volume_id, source);
        w.bool(k.encrypted, true);
    })
}

/// An elastic IP, associated with an instance or (waste) with nothing.
pub(crate) fn eip(u: &mut Unit<'_>, slot: Slot, to: Option<(Option<H>, &str)>) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let h = slot.ih();
    let ip = text!(
        "{}.{}.{}.{}",
        [3, 18, 34, 52, 54][(h % 5) as usize],
        (h >> 8) % 256,
        (h >> 16) % 256,
        (h >> 24) % 254 + 1
    );
    let waste = to.is_none();
    let state = if waste { s.st.available } else { s.st.in_use };
    let created = if waste {
        u.old(&slot, 60, 900)
    } else {
        u.created(&slot, 30, 900)
    };
    let n = u
        .at(s.t.ec2_eip, state)
        .cost(catalog::EIP_USD_MO)
        .created(created)
        .waste(waste);
    let e = u.node(&slot, n, format_args!("eipalloc-0{h:016x}"), |w| {
        w.str(k.public_ip, &ip);
        w.str(k.domain, "vpc");
        match to {
            Some((_, id)) => {
                w.str(k.attached_to, id);
                w.str(k.association_id, &text!("eipassoc-0{:016x}", h.rotate_left(9)));
            }
            None => {
                w.null(k.attached_to);
                w.null(k.association_id);
            }
        }
    });
    if let Some((instance, _)) = to {
        u.edge(e, instance, AttachedTo, "ATTACHED_TO");
    }
    e
}

/// An IAM role (global) that `principal` assumes; `arn` is its id.
pub(crate) fn role(u: &mut Unit<'_>, arn: &str, principal: &str) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let slot = u.slot(false);
    let used = rfc3339(epoch_time(slot.since).saturating_sub(slot.h % 7_200));
    let name = arn.rsplit('/').next().unwrap_or(arn);
    let n = u
        .at(s.t.iam_role, s.st.active)
        .region(s.global)
        .created(u.old(&slot, 100, 1500));
    u.node(&slot, n, format_args!("{arn}"), |w| {
        w.str(k.role_name, name);
        w.str(k.assumed_by, principal);
        w.str(k.last_used_at, used.as_str());
        w.int(k.attached_policies, 1 + (slot.h % 5) as i64);
    })
}
