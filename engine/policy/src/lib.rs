//! The `engine.policy` phase: CEL policy rules (SPEC 2.7, 3.2) evaluated over
//! every visible node.
//!
//! - [`compile`]: a condition is checked against bounds (length, nesting,
//!   operators, known names only, a cost budget) and compiled once, to a
//!   CEL program and, where its shape allows, to a column predicate.
//! - [`cost`]: the bound on one evaluation's cost, from the sizes the
//!   bindings can have; comprehensions cost per element.
//! - [`fast`]: the column predicates: comparisons of bindings with
//!   literals, `&&`, `||`, `!`, `in` lists, `has()`, string tests and
//!   lookups in `tags`, `props`, `out` and `incoming`, read straight from the node
//!   shards. They give exactly the interpreter's answers, errors included
//!   (a differential property test checks it).
//! - [`interp`]: the CEL interpreter over a node: one root context per
//!   worker, a child scope per node whose variables are built on first use.
//! - [`eval`]: the parallel pass over the shards, shared by the scan phase
//!   and dry-run.
//! - [`book`]: the rule book: the rules in priority order, persisted in
//!   `graph.redb`, and what the last evaluation found.

pub mod book;
pub mod compile;
pub mod cost;
pub mod eval;
pub mod expr;
pub mod fast;
pub mod interp;
pub mod node;
pub mod render;

use std::fmt;
use std::sync::Arc;

pub use book::{Book, LastEvaluation, Pack, PackSource, PolicyError, PolicyOutcome, RuleState, check_spec};
pub use compile::{CompileError, Compiled};
pub use eval::{EvalOptions, Evaluation, Outcome, RuleTally};

/// What a matching rule does (DESIGN.md section 2).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Keeps matching resources out of remediation (held at `sau_gate`).
    Block,
    /// Marks matching resources as waste, reason `policy:<id>`.
    Flag,
    /// Counts the violation only.
    Warn,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Block => "block",
            Action::Flag => "flag",
            Action::Warn => "warn",
        }
    }
    pub fn parse(s: &str) -> Option<Action> {
        match s {
            "block" => Some(Action::Block),
            "flag" => Some(Action::Flag),
            "warn" => Some(Action::Warn),
            _ => None,
        }
    }
}

/// A rule's enforcement mode (SPEC 3.2). New rules are enforcing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    #[default]
    Enforcing,
    /// Only counts and records what the rule would have done.
    Shadow,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Enforcing => "enforcing",
            Mode::Shadow => "shadow",
        }
    }
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "enforcing" => Some(Mode::Enforcing),
            "shadow" => Some(Mode::Shadow),
            _ => None,
        }
    }
    pub fn toggled(self) -> Mode {
        match self {
            Mode::Enforcing => Mode::Shadow,
            Mode::Shadow => Mode::Enforcing,
        }
    }
}

/// Where a rule came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Added through the API (or the CLI over it).
    Api,
    /// From an installed policy pack, by its name.
    Pack(String),
}

impl Origin {
    /// `api`, or `pack:<name>`.
    pub fn label(&self) -> String {
        match self {
            Origin::Api => "api".to_owned(),
            Origin::Pack(name) => format!("pack:{name}"),
        }
    }
}

/// A rule as an operator writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleSpec {
    pub id: String,
    pub condition: String,
    pub action: Action,
    pub message: String,
    pub mode: Mode,
}

/// A compiled rule.
#[derive(Clone)]
pub struct Rule {
    pub spec: RuleSpec,
    pub origin: Origin,
    /// When it was added (µs).
    pub created_us: u64,
    pub compiled: Arc<Compiled>,
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule")
            .field("spec", &self.spec)
            .field("origin", &self.origin)
            .field("fast", &self.compiled.is_fast())
            .finish()
    }
}

impl Rule {
    /// The verdict (and waste reason) a `flag` rule gives: `policy:<id>`.
    pub fn reason(&self) -> String {
        reason_of(&self.spec.id)
    }
}

/// `policy:<id>`.
pub fn reason_of(id: &str) -> String {
    format!("{REASON_PREFIX}{id}")
}

/// Prefix of the reason and verdict of a node a policy flagged.
pub const REASON_PREFIX: &str = "policy:";

/// Longest rule id, in bytes.
pub const MAX_ID_BYTES: usize = 128;
/// Longest message, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1024;
/// Most rules the book holds (API and packs together).
pub const MAX_RULES: usize = 1000;

/// The names a condition can use, with their CEL types, in the order the
/// README documents them.
pub const BINDINGS: [(&str, &str); 19] = [
    ("crn", "string"),
    ("type", "string"),
    ("kind", "string"),
    ("service", "string"),
    ("provider", "string"),
    ("region", "string"),
    ("account", "string"),
    ("state", "string"),
    ("cost", "double"),
    ("tags", "map(string, string)"),
    ("props", "map(string, dyn)"),
    ("age_days", "int"),
    ("is_waste", "bool"),
    ("risk_score", "double"),
    ("reachability", "string"),
    ("out", "map(string, int)"),
    ("incoming", "map(string, int)"),
    ("created", "timestamp"),
    ("now", "timestamp"),
];

/// Checks a rule id: 1 to 128 bytes of letters, digits, `.`, `_`, `-`
/// and `:`; `/` only where `allow_slash` (pack rules are `<pack>/<id>`).
pub fn check_id(id: &str, allow_slash: bool) -> Result<(), String> {
    if id.is_empty() {
        return Err("rule id is empty".to_owned());
    }
    if id.len() > MAX_ID_BYTES {
        return Err(format!("rule id is {} bytes long; at most {MAX_ID_BYTES}", id.len()));
    }
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':') || (allow_slash && c == '/');
    if let Some(c) = id.chars().find(|c| !ok(*c)) {
        return Err(format!(
            "rule id {id:?} has the character {c:?}; use letters, digits, '.', '_', '-' and ':'"
        ));
    }
    Ok(())
}
