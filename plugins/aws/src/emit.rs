//! Nodes and edges in the plugin wire form: plugin-form CRNs
//! (`crn:svc:aws:<region>:<account>:<type>:<id>`, the engine derives the
//! service), JSON properties as the mock estate's AWS half writes them
//! (`state`, `created_at`, the resource's own keys, `tags`,
//! `creation_timestamp`), usage figures from CloudWatch ([`Usage`]), a
//! cost from the engine's price table, and the relation strings of DESIGN 2.

use std::collections::{HashMap, HashSet};

use aws_sdk_ec2::primitives::DateTime;
use aws_sdk_ec2::types::Tag;
use serde_json::{Map, Value};
use svc_engine::prices;
use svc_proto::provider::v1::{Edge, Node};

/// `A ATTACHED_TO B`: a volume to its instance, an address to its interface.
pub const ATTACHED_TO: &str = "ATTACHED_TO";
/// `A SECURED_BY B`: a resource to a security group it is in.
pub const SECURED_BY: &str = "SECURED_BY";
/// `A CONTAINS B`: a VPC its subnets and groups, a subnet its NAT gateway.
pub const CONTAINS: &str = "CONTAINS";
/// `A MEMBER_OF B`: an instance or interface in its subnet (B contains A).
pub const MEMBER_OF: &str = "MEMBER_OF";
/// `A CHILD_OF B`: a snapshot of its volume (B contains A).
pub const CHILD_OF: &str = "CHILD_OF";
/// `A DEPENDS_ON B`: an instance on its image, an image on its snapshots.
pub const DEPENDS_ON: &str = "DEPENDS_ON";
/// `A ROUTES_TO B`: a load balancer or target group to its targets.
pub const ROUTES_TO: &str = "ROUTES_TO";
/// `A WRITES B`: a function to its log group.
pub const WRITES: &str = "WRITES";

/// Usage figures by node kind, then node id: `(property, value)` pairs
/// ([`crate::metrics`]) that [`Out::tagged`] adds to the node's properties.
pub type Usage = HashMap<&'static str, HashMap<String, Vec<(&'static str, f64)>>>;

/// Where one region's resources are written, and which account and
/// partition their CRNs and ARNs carry.
pub struct Out<'a> {
    pub region: &'a str,
    pub account: &'a str,
    pub partition: &'a str,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// `(type, id)` of every node written, so edges go only to resources
    /// this scan reports.
    written: HashSet<(&'static str, String)>,
    /// The region's usage figures, merged into the nodes they are of.
    usage: Option<&'a Usage>,
}

impl<'a> Out<'a> {
    pub fn new(region: &'a str, account: &'a str, partition: &'a str) -> Out<'a> {
        Out {
            region,
            account,
            partition,
            nodes: Vec::new(),
            edges: Vec::new(),
            written: HashSet::new(),
            usage: None,
        }
    }

    /// Adds `usage` to the properties of the nodes it names as they are written.
    pub fn with_usage(mut self, usage: &'a Usage) -> Out<'a> {
        self.usage = Some(usage);
        self
    }

    /// The plugin-form CRN of a resource of this region.
    pub fn crn(&self, kind: &str, id: &str) -> String {
        format!("crn:svc:aws:{}:{}:{kind}:{id}", self.region, self.account)
    }

    /// The ARN of an EC2 resource (`resource` as the ARN spells it:
    /// `instance`, `volume`, `elastic-ip`, ...). Snapshots and images have
    /// no account in theirs.
    pub fn arn(&self, resource: &str, id: &str) -> String {
        let account = if matches!(resource, "snapshot" | "image") {
            ""
        } else {
            self.account
        };
        format!("arn:{}:ec2:{}:{account}:{resource}/{id}", self.partition, self.region)
    }

    /// Starts a node's properties.
    pub fn doc(&self, state: &str, created: Option<i64>) -> Doc {
        let mut props = Map::new();
        props.insert("state".into(), state.into());
        if let Some(ts) = created.and_then(rfc3339) {
            props.insert("created_at".into(), ts.into());
        }
        Doc {
            props,
            created: created.filter(|t| *t > 0),
        }
    }

    /// Writes EC2 node `kind`/`id` with its properties and tags, priced by
    /// the engine's table.
    pub fn node(&mut self, kind: &'static str, id: &str, doc: Doc, tags: &[Tag]) {
        let pairs = tags.iter().filter_map(|t| Some((t.key()?, t.value().unwrap_or(""))));
        self.tagged(kind, id, doc, pairs);
    }

    /// Writes node `kind`/`id` (its service is the engine's for the type)
    /// with its properties, its usage figures and tags (key, value), priced
    /// by the engine's table (which reads some figures: a NAT gateway's bytes).
    pub fn tagged<'t>(
        &mut self,
        kind: &'static str,
        id: &str,
        doc: Doc,
        tags: impl IntoIterator<Item = (&'t str, &'t str)>,
    ) {
        let Doc { mut props, created } = doc;
        let figures = self.usage.and_then(|u| u.get(kind)?.get(id));
        for &(key, value) in figures.into_iter().flatten() {
            props.insert(key.to_owned(), number(value));
        }
        let cost = price(self.region, kind, &props);
        let tags: Map<String, Value> = tags.into_iter().map(|(k, v)| (k.to_owned(), Value::from(v))).collect();
        props.insert("tags".into(), Value::Object(tags));
        if let Some(ts) = created {
            props.insert("creation_timestamp".into(), ts.into());
        }
        self.nodes.push(Node {
            crn: self.crn(kind, id),
            properties: svc_plugin_sdk::json_properties(&Value::Object(props)),
            cost,
        });
        self.written.insert((kind, id.to_owned()));
    }

    /// Whether node `kind`/`id` was written.
    pub fn has(&self, kind: &'static str, id: &str) -> bool {
        self.written.contains(&(kind, id.to_owned()))
    }

    /// An edge between two resources of this region; left out unless both
    /// were written (a resource of another account, or one deleted between
    /// two list calls, is not in the graph).
    pub fn edge(&mut self, from: (&'static str, &str), to: (&'static str, &str), relation: &str) {
        if from.1.is_empty() || to.1.is_empty() || !self.has(from.0, from.1) || !self.has(to.0, to.1) {
            return;
        }
        self.edges.push(Edge {
            source_crn: self.crn(from.0, from.1),
            target_crn: self.crn(to.0, to.1),
            relation: relation.to_owned(),
        });
    }
}

/// A node's properties being written.
pub struct Doc {
    props: Map<String, Value>,
    created: Option<i64>,
}

impl Doc {
    pub fn str(&mut self, key: &str, value: Option<&str>) -> &mut Doc {
        let v = value.map_or(Value::Null, Value::from);
        self.props.insert(key.to_owned(), v);
        self
    }
    /// A string written only when present.
    pub fn opt_str(&mut self, key: &str, value: Option<&str>) -> &mut Doc {
        if let Some(v) = value {
            self.props.insert(key.to_owned(), v.into());
        }
        self
    }
    pub fn int(&mut self, key: &str, value: Option<i64>) -> &mut Doc {
        if let Some(v) = value {
            self.props.insert(key.to_owned(), v.into());
        }
        self
    }
    /// A number, or null when absent (a log group's retention: never).
    pub fn int_or_null(&mut self, key: &str, value: Option<i64>) -> &mut Doc {
        self.props
            .insert(key.to_owned(), value.map_or(Value::Null, Value::from));
        self
    }
    pub fn float(&mut self, key: &str, value: Option<f64>) -> &mut Doc {
        if let Some(v) = value.filter(|v| v.is_finite()) {
            self.props.insert(key.to_owned(), v.into());
        }
        self
    }
    pub fn bool(&mut self, key: &str, value: Option<bool>) -> &mut Doc {
        if let Some(v) = value {
            self.props.insert(key.to_owned(), v.into());
        }
        self
    }
    pub fn list(&mut self, key: &str, values: impl IntoIterator<Item = String>) -> &mut Doc {
        let list: Vec<Value> = values.into_iter().map(Value::from).collect();
        self.props.insert(key.to_owned(), Value::Array(list));
        self
    }
}

/// A figure as JSON: whole numbers as integers (as the mock estate writes
/// counts), others as floats; a value that is not finite is null.
fn number(v: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if v.fract() == 0.0 && v.abs() < EXACT {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// Unix seconds of an SDK time.
pub fn secs(t: Option<&DateTime>) -> Option<i64> {
    t.map(DateTime::secs)
}

/// Unix seconds of an RFC 3339 time (an image's `CreationDate`).
pub fn parse_time(text: Option<&str>) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text?).ok().map(|t| t.timestamp())
}

/// A Lambda time (`2025-01-01T10:20:30.000+0000`) in RFC 3339.
pub fn parse_lambda_time(text: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f%z")
        .or_else(|_| chrono::DateTime::parse_from_rfc3339(text))
        .ok()?;
    rfc3339(t.timestamp())
}

/// `2025-01-01T00:00:00Z`.
pub fn rfc3339(ts: i64) -> Option<String> {
    let t = chrono::DateTime::from_timestamp(ts, 0)?;
    Some(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The monthly cost the engine's price table gives the resource (0 where
/// it has no price: the network context is free).
fn price(region: &str, kind: &str, props: &Map<String, Value>) -> f64 {
    let ty = format!("{}:{kind}", svc_engine::crn::service_for("aws", kind));
    let state = props.get("state").and_then(Value::as_str).unwrap_or("");
    let text = |k: &str| props.get(k).and_then(Value::as_str);
    let number = |k: &str| props.get(k).and_then(Value::as_f64);
    let item = prices::Item {
        provider: "aws",
        region,
        ty: &ty,
        state,
        text: &text,
        number: &number,
    };
    prices::estimate(&item).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_mock_estates_shape() {
        let mut out = Out::new("eu-west-1", "123456789012", "aws");
        let mut doc = out.doc("available", Some(1_735_689_600));
        doc.int("size_gib", Some(100))
            .str("volume_type", Some("gp3"))
            .str("attached_to", None);
        let tag = Tag::builder().key("svc:ignore").value("true").build();
        out.node("volume", "vol-1", doc, &[tag]);
        let n = &out.nodes[0];
        assert_eq!(n.crn, "crn:svc:aws:eu-west-1:123456789012:volume:vol-1");
        let v: Value = serde_json::from_slice(&n.properties).unwrap();
        assert_eq!(v["state"], "available");
        assert_eq!(v["created_at"], "2025-01-01T00:00:00Z");
        assert_eq!(v["creation_timestamp"], 1_735_689_600);
        assert_eq!(v["attached_to"], Value::Null);
        assert_eq!(v["tags"]["svc:ignore"], "true");
        assert!(
            (n.cost - 8.0 * prices::region_factor("aws", "eu-west-1")).abs() < 1e-9,
            "{}",
            n.cost
        );
    }

    #[test]
    fn merges_usage_figures_before_pricing() {
        let mut usage = Usage::new();
        let nat = vec![("bytes_processed_7d", 7.0 * 1_073_741_824.0), ("connections_7d", 0.0)];
        usage.entry("nat-gateway").or_default().insert("nat-1".into(), nat);
        usage
            .entry("instance")
            .or_default()
            .insert("i-1".into(), vec![("cpu_avg_7d", 2.5)]);
        let mut out = Out::new("us-east-1", "1", "aws").with_usage(&usage);
        out.node("nat-gateway", "nat-1", out.doc("available", None), &[]);
        out.node("nat-gateway", "nat-2", out.doc("available", None), &[]);
        out.node("instance", "i-1", out.doc("running", None), &[]);
        let props: Vec<Value> = out
            .nodes
            .iter()
            .map(|n| serde_json::from_slice(&n.properties).unwrap())
            .collect();
        assert_eq!(props[0]["bytes_processed_7d"], 7_516_192_768_i64);
        assert_eq!(props[0]["connections_7d"], 0);
        assert!(props[1].get("bytes_processed_7d").is_none(), "{}", props[1]);
        assert_eq!(props[2]["cpu_avg_7d"], 2.5);
        // 30 GB a month processed at the NAT rate is in the first one's cost.
        let gb = prices::rate("aws", "nat-gateway-gb", "us-east-1").unwrap();
        assert!(
            (out.nodes[0].cost - out.nodes[1].cost - 30.0 * gb).abs() < 0.011,
            "{gb}"
        );
    }

    #[test]
    fn edges_only_between_written_nodes() {
        let mut out = Out::new("us-east-1", "1", "aws");
        out.node("volume", "vol-1", out.doc("in-use", None), &[]);
        out.edge(("volume", "vol-1"), ("instance", "i-gone"), ATTACHED_TO);
        assert!(out.edges.is_empty());
        out.node("instance", "i-1", out.doc("running", None), &[]);
        out.edge(("volume", "vol-1"), ("instance", "i-1"), ATTACHED_TO);
        assert_eq!(out.edges.len(), 1);
        assert_eq!(out.arn("snapshot", "snap-1"), "arn:aws:ec2:us-east-1::snapshot/snap-1");
        assert_eq!(out.arn("volume", "vol-1"), "arn:aws:ec2:us-east-1:1:volume/vol-1");
    }

    #[test]
    fn reads_lambda_times() {
        let t = parse_lambda_time("2025-01-01T10:20:30.000+0000");
        assert_eq!(t.as_deref(), Some("2025-01-01T10:20:30Z"));
        let t = parse_lambda_time("2025-01-01T10:20:30+01:00");
        assert_eq!(t.as_deref(), Some("2025-01-01T09:20:30Z"));
        assert_eq!(parse_lambda_time("yesterday"), None);
    }

    #[test]
    fn prices_by_the_engines_service_of_the_type() {
        let mut out = Out::new("us-east-1", "1", "aws");
        let mut doc = out.doc("active", None);
        doc.float("stored_gib", Some(10.0));
        out.tagged("log-group", "/aws/lambda/f", doc, [("team", "a")]);
        let priced = 10.0 * prices::rate("aws", "logs-storage", "us-east-1").unwrap();
        assert!((out.nodes[0].cost - priced).abs() < 0.006, "{}", out.nodes[0].cost);
    }
}
