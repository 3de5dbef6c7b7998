//! What a built-in rule is: its catalogue entry ([`Rule`]), what it finds
//! on a node ([`Hit`]), where it writes why ([`Why`]), which rules run
//! ([`Selection`]), the grace every provider's rules give a resource, and
//! the constructors each provider's catalogue is written with.

use std::fmt::{self, Write as _};

use super::view::Node;

/// Whether a finding marks the resource as waste or suggests a cheaper
/// shape for a resource that is in use.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// Paid for and unused: remove, stop or release it.
    Waste,
    /// Used, but dearer than it needs to be: resize or reconfigure it.
    Optimize,
}

impl RuleKind {
    pub fn label(self) -> &'static str {
        match self {
            RuleKind::Waste => "waste",
            RuleKind::Optimize => "optimize",
        }
    }
}

/// What a rule found on one node: what the suggested action saves.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Hit {
    /// USD a month the suggested action saves.
    pub savings: f64,
}

/// Where a rule writes why it fired: nowhere while the pass decides which
/// nodes are waste, into a string once a finding is rendered. A rule
/// writes its reason as `format_args!`, so the numbers in it are only
/// formatted when someone reads them.
pub struct Why<'w> {
    out: Option<&'w mut String>,
}

impl<'w> Why<'w> {
    /// Reasons are dropped.
    pub fn silent() -> Why<'static> {
        Why { out: None }
    }
    /// Reasons are written to `out`.
    pub fn to(out: &'w mut String) -> Why<'w> {
        Why { out: Some(out) }
    }
    /// A hit saving `savings` USD a month, because of `reason`
    /// ("unattached for 43 days, 500 GiB gp2, $50.00/mo").
    pub fn hit(&mut self, savings: f64, reason: fmt::Arguments<'_>) -> Hit {
        if let Some(out) = self.out.as_deref_mut() {
            // Writing to a String cannot fail.
            let _ = out.write_fmt(reason);
        }
        Hit { savings }
    }
}

/// One built-in rule.
#[derive(Debug)]
pub struct Rule {
    /// Stable name: the node's `verdict` and the finding's `rule`.
    pub name: &'static str,
    pub provider: &'static str,
    /// Node types (`<service>:<kind>`) the rule reads.
    pub types: &'static [&'static str],
    pub kind: RuleKind,
    pub risk: u8,
    /// One of the remediate actions (DESIGN.md section 2).
    pub action: &'static str,
    /// The suggested action in words.
    pub suggestion: &'static str,
    /// The condition, in words (for docs and `GET /api/v1/heuristics/status`).
    pub condition: &'static str,
    pub check: fn(&Node<'_>, &mut Why<'_>) -> Option<Hit>,
}

/// Which built-in rules run (`[heuristics]` in the configuration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub enabled: bool,
    /// Rules switched off by name.
    pub disabled: Vec<String>,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            enabled: true,
            disabled: Vec::new(),
        }
    }
}

impl Selection {
    pub fn allows(&self, rule: &Rule) -> bool {
        self.enabled && !self.disabled.iter().any(|d| d == rule.name)
    }
}

/// Days a resource may sit unattached or orphaned before it is reported
/// (so one that is being moved is not).
pub const GRACE_DAYS: u64 = 7;

/// A provider's rule constructors, one for each kind named:
/// `rule_constructors!("aws": waste => Waste, optimize => Optimize)`
/// defines `waste(name, types, risk, action, suggestion, condition, check)`
/// and `optimize(..)` building that provider's [`Rule`]s of that kind.
macro_rules! rule_constructors {
    ($provider:literal: $($ctor:ident => $kind:ident),+) => {$(
        const fn $ctor(
            name: &'static str,
            types: &'static [&'static str],
            risk: u8,
            action: &'static str,
            suggestion: &'static str,
            condition: &'static str,
            check: fn(
                &$crate::heuristics::builtin::view::Node<'_>,
                &mut $crate::heuristics::builtin::rule::Why<'_>,
            ) -> Option<$crate::heuristics::builtin::rule::Hit>,
        ) -> $crate::heuristics::builtin::rule::Rule {
            $crate::heuristics::builtin::rule::Rule {
                name,
                provider: $provider,
                types,
                kind: $crate::heuristics::builtin::rule::RuleKind::$kind,
                risk,
                action,
                suggestion,
                condition,
                check,
            }
        }
    )+};
}

pub(super) use rule_constructors;
