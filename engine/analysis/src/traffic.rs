//! Observed traffic: flow records (AWS VPC flow-log lines, or records with
//! CRNs or IPs as endpoints) become `FlowsTo` edges carrying their volumes.
//!
//! Endpoints are resolved by CRN, or by IP through the addresses nodes
//! carry (`private_ip`, `internal_ip`, `public_ip`, `external_ip`,
//! `address`, `ip_address`, `cluster_ip`, `load_balancer_ip`; a machine's
//! own interface address wins over an address resource naming the same IP).
//! Records are summed per (source, destination): `bytes`, `packets`,
//! `records`, and the window they span (`window_start`, `window_end`, Unix
//! seconds). A pair ingested again adds to its totals. Each edge is marked
//! inferred with `inferred_by = traffic`; where a provider already reports
//! a `FlowsTo` edge between the pair, that edge stays as reported and the
//! pair is counted as `reported`.
//!
//! Traffic feeds reachability (a `FlowsTo` edge carries it) and the idle
//! rules (a machine's observed bytes in the last 7 days count against
//! idleness). Edges whose window ended more than [`RETENTION_S`] ago are
//! retired at the next scan.

use rustc_hash::FxHashMap;

use svc_graph::crn::Crn;
use svc_graph::graph::{Graph, InferredEdge, visible};
use svc_graph::ids::{NodeId, Sym};
use svc_graph::props::{PropWriter, Props};
use svc_graph::relation::Relation;

/// The `inferred_by` value of traffic edges.
pub const SOURCE: &str = "traffic";
/// How long a flow keeps its edge after its window ends: 7 days.
pub const RETENTION_S: u64 = 7 * 86_400;
/// Errors listed in a report (all are counted).
pub const MAX_ERRORS: usize = 20;

/// Property keys nodes carry addresses under, machine interfaces first.
const IP_KEYS: [&str; 8] = [
    "private_ip",
    "internal_ip",
    "public_ip",
    "external_ip",
    "ip_address",
    "cluster_ip",
    "load_balancer_ip",
    "address",
];

/// One flow record.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowRecord {
    /// A CRN (graph or plugin form) or an IP address.
    pub source: String,
    pub destination: String,
    pub bytes: u64,
    pub packets: u64,
    /// The window the record covers, Unix seconds.
    pub start_s: u64,
    pub end_s: u64,
}

/// What an ingest did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrafficReport {
    pub records: u64,
    /// Records whose endpoints both resolved.
    pub resolved: u64,
    /// Records with an endpoint no node carries.
    pub unresolved: u64,
    /// Records dropped before resolution (rejected flows, no data, bad lines).
    pub skipped: u64,
    /// Distinct (source, destination) pairs resolved.
    pub pairs: u64,
    pub edges_added: u64,
    pub edges_updated: u64,
    /// Pairs a provider already reports a `FlowsTo` edge for.
    pub reported: u64,
    pub bytes: u64,
    /// The first errors, for the operator.
    pub errors: Vec<String>,
}

impl TrafficReport {
    pub fn error(&mut self, e: String) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(e);
        }
    }
}

/// Parses AWS VPC flow-log lines (version 2, default format: `version
/// account-id interface-id srcaddr dstaddr srcport dstport protocol packets
/// bytes start end action log-status`). A header line is skipped; `NODATA`
/// and `SKIPDATA` lines and `REJECT`ed flows are counted as skipped (a
/// rejected flow reaches nothing); a malformed line is an error naming its
/// number.
pub fn parse_flow_log(text: &str, report: &mut TrafficReport) -> Vec<FlowRecord> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("version ") || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.len() < 14 {
            report.skipped += 1;
            report.error(format!("line {}: expected 14 fields, found {}", i + 1, f.len()));
            continue;
        }
        if f[13] != "OK" || f[12] != "ACCEPT" {
            report.skipped += 1;
            continue;
        }
        let num = |k: usize, what: &str| -> Result<u64, String> {
            f[k].parse::<u64>()
                .map_err(|_| format!("line {}: {what} {:?} is not a whole number", i + 1, f[k]))
        };
        let parsed = (|| {
            Ok::<FlowRecord, String>(FlowRecord {
                source: f[3].to_owned(),
                destination: f[4].to_owned(),
                packets: num(8, "packets")?,
                bytes: num(9, "bytes")?,
                start_s: num(10, "start")?,
                end_s: num(11, "end")?,
            })
        })();
        match parsed {
            Ok(r) => out.push(r),
            Err(e) => {
                report.skipped += 1;
                report.error(e);
            }
        }
    }
    out
}

/// Checks one record's fields; the error names what is wrong.
pub fn check(r: &FlowRecord) -> Result<(), String> {
    for (what, v) in [("source", &r.source), ("destination", &r.destination)] {
        if v.starts_with("crn:") {
            Crn::parse(v).map_err(|e| format!("{what} {v:?}: {e}"))?;
        } else if v.parse::<std::net::IpAddr>().is_err() {
            return Err(format!("{what} {v:?} is neither a CRN nor an IP address"));
        }
    }
    if r.end_s < r.start_s {
        return Err(format!("window ends ({}) before it starts ({})", r.end_s, r.start_s));
    }
    Ok(())
}

/// Addresses to nodes, over the visible nodes.
pub struct IpIndex {
    map: FxHashMap<String, (u8, NodeId)>,
}

impl IpIndex {
    pub fn build(graph: &Graph, now_us: u64) -> IpIndex {
        let reader = graph.interner().reader();
        let keys: Vec<(u8, Sym)> = IP_KEYS
            .iter()
            .enumerate()
            .filter_map(|(i, k)| reader.get(k).map(|s| (i as u8, s)))
            .collect();
        let mut map: FxHashMap<String, (u8, NodeId)> = FxHashMap::default();
        if keys.is_empty() {
            return IpIndex { map };
        }
        for n in graph.nodes().filter(|n| n.is_visible(now_us)) {
            let p = n.props();
            for &(rank, k) in &keys {
                let Some(ip) = p.get(k).and_then(|v| v.as_str().map(str::to_owned)) else {
                    continue;
                };
                if ip.parse::<std::net::IpAddr>().is_err() {
                    continue;
                }
                let e = map.entry(ip).or_insert((rank, n.id()));
                if rank < e.0 {
                    *e = (rank, n.id());
                }
            }
        }
        IpIndex { map }
    }

    pub fn get(&self, ip: &str) -> Option<NodeId> {
        self.map.get(ip).map(|e| e.1)
    }
}

/// The volumes a traffic edge carries.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Flow {
    pub bytes: u64,
    pub packets: u64,
    pub records: u64,
    pub window_start: u64,
    pub window_end: u64,
}

impl Flow {
    fn add(&mut self, o: &Flow) {
        if self.records == 0 {
            *self = *o;
            return;
        }
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.packets = self.packets.saturating_add(o.packets);
        self.records += o.records;
        self.window_start = self.window_start.min(o.window_start);
        self.window_end = self.window_end.max(o.window_end);
    }
}

/// Interned property names of traffic edges.
pub struct FlowKeys {
    pub inferred_by: Sym,
    pub bytes: Sym,
    pub packets: Sym,
    pub records: Sym,
    pub window_start: Sym,
    pub window_end: Sym,
}

impl FlowKeys {
    pub fn new(graph: &Graph) -> FlowKeys {
        let i = graph.interner();
        FlowKeys {
            inferred_by: i.intern(super::linker::INFERRED_BY),
            bytes: i.intern("bytes"),
            packets: i.intern("packets"),
            records: i.intern("records"),
            window_start: i.intern("window_start"),
            window_end: i.intern("window_end"),
        }
    }

    /// The flow of a traffic edge's properties; `None` for other edges.
    pub fn read(&self, p: &Props<'_>) -> Option<Flow> {
        let by = p.get(self.inferred_by)?;
        if by.as_str() != Some(SOURCE) {
            return None;
        }
        let n = |k: Sym| p.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0) as u64;
        Some(Flow {
            bytes: n(self.bytes),
            packets: n(self.packets),
            records: n(self.records),
            window_start: n(self.window_start),
            window_end: n(self.window_end),
        })
    }

    fn write(&self, f: &Flow) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut w = PropWriter::new(&mut buf);
        w.str(self.inferred_by, SOURCE);
        w.int(self.bytes, f.bytes as i64);
        w.int(self.packets, f.packets as i64);
        w.int(self.records, f.records as i64);
        w.int(self.window_start, f.window_start as i64);
        w.int(self.window_end, f.window_end as i64);
        buf
    }
}

fn resolve(graph: &Graph, ips: &IpIndex, endpoint: &str) -> Option<NodeId> {
    if endpoint.starts_with("crn:") {
        graph.find(&Crn::parse(endpoint).ok()?)
    } else {
        ips.get(endpoint)
    }
}

/// Adds the records to the graph as traffic edges, seen in `scan`. Records
/// must have passed [`check`].
pub fn apply(
    graph: &mut Graph,
    ips: &IpIndex,
    records: &[FlowRecord],
    now_us: u64,
    scan: u32,
    report: &mut TrafficReport,
) {
    let mut pairs: FxHashMap<(NodeId, NodeId), Flow> = FxHashMap::default();
    for r in records {
        report.records += 1;
        let (src, dst) = (resolve(graph, ips, &r.source), resolve(graph, ips, &r.destination));
        match (src, dst) {
            (Some(s), Some(d)) if s != d && graph.is_node_visible(s, now_us) && graph.is_node_visible(d, now_us) => {
                report.resolved += 1;
                report.bytes = report.bytes.saturating_add(r.bytes);
                pairs.entry((s, d)).or_default().add(&Flow {
                    bytes: r.bytes,
                    packets: r.packets,
                    records: 1,
                    window_start: r.start_s,
                    window_end: r.end_s,
                });
            }
            (Some(s), Some(d)) if s == d => report.skipped += 1,
            _ => {
                report.unresolved += 1;
                let missing = if src.is_none() { &r.source } else { &r.destination };
                report.error(format!("no live resource carries {missing}"));
            }
        }
    }
    report.pairs = pairs.len() as u64;
    let keys = FlowKeys::new(graph);
    let mut pairs: Vec<((NodeId, NodeId), Flow)> = pairs.into_iter().collect();
    pairs.sort_unstable_by_key(|(k, _)| *k);
    let mut edges = Vec::with_capacity(pairs.len());
    for ((s, d), mut flow) in pairs {
        if graph.is_reported_edge(s, d, Relation::FlowsTo) {
            report.reported += 1;
            continue;
        }
        if let Some(before) = graph
            .find_edge(s, d, Relation::FlowsTo)
            .and_then(|e| graph.edge(e))
            .filter(|e| e.inferred() && visible(e.valid_to(), now_us))
            .and_then(|e| keys.read(&e.props()))
        {
            let mut total = before;
            total.add(&flow);
            flow = total;
            report.edges_updated += 1;
        } else {
            report.edges_added += 1;
        }
        edges.push(InferredEdge {
            src: s,
            dst: d,
            rel: Relation::FlowsTo,
            props: keys.write(&flow),
        });
    }
    graph.upsert_inferred_edges(&edges, now_us, scan);
}

/// Retires traffic edges whose window ended more than [`RETENTION_S`]
/// before `now_s`; returns how many.
pub fn expire(graph: &mut Graph, now_us: u64, scan: u32) -> usize {
    let keys = FlowKeys::new(graph);
    let cutoff = (now_us / 1_000_000).saturating_sub(RETENTION_S);
    graph.retire_inferred(scan, now_us, |p| keys.read(&p).is_some_and(|f| f.window_end < cutoff))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_log_lines_parse_and_bad_ones_are_named() {
        let text = "version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status\n\
            2 123456789012 eni-1 10.0.0.1 10.0.0.2 443 49152 6 20 4000 1700000000 1700000060 ACCEPT OK\n\
            2 123456789012 eni-1 10.0.0.1 10.0.0.3 443 49152 6 5 100 1700000000 1700000060 REJECT OK\n\
            2 123456789012 eni-1 - - - - - - - 1700000000 1700000060 - NODATA\n\
            2 123456789012 eni-1 10.0.0.1 10.0.0.2 443 49152 6 many 100 1700000000 1700000060 ACCEPT OK\n\
            2 too short\n";
        let mut report = TrafficReport::default();
        let records = parse_flow_log(text, &mut report);
        assert_eq!(
            records,
            [FlowRecord {
                source: "10.0.0.1".into(),
                destination: "10.0.0.2".into(),
                bytes: 4000,
                packets: 20,
                start_s: 1_700_000_000,
                end_s: 1_700_000_060,
            }]
        );
        assert_eq!(report.skipped, 4);
        assert_eq!(report.errors.len(), 2);
        assert!(
            report.errors[0].starts_with("line 5: packets \"many\""),
            "{:?}",
            report.errors
        );
        assert!(
            report.errors[1].starts_with("line 6: expected 14 fields"),
            "{:?}",
            report.errors
        );
    }

    #[test]
    fn records_are_checked() {
        let ok = FlowRecord {
            source: "10.0.0.1".into(),
            destination: "crn:svc:aws:us-east-1:ec2:instance:123456789012:i-1".into(),
            bytes: 1,
            packets: 1,
            start_s: 1,
            end_s: 2,
        };
        assert_eq!(check(&ok), Ok(()));
        let bad = FlowRecord {
            source: "web-1".into(),
            ..ok.clone()
        };
        assert!(check(&bad).unwrap_err().contains("neither a CRN nor an IP"));
        let bad = FlowRecord {
            destination: "crn:nonsense".into(),
            ..ok.clone()
        };
        assert!(check(&bad).unwrap_err().starts_with("destination"));
        let bad = FlowRecord { start_s: 3, ..ok };
        assert!(check(&bad).unwrap_err().contains("before it starts"));
    }
}
