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

use svc_graph::graph::{Graph, InferredEdge, NodeRef, visible};
use svc_graph::ids::{NodeId, Sym};
use svc_graph::intern::InternerReader;
use svc_graph::props::PropWriter;
use svc_graph::relation::Relation;

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

/// What each node offers and asks, kept by row across runs. A node's facts
/// depend only on its own version (its type, state, tags and properties,
/// which the row's content hash covers), so a later run reads the
/// properties of the rows that changed and copies the rest.
#[derive(Default)]
pub struct Cache {
    shards: Vec<CacheShard>,
    /// Rows whose facts the last run read again (the rest were kept).
    pub read: u64,
}

#[derive(Default)]
struct CacheShard {
    /// The node shard's generation the rows are numbered in.
    generation: u32,
    /// By row: the content hash the facts were read from, 0 when none
    /// were kept (not visible, or never read).
    stamp: Vec<u64>,
    /// By row: where its items start in `items` (one more entry than rows).
    start: Vec<u32>,
    items: Vec<Item>,
    /// The items' keys, end to end.
    text: String,
}

/// One offer or ask of a node, its key in the shard's `text`.
#[derive(Copy, Clone)]
struct Item {
    table: Table,
    /// `(rule, relation, self is source)` of an ask; `None` for an offer.
    ask: Option<(u8, Relation, bool)>,
    key: (u32, u32),
}

impl CacheShard {
    fn key(&self, item: &Item) -> &str {
        let (at, len) = item.key;
        self.text.get(at as usize..(at + len) as usize).unwrap_or("")
    }

    fn push(&mut self, table: Table, ask: Option<(u8, Relation, bool)>, key: &str) {
        let at = self.text.len() as u32;
        self.text.push_str(key);
        self.items.push(Item {
            table,
            ask,
            key: (at, key.len() as u32),
        });
    }

    fn items(&self, row: usize) -> &[Item] {
        match (self.start.get(row), self.start.get(row + 1)) {
            (Some(&a), Some(&b)) => &self.items[a as usize..b as usize],
            _ => &[],
        }
    }
}

fn key_hash(table: Table, key: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write_u8(table as u8);
    h.write(key.as_bytes());
    h.finish()
}

/// Finds every match in the graph (visible nodes only), in parallel.
pub fn find(graph: &Graph, now_us: u64) -> Vec<(NodeId, NodeId, Relation, &'static str)> {
    find_with(&mut Cache::default(), graph, now_us)
}

/// [`find`], reading again only the rows whose facts `cache` does not hold
/// for their current version, and keeping this run's facts in it.
pub fn find_with(cache: &mut Cache, graph: &Graph, now_us: u64) -> Vec<(NodeId, NodeId, Relation, &'static str)> {
    let reader = graph.interner().reader();
    let keys = Keys::new(&reader);
    let segs = Segs::new(&reader);
    let slots = keys.slots();
    // Types classed once, by symbol: distinct type symbols, then their names.
    let mut types: Vec<Option<TypeClass>> = Vec::new();
    for shard in graph.node_shards() {
        for (r, ty) in shard.ty.iter().enumerate() {
            if types.get(ty.index()).is_none_or(Option::is_none) {
                let key = shard.key[r];
                let (service, kind) = (reader.resolve(key[2]), reader.resolve(key[3]));
                if types.len() <= ty.index() {
                    types.resize(ty.index() + 1, None);
                }
                types[ty.index()] = Some(TypeClass {
                    public: is_public_holder(kind),
                    dns: is_dns(service, kind),
                });
            }
        }
    }
    let mut old = std::mem::take(&mut cache.shards);
    old.resize_with(graph.node_shards().len(), CacheShard::default);
    let fresh: Vec<(CacheShard, u64)> = graph
        .node_shards()
        .par_iter()
        .zip(old.into_par_iter())
        .enumerate()
        .map(|(s, (shard, old))| {
            let reader = graph.interner().reader();
            let same = old.generation == shard.generation;
            let mut out = CacheShard {
                generation: shard.generation,
                stamp: vec![0; shard.len()],
                start: Vec::with_capacity(shard.len() + 1),
                items: Vec::with_capacity(old.items.len()),
                text: String::with_capacity(old.text.len()),
            };
            let mut read = 0;
            for r in 0..shard.len() {
                out.start.push(out.items.len() as u32);
                if !visible(shard.valid_to[r], now_us) {
                    continue;
                }
                let content = shard.content[r];
                if same && content != 0 && old.stamp.get(r) == Some(&content) {
                    for item in old.items(r) {
                        out.push(item.table, item.ask, old.key(item));
                    }
                    out.stamp[r] = content;
                    continue;
                }
                let Some(n) = graph.node(NodeId::new(s, r as u32, shard.generation)) else {
                    continue;
                };
                read += 1;
                let class = types.get(shard.ty[r].index()).copied().flatten().unwrap_or_default();
                let f = facts(&n, &reader, &keys, &segs, &slots, class);
                for (table, key) in &f.offers {
                    out.push(*table, None, key);
                }
                for (table, key, rule, rel, self_is_source) in &f.asks {
                    out.push(*table, Some((*rule as u8, *rel, *self_is_source)), key);
                }
                out.stamp[r] = content;
            }
            out.start.push(out.items.len() as u32);
            (out, read)
        })
        .collect();
    cache.read = fresh.iter().map(|(_, n)| n).sum();
    cache.shards = fresh.into_iter().map(|(c, _)| c).collect();
    join(graph, &cache.shards)
}

/// Where an item is: `(shard, row, item index in the shard)`.
type At = (u32, u32, u32);

/// An offer by the hash of its table and key.
type Offer = (u64, At);

/// An ask where it is, with its `(rule, relation, self is source)`.
type Ask = (At, (u8, Relation, bool));

/// Matches every ask against the offers: both sorted by the hash of their
/// table and key, keys compared in full.
fn join(graph: &Graph, shards: &[CacheShard]) -> Vec<(NodeId, NodeId, Relation, &'static str)> {
    let id_of = |(s, r, _): At| NodeId::new(s as usize, r, graph.node_shards()[s as usize].generation);
    let (mut offers, asks): (Vec<Offer>, Vec<Ask>) = {
        let per_shard: Vec<(Vec<Offer>, Vec<Ask>)> = shards
            .par_iter()
            .enumerate()
            .map(|(s, c)| {
                let (mut offers, mut asks) = (Vec::new(), Vec::new());
                for r in 0..c.start.len().saturating_sub(1) {
                    let a = c.start[r] as usize;
                    for (i, item) in c.items(r).iter().enumerate() {
                        let at = (s as u32, r as u32, (a + i) as u32);
                        match item.ask {
                            None => offers.push((key_hash(item.table, c.key(item)), at)),
                            Some(ask) => asks.push((at, ask)),
                        }
                    }
                }
                (offers, asks)
            })
            .collect();
        let mut offers = Vec::with_capacity(per_shard.iter().map(|p| p.0.len()).sum());
        let mut asks = Vec::with_capacity(per_shard.iter().map(|p| p.1.len()).sum());
        for (o, a) in per_shard {
            offers.extend(o);
            asks.extend(a);
        }
        (offers, asks)
    };
    offers.par_sort_unstable_by_key(|o| o.0);
    // Where each hash's offers start and end in `offers`.
    let mut ranges: FxHashMap<u64, (u32, u32)> = FxHashMap::default();
    ranges.reserve(offers.len());
    let mut from = 0;
    while from < offers.len() {
        let h = offers[from].0;
        let to = from + offers[from..].iter().take_while(|o| o.0 == h).count();
        ranges.insert(h, (from as u32, to as u32));
        from = to;
    }

    let item = |(s, _, i): At| &shards[s as usize].items[i as usize];
    let key = |at: At| shards[at.0 as usize].key(item(at));
    // The nodes offering `key` in `table`.
    let offered = |table: Table, k: &str| -> Vec<At> {
        let Some(&(from, to)) = ranges.get(&key_hash(table, k)) else {
            return Vec::new();
        };
        offers[from as usize..to as usize]
            .iter()
            .filter(|o| item(o.1).table == table && key(o.1) == k)
            .map(|o| o.1)
            .collect()
    };
    let provider_of = |id: NodeId| graph.node_shards()[id.shard()].key[id.row() as usize][0];
    let mut matches: Vec<Match> = asks
        .par_iter()
        .flat_map_iter(|&(at, (rule, rel, self_is_source))| {
            let ask = item(at);
            let k = key(at);
            let me = id_of(at);
            let found: Vec<At> = match ask.table {
                // The public holder of an IP if there is one, else any holder.
                Table::IpPreferPublic => {
                    let public = offered(Table::PublicIp, k);
                    if public.is_empty() {
                        offered(Table::Ip, k)
                    } else {
                        public
                    }
                }
                t => offered(t, k),
            };
            found.into_iter().filter_map(move |o| {
                let other = id_of(o);
                // Shared IPs and DNS names join providers; within one
                // provider the provider's own edges say it.
                if other == me || rule == 3 && provider_of(other) == provider_of(me) {
                    return None;
                }
                let (src, dst) = if self_is_source { (me, other) } else { (other, me) };
                Some((src, dst, rel, rule as usize))
            })
        })
        .collect();

    matches.par_sort_unstable_by_key(|&(s, d, rel, rule)| (s, d, rel as u8, rule));
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
    run_with(&mut Cache::default(), graph, now_us, scan)
}

/// [`run`] with the facts of the last run kept in `cache` ([`find_with`]).
pub fn run_with(cache: &mut Cache, graph: &mut Graph, now_us: u64, scan: u32) -> LinkReport {
    let started = Instant::now();
    let matches = find_with(cache, graph, now_us);
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
