//! The predicate language of the fast path: fields, map entries,
//! literals and the predicates over them, and the values they read.

use svc_graph::ids::Sym;
use svc_graph::relation::Relation;

/// The outcome of a predicate on one node.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Tri {
    False,
    True,
    Error,
    /// Not decidable here: ask the interpreter.
    Fallback,
}

impl Tri {
    pub fn of(b: bool) -> Tri {
        if b { Tri::True } else { Tri::False }
    }
}

/// A scalar binding.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Field {
    Crn,
    Type,
    Kind,
    Service,
    Provider,
    Region,
    Account,
    State,
    Reachability,
    Cost,
    AgeDays,
    IsWaste,
    RiskScore,
}

impl Field {
    pub fn parse(name: &str) -> Option<Field> {
        Some(match name {
            "crn" => Field::Crn,
            "type" => Field::Type,
            "kind" => Field::Kind,
            "service" => Field::Service,
            "provider" => Field::Provider,
            "region" => Field::Region,
            "account" => Field::Account,
            "state" => Field::State,
            "reachability" => Field::Reachability,
            "cost" => Field::Cost,
            "age_days" => Field::AgeDays,
            "is_waste" => Field::IsWaste,
            "risk_score" => Field::RiskScore,
            _ => return None,
        })
    }
    /// Whether the field is an interned string column (compared by symbol).
    pub fn interned(self) -> bool {
        matches!(
            self,
            Field::Type
                | Field::Kind
                | Field::Service
                | Field::Provider
                | Field::Region
                | Field::Account
                | Field::State
        )
    }
}

/// A map binding.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MapName {
    Props,
    Tags,
    Out,
    Incoming,
}

impl MapName {
    pub fn parse(name: &str) -> Option<MapName> {
        Some(match name {
            "props" => MapName::Props,
            "tags" => MapName::Tags,
            "out" => MapName::Out,
            "incoming" => MapName::Incoming,
            _ => return None,
        })
    }
}

/// A literal.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(String),
}

/// A key of a map binding, resolved to what the columns hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub name: String,
    /// The interned key (`props`, `tags`), when any node could have it.
    pub sym: Option<Sym>,
    /// The relation (`out`, `incoming`).
    pub rel: Option<Relation>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Lit(Lit),
    Field(Field),
    Entry(MapName, Key),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OrdOp {
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StrFn {
    StartsWith,
    EndsWith,
    Contains,
}

/// A compiled condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Pred {
    Const(bool),
    /// An operand used as a boolean.
    Truth(Operand),
    /// `field == "lit"` (or `!=`) on an interned column: a symbol compare.
    SymEq {
        field: Field,
        lit: String,
        sym: Option<Sym>,
        negate: bool,
    },
    /// `field in ["a", "b"]` on an interned column.
    SymIn {
        field: Field,
        lits: Vec<String>,
        syms: Vec<Sym>,
    },
    Eq {
        a: Operand,
        b: Operand,
        negate: bool,
    },
    Ord {
        op: OrdOp,
        a: Operand,
        b: Operand,
    },
    In {
        a: Operand,
        list: Vec<Lit>,
    },
    Has(MapName, Key),
    Str {
        f: StrFn,
        a: Operand,
        b: Operand,
    },
    Not(Box<Pred>),
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
}

/// Which nodes a rule can match at all, from its top-level conjuncts: a
/// conjunct `kind == "volume"` that is false makes the whole condition
/// false, whatever the rest would give (`false && error` is false).
#[derive(Clone, Debug, PartialEq)]
pub enum Guard {
    All,
    /// Only nodes of one of these kinds (by name).
    Kinds(Vec<String>),
    /// Only nodes of one of these types (by name).
    Types(Vec<String>),
}

/// A value as the fast path sees it.
#[derive(Copy, Clone, Debug)]
pub enum V<'a> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(&'a str),
    /// A list or map (a JSON array or object in `props`).
    Other,
    Err,
}

pub fn lit_value(l: &Lit) -> V<'_> {
    match l {
        Lit::Null => V::Null,
        Lit::Bool(b) => V::Bool(*b),
        Lit::Int(i) => V::Int(*i),
        Lit::UInt(u) => V::UInt(*u),
        Lit::Double(d) => V::Double(*d),
        Lit::Str(s) => V::Str(s),
    }
}
