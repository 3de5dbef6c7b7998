//! The ghost linker (`engine.ghost_linker`): edges no single provider can
//! report, found by matching identifiers across the whole graph. Every edge
//! it adds is marked inferred, with the rule that found it in the edge
//! property `inferred_by`; an edge a provider already reports is left as
//! reported. An inferred edge whose match no longer holds is retired at the
//! next scan.
//!
//! Rules:
//!
//! - **`k8s-provider-id`**: a Kubernetes node's `provider_id` names the
//!   machine it runs on: `aws:///<zone>/<instance-id>` an EC2 instance,
//!   `gce://<project>/<zone>/<name>` a Compute Engine instance of that
//!   project and name, `azure://<resource id>` an Azure VM (ids compared
//!   without case). Edge: node `Runs` machine.
//! - **`dns-target`**: a DNS record (`record_value`, `alias_target`,
//!   `rrdatas` or `target`, several values split on commas and spaces, a
//!   trailing dot ignored, no case) naming a load balancer's `dns_name` or
//!   an IP (`public_ip`, `address`, `ip_address`, `external_ip`,
//!   `load_balancer_ip`): the public address or load balancer carrying it,
//!   or, when none does, whatever resource does. Edge: record `FlowsTo`
//!   target.
//! - **`role-assume`**: a workload whose `role_arn`, `iam_role_arn`,
//!   `execution_role_arn` or `service_account_role_arn` property, or whose
//!   `eks.amazonaws.com/role-arn` tag, names an IAM role by its ARN (the
//!   role's id or its `arn` property). Edge: role `Grants` workload.
//! - **`shared-ip`**: a public address or load balancer and a resource of
//!   another provider that carries the same IP (`public_ip`,
//!   `external_ip`, `address`, `ip_address`, `load_balancer_ip`): a
//!   Kubernetes service fronted by a cloud address, say. Edge: address
//!   `FlowsTo` resource.

use std::time::Instant;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::graph::{Graph, InferredEdge, NodeRef, visible};
use crate::ids::{NodeId, Sym};
use crate::intern::InternerReader;
use crate::props::PropWriter;
use crate::relation::Relation;

/// The property every inferred edge carries: the rule that found it.
pub const INFERRED_BY: &str = "inferred_by";

/// The linker's rules, in the order they are documented.
pub const RULES: [&str; 4] = ["k8s-provider-id", "dns-target", "role-assume", "shared-ip"];

/// How one rule did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleStats {
    pub rule: &'static str,
    /// Matches found (edges the rule stands behind).
    pub matched: u64,
    /// Of those, edges a provider already reports.
    pub reported: u64,
}

/// The outcome of one linker pass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkReport {
    pub rules: Vec<RuleStats>,
    /// Inferred edges new (or back) in this scan.
    pub added: u64,
    /// Inferred edges whose match no longer holds.
    pub retired: u64,
    /// Traffic edges whose window ended more than the retention ago.
    pub expired_flows: u64,
    pub duration_ms: u64,
}

impl LinkReport {
    pub fn matched(&self) -> u64 {
        self.rules.iter().map(|r| r.matched).sum()
    }
}

/// One match: `(src, dst, relation, rule index)`.
type Match = (NodeId, NodeId, Relation, usize);

/// Keys the linker reads, interned once (`None` when no node has the key).
struct Keys {
    provider_id: Option<Sym>,
    name: Option<Sym>,
    dns_name: Option<Sym>,
    arn: Option<Sym>,
    role_tag: Option<Sym>,
    record: [Option<Sym>; 4],
    ip: [Option<Sym>; 5],
    role: [Option<Sym>; 4],
}

impl Keys {
    fn new(r: &InternerReader<'_>) -> Keys {
        Keys {
            provider_id: r.get("provider_id"),
            name: r.get("name"),
            dns_name: r.get("dns_name"),
            arn: r.get("arn"),
            role_tag: r.get("eks.amazonaws.com/role-arn"),
            record: [
                r.get("record_value"),
                r.get("alias_target"),
                r.get("rrdatas"),
                r.get("target"),
            ],
            ip: [
                r.get("public_ip"),
                r.get("external_ip"),
                r.get("address"),
                r.get("ip_address"),
                r.get("load_balancer_ip"),
            ],
            role: [
                r.get("role_arn"),
                r.get("iam_role_arn"),
                r.get("execution_role_arn"),
                r.get("service_account_role_arn"),
            ],
        }
    }
}

/// Symbols of the segments the rules compare.
struct Segs {
    aws: Option<Sym>,
    gcp: Option<Sym>,
    azure: Option<Sym>,
    kubernetes: Option<Sym>,
    ec2: Option<Sym>,
    compute: Option<Sym>,
    iam: Option<Sym>,
    instance: Option<Sym>,
    vm: Option<Sym>,
    node: Option<Sym>,
    role: Option<Sym>,
}

impl Segs {
    fn new(r: &InternerReader<'_>) -> Segs {
        Segs {
            aws: r.get("aws"),
            gcp: r.get("gcp"),
            azure: r.get("azure"),
            kubernetes: r.get("kubernetes"),
            ec2: r.get("ec2"),
            compute: r.get("compute"),
            iam: r.get("iam"),
            instance: r.get("instance"),
            vm: r.get("vm"),
            node: r.get("node"),
            role: r.get("role"),
        }
    }
}

fn is(a: Sym, b: Option<Sym>) -> bool {
    Some(a) == b
}

/// What one node offers to match and what it asks for.
#[derive(Default)]
struct Facts {
    /// `(table, key)` under which other nodes find this one.
    offers: Vec<(Table, String)>,
    /// `(table, key, rule, relation, self is source)` this node looks up.
    asks: Vec<(Table, String, usize, Relation, bool)>,
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
enum Table {
    Ec2Instance,
    GceInstance,
    AzureVm,
    LbDns,
    /// Any resource carrying an IP.
    Ip,
    /// A public address or load balancer carrying an IP.
    PublicIp,
    /// An IP: a public address or load balancer carrying it if there is
    /// one, else any resource that does.
    IpPreferPublic,
    Role,
}

fn norm_host(s: &str) -> String {
    s.trim().trim_end_matches('.').to_ascii_lowercase()
}

fn is_public_holder(kind: &str) -> bool {
    kind.contains("load-balancer") || matches!(kind, "eip" | "public-ip" | "address" | "forwarding-rule")
}

fn is_dns(service: &str, kind: &str) -> bool {
    matches!(service, "route53" | "dns") || kind.starts_with("dns-") || kind == "record-set"
}

/// The machine a Kubernetes node's `provider_id` names: the table to look
/// in and the key.
fn machine_of(provider_id: &str) -> Option<(Table, String)> {
    if let Some(rest) = provider_id.strip_prefix("aws://") {
        let id = rest.rsplit('/').next().filter(|id| id.starts_with("i-"))?;
        Some((Table::Ec2Instance, id.to_owned()))
    } else if let Some(rest) = provider_id.strip_prefix("gce://") {
        let parts: Vec<&str> = rest.split('/').collect();
        let [project, _zone, name] = parts[..] else { return None };
        Some((Table::GceInstance, format!("{project}/{name}")))
    } else {
        let rest = provider_id.strip_prefix("azure://")?;
        Some((Table::AzureVm, rest.to_ascii_lowercase()))
    }
}

/// Which property a key is, for the linker.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Slot {
    ProviderId,
    Name,
    DnsName,
    Arn,
    Record,
    Ip,
    Role,
}

impl Keys {
    /// Every key the linker reads, with its slot.
    fn slots(&self) -> Vec<(Sym, Slot)> {
        let mut out = Vec::new();
        let mut add = |k: Option<Sym>, slot| out.extend(k.map(|k| (k, slot)));
        add(self.provider_id, Slot::ProviderId);
        add(self.name, Slot::Name);
        add(self.dns_name, Slot::DnsName);
        add(self.arn, Slot::Arn);
        for k in self.record {
            add(k, Slot::Record);
        }
        for k in self.ip {
            add(k, Slot::Ip);
        }
        for k in self.role {
            add(k, Slot::Role);
        }
        out
    }
}

/// What a resource type is, for the linker.
#[derive(Copy, Clone, Default)]
struct TypeClass {
    /// A public address or load balancer.
    public: bool,
    dns: bool,
}

fn facts(
    n: &NodeRef<'_>,
    r: &InternerReader<'_>,
    k: &Keys,
    s: &Segs,
    slots: &[(Sym, Slot)],
    class: TypeClass,
) -> Facts {
    let mut f = Facts::default();
    let (provider, service, kind) = (n.provider(), n.service(), n.kind());
    let ec2_instance = is(provider, s.aws) && is(service, s.ec2) && is(kind, s.instance);
    let gce_instance = is(provider, s.gcp) && is(service, s.compute) && is(kind, s.instance);
    let role = is(provider, s.aws) && is(service, s.iam) && is(kind, s.role);
    let k8s_node = is(provider, s.kubernetes) && is(kind, s.node);

    // What others look this node up by.
    if ec2_instance {
        f.offers.push((Table::Ec2Instance, n.physical_id().to_owned()));
    }
    if is(provider, s.azure) && is(kind, s.vm) {
        f.offers.push((Table::AzureVm, n.physical_id().to_ascii_lowercase()));
    }
    if role {
        f.offers.push((Table::Role, n.physical_id().to_owned()));
    }

    // One pass over the properties.
    for (key, value) in n.props().matching(|key| slots.iter().any(|(k, _)| *k == key)) {
        let Some(slot) = slots.iter().find(|(k, _)| *k == key).map(|(_, s)| *s) else {
            continue;
        };
        let Some(v) = value.as_str() else { continue };
        match slot {
            Slot::Name if gce_instance => {
                f.offers
                    .push((Table::GceInstance, format!("{}/{}", r.resolve(n.account()), v)));
            }
            Slot::Arn if role => f.offers.push((Table::Role, v.to_owned())),
            Slot::DnsName => f.offers.push((Table::LbDns, norm_host(v))),
            Slot::Ip if !v.trim().is_empty() => {
                let ip = v.trim().to_owned();
                if class.public {
                    f.offers.push((Table::PublicIp, ip.clone()));
                } else {
                    // A resource of another provider with this IP is fronted by it.
                    f.asks.push((Table::PublicIp, ip.clone(), 3, Relation::FlowsTo, false));
                }
                f.offers.push((Table::Ip, ip));
            }
            Slot::ProviderId if k8s_node => {
                if let Some((table, key)) = machine_of(v) {
                    f.asks.push((table, key, 0, Relation::Runs, true));
                }
            }
            Slot::Record if class.dns => {
                for value in v.split([',', ' ', ';']).map(norm_host).filter(|v| !v.is_empty()) {
                    f.asks.push((Table::LbDns, value.clone(), 1, Relation::FlowsTo, true));
                    f.asks.push((Table::IpPreferPublic, value, 1, Relation::FlowsTo, true));
                }
            }
            Slot::Role if v.starts_with("arn:") => {
                f.asks.push((Table::Role, v.to_owned(), 2, Relation::Grants, false));
            }
            _ => {}
        }
    }
    if let Some(arn) = k.role_tag.and_then(|t| n.tags().get(t)).map(|v| r.resolve(v))
        && arn.starts_with("arn:")
    {
        f.asks.push((Table::Role, arn.to_string(), 2, Relation::Grants, false));
    }
    f
}

/// Finds every match in the graph (visible nodes only), in parallel.
pub fn find(graph: &Graph, now_us: u64) -> Vec<(NodeId, NodeId, Relation, &'static str)> {
    let reader = graph.interner().reader();
    let keys = Keys::new(&reader);
    let segs = Segs::new(&reader);
    let slots = keys.slots();
    // Types classed once: distinct type symbols, then their names.
    let mut types: FxHashMap<Sym, TypeClass> = FxHashMap::default();
    for shard in graph.node_shards() {
        for (r, ty) in shard.ty.iter().enumerate() {
            if !types.contains_key(ty) {
                let key = shard.key[r];
                let (service, kind) = (reader.resolve(key[2]), reader.resolve(key[3]));
                types.insert(
                    *ty,
                    TypeClass {
                        public: is_public_holder(kind),
                        dns: is_dns(service, kind),
                    },
                );
            }
        }
    }
    let per_shard: Vec<Vec<(NodeId, Facts)>> = graph
        .node_shards()
        .par_iter()
        .enumerate()
        .map(|(s, shard)| {
            let reader = graph.interner().reader();
            (0..shard.len())
                .filter(|&r| visible(shard.valid_to[r], now_us))
                .filter_map(|r| {
                    let id = NodeId::new(s, r as u32, shard.generation);
                    let n = graph.node(id)?;
                    let class = types.get(&shard.ty[r]).copied().unwrap_or_default();
                    let f = facts(&n, &reader, &keys, &segs, &slots, class);
                    (!f.offers.is_empty() || !f.asks.is_empty()).then_some((id, f))
                })
                .collect()
        })
        .collect();
    let mut index: FxHashMap<(Table, &str), Vec<NodeId>> = FxHashMap::default();
    for (id, f) in per_shard.iter().flatten() {
        for (t, key) in &f.offers {
            index.entry((*t, key.as_str())).or_default().push(*id);
        }
    }
    let provider_of = |id: NodeId| graph.node_shards()[id.shard()].key[id.row() as usize][0];
    let mut matches: Vec<Match> = Vec::new();
    for (id, f) in per_shard.iter().flatten() {
        for (t, key, rule, rel, self_is_source) in &f.asks {
            let found = match t {
                Table::IpPreferPublic => index
                    .get(&(Table::PublicIp, key.as_str()))
                    .or_else(|| index.get(&(Table::Ip, key.as_str()))),
                t => index.get(&(*t, key.as_str())),
            };
            let Some(others) = found else { continue };
            for &other in others {
                if other == *id {
                    continue;
                }
                // Shared IPs and DNS names join providers; within one
                // provider the provider's own edges say it.
                if *rule == 3 && provider_of(other) == provider_of(*id) {
                    continue;
                }
                let (src, dst) = if *self_is_source { (*id, other) } else { (other, *id) };
                matches.push((src, dst, *rel, *rule));
            }
        }
    }
    matches.sort_unstable_by_key(|&(s, d, rel, rule)| (s, d, rel as u8, rule));
    matches.dedup_by_key(|&mut (s, d, rel, _)| (s, d, rel as u8));
    matches
        .into_iter()
        .map(|(s, d, rel, rule)| (s, d, rel, RULES[rule]))
        .collect()
}

/// Runs the linker: finds the matches, adds them as inferred edges seen in
/// `scan`, and retires the inferred edges it added before whose match no
/// longer holds. The caller rebuilds the adjacency index when
/// `added + retired > 0`.
pub fn run(graph: &mut Graph, now_us: u64, scan: u32) -> LinkReport {
    let started = Instant::now();
    let matches = find(graph, now_us);
    let interner = graph.interner().clone();
    let key = interner.intern(INFERRED_BY);
    let mut report = LinkReport {
        rules: RULES
            .iter()
            .map(|r| RuleStats {
                rule: r,
                ..RuleStats::default()
            })
            .collect(),
        ..LinkReport::default()
    };
    let mut edges = Vec::with_capacity(matches.len());
    for (src, dst, rel, rule) in &matches {
        let i = RULES.iter().position(|r| r == rule).unwrap_or(0);
        report.rules[i].matched += 1;
        let mut props = Vec::new();
        PropWriter::new(&mut props).str(key, rule);
        edges.push(InferredEdge {
            src: *src,
            dst: *dst,
            rel: *rel,
            props,
        });
    }
    let stats = graph.upsert_inferred_edges(&edges, now_us, scan);
    report.added = (stats.inserted + stats.revived) as u64;
    // Matches already reported by a provider: count them per rule.
    for (e, (_, _, _, rule)) in edges.iter().zip(&matches) {
        let i = RULES.iter().position(|r| r == rule).unwrap_or(0);
        if graph.is_reported_edge(e.src, e.dst, e.rel) {
            report.rules[i].reported += 1;
        }
    }
    report.retired = graph.retire_inferred(scan, now_us, |p| {
        p.get(key)
            .is_some_and(|v| v.as_str().is_some_and(|s| RULES.contains(&s)))
    }) as u64;
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}
