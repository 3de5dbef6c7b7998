//! Kubernetes clusters on EKS, GKE or AKS: the cloud side (cluster, node
//! groups, worker instances with their disks) and the cluster side
//! (namespaces, nodes, deployments, pods, services, volume claims).
//!
//! A Kubernetes node names its cloud instance only through its
//! `provider_id` property: no edge joins them, the engine's linker does.

use std::fmt::Write as _;

use svc_engine::Relation::{Contains, FlowsTo, Grants, Runs, SecuredBy, Uses};

use super::azure::{self, VmSpec};
use super::catalog::{self, AZURE_VM, EKS_NODES, GCE};
use super::ec2::{self, Ec2Spec, Placement};
use super::emit::{H, Scope, Unit, Usage};
use super::gcp::{self, GceSpec};
use super::names::text;
use super::names::{DEPLOYMENTS, NAMESPACES, k8s_suffix};
use super::rng::{Rng, hash3};
pub(crate) use super::syms::Host;
use super::syms::{accounts, env_of};

/// Account and region indices of a cluster unit: the first draws of its stream.
fn place(r: &mut Rng, host: Host) -> (usize, usize) {
    (r.below(accounts(host)), r.below(host.regions().len()))
}

const SALT: u64 = 5;

/// The cluster name of unit `unit` (the CRN account of its Kubernetes resources).
pub(crate) fn cluster_name(seed: u64, unit: u64, host: Host) -> String {
    let (a, reg) = place(&mut Rng::new(hash3(seed, unit, SALT)), host);
    let region = host.regions()[reg].0.replace('-', "");
    format!(
        "{}-{}-{region}-{unit:x}",
        super::syms::ENVS[env_of(host, a)],
        host.short()
    )
}

/// One deployment: replicas, and whether it mounts a volume claim.
struct Deployment {
    replicas: usize,
    pvc: bool,
}

/// A cluster unit on `host`.
pub(crate) fn cluster(u: &mut Unit<'_>, host: Host) {
    let s = u.s;
    let k = &s.k;
    let mut r = u.rng(SALT);
    let (ai, ri) = place(&mut r, host);
    let (account, region, provider) = match host {
        Host::Aws => (&s.aws_accounts[ai], &s.aws_regions[ri], s.aws),
        Host::Gcp => (&s.gcp_projects[ai], &s.gcp_regions[ri], s.gcp),
        Host::Azure => (&s.azure_subscriptions[ai], &s.azure_regions[ri], s.azure),
    };
    let cloud = Scope {
        provider,
        region: region.s,
        account: account.s(),
    };
    let kube = Scope {
        provider: s.kubernetes,
        region: region.s,
        account: u.cluster,
    };
    u.scope = cloud;
    u.label(account.env, &mut r);
    let name = u.cluster.name;
    let pools = 1 + r.below(2);
    let busy_nodes = 3 + r.below(4);
    // Cordoned nodes nothing is scheduled on, still billed: waste.
    let nodes = busy_nodes + [0, 1, 1, 2][r.below(4)];
    let spot = r.chance(0.4);
    let first_ns = r.below(NAMESPACES.len());
    let namespaces: Vec<Vec<Deployment>> = (0..2 + r.below(2))
        .map(|_| {
            (0..1 + r.below(3))
                .map(|_| Deployment {
                    replicas: 1 + r.below(4),
                    pvc: r.chance(0.35),
                })
                .collect()
        })
        .collect();
    let orphan_pvcs: Vec<usize> = namespaces.iter().map(|_| [0, 0, 1, 1, 2][r.below(5)]).collect();
    let idle_lb = r.chance(0.35);
    let version = *r.pick(&["1.29", "1.30", "1.31"]);

    // The cloud side: the managed cluster and its node groups.
    let slot = u.slot(false);
    let (acct, reg) = (account.name.as_str(), region.s.name);
    let parent = match host {
        Host::Aws => {
            let n = u
                .at(s.t.eks_cluster, s.st.active_upper)
                .cost(catalog::EKS_CLUSTER_USD_MO);
            u.node(
                &slot,
                n.created(u.old(&slot, 60, 900)),
                format_args!("arn:aws:eks:{reg}:{acct}:cluster/{name}"),
                |w| {
                    w.str(k.kubernetes_version, version);
                    w.str(
                        k.endpoint,
                        &text!("https://{:032X}.gr7.{reg}.eks.amazonaws.com", u128::from(slot.h)),
                    );
                },
            )
        }
        Host::Gcp => {
            let n = u
                .at(s.t.gke_cluster, s.st.running_upper)
                .cost(catalog::GKE_CLUSTER_USD_MO);
            let path = text!("projects/{acct}/locations/{reg}/clusters/{name}");
            u.node(&slot, n.created(u.old(&slot, 60, 900)), format_args!("{path}"), |w| {
                w.str(k.kubernetes_version, version);
                w.int(k.node_count, nodes as i64);
            })
        }
        Host::Azure => None,
    };
    let role = if host == Host::Aws {
        ec2::role(
            u,
            &text!("arn:aws:iam::{acct}:role/{name}-node-role"),
            "ec2.amazonaws.com",
        )
    } else {
        None
    };
    let sg = if host == Host::Aws {
        let slot = u.slot(false);
        let n = u.at(s.t.ec2_security_group, s.st.active).created(u.old(&slot, 60, 900));
        u.node(&slot, n, format_args!("sg-0{:016x}", slot.ih()), |w| {
            w.str(k.group_name, &text!("eks-cluster-sg-{name}"));
            w.int(k.ingress_rules, 3);
        })
    } else {
        None
    };
    u.edge(parent, sg, SecuredBy, "SECURED_BY");
    let mut groups = Vec::with_capacity(pools);
    if host == Host::Aws {
        for i in 0..pools {
            let slot = u.slot(false);
            let state = if slot.vrng().below(10) == 0 {
                s.st.updating
            } else {
                s.st.active_upper
            };
            let n = u.at(s.t.eks_nodegroup, state).created(u.old(&slot, 30, 800));
            let id = format_args!("arn:aws:eks:{reg}:{acct}:nodegroup/{name}/pool-{i}/{:016x}", slot.ih());
            let g = u.node(&slot, n, id, |w| {
                w.int(k.desired_size, nodes.div_ceil(pools) as i64);
                w.str(k.capacity_type, if spot { "SPOT" } else { "ON_DEMAND" });
            });
            u.edge(parent, g, Contains, "CONTAINS");
            u.edge(role, g, Grants, "GRANTS");
            groups.push(g);
        }
    }

    // Worker machines and the Kubernetes nodes they run.
    let rg_path = azure::group_path(acct, &text!("MC_rg-{name}_{name}_{reg}"));
    let mut workers: Vec<(Option<H>, String)> = Vec::with_capacity(nodes);
    for i in 0..nodes {
        let slot = u.slot(i >= 2 && i < busy_nodes);
        let usage = if i < busy_nodes { Usage::Busy } else { Usage::Idle };
        let zone = region.zones[i % region.zones.len()];
        let mut node_name = String::with_capacity(64);
        let provider_id = match host {
            Host::Aws => {
                let [b, c, d] = ec2::private_ip(&slot);
                let _ = write!(node_name, "ip-10-{b}-{c}-{d}.{reg}.compute.internal");
                let group = groups.get(i % pools).copied().flatten();
                let at = Placement {
                    zone,
                    sgs: [sg, None],
                    group,
                    role,
                    ..Placement::default()
                };
                ec2::instance(
                    u,
                    slot,
                    &Ec2Spec {
                        types: EKS_NODES,
                        usage,
                        spot,
                        data_volume: false,
                    },
                    &at,
                );
                text!("aws:///{zone}/i-0{:016x}", slot.ih())
            }
            Host::Gcp => {
                let _ = write!(node_name, "gke-{name}-pool-{:08x}-", slot.h as u32);
                k8s_suffix(&mut node_name, slot.ih(), 4);
                let spec = GceSpec {
                    types: GCE,
                    usage,
                    data_disk: false,
                    zone,
                    cluster: parent,
                };
                gcp::instance(u, slot, &spec, &node_name);
                text!("gce://{acct}/{zone}/{node_name}")
            }
            Host::Azure => {
                let _ = write!(
                    node_name,
                    "aks-nodepool1-{:08}-vmss{:06x}",
                    slot.h % 100_000_000,
                    slot.ih() & 0xFF_FFFF
                );
                let vm = azure::vm(
                    u,
                    slot,
                    &VmSpec {
                        types: AZURE_VM,
                        usage,
                        zone,
                    },
                    &rg_path,
                    &node_name,
                );
                text!("azure://{}", u.id(vm))
            }
        };
        u.scope = kube;
        let node = u.follow(&slot);
        let idle = usage == Usage::Idle;
        let pressure = if idle { 0.0 } else { node.vrng().float(15.0, 85.0) };
        let created = if idle {
            u.old(&node, 60, 400)
        } else {
            u.created(&node, 20, 400)
        };
        let n = u.at(s.t.k8s_node, s.st.ready).created(created).waste(idle);
        let h = u.node(&node, n, format_args!("{node_name}"), |w| {
            w.str(k.provider_id, &provider_id);
            w.str(k.kubelet_version, &text!("v{version}.4"));
            w.str(k.zone, zone);
            w.float(k.cpu_requests_pct, pressure);
            w.bool(k.unschedulable, idle);
        });
        u.scope = cloud;
        if !idle {
            workers.push((h, node_name));
        }
    }
    let ready: Vec<&(Option<H>, String)> = workers.iter().filter(|w| w.0.is_some()).collect();

    // The cluster side.
    u.scope = kube;
    for (n_idx, deployments) in namespaces.iter().enumerate() {
        let ns = NAMESPACES[(first_ns + n_idx) % NAMESPACES.len()];
        let slot = u.slot(false);
        let n = u
            .at(s.t.k8s_namespace, s.st.active_title)
            .created(u.old(&slot, 60, 900));
        let nsh = u.node(&slot, n, format_args!("{ns}"), |w| w.str(k.phase, "Active"));
        let mut upstream = None;
        for (d_idx, d) in deployments.iter().enumerate() {
            let app = DEPLOYMENTS[(n_idx * 3 + d_idx) % DEPLOYMENTS.len()];
            upstream = workload(u, nsh, ns, app, d, &ready, upstream);
        }
        for i in 0..orphan_pvcs[n_idx] {
            let slot = u.slot(false);
            pvc(u, slot, nsh, ns, &text!("data-{ns}-old-{i}"), None);
        }
    }
    if idle_lb {
        let ns = NAMESPACES[first_ns];
        let slot = u.slot(false);
        let n = u.at(s.t.k8s_service, s.st.active_title).cost(catalog::K8S_LB_USD_MO);
        let n = n.created(u.old(&slot, 60, 700)).waste(true);
        let ip = text!("203.0.{}.{}", slot.h % 256, (slot.h >> 8) % 254 + 1);
        u.node(&slot, n, format_args!("{ns}/legacy-lb"), |w| {
            w.str(k.service_type, "LoadBalancer");
            w.int(k.endpoints, 0);
            w.str(k.external_ip, &ip);
            w.int(k.requests_7d, 0);
        });
    }
}

/// A deployment with its service, maybe a volume claim, and its pods; it
/// calls the service of the namespace's previous deployment, `upstream`.
/// Returns its own service.
fn workload(
    u: &mut Unit<'_>,
    nsh: Option<H>,
    ns: &str,
    app: &str,
    d: &Deployment,
    nodes: &[&(Option<H>, String)],
    upstream: Option<H>,
) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let dslot = u.slot(false);
    let sslot = u.slot(false);
    let pslot = d.pvc.then(|| u.slot(false));
    let pods: Vec<_> = (0..d.replicas).map(|_| u.slot(true)).collect();
    let alive = pods.iter().filter(|p| p.alive).count() as i64;
    let image = text!("registry.acme.io/{app}:1.{}.{}", dslot.version, dslot.h % 10);
    let rollout = dslot.vrng().below(10) == 0;
    let state = if rollout {
        s.st.progressing
    } else {
        s.st.available_title
    };
    let n = u.at(s.t.k8s_deployment, state).created(u.old(&dslot, 20, 700));
    let dep = u.node(&dslot, n, format_args!("{ns}/{app}"), |w| {
        w.int(k.replicas, d.replicas as i64);
        w.int(k.available_replicas, alive);
        w.str(k.container_image, &image);
    });
    u.edge(nsh, dep, Contains, "CONTAINS");
    let ip = text!("172.20.{}.{}", sslot.h % 256, (sslot.h >> 8) % 254 + 1);
    let n = u.at(s.t.k8s_service, s.st.active_title).created(u.old(&sslot, 20, 700));
    let svc = u.node(&sslot, n, format_args!("{ns}/{app}"), |w| {
        w.str(k.service_type, "ClusterIP");
        w.str(k.cluster_ip, &ip);
        w.int(k.endpoints, alive);
    });
    u.edge(nsh, svc, Contains, "CONTAINS");
    u.edge(dep, upstream, Uses, "DEPENDS_ON");
    let claim = pslot.and_then(|p| pvc(u, p, nsh, ns, &text!("data-{app}"), Some(app)));
    u.edge(dep, claim, Uses, "USES");
    let mut rs = String::with_capacity(10);
    k8s_suffix(&mut rs, dslot.h, 10);
    let mut id = String::with_capacity(ns.len() + app.len() + 18);
    for slot in pods {
        let node = (!nodes.is_empty()).then(|| nodes[(slot.ih() % nodes.len() as u64) as usize]);
        let mut v = slot.vrng();
        let state = if node.is_some() {
            s.st.running_title
        } else {
            s.st.pending
        };
        let n = u.at(s.t.k8s_pod, state).created(u.created(&slot, 1, 60));
        id.clear();
        let _ = write!(id, "{ns}/{app}-{rs}-");
        k8s_suffix(&mut id, slot.ih(), 5);
        let cpu = [100, 250, 500, 1000][(slot.h % 4) as usize];
        let h = u.node(&slot, n, format_args!("{id}"), |w| {
            w.str(k.namespace, ns);
            match node {
                Some((_, name)) => w.str(k.node_name, name),
                None => w.null(k.node_name),
            }
            w.int(k.cpu_request_m, cpu);
            w.int(k.memory_request_mib, cpu * 2);
            w.float(k.cpu_avg_7d, v.float(2.0, 90.0));
            w.int(k.restarts, (slot.version % 7) as i64);
            w.str(k.container_image, &image);
        });
        u.edge(nsh, h, Contains, "CONTAINS");
        u.edge(dep, h, Contains, "PARENT_OF");
        u.edge(svc, h, FlowsTo, "ROUTES_TO");
        if let Some((node, _)) = node {
            u.edge(h, *node, Runs, "RUNS_ON");
        }
        u.edge(h, claim, Uses, "USES");
        u.edge(h, upstream, Uses, "DEPENDS_ON");
    }
    svc
}

/// A persistent volume claim mounted by deployment `user`; one nothing mounts is waste.
fn pvc(
    u: &mut Unit<'_>,
    slot: super::emit::Slot,
    nsh: Option<H>,
    ns: &str,
    name: &str,
    user: Option<&str>,
) -> Option<H> {
    let s = u.s;
    let k = &s.k;
    let gib = [10u64, 20, 50, 100, 200, 500][(slot.h % 6) as usize];
    let orphan = user.is_none();
    let created = if orphan {
        u.old(&slot, 60, 700)
    } else {
        u.old(&slot, 10, 700)
    };
    let n = u
        .at(s.t.k8s_pvc, s.st.bound)
        .cost(gib as f64 * catalog::K8S_PVC_GIB)
        .created(created)
        .waste(orphan);
    let volume = super::names::guid(slot.h, slot.ih());
    let h = u.node(&slot, n, format_args!("{ns}/{name}"), |w| {
        w.int(k.size_gib, gib as i64);
        w.str(k.storage_class, "gp3");
        w.str(k.volume_name, &text!("pvc-{volume}"));
        w.str(k.access_mode, "ReadWriteOnce");
        match user {
            Some(d) => w.str(k.mounted_by, d),
            None => w.null(k.mounted_by),
        }
    });
    u.edge(nsh, h, Contains, "CONTAINS");
    h
}
