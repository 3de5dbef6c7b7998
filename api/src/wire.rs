//! JSON wire shapes of nodes and edges, shared by every route that returns
//! them (live graph, time travel, history details).
//!
//! A node is read through [`NodeView`], which borrows either a live row
//! ([`NodeRef`]) or a stored version ([`NodeRow`]), so both render the same
//! object. Symbols are resolved through an [`InternerReader`] the caller
//! holds; nothing here takes a lock of its own, so callers must not call
//! anything that locks the interner (`Graph::find`, `NodeRef::crn`) while
//! they hold the reader.

mod category;
pub mod input;
mod names;
pub mod payloads;
mod shapes;

use serde_json::{Map, Number, Value};
use svc_engine::Sym;
use svc_engine::graph::{NodeFields, NodeRef, NodeRow};
use svc_engine::intern::InternerReader;
use svc_engine::props::{self, Props, ValueRef};

pub use category::Category;
pub(crate) use names::listed_str;
pub use names::{Crn, JsonObject, Phase, Reachability, Relation};
pub use shapes::{Edge, EdgeVersion, Finding, Node, NodeDetail, Properties, Tags, TuiRow};

/// The fields of one node, borrowed from the live graph or a stored
/// version: the schema's [`NodeFields`], with its text and lists read.
#[derive(Clone, Copy)]
pub struct NodeView<'a>(pub NodeFields<'a>);

impl<'a> std::ops::Deref for NodeView<'a> {
    type Target = NodeFields<'a>;
    fn deref(&self) -> &NodeFields<'a> {
        &self.0
    }
}

impl<'a> NodeView<'a> {
    pub fn of(n: &NodeRef<'a>) -> NodeView<'a> {
        NodeView(n.fields())
    }

    pub fn of_row(row: &'a NodeRow) -> NodeView<'a> {
        NodeView(NodeFields::of(row))
    }

    pub fn physical_id(&self) -> &'a str {
        text(self.0.id)
    }

    pub fn waste_reason(&self) -> &'a str {
        text(self.0.waste_reason)
    }

    pub fn tags(&self) -> props::Tags<'a> {
        props::Tags::new(self.0.tags)
    }

    pub fn props(&self) -> Props<'a> {
        Props::new(self.0.props)
    }

    /// The graph-form CRN.
    pub fn crn(&self, r: &InternerReader<'_>) -> String {
        crn_of(r, self.key, self.physical_id())
    }

    /// The heuristic findings of SPEC 4.2 `heuristics_flagged`: one entry for
    /// a waste node with a reason, named by its verdict (or `waste`).
    pub fn heuristics_flagged(&self, r: &InternerReader<'_>) -> Vec<HeuristicFlag> {
        flag_rule(self.is_waste, self.waste_reason(), self.verdict)
            .map(|rule| HeuristicFlag {
                rule_name: rule.map_or(WASTE_RULE, |v| r.resolve(v)).to_owned(),
                severity: severity(self.risk_score),
            })
            .into_iter()
            .collect()
    }
}

/// One entry of a topology node's `heuristics_flagged`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = HeuristicFinding)]
pub struct HeuristicFlag {
    /// The verdict naming the finding, or `waste`.
    pub rule_name: String,
    /// From the risk score (<20, <40, <60, <80, >=80).
    #[schema(minimum = 1, maximum = 5)]
    pub severity: u8,
}

/// Stored text; bytes that are not UTF-8, which no arena holds, read as empty.
fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or("")
}

/// Rule name of a finding without a verdict symbol.
pub const WASTE_RULE: &str = "waste";

/// Whether a node carries a finding (waste, or a cheaper shape for a
/// resource in use), and the verdict that names it: `None` for no finding,
/// `Some(None)` for a finding named [`WASTE_RULE`].
pub fn flag_rule(is_waste: bool, waste_reason: &str, verdict: Option<Sym>) -> Option<Option<Sym>> {
    ((is_waste || verdict.is_some()) && !waste_reason.is_empty()).then_some(verdict)
}

/// Severity 1..5 of a finding from its risk score (<20, <40, <60, <80, >=80).
pub fn severity(risk_score: f32) -> u8 {
    match risk_score {
        r if r >= 80.0 => 5,
        r if r >= 60.0 => 4,
        r if r >= 40.0 => 3,
        r if r >= 20.0 => 2,
        _ => 1,
    }
}

/// The graph-form CRN of a key and physical id.
pub fn crn_of(r: &InternerReader<'_>, key: [Sym; 5], physical_id: &str) -> String {
    let mut out = String::new();
    svc_engine::crn::write_crn(
        &mut out,
        [
            r.resolve(key[0]),
            r.resolve(key[1]),
            r.resolve(key[2]),
            r.resolve(key[3]),
            r.resolve(key[4]),
            physical_id,
        ],
    );
    out
}

/// An `f32` as the `f64` with the same shortest decimal form (`40.1f32` is
/// written `40.1`, not `40.099998474121094`); non-finite values are 0.
pub fn f32_value(v: f32) -> f64 {
    if !v.is_finite() {
        return 0.0;
    }
    v.to_string().parse().unwrap_or(f64::from(v))
}

/// A property value with its JSON type; arrays and objects are parsed back
/// from their stored text (text that does not parse stays a string).
pub fn value_json(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Bool(b) => Value::Bool(b),
        ValueRef::Int(i) => Value::from(i),
        ValueRef::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Str(s) => Value::from(s),
        ValueRef::Json(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::from(s)),
    }
}

/// Properties as a JSON object (a repeated key keeps its last value).
pub fn props_json(props: Props<'_>, r: &InternerReader<'_>) -> Properties {
    let mut m = Map::new();
    for (k, v) in props {
        m.insert(r.resolve(k).to_owned(), value_json(v));
    }
    Properties(m)
}

/// Tags as an object of strings (a repeated key keeps its last value).
pub fn tags_json(tags: props::Tags<'_>, r: &InternerReader<'_>) -> Tags {
    Tags(
        tags.map(|(k, v)| (r.resolve(k).to_owned(), r.resolve(v).to_owned()))
            .collect(),
    )
}

/// The node object shared by every endpoint that returns whole nodes.
pub fn node(v: &NodeView<'_>, r: &InternerReader<'_>) -> Node {
    node_with_crn(v, v.crn(r), r)
}

/// [`node`] with the CRN already at hand.
pub fn node_with_crn(v: &NodeView<'_>, crn: String, r: &InternerReader<'_>) -> Node {
    Node {
        account: r.resolve(v.key[4]).to_owned(),
        cost_usd_mo: f32_value(v.cost_usd_mo),
        creation_timestamp: v.creation_ts,
        crn: Crn(crn),
        is_waste: v.is_waste,
        kind: r.resolve(v.key[3]).to_owned(),
        phase: v.phase.into(),
        physical_id: v.physical_id().to_owned(),
        properties: props_json(v.props(), r),
        provider: r.resolve(v.key[0]).to_owned(),
        reachability: v.reachability.into(),
        region: r.resolve(v.key[1]).to_owned(),
        risk_score: f32_value(v.risk_score),
        service: r.resolve(v.key[2]).to_owned(),
        state: r.resolve(v.state).to_owned(),
        tags: tags_json(v.tags(), r),
        ty: r.resolve(v.ty).to_owned(),
        valid_from: v.valid_from,
        valid_to: v.valid_to,
        verdict: v.verdict.map_or("", |s| r.resolve(s)).to_owned(),
        waste_reason: v.waste_reason().to_owned(),
    }
}

/// A heuristic finding about one node.
pub fn finding(f: &svc_engine::heuristics::Finding) -> Finding {
    Finding {
        annotations: f.annotations.iter().cloned().collect(),
        is_waste: f.is_waste,
        projected_savings_usd_mo: f.projected_savings_usd_mo,
        reason: f.reason.clone(),
        risk_score: f.risk_score,
        rule: f.rule.to_string(),
        source: f.source.label(),
        suggested_action: f.suggested_action.to_string(),
    }
}

/// The terminal UI's row: the columns of its node table.
pub fn tui_row(v: &NodeView<'_>, r: &InternerReader<'_>) -> TuiRow {
    TuiRow {
        category: Category::of(r.resolve(v.key[0]), r.resolve(v.ty)),
        cost_usd_mo: f32_value(v.cost_usd_mo),
        crn: Crn(v.crn(r)),
        is_waste: v.is_waste,
        phase: v.phase.into(),
        provider: r.resolve(v.key[0]).to_owned(),
        reachability: v.reachability.into(),
        region: r.resolve(v.key[1]).to_owned(),
        state: r.resolve(v.state).to_owned(),
        ty: r.resolve(v.ty).to_owned(),
        waste_reason: v.waste_reason().to_owned(),
    }
}

/// The edge object: endpoints, relationship name, whether the engine
/// inferred it, and its properties.
pub fn edge(
    source_crn: String,
    target_crn: String,
    rel: svc_engine::relation::Relation,
    inferred: bool,
    props: Props<'_>,
    r: &InternerReader<'_>,
) -> Edge {
    Edge {
        inferred,
        properties: props_json(props, r),
        source_crn: Crn(source_crn),
        target_crn: Crn(target_crn),
        ty: rel.into(),
    }
}

/// A stored edge version: [`edge`] plus its validity interval
/// (`valid_from` and `valid_to` in microseconds since the epoch, `valid_to` 0 while active).
pub fn edge_version(e: &svc_engine::graph::EdgeVersion, r: &InternerReader<'_>) -> EdgeVersion {
    EdgeVersion {
        inferred: e.inferred,
        properties: props_json(Props::new(&e.props), r),
        source_crn: Crn(e.src.clone()),
        target_crn: Crn(e.dst.clone()),
        ty: e.relation.into(),
        valid_from: e.valid_from,
        valid_to: e.valid_to,
    }
}

/// Formats microseconds since the epoch as RFC 3339 (UTC, microsecond precision when needed).
pub fn rfc3339(us: u64) -> String {
    let secs = (us / 1_000_000) as i64;
    let nanos = ((us % 1_000_000) * 1000) as u32;
    chrono::DateTime::from_timestamp(secs, nanos)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
        .unwrap_or_default()
}

/// Parses RFC 3339 into microseconds since the epoch.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    u64::try_from(t.timestamp_micros()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use svc_engine::Interner;
    use svc_engine::graph::{Phase, Reachability};
    use svc_engine::props::{PropWriter, write_tag};

    fn row(i: &Interner) -> NodeRow {
        let mut props = Vec::new();
        let mut w = PropWriter::new(&mut props);
        w.int(i.intern("size_gib"), 100);
        w.float(i.intern("iops"), 3000.5);
        w.bool(i.intern("encrypted"), true);
        w.null(i.intern("kms_key"));
        w.str(i.intern("volume_type"), "gp2");
        w.json(i.intern("attachments"), r#"[{"instance":"i-1"}]"#);
        let mut tags = Vec::new();
        write_tag(&mut tags, i.intern("env"), i.intern("prod"));
        NodeRow {
            key: [
                i.intern("aws"),
                i.intern("us-east-1"),
                i.intern("ec2"),
                i.intern("volume"),
                i.intern("123456789012"),
            ],
            id: "vol-1".into(),
            ty: i.intern("ec2:volume"),
            state: i.intern("available"),
            cost_usd_mo: 40.1,
            creation_ts: 1_700_000_000,
            valid_from: 1_700_000_000_000_000,
            valid_to: 0,
            is_waste: true,
            waste_reason: "unattached for 43 days".into(),
            risk_score: 42.0,
            reachability: Reachability::Unreachable,
            phase: Phase::Flagged,
            verdict: Some(i.intern("unattached-volume")),
            tags,
            props,
        }
    }

    #[test]
    fn node_object_keeps_json_types_and_names_every_field() {
        let i = Interner::new();
        let row = row(&i);
        let r = i.reader();
        let v = NodeView::of_row(&row);
        let got = serde_json::to_value(node(&v, &r)).unwrap();
        assert_eq!(
            got,
            json!({
                "crn": "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1",
                "type": "ec2:volume", "provider": "aws", "region": "us-east-1", "service": "ec2",
                "kind": "volume", "account": "123456789012", "physical_id": "vol-1",
                "state": "available", "cost_usd_mo": 40.1,
                "tags": {"env": "prod"},
                "properties": {"size_gib": 100, "iops": 3000.5, "encrypted": true, "kms_key": null,
                    "volume_type": "gp2", "attachments": [{"instance": "i-1"}]},
                "creation_timestamp": 1_700_000_000u64,
                "valid_from": 1_700_000_000_000_000u64, "valid_to": 0,
                "is_waste": true, "waste_reason": "unattached for 43 days", "risk_score": 42.0,
                "reachability": "unreachable", "phase": "flagged", "verdict": "unattached-volume",
            })
        );
        assert_eq!(
            serde_json::to_value(v.heuristics_flagged(&r)).unwrap(),
            json!([{"rule_name": "unattached-volume", "severity": 3}])
        );
    }

    #[test]
    fn findings_need_waste_and_a_reason() {
        let i = Interner::new();
        let mut row = row(&i);
        row.verdict = None;
        let r = i.reader();
        assert_eq!(
            serde_json::to_value(NodeView::of_row(&row).heuristics_flagged(&r)).unwrap(),
            json!([{"rule_name": "waste", "severity": 3}])
        );
        row.waste_reason.clear();
        assert_eq!(
            serde_json::to_value(NodeView::of_row(&row).heuristics_flagged(&r)).unwrap(),
            json!([])
        );
        row.waste_reason = "x".into();
        row.is_waste = false;
        assert_eq!(
            serde_json::to_value(NodeView::of_row(&row).heuristics_flagged(&r)).unwrap(),
            json!([])
        );
    }

    #[test]
    fn severity_bands() {
        let cases = [
            (0.0, 1),
            (19.9, 1),
            (20.0, 2),
            (39.9, 2),
            (40.0, 3),
            (59.9, 3),
            (60.0, 4),
            (79.9, 4),
            (80.0, 5),
            (100.0, 5),
        ];
        for (risk, want) in cases {
            assert_eq!(severity(risk), want, "{risk}");
        }
        assert_eq!(severity(f32::NAN), 1);
    }

    #[test]
    fn floats_use_their_shortest_form() {
        let text = |v: f32| serde_json::to_string(&f32_value(v)).unwrap();
        assert_eq!(text(40.1), "40.1");
        assert_eq!(text(0.0), "0.0");
        assert_eq!(text(f32::NAN), "0.0");
        assert_eq!(value_json(ValueRef::Float(f64::INFINITY)), Value::Null);
        assert_eq!(value_json(ValueRef::Json("{broken")), json!("{broken"));
    }
}
