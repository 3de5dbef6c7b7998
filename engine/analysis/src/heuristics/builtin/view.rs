//! What a rule sees of a node.

use std::cell::{Cell, OnceCell, RefCell};
use std::fmt;

use std::hash::Hasher;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHasher};

use svc_graph::graph::{Graph, NodeRef, visible};
use svc_graph::ids::{NodeId, Sym};
use svc_graph::intern::InternerReader;
use svc_graph::props::ValueRef;
use svc_graph::relation::Relation;

/// Seconds in a day.
pub const DAY: u64 = 86_400;

macro_rules! keys {
    ($($name:ident),* $(,)?) => {
        /// The property and tag names the rules read, interned once per pass
        /// (`None` when no node has that key).
        pub struct Keys {
            $(pub $name: Option<Sym>,)*
            pub svc_ignore: Option<Sym>,
        }

        impl Keys {
            pub fn new(reader: &InternerReader<'_>) -> Keys {
                Keys {
                    $($name: reader.get(stringify!($name)),)*
                    svc_ignore: reader.get("svc:ignore"),
                }
            }
        }
    };
}

keys!(
    access_tier,
    bytes,
    window_end,
    inferred_by,
    address,
    association_id,
    attached_to,
    attachment_state,
    backend_pool_size,
    billing_mode,
    bytes_processed_7d,
    cache_nodes,
    capacity_type,
    connections_7d,
    consumed_read_7d,
    consumed_write_7d,
    cpu_avg_7d,
    cpu_requests_pct,
    desired_size,
    disk_type,
    dtu_avg_7d,
    endpoints,
    external_ip,
    healthy_targets,
    hit_rate,
    incomplete_multipart_gib,
    instance_type,
    ingested_bytes_30d,
    invocations_90d,
    last_accessed_at,
    last_attached_at,
    last_detached_at,
    last_invoked_at,
    lb_rules,
    lifecycle,
    machine_type,
    memory_mb,
    mounted_by,
    network_bytes_7d,
    node_count,
    node_type,
    power_state,
    provisioned_concurrency,
    public_ip,
    read_capacity,
    record_value,
    request_count_7d,
    requests_30d,
    requests_7d,
    retention_days,
    rrdatas,
    service_type,
    size_gib,
    sku,
    source_disk,
    source_volume_id,
    stopped_at,
    stored_gib,
    transactions_30d,
    unschedulable,
    users,
    vm_size,
    volume_type,
    write_capacity,
);

/// Facts about the whole estate that single nodes are checked against:
/// hashes of DNS targets, EBS volume ids and GCP disk names, each with the
/// number of nodes that contribute it (so one kept by a later scan can be
/// added and taken away node by node). A collision can only make a
/// resource look referenced, so it hides a finding and never invents one.
#[derive(Clone, Default)]
pub struct Index {
    counts: FxHashMap<u64, u32>,
}

/// DNS record types whose values name addresses or hosts.
const DNS_TYPES: [&str; 3] = ["route53:record", "dns:record-set", "network:dns-record"];

/// What an [`Index`] entry says exists.
#[derive(Copy, Clone)]
enum Fact {
    DnsTarget = 1,
    Volume = 2,
    Disk = 3,
}

/// The index key of `text` as a `fact`.
fn fact_key(fact: Fact, text: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write_u8(fact as u8);
    h.write(text.as_bytes());
    h.finish()
}

/// The node types that contribute to the [`Index`], interned.
pub struct Contributors {
    dns: Vec<Sym>,
    volume: Option<Sym>,
    disk: Option<Sym>,
    gcp: Option<Sym>,
    record_value: Option<Sym>,
    rrdatas: Option<Sym>,
}

impl Contributors {
    pub fn new(reader: &InternerReader<'_>, keys: &Keys) -> Contributors {
        Contributors {
            dns: DNS_TYPES.iter().filter_map(|t| reader.get(t)).collect(),
            volume: reader.get("ec2:volume"),
            disk: reader.get("compute:disk"),
            gcp: reader.get("gcp"),
            record_value: keys.record_value,
            rrdatas: keys.rrdatas,
        }
    }

    fn none(&self) -> bool {
        self.dns.is_empty() && self.volume.is_none() && self.disk.is_none()
    }

    /// Whether rows of type `ty` may contribute.
    pub fn reads(&self, ty: Sym) -> bool {
        self.dns.contains(&ty) || Some(ty) == self.volume || Some(ty) == self.disk
    }

    /// Whether what rows of type `ty` contribute comes from their identity
    /// alone (a volume's or disk's id), never from their content.
    pub fn fixed(&self, ty: Sym) -> bool {
        Some(ty) == self.volume || Some(ty) == self.disk
    }

    /// The index keys node `n` contributes, appended to `out`.
    pub fn keys_of(&self, n: NodeRef<'_>, out: &mut Vec<u64>) {
        let ty = n.ty();
        if self.dns.contains(&ty) {
            for key in [self.record_value, self.rrdatas] {
                match key.and_then(|k| n.props().get(k)) {
                    Some(ValueRef::Str(s)) => out.extend(
                        s.split([',', ' '])
                            .map(|t| t.trim_end_matches('.'))
                            .filter(|t| !t.is_empty())
                            .map(|t| fact_key(Fact::DnsTarget, t)),
                    ),
                    Some(ValueRef::Json(text)) => out.extend(
                        json_strings(text)
                            .filter(|t| !t.is_empty())
                            .map(|t| fact_key(Fact::DnsTarget, t)),
                    ),
                    _ => {}
                }
            }
        } else if Some(ty) == self.volume {
            out.push(fact_key(Fact::Volume, n.physical_id()));
        } else if Some(ty) == self.disk && self.gcp.is_some_and(|p| n.provider() == p) {
            out.push(fact_key(Fact::Disk, n.physical_id()));
        }
    }
}

impl Index {
    pub fn build(graph: &Graph, reader: &InternerReader<'_>, keys: &Keys, now_us: u64) -> Index {
        let who = Contributors::new(reader, keys);
        if who.none() {
            return Index::default();
        }
        let parts: Vec<Vec<u64>> = graph
            .node_shards()
            .par_iter()
            .enumerate()
            .map(|(s, shard)| {
                let mut part = Vec::new();
                for r in 0..shard.len() {
                    if !who.reads(shard.ty[r]) || !visible(shard.valid_to[r], now_us) {
                        continue;
                    }
                    if let Some(node) = graph.node(NodeId::new(s, r as u32, shard.generation)) {
                        who.keys_of(node, &mut part);
                    }
                }
                part
            })
            .collect();
        let mut index = Index::default();
        index.counts.reserve(parts.iter().map(Vec::len).sum());
        for key in parts.into_iter().flatten() {
            index.add(key);
        }
        index
    }

    pub fn add(&mut self, key: u64) {
        *self.counts.entry(key).or_default() += 1;
    }

    /// Takes one contribution of `key` away; returns whether none is left.
    pub fn remove(&mut self, key: u64) -> bool {
        match self.counts.get_mut(&key) {
            Some(c) if *c > 1 => {
                *c -= 1;
                false
            }
            Some(_) => {
                self.counts.remove(&key);
                true
            }
            None => false,
        }
    }

    pub fn contains(&self, key: u64) -> bool {
        self.counts.contains_key(&key)
    }
}

/// The string elements of a JSON array text, without unescaping (DNS
/// values need none).
fn json_strings(text: &str) -> impl Iterator<Item = &str> {
    text.split('"').skip(1).step_by(2).map(|s| s.trim_end_matches('.'))
}

/// Everything the rules of one pass share.
pub struct Ctx<'g> {
    pub graph: &'g Graph,
    pub reader: &'g InternerReader<'g>,
    pub keys: &'g Keys,
    pub index: &'g Index,
    pub machines: &'g Machines,
    pub now_us: u64,
    /// When the estate was observed, Unix seconds.
    pub as_of_s: u64,
}

/// What one node's evaluation read besides the node's own row, so a later
/// pass knows when its answer may have changed: the other nodes it looked
/// at, the [`Index`] keys it asked about, and the times until which the
/// answer holds (ages count whole days; an `svc:ignore` date or window
/// ends).
pub struct Reads {
    pub deps: RefCell<Vec<NodeId>>,
    pub keys: RefCell<Vec<u64>>,
    /// The answer may change once the estate is observed at or after this
    /// (Unix seconds; `u64::MAX`: never by itself).
    pub until_as_of: Cell<u64>,
    /// The answer may change once a scan runs at or after this (Unix seconds).
    pub until_now: Cell<u64>,
    /// Whether it read when the node's current version started.
    pub changed_s: Cell<bool>,
    /// Which of the node's own edges it read: bit `r` for outgoing edges of
    /// relation `r`, bit `8 + r` for incoming ones ([`edge_bit`]).
    pub edges: Cell<u16>,
}

/// The bit of [`Reads::edges`] for edges of `rel`, outgoing or incoming.
pub fn edge_bit(rel: Relation, outgoing: bool) -> u16 {
    1 << (rel as u16 + if outgoing { 0 } else { 8 })
}

impl Default for Reads {
    fn default() -> Self {
        Reads {
            deps: RefCell::new(Vec::new()),
            keys: RefCell::new(Vec::new()),
            until_as_of: Cell::new(u64::MAX),
            until_now: Cell::new(u64::MAX),
            changed_s: Cell::new(false),
            edges: Cell::new(0),
        }
    }
}

impl Reads {
    /// Forgets what was read, keeping the lists' memory for the next node.
    pub fn reset(&mut self) {
        self.deps.get_mut().clear();
        self.keys.get_mut().clear();
        self.until_as_of.set(u64::MAX);
        self.until_now.set(u64::MAX);
        self.changed_s.set(false);
        self.edges.set(0);
    }
    pub fn bound_as_of(&self, until: u64) {
        self.until_as_of.set(self.until_as_of.get().min(until));
    }
    pub fn bound_now(&self, until: u64) {
        self.until_now.set(self.until_now.get().min(until));
    }
    fn edges(&self, bits: u16) {
        self.edges.set(self.edges.get() | bits);
    }
}

/// A node as a rule reads it. What several rules of one node ask for
/// (its cost, the machine it is attached to) is worked out once.
pub struct Node<'a> {
    ctx: &'a Ctx<'a>,
    n: NodeRef<'a>,
    /// Where the evaluation notes what it read, when someone keeps the answer.
    reads: Option<&'a Reads>,
    /// Whether this is the node being evaluated (not a neighbour it read).
    own: bool,
    cost: Cell<Option<f64>>,
    pub(super) unused: OnceCell<Option<Unused>>,
    pub(super) attached_machine: OnceCell<Option<(MachineName<'a>, Unused)>>,
}

impl<'a> Node<'a> {
    pub fn new(ctx: &'a Ctx<'a>, id: NodeId) -> Node<'a> {
        let n = ctx.graph.node(id).expect("ids come from the shards being walked");
        Node::with(ctx, n, None, true)
    }

    /// The node `id`, noting in `reads` what its evaluation reads.
    pub fn recording(ctx: &'a Ctx<'a>, id: NodeId, reads: &'a Reads) -> Node<'a> {
        let n = ctx.graph.node(id).expect("ids come from the shards being walked");
        Node::with(ctx, n, Some(reads), true)
    }

    /// The node `id`, if it is one of this graph's.
    pub fn find(ctx: &'a Ctx<'a>, id: NodeId) -> Option<Node<'a>> {
        ctx.graph.node(id).map(|n| Node::with(ctx, n, None, true))
    }

    fn with(ctx: &'a Ctx<'a>, n: NodeRef<'a>, reads: Option<&'a Reads>, own: bool) -> Node<'a> {
        Node {
            ctx,
            n,
            reads,
            own,
            cost: Cell::new(None),
            unused: OnceCell::new(),
            attached_machine: OnceCell::new(),
        }
    }

    /// A neighbour, read as part of this node's evaluation.
    fn of(&self, n: NodeRef<'a>) -> Node<'a> {
        if let Some(reads) = self.reads {
            reads.deps.borrow_mut().push(n.id());
        }
        Node::with(self.ctx, n, self.reads, false)
    }

    /// Notes that the evaluation read the node's own edges of `bits`
    /// ([`edge_bit`]); a neighbour's are covered by its being read.
    pub(super) fn read_edges(&self, bits: u16) {
        if let (true, Some(reads)) = (self.own, self.reads) {
            reads.edges(bits);
        }
    }

    pub fn reads(&self) -> Option<&'a Reads> {
        self.reads
    }

    pub fn id(&self) -> NodeId {
        self.n.id()
    }
    pub fn keys(&self) -> &'a Keys {
        self.ctx.keys
    }
    fn knows(&self, fact: Fact, text: &str) -> bool {
        let key = fact_key(fact, text);
        if let Some(reads) = self.reads {
            reads.keys.borrow_mut().push(key);
        }
        self.ctx.index.contains(key)
    }
    /// Whether a DNS record points at this address or name.
    pub fn dns_points_at(&self, target: &str) -> bool {
        !target.is_empty() && self.knows(Fact::DnsTarget, target)
    }
    /// Whether an EBS volume with this id exists.
    pub fn volume_exists(&self, id: &str) -> bool {
        self.knows(Fact::Volume, id)
    }
    /// Whether a GCP disk with this name exists.
    pub fn disk_exists(&self, name: &str) -> bool {
        self.knows(Fact::Disk, name)
    }
    pub(super) fn machines(&self) -> &'a Machines {
        self.ctx.machines
    }
    pub fn provider(&self) -> &'a str {
        self.ctx.reader.resolve(self.n.provider())
    }
    pub fn region(&self) -> &'a str {
        self.ctx.reader.resolve(self.n.region())
    }
    /// `<service>:<kind>`.
    pub fn ty(&self) -> &'a str {
        self.ctx.reader.resolve(self.n.ty())
    }
    pub fn state(&self) -> &'a str {
        self.ctx.reader.resolve(self.n.state())
    }
    pub fn physical_id(&self) -> &'a str {
        self.n.physical_id()
    }
    /// The graph's view of the node, for what is read only when a reason is rendered.
    pub(super) fn graph_ref(&self) -> NodeRef<'a> {
        self.n
    }
    pub fn creation_ts(&self) -> u64 {
        self.n.creation_ts()
    }
    /// The scan's wall-clock time, Unix seconds (for the owner's own dates).
    pub fn now_s(&self) -> u64 {
        self.ctx.now_us / 1_000_000
    }
    /// Notes that what was read of [`Node::now_s`] holds only while scans
    /// run before `until` (Unix seconds).
    pub fn holds_until(&self, until: u64) {
        if let Some(reads) = self.reads {
            reads.bound_now(until);
        }
    }
    /// The start of the node's current version, Unix seconds.
    pub fn changed_s(&self) -> u64 {
        if let Some(reads) = self.reads {
            reads.changed_s.set(true);
        }
        self.n.valid_from() / 1_000_000
    }

    /// USD a month: what the provider reported, else the price table's estimate.
    pub fn cost(&self) -> f64 {
        if let Some(c) = self.cost.get() {
            return c;
        }
        let c = self.price();
        self.cost.set(Some(c));
        c
    }

    fn price(&self) -> f64 {
        let reported = f64::from(self.n.cost_usd_mo());
        if reported > 0.0 {
            return reported;
        }
        let named = |k: &str| self.ctx.reader.get(k).and_then(|k| self.n.props().get(k));
        let text = |k: &str| named(k).and_then(text_of);
        let number = |k: &str| named(k).and_then(number_of);
        let item = crate::prices::Item {
            provider: self.provider(),
            region: self.region(),
            ty: self.ty(),
            state: self.state(),
            text: &text,
            number: &number,
        };
        crate::prices::estimate(&item).unwrap_or(0.0)
    }

    fn prop(&self, key: Option<Sym>) -> Option<ValueRef<'a>> {
        self.n.props().get(key?)
    }

    /// A string property.
    pub fn str(&self, key: Option<Sym>) -> Option<&'a str> {
        match self.prop(key)? {
            ValueRef::Str(s) => Some(s),
            _ => None,
        }
    }
    /// A numeric property (an integer, a float, or a number written as text).
    pub fn num(&self, key: Option<Sym>) -> Option<f64> {
        number_of(self.prop(key)?)
    }
    /// A boolean property (`true`/`false`, or the text of one).
    pub fn flag(&self, key: Option<Sym>) -> Option<bool> {
        match self.prop(key)? {
            ValueRef::Bool(b) => Some(b),
            ValueRef::Str(s) if s.eq_ignore_ascii_case("true") => Some(true),
            ValueRef::Str(s) if s.eq_ignore_ascii_case("false") => Some(false),
            _ => None,
        }
    }
    /// Whether the property is absent, null, empty text or an empty array.
    pub fn is_empty(&self, key: Option<Sym>) -> bool {
        match self.prop(key) {
            None | Some(ValueRef::Null) => true,
            Some(ValueRef::Str(s)) => s.is_empty(),
            Some(ValueRef::Json(j)) => matches!(j.trim(), "[]" | "{}"),
            Some(_) => false,
        }
    }
    /// A timestamp property (RFC 3339 text or Unix seconds), as Unix seconds.
    pub fn time(&self, key: Option<Sym>) -> Option<u64> {
        match self.prop(key)? {
            ValueRef::Str(s) => parse_time(s),
            ValueRef::Int(i) => u64::try_from(i).ok(),
            _ => None,
        }
    }
    /// Whole days from `ts` (Unix seconds) to when the estate was observed.
    pub fn days_since(&self, ts: u64) -> Days<'a> {
        Days {
            n: self.ctx.as_of_s.saturating_sub(ts) / DAY,
            from: Some(ts),
            reads: self.reads,
        }
    }
    /// Days since the timestamp property, if it has one.
    pub fn days_since_prop(&self, key: Option<Sym>) -> Option<Days<'a>> {
        self.time(key).map(|t| self.days_since(t))
    }
    /// Days since the resource was created (0 when it was not reported).
    pub fn age_days(&self) -> Days<'a> {
        match self.creation_ts() {
            0 => Days {
                n: 0,
                from: None,
                reads: None,
            },
            ts => self.days_since(ts),
        }
    }
    /// A tag's value.
    pub fn tag(&self, key: Option<Sym>) -> Option<&'a str> {
        let v = self.n.tags().get(key?)?;
        Some(self.ctx.reader.resolve(v))
    }

    /// Neighbours over visible outgoing edges of `rel`.
    pub fn out(&self, rel: Relation) -> impl Iterator<Item = Node<'a>> + '_ {
        self.read_edges(edge_bit(rel, true));
        let g = self.ctx.graph;
        g.neighbours(self.n.id(), rel, true, self.ctx.now_us)
            .filter_map(move |id| g.node(id))
            .map(|n| self.of(n))
    }
    /// Bytes of observed traffic ([`crate::traffic`]) to or from
    /// this node whose window ended in the 7 days before the estate was
    /// observed.
    pub fn observed_traffic_bytes(&self) -> f64 {
        // Read even when no traffic was ever recorded: the first flow edge
        // changes the answer.
        self.read_edges(edge_bit(Relation::FlowsTo, true) | edge_bit(Relation::FlowsTo, false));
        let k = self.ctx.keys;
        let (Some(bytes), Some(end), Some(by)) = (k.bytes, k.window_end, k.inferred_by) else {
            return 0.0;
        };
        let since = self.ctx.as_of_s.saturating_sub(7 * DAY) as f64;
        self.n
            .out_edges()
            .chain(self.n.in_edges())
            .filter(|e| e.inferred() && e.relation() == Relation::FlowsTo && visible(e.valid_to(), self.ctx.now_us))
            .filter_map(|e| {
                let p = e.props();
                let traffic = p.get(by)?.as_str() == Some(crate::traffic::SOURCE);
                let end = p.get(end)?.as_f64()?;
                let recent = end >= since;
                if let (true, true, Some(reads)) = (traffic, recent, self.reads) {
                    // The window stops counting 7 days after it ended.
                    reads.bound_as_of(end.max(0.0) as u64 + 7 * DAY);
                }
                (traffic && recent).then(|| p.get(bytes)?.as_f64()).flatten()
            })
            .sum()
    }
    /// Neighbours over visible incoming edges of `rel`.
    pub fn inc(&self, rel: Relation) -> impl Iterator<Item = Node<'a>> + '_ {
        self.read_edges(edge_bit(rel, false));
        let g = self.ctx.graph;
        g.neighbours(self.n.id(), rel, false, self.ctx.now_us)
            .filter_map(move |id| g.node(id))
            .map(|n| self.of(n))
    }
}

/// Whole days from a time to when the estate was observed.
///
/// A kept answer holds only as long as what it read of the count: a rule
/// that compares the count with a threshold reads only which side of it
/// the count is on, which changes once (the count only grows while the
/// observation time does); a rule that shows the number reads the number,
/// which changes every day. So comparing notes the moment the comparison
/// flips, and [`Days::get`] the next day.
#[derive(Copy, Clone)]
pub struct Days<'a> {
    n: u64,
    /// The Unix second the count runs from; `None`: it never grows.
    from: Option<u64>,
    reads: Option<&'a Reads>,
}

impl Days<'_> {
    /// The number of days.
    pub fn get(self) -> u64 {
        self.holds_until(self.n + 1);
        self.n
    }

    /// Notes that what was read holds until the count reaches `days`.
    fn holds_until(self, days: u64) {
        if let (Some(from), Some(reads)) = (self.from, self.reads) {
            reads.bound_as_of(from.saturating_add(days.saturating_mul(DAY)));
        }
    }
}

impl From<Days<'_>> for u64 {
    fn from(d: Days<'_>) -> u64 {
        d.get()
    }
}

impl PartialEq<u64> for Days<'_> {
    fn eq(&self, t: &u64) -> bool {
        self.partial_cmp(t) == Some(std::cmp::Ordering::Equal)
    }
}

impl PartialOrd<u64> for Days<'_> {
    fn partial_cmp(&self, t: &u64) -> Option<std::cmp::Ordering> {
        // Below `t` until it reaches `t`; equal until `t + 1`; then above for good.
        match self.n.cmp(t) {
            std::cmp::Ordering::Less => self.holds_until(*t),
            std::cmp::Ordering::Equal => self.holds_until(t.saturating_add(1)),
            std::cmp::Ordering::Greater => {}
        }
        Some(self.n.cmp(t))
    }
    fn lt(&self, t: &u64) -> bool {
        if self.n < *t {
            self.holds_until(*t);
        }
        self.n < *t
    }
    fn ge(&self, t: &u64) -> bool {
        !self.lt(t)
    }
    fn gt(&self, t: &u64) -> bool {
        if self.n <= *t {
            self.holds_until(t.saturating_add(1));
        }
        self.n > *t
    }
    fn le(&self, t: &u64) -> bool {
        !self.gt(t)
    }
}

fn text_of(v: ValueRef<'_>) -> Option<&str> {
    match v {
        ValueRef::Str(s) => Some(s),
        ValueRef::Bool(true) => Some("true"),
        ValueRef::Bool(false) => Some("false"),
        _ => None,
    }
}

fn number_of(v: ValueRef<'_>) -> Option<f64> {
    match v {
        ValueRef::Int(i) => Some(i as f64),
        ValueRef::Float(f) if f.is_finite() => Some(f),
        ValueRef::Str(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// Unix seconds of an RFC 3339 UTC time (`2025-01-01T00:00:00Z`, fractions
/// and `+00:00` allowed) or of a date (`2025-01-01`, midnight UTC).
pub fn parse_time(s: &str) -> Option<u64> {
    let s = s.trim();
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u64> {
        let part = s.get(r)?;
        (!part.is_empty() && part.bytes().all(|c| c.is_ascii_digit()))
            .then(|| part.parse().ok())
            .flatten()
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut secs = 0;
    if b.len() > 10 {
        if !matches!(b[10], b'T' | b't' | b' ') || b.len() < 19 || b[13] != b':' || b[16] != b':' {
            return None;
        }
        let (hh, mm, ss) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
        if hh > 23 || mm > 59 || ss > 60 {
            return None;
        }
        secs = hh * 3600 + mm * 60 + ss;
        let mut rest = &s[19..];
        if let Some(frac) = rest.strip_prefix('.') {
            rest = frac.trim_start_matches(|c: char| c.is_ascii_digit());
        }
        if !matches!(rest, "Z" | "z" | "+00:00" | "-00:00" | "") {
            return None;
        }
    }
    days_from_civil(y, m, d)?.checked_mul(DAY)?.checked_add(secs)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`); `None` before 1970.
fn days_from_civil(y: u64, m: u64, d: u64) -> Option<u64> {
    let y = y as i64 - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    u64::try_from(era * 146_097 + doe - 719_468).ok()
}

/// Why a machine is unused.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Unused {
    /// Stopped this many days ago.
    Stopped(u64),
    /// Running at this CPU average with this many network bytes over 7 days.
    Idle(f64, f64),
}

/// The verdict of every visible machine, worked out in one parallel pass
/// before the rules run: a machine is read by its own rules and by each
/// volume or disk attached to it.
#[derive(Default)]
pub struct Machines {
    pub(super) shards: Vec<MachineShard>,
}

#[derive(Default)]
pub(super) struct MachineShard {
    /// By row: 1 + the machine's place in `verdicts`, or 0 for other rows.
    pub(super) at: Vec<u32>,
    /// Each machine's verdict, the observation time (Unix seconds) from
    /// which it may read differently, and which of the machine's own edges
    /// it read ([`edge_bit`]).
    pub(super) verdicts: Vec<(Option<Unused>, u64, u16)>,
}

/// A machine's name, as a reason shows it: the last segment of its id, so
/// an Azure resource id reads as the VM's name. Read only when rendered.
#[derive(Copy, Clone)]
pub struct MachineName<'a>(pub(super) svc_graph::graph::NodeRef<'a>);

impl fmt::Display for MachineName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.0.physical_id();
        f.write_str(id.rsplit('/').next().unwrap_or(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc3339_and_dates() {
        assert_eq!(parse_time("2025-01-01T00:00:00Z"), Some(1_735_689_600));
        assert_eq!(parse_time("2025-01-01"), Some(1_735_689_600));
        assert_eq!(parse_time("2024-02-29T23:59:59Z"), Some(1_709_251_199));
        assert_eq!(parse_time("2024-02-29T23:59:59.250+00:00"), Some(1_709_251_199));
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        for bad in [
            "",
            "yesterday",
            "2025-13-01",
            "2025-01-01T25:00:00Z",
            "2025-01-01T00:00:00+02:00",
            "1969-12-31",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }
}
