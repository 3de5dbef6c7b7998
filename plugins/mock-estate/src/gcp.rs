//! Google Cloud: Compute Engine instances with their disks (shared with GKE
//! node pools), and the project unit: instances, addresses, snapshots, a
//! Cloud SQL instance and buckets, plus forgotten resources (waste).

use svc_engine::Relation::{AttachedTo, Contains, Uses};

use super::catalog::{self, CLOUD_SQL, GCE, Machine, PD};
use super::clock::{epoch_time, rfc3339};
use super::emit::{H, Scope, Slot, Unit, Usage};
use super::names::text;
use super::names::{APPS, BUCKET_PURPOSES};

/// What kind of instance to write.
pub(crate) struct GceSpec<'x> {
    pub types: &'static [Machine],
    /// `Stopped` is the TERMINATED status.
    pub usage: Usage,
    pub data_disk: bool,
    pub zone: &'x str,
    /// The GKE cluster it belongs to.
    pub cluster: Option<H>,
}

/// An instance named `name` with its boot disk (and maybe a data disk),
/// which share its lifecycle. Returns the instance.
pub(crate) fn instance(u: &mut Unit<'_>, slot: Slot, spec: &GceSpec<'_>, name: &str) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let boot = u.follow(&slot);
    let data = spec.data_disk.then(|| u.follow(&slot));
    let (mut r, mut v) = (slot.rng(), slot.vrng());
    let m = r.pick(spec.types);
    let ip = text!(
        "10.{}.{}.{}",
        128 + (slot.ih() >> 8) % 64,
        (slot.ih() >> 16) % 256,
        2 + (slot.ih() >> 24) % 250
    );
    let waste = spec.usage != Usage::Busy;
    let (state, cost, cpu, net) = match spec.usage {
        Usage::Stopped => (s.st.terminated, 0.0, 0.0, 0),
        Usage::Idle => (
            s.st.running_upper,
            m.usd_mo,
            v.float(0.2, 3.0),
            v.range(1_000_000, 60_000_000) as i64,
        ),
        Usage::Busy => (
            s.st.running_upper,
            m.usd_mo,
            v.float(4.0, 80.0),
            v.range(100_000_000, 60_000_000_000) as i64,
        ),
    };
    let stopped = (spec.usage == Usage::Stopped).then(|| rfc3339(u.old(&slot, 40, 500)));
    let created = if waste {
        u.old(&slot, 510, 1200)
    } else {
        u.created(&slot, 10, 800)
    };
    let n = u.at(s.t.gcp_instance, state).cost(cost).created(created).waste(waste);
    let h = u.node(
        &slot,
        n,
        format_args!("{}", 1_000_000_000_000_000_000 + slot.ih() % 8_000_000_000_000_000_000),
        |w| {
            w.str(k.name, name);
            w.str(k.machine_type, m.name);
            w.int(k.vcpus, m.vcpus);
            w.float(k.memory_gib, m.mem_gib);
            w.str(k.zone, spec.zone);
            w.str(k.internal_ip, &ip);
            w.float(k.cpu_avg_7d, cpu);
            w.int(k.network_bytes_7d, net);
            if let Some(t) = &stopped {
                w.str(k.stopped_at, t.as_str());
            }
        },
    );
    u.edge(spec.cluster, h, Contains, "CONTAINS");
    disk(u, boot, Some((h, name)), name, spec.zone, (10, 200), waste);
    if let Some(data) = data {
        disk(
            u,
            data,
            Some((h, name)),
            &text!("{name}-data"),
            spec.zone,
            (100, 2000),
            waste,
        );
    }
    h
}

/// A persistent disk, attached to an instance or (waste) to nothing.
pub(crate) fn disk(
    u: &mut Unit<'_>,
    slot: Slot,
    to: Option<(Option<H>, &str)>,
    name: &str,
    zone: &str,
    size: (u64, u64),
    waste: bool,
) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let mut r = slot.rng();
    let class = r.pick(PD);
    let base = r.range(size.0, size.1);
    let gib = if to.is_some() {
        base + 10 * slot.version.min(5)
    } else {
        base
    };
    let detached = to.is_none();
    let created = if waste || detached {
        u.old(&slot, 300, 1100)
    } else {
        u.created(&slot, 10, 800)
    };
    let detached_at = detached.then(|| rfc3339(u.old(&slot, 31, 290)));
    let n = u
        .at(s.t.gcp_disk, s.st.ready_upper)
        .cost(gib as f64 * class.usd_gib_mo)
        .created(created);
    let h = u.node(&slot, n.waste(waste || detached), format_args!("{name}"), |w| {
        w.int(k.size_gib, gib as i64);
        w.str(k.disk_type, class.name);
        w.str(k.zone, zone);
        match to {
            Some((_, user)) => {
                w.str(k.attached_to, user);
                w.json(k.users, &text!("[\"{user}\"]"));
            }
            None => {
                w.null(k.attached_to);
                w.json(k.users, "[]");
            }
        }
        if let Some(t) = &detached_at {
            w.str(k.last_detached_at, t.as_str());
        }
    });
    if let Some((instance, _)) = to {
        u.edge(h, instance, AttachedTo, "ATTACHED_TO");
    }
    h
}

/// A project unit: instances with disks, a static address, a Cloud SQL
/// instance, buckets and snapshots, plus forgotten resources.
pub(crate) fn project(u: &mut Unit<'_>) {
    let s = u.s;
    let k = &s.k;
    let mut r = u.rng(3);
    let proj = r.pick(&s.gcp_projects);
    let region = r.pick(&s.gcp_regions);
    u.scope = Scope {
        provider: s.gcp,
        region: region.s,
        account: proj.s(),
    };
    u.label(proj.env, &mut r);
    let app = text!("{}-{:x}", r.pick(APPS), u.index);
    let instances = 2 + r.below(4);
    let data_disk = r.chance(0.4);
    let terminated = [0, 1, 1, 2][r.below(4)];
    let loose_disks = [0, 1, 1, 2, 3][r.below(5)];
    let address = r.chance(0.5);
    let reserved = [0, 0, 1, 2][r.below(4)];
    let sql = r.chance(0.7).then(|| r.chance(0.2));
    let buckets: Vec<bool> = (0..1 + r.below(2)).map(|_| r.chance(0.15)).collect();
    let old_snapshots = [0, 1, 1, 2, 3][r.below(5)];

    let mut vms = Vec::with_capacity(instances);
    let mut names = Vec::with_capacity(instances);
    for i in 0..instances {
        let slot = u.slot(i >= 2);
        let zone = region.zones[i % region.zones.len()];
        let name = text!("{app}-{i}-{:04x}", slot.ih() & 0xFFFF);
        let spec = GceSpec {
            types: GCE,
            usage: Usage::Busy,
            data_disk: data_disk && i == 0,
            zone,
            cluster: None,
        };
        vms.push(instance(u, slot, &spec, &name));
        names.push(name);
    }
    for i in 0..terminated {
        let slot = u.slot(false);
        let spec = GceSpec {
            types: GCE,
            usage: Usage::Stopped,
            data_disk: false,
            zone: region.zones[0],
            cluster: None,
        };
        instance(u, slot, &spec, &text!("{app}-old-{i}"));
    }
    for i in 0..loose_disks {
        let slot = u.slot(true);
        let name = text!("{app}-disk-{i}-{:06x}", slot.ih() & 0xFF_FFFF);
        disk(
            u,
            slot,
            None,
            &name,
            region.zones[i % region.zones.len()],
            (50, 1000),
            true,
        );
    }
    for i in 0..usize::from(address) + reserved {
        let slot = u.slot(false);
        let user = (i == 0 && address).then(|| (vms[0], names[0].as_str()));
        let ip = text!(
            "34.{}.{}.{}",
            64 + slot.h % 64,
            (slot.h >> 8) % 256,
            (slot.h >> 16) % 254 + 1
        );
        let waste = user.is_none();
        let state = if waste { s.st.reserved } else { s.st.in_use_upper };
        let n = u
            .at(s.t.gcp_address, state)
            .cost(catalog::GCP_STATIC_IP_USD_MO)
            .created(u.old(&slot, 40, 900));
        let h = u.node(&slot, n.waste(waste), format_args!("{app}-ip-{i}"), |w| {
            w.str(k.address, &ip);
            w.str(k.address_type, "EXTERNAL");
            match user {
                Some((_, name)) => w.json(k.users, &text!("[\"{name}\"]")),
                None => w.json(k.users, "[]"),
            }
        });
        if let Some((vm, _)) = user {
            u.edge(h, vm, AttachedTo, "ATTACHED_TO");
        }
    }
    if let Some(idle) = sql {
        let slot = u.slot(false);
        let (mut r, mut v) = (slot.rng(), slot.vrng());
        let tier = r.pick(CLOUD_SQL);
        let gib = r.range(10, 500);
        let (conns, cpu) = if idle {
            (0, v.float(0.3, 2.0))
        } else {
            (v.range(100, 80_000), v.float(5.0, 65.0))
        };
        let state = if !idle && v.below(10) == 0 {
            s.st.maintenance
        } else {
            s.st.runnable
        };
        let cost = tier.usd_mo + gib as f64 * 0.17;
        let n = u
            .at(s.t.gcp_sql, state)
            .cost(cost)
            .created(u.old(&slot, 60, 1000))
            .waste(idle);
        let h = u.node(
            &slot,
            n,
            format_args!("{}:{}:{app}-db", proj.name, region.s.name),
            |w| {
                w.str(k.tier, tier.name);
                w.str(
                    k.database_version,
                    if slot.h.is_multiple_of(2) {
                        "POSTGRES_15"
                    } else {
                        "MYSQL_8_0"
                    },
                );
                w.int(k.allocated_gib, gib as i64);
                w.int(k.connections_7d, conns as i64);
                w.float(k.cpu_avg_7d, cpu);
            },
        );
        if !idle {
            for vm in &vms {
                u.edge(*vm, h, Uses, "DEPENDS_ON");
            }
        }
    }
    for (i, &stale) in buckets.iter().enumerate() {
        let slot = u.slot(false);
        let (mut r, mut v) = (slot.rng(), slot.vrng());
        let gib = if stale {
            r.float(20.0, 5000.0)
        } else {
            v.float(1.0, 2000.0)
        };
        let requests = if stale { 0 } else { v.range(500, 20_000_000) as i64 };
        let accessed = rfc3339(if stale {
            u.old(&slot, 120, 900)
        } else {
            epoch_time(slot.since)
        });
        let purpose = BUCKET_PURPOSES[(u.index as usize + i) % BUCKET_PURPOSES.len()];
        let n = u
            .at(s.t.gcs_bucket, s.st.active)
            .cost(gib * catalog::GCS_GIB)
            .created(u.old(&slot, 100, 1500));
        let h = u.node(
            &slot,
            n.waste(stale),
            format_args!("{}-{app}-{purpose}", proj.name),
            |w| {
                w.float(k.size_gib, gib);
                w.str(k.storage_class, "STANDARD");
                w.int(k.requests_30d, requests);
                w.str(k.last_accessed_at, accessed.as_str());
            },
        );
        if !stale {
            for vm in if i == 0 { &vms[..] } else { &vms[..1] } {
                u.edge(*vm, h, Uses, "WRITES");
            }
        }
    }
    let recent = u.slot(true);
    snapshot(u, recent, &names[0], &app, false);
    for _ in 0..old_snapshots {
        let slot = u.slot(false);
        snapshot(u, slot, "", &app, true);
    }
}

/// A disk snapshot; an old one whose disk is gone is waste.
fn snapshot(u: &mut Unit<'_>, slot: Slot, source: &str, app: &str, old: bool) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let gib = 10 + slot.h % 400;
    let created = if old {
        u.old(&slot, 200, 1200)
    } else {
        u.created(&slot, 1, 20)
    };
    let gone = text!("{app}-deleted-{:04x}", slot.h & 0xFFFF);
    let source = if old || source.is_empty() {
        gone.as_str()
    } else {
        source
    };
    let n = u
        .at(s.t.gcp_snapshot, s.st.ready_upper)
        .cost(gib as f64 * catalog::GCP_SNAPSHOT_GIB)
        .created(created);
    u.node(
        &slot,
        n.waste(old),
        format_args!("{app}-snap-{:08x}", slot.ih() as u32),
        |w| {
            w.int(k.size_gib, gib as i64);
            w.str(k.source_disk, source);
        },
    )
}
