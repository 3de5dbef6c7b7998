//! Azure: virtual machines with their managed disks (shared with AKS node
//! pools), and the subscription unit: VMs behind a load balancer, public
//! IPs, a SQL database and a storage account, plus forgotten resources.

use svc_engine::Relation::{AttachedTo, FlowsTo, Uses};

use super::catalog::{self, AZURE_DISK, AZURE_SQL, AZURE_VM, Machine};
use super::clock::{epoch_time, rfc3339};
use super::emit::{H, Scope, Slot, Unit, Usage};
use super::names::APPS;
use super::names::text;

/// The resource id prefix of a resource group.
pub(crate) fn group_path(sub: &str, rg: &str) -> String {
    format!("/subscriptions/{sub}/resourceGroups/{rg}/providers")
}

/// What kind of VM to write.
pub(crate) struct VmSpec<'x> {
    pub types: &'static [Machine],
    /// `Stopped` is stopped but not deallocated: still billed.
    pub usage: Usage,
    pub zone: &'x str,
}

/// A VM named `name` in the resource group at `path`, with its OS disk,
/// which shares its lifecycle. Returns the VM.
pub(crate) fn vm(u: &mut Unit<'_>, slot: Slot, spec: &VmSpec<'_>, path: &str, name: &str) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let os = u.follow(&slot);
    let (mut r, mut v) = (slot.rng(), slot.vrng());
    let m = r.pick(spec.types);
    let waste = spec.usage != Usage::Busy;
    let stopped = spec.usage == Usage::Stopped;
    let (state, cpu, net) = match spec.usage {
        Usage::Stopped => (s.st.stopped, 0.0, 0),
        Usage::Idle => (s.st.running, v.float(0.2, 3.0), v.range(1_000_000, 60_000_000) as i64),
        Usage::Busy => (
            s.st.running,
            v.float(5.0, 75.0),
            v.range(100_000_000, 50_000_000_000) as i64,
        ),
    };
    let ip = text!(
        "10.{}.{}.{}",
        192 + (slot.ih() >> 8) % 32,
        (slot.ih() >> 16) % 256,
        4 + (slot.ih() >> 24) % 250
    );
    let stopped_at = stopped.then(|| rfc3339(u.old(&slot, 35, 420)));
    let created = if waste {
        u.old(&slot, 430, 1200)
    } else {
        u.created(&slot, 10, 900)
    };
    let n = u.at(s.t.azure_vm, state).cost(m.usd_mo).created(created).waste(waste);
    let h = u.node(
        &slot,
        n,
        format_args!("{path}/Microsoft.Compute/virtualMachines/{name}"),
        |w| {
            w.str(k.vm_size, m.name);
            w.int(k.vcpus, m.vcpus);
            w.float(k.memory_gib, m.mem_gib);
            w.str(k.zone, spec.zone);
            w.str(k.private_ip, &ip);
            w.str(
                k.power_state,
                if stopped {
                    "PowerState/stopped"
                } else {
                    "PowerState/running"
                },
            );
            w.float(k.cpu_avg_7d, cpu);
            w.int(k.network_bytes_7d, net);
            if let Some(t) = &stopped_at {
                w.str(k.stopped_at, t.as_str());
            }
        },
    );
    let vm_id = u.id(h);
    let disk_name = text!("{name}_OsDisk_1_{:016x}{:016x}", os.h, os.ih());
    disk(u, os, Some((h, &vm_id)), path, &disk_name, (30, 256), waste);
    h
}

/// A managed disk, attached to a VM or (waste) to nothing.
pub(crate) fn disk(
    u: &mut Unit<'_>,
    slot: Slot,
    to: Option<(Option<H>, &str)>,
    path: &str,
    name: &str,
    size: (u64, u64),
    waste: bool,
) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let mut r = slot.rng();
    let sku = r.pick(AZURE_DISK);
    let base = r.range(size.0, size.1);
    let gib = if to.is_some() {
        base + 16 * slot.version.min(4)
    } else {
        base
    };
    let detached = to.is_none();
    let state = if detached { s.st.unattached } else { s.st.attached };
    let created = if waste || detached {
        u.old(&slot, 300, 1100)
    } else {
        u.created(&slot, 10, 900)
    };
    let n = u
        .at(s.t.azure_disk, state)
        .cost(gib as f64 * sku.usd_gib_mo)
        .created(created);
    let h = u.node(
        &slot,
        n.waste(waste || detached),
        format_args!("{path}/Microsoft.Compute/disks/{name}"),
        |w| {
            w.int(k.size_gib, gib as i64);
            w.str(k.sku, sku.name);
            match to {
                Some((_, id)) => w.str(k.attached_to, id),
                None => w.null(k.attached_to),
            }
            w.str(k.attachment_state, if detached { "Unattached" } else { "Attached" });
        },
    );
    if let Some((vm, _)) = to {
        u.edge(h, vm, AttachedTo, "ATTACHED_TO");
    }
    h
}

/// A subscription unit: VMs behind a load balancer, public IPs, a SQL
/// database and a storage account, plus forgotten resources.
pub(crate) fn subscription(u: &mut Unit<'_>) {
    let s = u.s;
    let k = &s.k;
    let mut r = u.rng(4);
    let sub = r.pick(&s.azure_subscriptions);
    let region = r.pick(&s.azure_regions);
    u.scope = Scope {
        provider: s.azure,
        region: region.s,
        account: sub.s(),
    };
    u.label(sub.env, &mut r);
    let app = text!("{}-{:x}", r.pick(APPS), u.index);
    let env = s.envs[sub.env].name;
    let rg = text!("rg-{app}-{env}");
    let path = group_path(&sub.name, &rg);
    let vms = 2 + r.below(4);
    let stopped = [0, 1, 1, 2][r.below(4)];
    let loose_disks = [0, 1, 1, 2, 3][r.below(5)];
    let ip = r.chance(0.7);
    let loose_ips = [0, 1, 1, 2][r.below(4)];
    let lb = r.chance(0.6);
    let idle_lb = r.chance(0.15);
    let sql = r.chance(0.7).then(|| r.chance(0.2));
    let storage_stale = r.chance(0.15);

    let mut machines = Vec::with_capacity(vms);
    for i in 0..vms {
        let slot = u.slot(i >= 2);
        let name = text!("vm-{app}-{i:02}-{:04x}", slot.ih() & 0xFFFF);
        let zone = region.zones[i % region.zones.len()];
        machines.push(vm(
            u,
            slot,
            &VmSpec {
                types: AZURE_VM,
                usage: Usage::Busy,
                zone,
            },
            &path,
            &name,
        ));
    }
    for i in 0..stopped {
        let slot = u.slot(false);
        vm(
            u,
            slot,
            &VmSpec {
                types: AZURE_VM,
                usage: Usage::Stopped,
                zone: region.zones[0],
            },
            &path,
            &text!("vm-{app}-old-{i}"),
        );
    }
    for i in 0..loose_disks {
        let slot = u.slot(true);
        let name = text!("{app}-data-{i}-{:06x}", slot.ih() & 0xFF_FFFF);
        disk(u, slot, None, &path, &name, (64, 1024), true);
    }
    let first_id = u.id(machines[0]);
    for i in 0..usize::from(ip) + loose_ips {
        let slot = u.slot(false);
        let to = (i == 0 && ip).then_some((machines[0], first_id.as_str()));
        let addr = text!(
            "20.{}.{}.{}",
            40 + slot.h % 200,
            (slot.h >> 8) % 256,
            (slot.h >> 16) % 254 + 1
        );
        let waste = to.is_none();
        let n = u
            .at(s.t.azure_public_ip, s.st.succeeded)
            .cost(catalog::AZURE_PUBLIC_IP_USD_MO);
        let n = n.created(u.old(&slot, 30, 900)).waste(waste);
        let h = u.node(
            &slot,
            n,
            format_args!("{path}/Microsoft.Network/publicIPAddresses/pip-{app}-{i}"),
            |w| {
                w.str(k.address, &addr);
                w.str(k.sku, "Standard");
                match to {
                    Some((_, id)) => w.str(k.attached_to, id),
                    None => w.null(k.attached_to),
                }
            },
        );
        if let Some((m, _)) = to {
            u.edge(h, m, AttachedTo, "ATTACHED_TO");
        }
    }
    for (i, idle) in [(0, false), (1, true)] {
        if (i == 0 && !lb) || (i == 1 && !idle_lb) {
            continue;
        }
        let slot = u.slot(false);
        let mut v = slot.vrng();
        let targets: &[Option<H>] = if idle { &[] } else { &machines };
        let healthy = targets.iter().filter(|t| t.is_some()).count() as i64;
        let (bytes, rules) = if idle {
            (0, 0)
        } else {
            (v.range(1_000_000, 80_000_000_000) as i64, 1 + (slot.h % 4) as i64)
        };
        let n = u
            .at(s.t.azure_lb, s.st.succeeded)
            .cost(catalog::AZURE_LB_USD_MO + bytes as f64 * 5e-12);
        let n = n.created(u.old(&slot, 30, 1000)).waste(idle);
        let name = if idle { "lb-old" } else { "lb" };
        let h = u.node(
            &slot,
            n,
            format_args!("{path}/Microsoft.Network/loadBalancers/{name}-{app}"),
            |w| {
                w.str(k.sku, "Standard");
                w.int(k.backend_pool_size, healthy);
                w.int(k.lb_rules, rules);
                w.int(k.bytes_processed_7d, bytes);
            },
        );
        for t in targets {
            u.edge(h, *t, FlowsTo, "ROUTES_TO");
        }
    }
    if let Some(idle) = sql {
        let slot = u.slot(false);
        let (mut r, mut v) = (slot.rng(), slot.vrng());
        let tier = r.pick(AZURE_SQL);
        let (conns, dtu) = if idle {
            (0, v.float(0.0, 1.5))
        } else {
            (v.range(100, 90_000), v.float(5.0, 70.0))
        };
        let n = u
            .at(s.t.azure_sql, s.st.online)
            .cost(tier.usd_mo)
            .created(u.old(&slot, 60, 1100))
            .waste(idle);
        let server = text!("sql-{app}");
        let h = u.node(
            &slot,
            n,
            format_args!("{path}/Microsoft.Sql/servers/{server}/databases/{app}"),
            |w| {
                w.str(k.tier, tier.name);
                w.int(k.connections_7d, conns as i64);
                w.float(k.dtu_avg_7d, dtu);
            },
        );
        if !idle {
            for m in &machines {
                u.edge(*m, h, Uses, "DEPENDS_ON");
            }
        }
    }
    let slot = u.slot(false);
    let (mut r, mut v) = (slot.rng(), slot.vrng());
    let gib = if storage_stale {
        r.float(50.0, 6000.0)
    } else {
        v.float(5.0, 4000.0)
    };
    let tx = if storage_stale {
        0
    } else {
        v.range(10_000, 90_000_000) as i64
    };
    let accessed = rfc3339(if storage_stale {
        u.old(&slot, 120, 900)
    } else {
        epoch_time(slot.since)
    });
    let n = u
        .at(s.t.azure_storage, s.st.available)
        .cost(gib * catalog::AZURE_BLOB_GIB);
    let n = n.created(u.old(&slot, 100, 1500)).waste(storage_stale);
    let account = text!("st{}{:06x}", app.replace('-', ""), slot.h & 0xFF_FFFF);
    let h = u.node(
        &slot,
        n,
        format_args!("{path}/Microsoft.Storage/storageAccounts/{account}"),
        |w| {
            w.float(k.size_gib, gib);
            w.str(k.sku, "Standard_LRS");
            w.str(k.access_tier, "Hot");
            w.int(k.transactions_30d, tx);
            w.str(k.last_accessed_at, accessed.as_str());
        },
    );
    if !storage_stale {
        for m in &machines {
            u.edge(*m, h, Uses, "WRITES");
        }
    }
}
