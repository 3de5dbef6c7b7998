//! Formal verification (`engine.formal_verify`): which resources traffic
//! from the estate's entry points can reach, and how risky removing each
//! resource is.
//!
//! **Reachability** is the least fixpoint of
//!
//! ```text
//! R = entry points ∪ { v | u ∈ R and u ⇒ v }
//! ```
//!
//! where `u ⇒ v` is one of the traffic-carrying steps:
//!
//! | edge          | step              | why                                              |
//! |---------------|-------------------|--------------------------------------------------|
//! | u FlowsTo v   | u ⇒ v             | traffic reaching u goes on to v                  |
//! | u Uses v      | u ⇒ v             | a reached workload calls what it uses            |
//! | u Runs v      | u ⇒ v             | a reached pod keeps its node (and its machine) in the path |
//! | v AttachedTo u| u ⇒ v             | a reached machine serves from its volumes, disks, interfaces |
//! | u AttachedTo v| u ⇒ v, u an entry | an address attached to a machine sends it traffic |
//! | v Contains u  | u ⇒ v             | a reached member keeps its network, group or namespace in the path |
//!
//! Entry points are public addresses, load balancers (a Kubernetes service
//! of type LoadBalancer or NodePort, an ingress), DNS records and API
//! gateways. The fixpoint is computed by one breadth-first search from all
//! entry points over the adjacency index, so each reached node keeps the
//! edge that first reached it: following those edges back gives the proof
//! path, the shortest chain from an entry point. Adding an edge can only add
//! steps, so it never makes a reachable node unreachable.
//!
//! A node the search does not reach is `unreachable` when its provider's
//! view is complete, and `unknown` when it belongs to a provider whose scan
//! failed in this scan or is joined to one (its edges may be missing).
//!
//! **Removal risk** (0 to 100) adds, capped at 100:
//! - blast radius: up to 30, 10 per doubling of the direct dependents;
//! - reachability: 30 when reachable, 15 when unknown, 0 when unreachable;
//! - cost: up to 15, 3 per doubling of the monthly cost over $10;
//! - state: 20 for a type that holds data (volumes, disks, snapshots,
//!   images, databases, buckets, tables, caches, claims, log groups);
//! - an entry point: 5;
//!
//! and takes away, for a spot machine, 5 plus a tenth of its interruption
//! score (its workload is built to be interrupted).
//!
//! **Spot interruption risk** is estimated from the machine's family and
//! size, in the five bands spot advisors publish (`<5%` to `>20%`): GPU and
//! accelerated families are interrupted most, storage and compute-optimised
//! ones more than general purpose, larger sizes and older generations more
//! than small and current ones. It is an estimate from the embedded table,
//! not a live feed.

use std::collections::VecDeque;
use std::time::Instant;

use rayon::prelude::*;

use svc_graph::graph::{Graph, NodeRef, Reachability};
use svc_graph::ids::{EdgeId, NodeId, Sym};
use svc_graph::intern::InternerReader;
use svc_graph::props::ValueRef;
use svc_graph::relation::Relation;

/// Proof paths longer than this are cut (a search over a healthy estate
/// never gets near it).
pub const MAX_PROOF_HOPS: usize = 256;

/// What a node is, for verification.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Class {
    entry: bool,
    stateful: bool,
    /// Entry only with a property saying so (address type, service type).
    conditional: bool,
    machine: bool,
}

/// How a node was reached.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// Not reached.
    None,
    /// An entry point.
    Entry,
    /// Reached over this edge.
    Edge(EdgeId),
}

fn pack(v: Via) -> u64 {
    match v {
        Via::None => 0,
        Via::Entry => 1,
        Via::Edge(e) => ((e.shard() as u64) << 32 | u64::from(e.row())) + 2,
    }
}

fn unpack(v: u64) -> Via {
    match v {
        0 => Via::None,
        1 => Via::Entry,
        v => {
            let raw = v - 2;
            Via::Edge(EdgeId::new((raw >> 32) as usize, raw as u32))
        }
    }
}

/// The spot-interruption estimate of one machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Spot {
    /// 0 (`<5%`) to 4 (`>20%`).
    pub band: u8,
    /// The band as spot advisors print it.
    pub frequency: &'static str,
    /// 0 to 100.
    pub score: u8,
    /// The machine type the estimate is for, when known.
    pub machine_type: Option<String>,
    /// What the estimate rests on.
    pub basis: String,
}

/// Frequency labels of the five bands.
pub const SPOT_BANDS: [&str; 5] = ["<5%", "5-10%", "10-15%", "15-20%", ">20%"];

/// The parts of a node's removal risk.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RiskParts {
    pub dependents: u32,
    pub blast: f32,
    pub reachability: f32,
    pub cost: f32,
    pub stateful: f32,
    pub entry: f32,
    pub spot: f32,
    pub total: f32,
}

/// The outcome of one verification pass.
#[derive(Default)]
pub struct Assessment {
    /// `false` when formal verification is switched off (`oracle.enabled`).
    pub enabled: bool,
    pub scan_seq: u64,
    pub computed_us: u64,
    pub duration_ms: u64,
    pub entry_points: u64,
    pub reachable: u64,
    pub unreachable: u64,
    pub unknown: u64,
    pub spot_machines: u64,
    /// Nodes whose risk is 70 or more.
    pub high_risk: u64,
    /// Providers whose scan failed (their nodes are `unknown`).
    pub failed_providers: Vec<String>,
    /// Per node shard, per row: how the node was reached ([`pack`]ed).
    via: Vec<Vec<u64>>,
    /// Per node shard, its generation when the pass ran: `via` and
    /// `verdicts` answer only for ids of these (not after a compaction).
    generations: Vec<u32>,
    /// Per node shard, per row: reachability and risk, until applied.
    pub verdicts: Vec<Vec<(Reachability, f32)>>,
}

impl Assessment {
    /// A pass that did not run: every node stays `unknown`.
    pub fn disabled(scan_seq: u64, computed_us: u64) -> Assessment {
        Assessment {
            enabled: false,
            scan_seq,
            computed_us,
            ..Assessment::default()
        }
    }

    /// Frees the per-node verdicts once they are in the graph.
    pub fn release_verdicts(&mut self) {
        self.verdicts = Vec::new();
    }

    /// Whether `id` is of the shard generations the pass ran over.
    fn current(&self, id: NodeId) -> bool {
        self.generations.get(id.shard()) == Some(&id.generation())
    }

    /// How `id` was reached.
    pub fn via(&self, id: NodeId) -> Via {
        if !self.current(id) {
            return Via::None;
        }
        self.via
            .get(id.shard())
            .and_then(|s| s.get(id.row() as usize))
            .map_or(Via::None, |&v| unpack(v))
    }

    /// The reachability and risk the pass gave `id` (until applied).
    pub fn verdict(&self, id: NodeId) -> (Reachability, f32) {
        if !self.current(id) {
            return (Reachability::Unknown, 0.0);
        }
        self.verdicts
            .get(id.shard())
            .and_then(|s| s.get(id.row() as usize))
            .copied()
            .unwrap_or((Reachability::Unknown, 0.0))
    }

    /// The chain of edges from an entry point to `id`, entry point first:
    /// each step is `(edge, from, to)` in the direction reachability
    /// travelled. Empty for an entry point or a node not reached.
    pub fn proof(&self, graph: &Graph, id: NodeId) -> Vec<(EdgeId, NodeId, NodeId)> {
        let mut steps = Vec::new();
        let mut at = id;
        while let Via::Edge(e) = self.via(at) {
            let Some(edge) = graph.edge(e) else { break };
            let from = if edge.target() == at {
                edge.source()
            } else {
                edge.target()
            };
            steps.push((e, from, at));
            at = from;
            if steps.len() >= MAX_PROOF_HOPS {
                break;
            }
        }
        steps.reverse();
        steps
    }
}

/// Type and key names the pass reads, interned once.
struct Names {
    lifecycle: Option<Sym>,
    capacity_type: Option<Sym>,
    provisioning_model: Option<Sym>,
    preemptible: Option<Sym>,
    priority: Option<Sym>,
    address_type: Option<Sym>,
    service_type: Option<Sym>,
    instance_type: Option<Sym>,
    machine_type: Option<Sym>,
    vm_size: Option<Sym>,
}

impl Names {
    fn new(r: &InternerReader<'_>) -> Names {
        Names {
            lifecycle: r.get("lifecycle"),
            capacity_type: r.get("capacity_type"),
            provisioning_model: r.get("provisioning_model"),
            preemptible: r.get("preemptible"),
            priority: r.get("priority"),
            address_type: r.get("address_type"),
            service_type: r.get("service_type"),
            instance_type: r.get("instance_type"),
            machine_type: r.get("machine_type"),
            vm_size: r.get("vm_size"),
        }
    }
}

fn classify(service: &str, kind: &str) -> Class {
    let entry_kind = kind.contains("load-balancer")
        || matches!(
            kind,
            "eip" | "public-ip" | "forwarding-rule" | "global-forwarding-rule" | "application-gateway" | "front-door"
        )
        || matches!(
            service,
            "route53" | "dns" | "apigateway" | "apigatewayv2" | "apigee" | "apimanagement"
        )
        || kind.starts_with("dns-")
        || kind == "api-gateway"
        || kind == "ingress";
    // A GCP address may be internal; a Kubernetes service may be cluster-only.
    let conditional = matches!((service, kind), ("compute", "address") | ("core", "service"));
    let stateful = matches!(
        kind,
        "volume"
            | "disk"
            | "snapshot"
            | "image"
            | "db"
            | "db-cluster"
            | "sql-instance"
            | "sql-database"
            | "database"
            | "bucket"
            | "table"
            | "cache"
            | "storage-account"
            | "pvc"
            | "persistent-volume"
            | "log-group"
            | "file-system"
    );
    let machine = matches!(kind, "instance" | "vm" | "node" | "virtual-machine");
    Class {
        entry: entry_kind,
        stateful,
        conditional,
        machine,
    }
}

fn str_is(v: Option<ValueRef<'_>>, want: &str) -> bool {
    v.and_then(|v| v.as_str().map(|s| s.eq_ignore_ascii_case(want)))
        .unwrap_or(false)
}

fn is_entry(n: &NodeRef<'_>, class: Class, names: &Names) -> bool {
    if class.entry {
        return true;
    }
    if !class.conditional {
        return false;
    }
    let p = n.props();
    let external = names.address_type.is_some_and(|k| str_is(p.get(k), "EXTERNAL"));
    let exposed = names.service_type.is_some_and(|k| {
        let v = p.get(k);
        str_is(v, "LoadBalancer") || str_is(v, "NodePort")
    });
    external || exposed
}

/// The spot estimate of `n`, when it is a spot (or preemptible) machine.
fn spot_with(n: &NodeRef<'_>, class: Class, names: &Names) -> Option<Spot> {
    if !class.machine {
        return None;
    }
    let [
        lifecycle,
        capacity_type,
        provisioning_model,
        priority,
        preemptible,
        instance_type,
        machine_type,
        vm_size,
    ] = n.props().get_each([
        names.lifecycle,
        names.capacity_type,
        names.provisioning_model,
        names.priority,
        names.preemptible,
        names.instance_type,
        names.machine_type,
        names.vm_size,
    ]);
    let spot = str_is(lifecycle, "spot")
        || str_is(capacity_type, "SPOT")
        || str_is(provisioning_model, "SPOT")
        || str_is(priority, "Spot")
        || matches!(preemptible, Some(ValueRef::Bool(true)))
        || str_is(preemptible, "true");
    if !spot {
        return None;
    }
    let machine_type = [instance_type, machine_type, vm_size]
        .into_iter()
        .find_map(|v| v.and_then(|v| v.as_str().map(str::to_owned)));
    let (band, basis) = match &machine_type {
        Some(t) => spot_band(t),
        None => (2, "machine type unknown: middle band".to_owned()),
    };
    Some(Spot {
        band,
        frequency: SPOT_BANDS[band as usize],
        score: band * 20 + 10,
        machine_type,
        basis,
    })
}

/// The interruption band of a machine type (`m5.xlarge`, `n2-standard-8`,
/// `Standard_D4s_v5`) and why.
pub fn spot_band(machine_type: &str) -> (u8, String) {
    let lower = machine_type.to_ascii_lowercase();
    let azure = lower.starts_with("standard_");
    let t = lower.strip_prefix("standard_").unwrap_or(&lower);
    let aws = t.contains('.');
    // "m5" of "m5.xlarge", "n2" of "n2-standard-8", "nc6s" of "nc6s_v3".
    let head = t.split(['.', '-', '_']).next().unwrap_or(t);
    let family: String = head.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let first_digit = head.chars().find_map(|c| c.to_digit(10));
    let older = if aws {
        first_digit.is_some_and(|g| g <= 4)
    } else if azure {
        // Version suffix `_v3`; none means the first version.
        t.rsplit_once("_v")
            .and_then(|(_, v)| v.parse::<u32>().ok())
            .is_none_or(|v| v <= 3)
    } else {
        first_digit == Some(1)
    };
    let accelerated = ["p", "g", "inf", "trn", "dl", "a", "nc", "nd", "nv"].contains(&family.as_str())
        && !(aws && family == "a")
        || (!aws && !azure && ["a2", "a3", "g2"].contains(&head));
    let (mut band, class) = if accelerated {
        (4u8, "accelerated family")
    } else {
        match family.as_str() {
            "c" | "f" | "h" | "hpc" => (1, "compute-optimised family"),
            "i" | "d" | "im" | "is" | "l" | "ls" if aws => (1, "storage-optimised family"),
            "e" | "t" | "b" => (0, "burstable or economy family"),
            _ => (0, "general-purpose or memory family"),
        }
    };
    let mut why = vec![class.to_owned()];
    let size = if aws {
        let suffix = t.rsplit('.').next().unwrap_or("");
        let n: u32 = suffix
            .strip_suffix("xlarge")
            .map(|n| n.parse().unwrap_or(1))
            .unwrap_or(0);
        if suffix == "metal" || n >= 16 {
            2
        } else if n >= 8 {
            1
        } else {
            0
        }
    } else {
        // vCPUs: the last number of `n2-standard-64`, the first of `d64s_v5`.
        let vcpus = if azure {
            head.chars()
                .skip_while(|c| c.is_ascii_alphabetic())
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        } else {
            t.rsplit('-').next().unwrap_or("").to_owned()
        };
        match vcpus.parse::<u32>().unwrap_or(0) {
            64.. => 2,
            32.. => 1,
            _ => 0,
        }
    };
    if size > 0 {
        band += size;
        why.push("large size".to_owned());
    }
    if older && !accelerated {
        band += 1;
        why.push("older generation".to_owned());
    }
    (band.min(4), format!("{machine_type}: {}", why.join(", ")))
}

/// How reachability travels over one edge, from `u` (reached) to the
/// other end: `forward` over an out-edge of `u`, otherwise over an in-edge.
#[inline]
fn carries(rel: Relation, forward: bool, u_is_entry: bool) -> bool {
    match rel {
        Relation::FlowsTo | Relation::Uses | Relation::Runs => forward,
        Relation::AttachedTo => !forward || u_is_entry,
        Relation::Contains => !forward,
        Relation::SecuredBy | Relation::Grants => false,
    }
}

/// Runs the pass over the graph as of its last adjacency rebuild.
/// `failed` are the providers whose scan failed.
pub fn run(graph: &Graph, now_us: u64, scan_seq: u64, failed: &[Sym]) -> Assessment {
    let started = Instant::now();
    let reader = graph.interner().reader();
    let names = Names::new(&reader);
    let adj = graph.adjacency();
    let shards = graph.node_shards();
    let n = adj.node_count();
    let generation_of = |s: usize| shards[s].generation;

    // Classes by type, cached per type symbol.
    let mut classes: Vec<Option<Class>> = Vec::new();
    let mut class_of = |ty: Sym, service: Sym, kind: Sym| -> Class {
        let i = ty.index();
        if classes.len() <= i {
            classes.resize(i + 1, None);
        }
        *classes[i].get_or_insert_with(|| classify(reader.resolve(service), reader.resolve(kind)))
    };
    let mut class = vec![Class::default(); n];
    let mut visible = vec![false; n];
    for (s, shard) in shards.iter().enumerate() {
        let Some(base) = adj.dense(NodeId::new(s, 0, shard.generation)).map(|d| d as usize) else {
            continue;
        };
        for r in 0..shard.len() {
            if !svc_graph::graph::visible(shard.valid_to[r], now_us) {
                continue;
            }
            let key = shard.key[r];
            class[base + r] = class_of(shard.ty[r], key[2], key[3]);
            visible[base + r] = true;
        }
    }

    // Entry points, in parallel (some need a property).
    let entry: Vec<bool> = (0..n)
        .into_par_iter()
        .map(|d| {
            if !visible[d] || !(class[d].entry || class[d].conditional) {
                return false;
            }
            graph
                .node(adj.node_id(d as u32, generation_of))
                .is_some_and(|node| is_entry(&node, class[d], &names))
        })
        .collect();

    // The least fixpoint: breadth-first from every entry point.
    let mut via = vec![0u64; n];
    let mut queue: VecDeque<u32> = VecDeque::new();
    for (d, &e) in entry.iter().enumerate() {
        if e {
            via[d] = pack(Via::Entry);
            queue.push_back(d as u32);
        }
    }
    let entry_points = queue.len() as u64;
    while let Some(u) = queue.pop_front() {
        let u_entry = entry[u as usize];
        for (e, v, rel) in adj.side(u, true) {
            if via[v as usize] == 0 && carries(rel, true, u_entry) {
                via[v as usize] = pack(Via::Edge(e));
                queue.push_back(v);
            }
        }
        for (e, w, rel) in adj.side(u, false) {
            if via[w as usize] == 0 && carries(rel, false, u_entry) {
                via[w as usize] = pack(Via::Edge(e));
                queue.push_back(w);
            }
        }
    }

    // Reachability and risk per node, in parallel.
    let failed_node = |d: usize| -> bool {
        let id = adj.node_id(d as u32, generation_of);
        failed.contains(&shards[id.shard()].key[id.row() as usize][0])
    };
    let scored: Vec<(Reachability, f32, bool)> = (0..n)
        .into_par_iter()
        .map(|d| {
            if !visible[d] {
                return (Reachability::Unknown, 0.0, false);
            }
            let reach = if via[d] != 0 {
                Reachability::Reachable
            } else if !failed.is_empty()
                && (failed_node(d)
                    || adj.out(d as u32).any(|(_, v)| failed_node(v as usize))
                    || adj.inc(d as u32).any(|(_, w)| failed_node(w as usize)))
            {
                Reachability::Unknown
            } else {
                Reachability::Unreachable
            };
            let id = adj.node_id(d as u32, generation_of);
            let (parts, spot) = match graph.node(id) {
                Some(node) => {
                    let spot = spot_with(&node, class[d], &names);
                    (
                        risk_parts(graph, d as u32, &node, reach, class[d], entry[d], spot.as_ref()),
                        spot.is_some(),
                    )
                }
                None => (RiskParts::default(), false),
            };
            (reach, parts.total, spot)
        })
        .collect();

    let mut out = Assessment {
        enabled: true,
        scan_seq,
        computed_us: now_us,
        entry_points,
        failed_providers: failed.iter().map(|p| reader.resolve(*p).to_owned()).collect(),
        ..Assessment::default()
    };
    out.via = Vec::with_capacity(shards.len());
    out.verdicts = Vec::with_capacity(shards.len());
    out.generations = shards.iter().map(|s| s.generation).collect();
    for (s, shard) in shards.iter().enumerate() {
        let base = adj.dense(NodeId::new(s, 0, shard.generation)).map(|d| d as usize);
        let rows = shard.len();
        let (mut v, mut verdicts) = (vec![0u64; rows], vec![(Reachability::Unknown, 0.0f32); rows]);
        if let Some(base) = base {
            for r in 0..rows {
                let d = base + r;
                if !visible[d] {
                    continue;
                }
                v[r] = via[d];
                let (reach, risk, spot) = scored[d];
                verdicts[r] = (reach, risk);
                match reach {
                    Reachability::Reachable => out.reachable += 1,
                    Reachability::Unreachable => out.unreachable += 1,
                    Reachability::Unknown => out.unknown += 1,
                }
                out.spot_machines += u64::from(spot);
                out.high_risk += u64::from(risk >= 70.0);
            }
        }
        out.via.push(v);
        out.verdicts.push(verdicts);
    }
    out.duration_ms = started.elapsed().as_millis() as u64;
    out
}

/// The direct dependents of dense node `d`: nodes that feel its removal.
/// Reads the relations the adjacency index lists beside each edge, not
/// the edge rows (a cache miss an edge, over every edge of the graph).
fn dependents(graph: &Graph, d: u32) -> u32 {
    let adj = graph.adjacency();
    let out = adj
        .side(d, true)
        .filter(|&(_, _, rel)| !rel.source_depends_on_target())
        .count();
    let inc = adj
        .side(d, false)
        .filter(|&(_, _, rel)| rel.source_depends_on_target())
        .count();
    (out + inc) as u32
}

fn risk_parts(
    graph: &Graph,
    d: u32,
    node: &NodeRef<'_>,
    reach: Reachability,
    class: Class,
    entry: bool,
    spot: Option<&Spot>,
) -> RiskParts {
    let dependents = dependents(graph, d);
    let blast = (10.0 * (1.0 + dependents as f32).log2()).min(30.0);
    let reachability = match reach {
        Reachability::Reachable => 30.0,
        Reachability::Unknown => 15.0,
        Reachability::Unreachable => 0.0,
    };
    let cost_usd = node.cost_usd_mo().max(0.0);
    let cost = if cost_usd > 10.0 {
        (3.0 * (cost_usd / 10.0).log2()).min(15.0)
    } else {
        0.0
    };
    let stateful = if class.stateful { 20.0 } else { 0.0 };
    let entry = if entry { 5.0 } else { 0.0 };
    let spot = spot.map_or(0.0, |s| -(5.0 + f32::from(s.score) / 10.0));
    let total = (blast + reachability + cost + stateful + entry + spot)
        .clamp(0.0, 100.0)
        .round();
    RiskParts {
        dependents,
        blast,
        reachability,
        cost,
        stateful,
        entry,
        spot,
        total,
    }
}

/// The parts of `id`'s removal risk, recomputed from the graph with the
/// reachability the pass gave it.
pub fn explain(graph: &Graph, id: NodeId, reach: Reachability) -> Option<(RiskParts, Option<Spot>, bool)> {
    let node = graph.node(id)?;
    let reader = graph.interner().reader();
    let names = Names::new(&reader);
    let class = classify(reader.resolve(node.service()), reader.resolve(node.kind()));
    let entry = is_entry(&node, class, &names);
    let spot = spot_with(&node, class, &names);
    let d = graph.adjacency().dense(id)?;
    Some((
        risk_parts(graph, d, &node, reach, class, entry, spot.as_ref()),
        spot,
        entry,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn via_packs_round_trip() {
        for v in [
            Via::None,
            Via::Entry,
            Via::Edge(EdgeId::new(0, 0)),
            Via::Edge(EdgeId::new(127, u32::MAX)),
        ] {
            assert_eq!(unpack(pack(v)), v);
        }
    }

    #[test]
    fn spot_bands_follow_family_size_and_generation() {
        assert_eq!(spot_band("m6i.large").0, 0);
        assert_eq!(spot_band("m4.large").0, 1, "older generation");
        assert_eq!(spot_band("c6i.16xlarge").0, 3, "compute-optimised, large");
        assert_eq!(spot_band("p3.2xlarge").0, 4, "accelerated");
        assert_eq!(spot_band("n2-standard-8").0, 0);
        assert_eq!(spot_band("n1-standard-8").0, 1, "older generation");
        assert_eq!(spot_band("e2-standard-64").0, 2, "very large");
        assert_eq!(spot_band("Standard_D4s_v5").0, 0);
        assert_eq!(spot_band("Standard_D64s_v3").0, 3, "very large, older");
        assert_eq!(spot_band("Standard_NC6s_v3").0, 4, "accelerated");
        assert_eq!(spot_band("a1.large").0, 1, "Graviton a1 is not a GPU family, but old");
    }

    #[test]
    fn classes() {
        assert!(classify("elb", "load-balancer").entry);
        assert!(classify("ec2", "eip").entry);
        assert!(classify("route53", "record").entry);
        assert!(classify("network", "public-ip").entry);
        assert!(!classify("ec2", "instance").entry);
        assert!(classify("ec2", "volume").stateful);
        assert!(classify("core", "service").conditional);
        assert!(classify("compute", "instance").machine);
    }
}
