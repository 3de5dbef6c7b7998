//! Declared against live: which graph node each declared resource is
//! ([`Index`]), and where the two disagree ([`report`]).
//!
//! A declared resource is matched by the CRN its attributes give when the
//! graph has that node; else by its provider, type and physical id, which
//! also finds resources whose attributes do not say their region or
//! account. Drift is claimed only where svc looks: a declared resource in
//! an account no scan reports is "outside the scans", not gone, and a live
//! resource is "unmanaged" only in an account some state declares
//! resources in.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use serde_json::{Map, Value};

use crate::mapping::{self, Kind};
use crate::state::{Declared, State};

/// A node as drift reads it.
#[derive(Clone, Debug, Default)]
pub struct LiveNode {
    /// The properties the plugin reported.
    pub props: Map<String, Value>,
    pub tags: BTreeMap<String, String>,
    pub cost_usd_mo: f64,
}

/// One node of the graph, as a pass over all of them sees it.
pub struct Seen<'a> {
    pub provider: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    pub kind: &'a str,
    pub account: &'a str,
    pub id: &'a str,
    /// Not deleted.
    pub live: bool,
    pub cost_usd_mo: f64,
}

impl Seen<'_> {
    pub fn crn(&self) -> String {
        let mut out = String::new();
        svc_graph::crn::write_crn(
            &mut out,
            [
                self.provider,
                self.region,
                self.service,
                self.kind,
                self.account,
                self.id,
            ],
        );
        out
    }
}

/// The live graph, as drift reads it.
pub trait Live {
    /// Whether the graph holds the node `crn`, live or deleted.
    fn contains(&self, crn: &str) -> bool;
    /// The node `crn` when it is live.
    fn live(&self, crn: &str) -> Option<LiveNode>;
    /// Every node the graph holds, live or deleted.
    fn each(&self, f: &mut dyn FnMut(&Seen<'_>));
}

/// A declared managed resource and the node it is.
#[derive(Debug)]
pub struct Entry {
    /// Which state declares it (the index into the states given).
    pub state: usize,
    pub declared: Declared,
    pub kind: &'static Kind,
    /// Its CRN: the graph's node, or the CRN its attributes give when the
    /// graph has no such node; `None` when neither says.
    pub crn: Option<String>,
    /// Whether the graph holds the node (live or deleted).
    pub in_graph: bool,
}

/// A declared managed resource of a type svc does not map.
#[derive(Debug)]
pub struct Unmapped {
    pub state: usize,
    pub address: String,
    pub ty: String,
}

/// Every managed resource the states declare, matched to the graph.
#[derive(Debug, Default)]
pub struct Index {
    pub entries: Vec<Entry>,
    pub unmapped: Vec<Unmapped>,
    by_crn: HashMap<String, usize>,
}

type IdKey = (&'static str, &'static str, &'static str, String);

impl Index {
    /// Matches every managed resource of `states` to the graph. At most one
    /// pass over the graph, made only when some resource is not found by
    /// the CRN its attributes give.
    pub fn build(states: &[&State], live: &dyn Live) -> Index {
        let mut index = Index::default();
        let mut missing: Vec<(usize, IdKey)> = Vec::new();
        for (state, s) in states.iter().enumerate() {
            for d in s.resources.iter().filter(|d| d.is_managed()) {
                let Some(kind) = mapping::kind_of(&d.ty) else {
                    index.unmapped.push(Unmapped {
                        state,
                        address: d.address.clone(),
                        ty: d.ty.clone(),
                    });
                    continue;
                };
                let crn = mapping::crn(kind, &d.attributes);
                let in_graph = crn.as_deref().is_some_and(|c| live.contains(c));
                if !in_graph && let Some(id) = mapping::physical_id(kind, &d.attributes) {
                    missing.push((index.entries.len(), (kind.provider, kind.service, kind.kind, id)));
                }
                index.entries.push(Entry {
                    state,
                    declared: d.clone(),
                    kind,
                    crn,
                    in_graph,
                });
            }
        }
        if !missing.is_empty() {
            let wanted: HashSet<&IdKey> = missing.iter().map(|(_, k)| k).collect();
            let mut kinds: Vec<(&'static str, &'static str, &'static str)> =
                wanted.iter().map(|k| (k.0, k.1, k.2)).collect();
            kinds.sort_unstable();
            kinds.dedup();
            let mut found: HashMap<IdKey, String> = HashMap::new();
            live.each(&mut |n| {
                let Some(&(p, s, k)) = kinds
                    .iter()
                    .find(|(p, s, k)| *p == n.provider && *s == n.service && *k == n.kind)
                else {
                    return;
                };
                let key = (p, s, k, n.id.to_owned());
                if wanted.contains(&key) {
                    found.insert(key, n.crn());
                }
            });
            for (at, key) in missing {
                if let (Some(crn), Some(e)) = (found.get(&key), index.entries.get_mut(at)) {
                    e.crn = Some(crn.clone());
                    e.in_graph = true;
                }
            }
        }
        for (i, e) in index.entries.iter().enumerate() {
            if let Some(c) = &e.crn {
                // Two states declaring one resource: the first one speaks for it.
                index.by_crn.entry(c.clone()).or_insert(i);
            }
        }
        index
    }

    /// The declared resource that is the node `crn`.
    pub fn get(&self, crn: &str) -> Option<&Entry> {
        self.by_crn.get(crn).and_then(|&i| self.entries.get(i))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A declared resource with no live node.
#[derive(Debug, PartialEq)]
pub struct Gone {
    pub entry: usize,
}

/// An attribute whose live value is not the declared one.
#[derive(Debug, PartialEq)]
pub struct AttributeDrift {
    /// The Terraform attribute (`size`, `tags.owner`).
    pub attribute: String,
    /// The graph property it is compared with (`size_gib`, `tags.owner`).
    pub property: String,
    /// `null` when absent.
    pub declared: Value,
    pub live: Value,
}

/// A declared resource whose live node differs from the state.
#[derive(Debug, PartialEq)]
pub struct Changed {
    pub entry: usize,
    pub attributes: Vec<AttributeDrift>,
}

/// A live node of a type Terraform can declare, in an account a state
/// covers, that no state declares.
#[derive(Debug, PartialEq)]
pub struct Unmanaged {
    pub crn: String,
    pub graph_type: String,
    pub terraform_type: &'static str,
    pub cost_usd_mo: f64,
}

/// How many of each.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Managed resource instances the states declare.
    pub declared: usize,
    /// ... of which svc maps the type.
    pub mapped: usize,
    /// ... of which the graph has live.
    pub in_sync: usize,
    pub changed: usize,
    /// Attributes that differ, over every changed resource.
    pub attributes: usize,
    pub gone: usize,
    /// Declared in an account (or provider) no scan reports.
    pub outside_scans: usize,
    pub unmanaged: usize,
}

/// The drift of the estate, with each list cut to `limit` entries (the
/// totals count them all).
#[derive(Debug, Default)]
pub struct Report {
    pub totals: Totals,
    /// In state order.
    pub gone: Vec<Gone>,
    /// In state order.
    pub changed: Vec<Changed>,
    /// The most expensive first, then by CRN.
    pub unmanaged: Vec<Unmanaged>,
}

/// Tag keys no Terraform configuration manages: the cloud's own (`aws:`)
/// and those svc writes or reads (`svc:`).
fn unmanaged_tag(key: &str) -> bool {
    key.starts_with("aws:") || key.starts_with("svc:")
}

/// Compares the declared resources with the live graph.
pub fn report(index: &Index, live: &dyn Live, limit: usize) -> Report {
    let mut out = Report::default();
    out.totals.declared = index.entries.len() + index.unmapped.len();
    out.totals.mapped = index.entries.len();
    // One pass over the graph: which accounts the scans report, which
    // accounts the states cover, and the live nodes no state declares.
    let mut scanned = Accounts::default();
    let mut covered = Accounts::default();
    for e in &index.entries {
        if let Some(c) = e.crn.as_deref().and_then(|c| svc_graph::crn::CrnRef::parse(c).ok()) {
            covered.insert(c.provider, c.account);
        }
    }
    // The `limit` most expensive, ties to the smaller CRN: a min-heap whose
    // least is the cheapest, then the greatest CRN.
    let mut heap: BinaryHeap<Reverse<(OrdCost, Reverse<String>, usize)>> = BinaryHeap::new();
    // One buffer for every node's CRN: a string is kept only for a node
    // that enters the list.
    let mut crn = String::new();
    live.each(&mut |n| {
        scanned.insert(n.provider, n.account);
        if !n.live || !covered.contains(n.provider, n.account) {
            return;
        }
        let Some(kind) = mapping::KINDS
            .iter()
            .position(|k| k.provider == n.provider && k.service == n.service && k.kind == n.kind)
        else {
            return;
        };
        crn.clear();
        svc_graph::crn::write_crn(&mut crn, [n.provider, n.region, n.service, n.kind, n.account, n.id]);
        if index.by_crn.contains_key(crn.as_str()) {
            return;
        }
        out.totals.unmanaged += 1;
        let cost = OrdCost(n.cost_usd_mo);
        if heap.len() < limit {
            heap.push(Reverse((cost, Reverse(crn.clone()), kind)));
        } else if let Some(Reverse((least_cost, Reverse(least_crn), _))) = heap.peek()
            && (cost > *least_cost || (cost == *least_cost && crn.as_str() < least_crn.as_str()))
        {
            heap.pop();
            heap.push(Reverse((cost, Reverse(crn.clone()), kind)));
        }
    });
    let mut unmanaged: Vec<_> = heap
        .into_iter()
        .map(|Reverse((cost, Reverse(crn), kind))| (cost, crn, kind))
        .collect();
    unmanaged.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    out.unmanaged = unmanaged
        .into_iter()
        .filter_map(|(cost, crn, kind)| {
            let kind = mapping::KINDS.get(kind)?;
            Some(Unmanaged {
                crn,
                graph_type: kind.graph_type(),
                terraform_type: kind.tf,
                cost_usd_mo: cost.0,
            })
        })
        .collect();

    for (i, e) in index.entries.iter().enumerate() {
        let node = e.crn.as_deref().and_then(|c| live.live(c));
        match node {
            Some(node) => {
                let attributes = compare(e.kind, &e.declared.attributes, &node);
                if attributes.is_empty() {
                    out.totals.in_sync += 1;
                    continue;
                }
                out.totals.changed += 1;
                out.totals.attributes += attributes.len();
                if out.changed.len() < limit {
                    out.changed.push(Changed { entry: i, attributes });
                }
            }
            None => {
                let placed = e.crn.as_deref().and_then(|c| svc_graph::crn::CrnRef::parse(c).ok());
                let watched = match &placed {
                    Some(c) => scanned.contains(c.provider, c.account),
                    None => scanned.has_provider(e.kind.provider),
                };
                if !watched && !e.in_graph {
                    out.totals.outside_scans += 1;
                    continue;
                }
                out.totals.gone += 1;
                if out.gone.len() < limit {
                    out.gone.push(Gone { entry: i });
                }
            }
        }
    }
    out
}

/// Accounts by provider, looked up without allocating.
#[derive(Default)]
struct Accounts(HashMap<String, HashSet<String>>);

impl Accounts {
    fn insert(&mut self, provider: &str, account: &str) {
        if self.contains(provider, account) {
            return;
        }
        self.0
            .entry(provider.to_owned())
            .or_default()
            .insert(account.to_owned());
    }

    fn contains(&self, provider: &str, account: &str) -> bool {
        self.0.get(provider).is_some_and(|a| a.contains(account))
    }

    fn has_provider(&self, provider: &str) -> bool {
        self.0.contains_key(provider)
    }
}

/// The drift of one resource: the report of an estate holding only it.
pub fn report_one(index: &Index, live: &dyn Live, crn: &str) -> Report {
    let mut out = Report::default();
    let node = live.live(crn);
    let cost = node.as_ref().map_or(0.0, |n| n.cost_usd_mo);
    match (index.by_crn.get(crn), node) {
        (Some(&entry), Some(node)) => {
            out.totals.declared = 1;
            out.totals.mapped = 1;
            let Some(e) = index.entries.get(entry) else {
                return out;
            };
            let attributes = compare(e.kind, &e.declared.attributes, &node);
            if attributes.is_empty() {
                out.totals.in_sync = 1;
            } else {
                out.totals.changed = 1;
                out.totals.attributes = attributes.len();
                out.changed.push(Changed { entry, attributes });
            }
        }
        (Some(&entry), None) => {
            out.totals.declared = 1;
            out.totals.mapped = 1;
            out.totals.gone = 1;
            out.gone.push(Gone { entry });
        }
        (None, Some(_)) => {
            let Ok(c) = svc_graph::crn::CrnRef::parse(crn) else {
                return out;
            };
            let kind = mapping::KINDS
                .iter()
                .find(|k| k.provider == c.provider && k.service == c.service && k.kind == c.kind);
            let covered = index.entries.iter().any(|e| {
                e.crn
                    .as_deref()
                    .and_then(|d| svc_graph::crn::CrnRef::parse(d).ok())
                    .is_some_and(|d| d.provider == c.provider && d.account == c.account)
            });
            if let (Some(kind), true) = (kind, covered) {
                out.totals.unmanaged = 1;
                out.unmanaged.push(Unmanaged {
                    crn: crn.to_owned(),
                    graph_type: kind.graph_type(),
                    terraform_type: kind.tf,
                    cost_usd_mo: cost,
                });
            }
        }
        (None, None) => {}
    }
    out
}

/// A cost ordered totally (NaN as zero).
#[derive(Copy, Clone, Debug, PartialEq)]
struct OrdCost(f64);

impl Eq for OrdCost {}

impl PartialOrd for OrdCost {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdCost {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let v = |x: f64| if x.is_nan() { 0.0 } else { x };
        v(self.0).total_cmp(&v(other.0))
    }
}

/// The attributes and tags whose live value differs from the declared one,
/// among those the plugin reports.
pub fn compare(kind: &Kind, attrs: &Map<String, Value>, node: &LiveNode) -> Vec<AttributeDrift> {
    let mut out = Vec::new();
    for &(tf, prop) in kind.attributes {
        let Some(live) = node.props.get(prop) else {
            continue;
        };
        let declared = mapping::attribute(attrs, tf).cloned().unwrap_or(Value::Null);
        if declared.is_null() && live.is_null() {
            continue;
        }
        if !same(&declared, live) {
            out.push(AttributeDrift {
                attribute: tf.to_owned(),
                property: prop.to_owned(),
                declared,
                live: live.clone(),
            });
        }
    }
    if let Some(tags) = mapping::declared_tags(kind, attrs) {
        let field = kind.tags.unwrap_or("tags");
        let field = field.rsplit('.').next().unwrap_or(field);
        let mut keys: Vec<&str> = tags
            .keys()
            .map(String::as_str)
            .chain(node.tags.keys().map(String::as_str))
            .filter(|k| !unmanaged_tag(k))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            let declared = tags.get(key).cloned().unwrap_or(Value::Null);
            let live = node.tags.get(key).map_or(Value::Null, |v| Value::from(v.as_str()));
            if !same(&declared, &live) {
                out.push(AttributeDrift {
                    attribute: format!("{field}.{key}"),
                    property: format!("tags.{key}"),
                    declared,
                    live,
                });
            }
        }
    }
    out
}

/// Whether a declared and a live value say the same: numbers by value,
/// booleans and numbers also against their text, zero and the empty
/// string against null (Terraform writes `0` or `""` for "not set").
fn same(declared: &Value, live: &Value) -> bool {
    match (declared, live) {
        (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
            _ => a == b,
        },
        (Value::Null, v) | (v, Value::Null) => match v {
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::String(s) => s.is_empty(),
            Value::Null => true,
            _ => false,
        },
        (Value::String(s), other) | (other, Value::String(s)) if !other.is_string() => match other {
            Value::Number(n) => s.parse::<f64>().ok() == n.as_f64(),
            Value::Bool(b) => s.parse::<bool>().ok() == Some(*b),
            _ => false,
        },
        (a, b) => a == b,
    }
}

#[cfg(test)]
#[path = "drift/tests.rs"]
mod tests;
