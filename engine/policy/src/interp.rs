//! The CEL interpreter over one node: the fallback of the fast path, and
//! the reference it is tested against.
//!
//! A worker keeps one root context (`Context::default()` builds the whole
//! standard library, ~25 µs); each node gets a child scope whose variables
//! come from a resolver that builds a binding only when the program reads
//! it.

use std::collections::HashMap;

use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, Value};

use super::compile::Compiled;
use super::cost;
use super::node::{Outcome, Row, relation_names};
use svc_graph::props::ValueRef;

/// The interpreter of one worker.
pub struct Interp {
    root: Context<'static, 'static>,
}

impl Default for Interp {
    fn default() -> Interp {
        Interp::new()
    }
}

impl Interp {
    pub fn new() -> Interp {
        Interp {
            root: Context::default(),
        }
    }

    /// Runs `compiled` on `row`: a bool result is a match or not, anything
    /// else (an error, a value of another type) an error. A condition with
    /// a comprehension first has its cost bound worked out from this
    /// node's sizes: over the budget, it is an error and does not run.
    pub fn eval(&self, compiled: &Compiled, row: Row<'_>) -> Outcome {
        if compiled.data_dependent {
            let bound = cost::estimate(compiled.program.expression(), cost::Sizes::of(row));
            if bound > cost::COST_BUDGET {
                return Outcome::Error(format!(
                    "evaluation may cost up to {bound} on this resource, over the budget of {}",
                    cost::COST_BUDGET
                ));
            }
        }
        let vars = Vars { row };
        let result = run(&self.root, compiled, &vars);
        match result {
            Ok(Value::Bool(true)) => Outcome::Match,
            Ok(Value::Bool(false)) => Outcome::NoMatch,
            Ok(v) => Outcome::Error(format!("condition gave a {} instead of a bool", v.type_of())),
            Err(e) => Outcome::Error(e.to_string()),
        }
    }
}

/// The value of a condition that reads no binding of a node (only `now`,
/// at `now_us`) as CEL text, or why it has none.
pub fn constant_value(compiled: &Compiled, now_us: u64) -> Result<String, String> {
    struct Now(u64);
    impl VariableResolver for Now {
        fn resolve<'b>(&'b self, name: &str) -> Option<CowVal<'b, 'b>> {
            if name != "now" {
                return None;
            }
            let boxed: Box<dyn Val> = timestamp_us(self.0).try_into().ok()?;
            Some(CowVal::Owned(boxed))
        }
    }
    let root = Context::default();
    let now = Now(now_us);
    let v = run(&root, compiled, &now).map_err(|e| e.to_string())?;
    // The interpreter hands a type value (`type(1)`) over as its name, a
    // string: asking again tells the two apart.
    if let Value::String(name) = &v {
        let is_type = super::compile::compile(&format!("type((\n{}\n)) == type", compiled.source))
            .ok()
            .map(|c| run(&root, &c, &now));
        if let Some(Ok(Value::Bool(true))) = is_type {
            return Ok(name.to_string());
        }
    }
    Ok(super::render::cel_text(&v))
}

/// A time in µs since the epoch as a CEL timestamp.
fn timestamp_us(us: u64) -> Value {
    let t = chrono::DateTime::from_timestamp_micros(i64::try_from(us).unwrap_or(i64::MAX)).unwrap_or_default();
    Value::Timestamp(t.fixed_offset())
}

fn run<'v>(root: &Context<'_, 'v>, compiled: &Compiled, vars: &'v dyn VariableResolver) -> cel::ResolveResult {
    let mut scope = root.new_inner_scope();
    scope.set_variable_resolver(vars);
    compiled.program.execute(&scope)
}

struct Vars<'a> {
    row: Row<'a>,
}

impl VariableResolver for Vars<'_> {
    fn resolve<'b>(&'b self, name: &str) -> Option<CowVal<'b, 'b>> {
        let v = node_value(self.row, name)?;
        let boxed: Box<dyn Val> = v.try_into().ok()?;
        Some(CowVal::Owned(boxed))
    }
}

fn string(s: &str) -> Value {
    Value::String(std::sync::Arc::new(s.to_owned()))
}

/// The value of binding `name` for a node (see [`super::BINDINGS`]).
pub fn node_value(row: Row<'_>, name: &str) -> Option<Value> {
    use super::expr::Field;
    Some(match name {
        "crn" => Value::String(std::sync::Arc::new(row.crn())),
        "type" => string(row.resolve(row.sym_field(Field::Type))),
        "kind" => string(row.resolve(row.sym_field(Field::Kind))),
        "service" => string(row.resolve(row.sym_field(Field::Service))),
        "provider" => string(row.resolve(row.sym_field(Field::Provider))),
        "region" => string(row.resolve(row.sym_field(Field::Region))),
        "account" => string(row.resolve(row.sym_field(Field::Account))),
        "state" => string(row.resolve(row.sym_field(Field::State))),
        "reachability" => string(row.reachability()),
        "cost" => Value::Float(row.cost()),
        "risk_score" => Value::Float(row.risk()),
        "age_days" => Value::Int(row.age_days()),
        "is_waste" => Value::Bool(row.is_waste()),
        "now" => timestamp_us(row.env.now_us),
        "created" => match row.created_s() {
            Some(s) => timestamp_us(s.saturating_mul(1_000_000)),
            None => Value::Null,
        },
        "tags" => {
            // First entry wins, as `Tags::get` reads it.
            let mut m: HashMap<String, Value> = HashMap::new();
            for (k, v) in row.tags() {
                m.entry(row.resolve(k).to_owned())
                    .or_insert_with(|| string(row.resolve(v)));
            }
            Value::from(m)
        }
        "props" => {
            let mut m: HashMap<String, Value> = HashMap::new();
            // Last entry wins, as `Props::get` reads it.
            for (k, v) in row.props() {
                m.insert(row.resolve(k).to_owned(), prop_value(v));
            }
            Value::from(m)
        }
        "out" | "incoming" => {
            let c = row.edge_counts()[usize::from(name == "incoming")];
            let m: HashMap<String, Value> = relation_names()
                .map(|(i, n)| (n.to_owned(), Value::Int(i64::from(c[i]))))
                .collect();
            Value::from(m)
        }
        _ => return None,
    })
}

/// A property as a CEL value, JSON types kept.
pub fn prop_value(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Bool(b) => Value::Bool(b),
        ValueRef::Int(i) => Value::Int(i),
        ValueRef::Float(f) => Value::Float(f),
        ValueRef::Str(s) => string(s),
        ValueRef::Json(text) => serde_json::from_str::<serde_json::Value>(text)
            .map(|j| json_value(&j))
            .unwrap_or(Value::Null),
    }
}

fn json_value(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int(i),
            (None, Some(u), _) => Value::UInt(u),
            (_, _, f) => Value::Float(f.unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => string(s),
        serde_json::Value::Array(a) => Value::List(std::sync::Arc::new(a.iter().map(json_value).collect())),
        serde_json::Value::Object(o) => {
            let m: HashMap<String, Value> = o.iter().map(|(k, v)| (k.clone(), json_value(v))).collect();
            Value::from(m)
        }
    }
}
