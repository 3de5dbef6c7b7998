//! One finding: what a built-in rule, a heuristic plugin or an enforcing
//! policy says about one node, checked and normalised ([`Finding`]), and
//! the order that puts a node's deciding finding first ([`precedence`]).

use std::borrow::Cow;
use std::cmp::Ordering;

use svc_graph::ids::NodeId;

/// Where a finding came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FindingSource {
    /// A rule built into the engine.
    Builtin,
    /// A heuristic plugin, by its plugin name (`svc-plugin-<name>`).
    Plugin(String),
    /// An enforcing `flag` policy rule (its finding's rule is `policy:<id>`).
    /// Ordered last: at equal risk a heuristic decides before a policy.
    Policy,
}

impl FindingSource {
    /// `builtin`, or `plugin:<name>`.
    pub fn label(&self) -> String {
        match self {
            FindingSource::Builtin => "builtin".to_owned(),
            FindingSource::Plugin(name) => format!("plugin:{name}"),
            FindingSource::Policy => "policy".to_owned(),
        }
    }
}

/// One verdict about one node, checked and normalised.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub node: NodeId,
    pub source: FindingSource,
    /// Name of the rule (a plugin's `MetadataResponse.name`).
    pub rule: Cow<'static, str>,
    pub is_waste: bool,
    /// 0..=100 for built-in rules, 0..=79 for plugins.
    pub risk_score: u8,
    pub reason: String,
    pub suggested_action: Cow<'static, str>,
    pub projected_savings_usd_mo: f64,
    pub annotations: Vec<(String, String)>,
}

/// Orders the findings of one node, the deciding one first.
pub fn precedence(a: &Finding, b: &Finding) -> Ordering {
    b.is_waste
        .cmp(&a.is_waste)
        .then(b.risk_score.cmp(&a.risk_score))
        .then(a.source.cmp(&b.source))
        .then(a.rule.cmp(&b.rule))
}
