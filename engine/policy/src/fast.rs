//! The fast path: a condition of a common shape compiled into a predicate
//! over the node columns, evaluated without a CEL context.
//!
//! Covered: `&&`, `||`, `!`; `==`, `!=`, `<`, `<=`, `>`, `>=` between
//! bindings, map entries and literals; `x in [literals]`; `has()` on
//! `props`, `tags`, `out`, `incoming`; `startsWith`, `endsWith`, `contains`;
//! `props.k`, `props["k"]` (and the same on `tags`, `out`, `incoming`).
//! Anything else compiles to `None` and the rule runs on the interpreter.
//!
//! The answers are CEL's, errors included: a missing key, a comparison
//! of values that have no ordering, a non-boolean where a boolean is needed
//! are errors; `false && error` is false and `true || error` true, in
//! either order. A value the fast path does not model (a JSON array or
//! object in `props` compared with another) makes it answer
//! [`Tri::Fallback`], and that node goes to the interpreter.

use std::cmp::Ordering;

use cel::common::ast::operators as op;
use cel::common::ast::{Expr, IdedExpr, LiteralValue};

pub use super::expr::*;
use super::node::NodeCtx;
use svc_graph::ids::Sym;
use svc_graph::relation::Relation;

/// Compiles an expression to a predicate, if it has a covered shape.
pub fn compile(e: &IdedExpr) -> Option<Pred> {
    pred(e)
}

fn pred(e: &IdedExpr) -> Option<Pred> {
    match &e.expr {
        Expr::Literal(LiteralValue::Boolean(b)) => Some(Pred::Const(**b)),
        Expr::Select(s) if s.test => {
            let Expr::Ident(root) = &s.operand.expr else {
                return None;
            };
            let map = MapName::parse(root)?;
            Some(Pred::Has(map, key(map, &s.field)))
        }
        Expr::Call(c) => {
            let args = &c.args;
            match (c.func_name.as_str(), &c.target, args.len()) {
                (op::LOGICAL_AND, None, 2) => Some(Pred::And(Box::new(pred(&args[0])?), Box::new(pred(&args[1])?))),
                (op::LOGICAL_OR, None, 2) => Some(Pred::Or(Box::new(pred(&args[0])?), Box::new(pred(&args[1])?))),
                (op::LOGICAL_NOT, None, 1) => Some(Pred::Not(Box::new(pred(&args[0])?))),
                (f @ (op::EQUALS | op::NOT_EQUALS), None, 2) => {
                    let (a, b) = (operand(&args[0])?, operand(&args[1])?);
                    let negate = f == op::NOT_EQUALS;
                    Some(match (&a, &b) {
                        (Operand::Field(field), Operand::Lit(Lit::Str(s)))
                        | (Operand::Lit(Lit::Str(s)), Operand::Field(field))
                            if field.interned() =>
                        {
                            Pred::SymEq {
                                field: *field,
                                lit: s.clone(),
                                sym: None,
                                negate,
                            }
                        }
                        _ => Pred::Eq { a, b, negate },
                    })
                }
                (f @ (op::LESS | op::LESS_EQUALS | op::GREATER | op::GREATER_EQUALS), None, 2) => {
                    let op = match f {
                        op::LESS => OrdOp::Lt,
                        op::LESS_EQUALS => OrdOp::Le,
                        op::GREATER => OrdOp::Gt,
                        _ => OrdOp::Ge,
                    };
                    Some(Pred::Ord {
                        op,
                        a: operand(&args[0])?,
                        b: operand(&args[1])?,
                    })
                }
                (op::IN, None, 2) => {
                    let a = operand(&args[0])?;
                    let Expr::List(l) = &args[1].expr else { return None };
                    if !l.optional_indices.is_empty() {
                        return None;
                    }
                    let list: Vec<Lit> = l.elements.iter().map(literal).collect::<Option<_>>()?;
                    match a {
                        Operand::Field(field) if field.interned() => Some(Pred::SymIn {
                            field,
                            // A string never equals a value of another type.
                            lits: list
                                .into_iter()
                                .filter_map(|l| match l {
                                    Lit::Str(s) => Some(s),
                                    _ => None,
                                })
                                .collect(),
                            syms: Vec::new(),
                        }),
                        a => Some(Pred::In { a, list }),
                    }
                }
                (name @ ("startsWith" | "endsWith" | "contains"), Some(target), 1) => {
                    let f = match name {
                        "startsWith" => StrFn::StartsWith,
                        "endsWith" => StrFn::EndsWith,
                        _ => StrFn::Contains,
                    };
                    Some(Pred::Str {
                        f,
                        a: operand(target)?,
                        b: operand(&args[0])?,
                    })
                }
                _ => Some(Pred::Truth(operand(e)?)),
            }
        }
        _ => Some(Pred::Truth(operand(e)?)),
    }
}

fn key(map: MapName, name: &str) -> Key {
    Key {
        name: name.to_owned(),
        sym: None,
        rel: match map {
            MapName::Out | MapName::Incoming => Relation::from_name(name),
            _ => None,
        },
    }
}

fn literal(e: &IdedExpr) -> Option<Lit> {
    match &e.expr {
        Expr::Literal(l) => Some(match l {
            LiteralValue::Null => Lit::Null,
            LiteralValue::Boolean(b) => Lit::Bool(**b),
            LiteralValue::Int(i) => Lit::Int(**i),
            LiteralValue::UInt(u) => Lit::UInt(**u),
            LiteralValue::Double(d) => Lit::Double(**d),
            LiteralValue::String(s) => Lit::Str(s.inner().to_owned()),
            LiteralValue::Bytes(_) => return None,
        }),
        Expr::Call(c) if c.func_name == op::NEGATE && c.target.is_none() && c.args.len() == 1 => {
            match literal(&c.args[0])? {
                Lit::Int(i) => i.checked_neg().map(Lit::Int),
                Lit::Double(d) => Some(Lit::Double(-d)),
                _ => None,
            }
        }
        _ => None,
    }
}

fn operand(e: &IdedExpr) -> Option<Operand> {
    if let Some(l) = literal(e) {
        return Some(Operand::Lit(l));
    }
    match &e.expr {
        Expr::Ident(name) => Field::parse(name).map(Operand::Field),
        Expr::Select(s) if !s.test => {
            let Expr::Ident(root) = &s.operand.expr else {
                return None;
            };
            let map = MapName::parse(root)?;
            Some(Operand::Entry(map, key(map, &s.field)))
        }
        Expr::Call(c) if c.func_name == op::INDEX && c.target.is_none() && c.args.len() == 2 => {
            let Expr::Ident(root) = &c.args[0].expr else {
                return None;
            };
            let map = MapName::parse(root)?;
            let Expr::Literal(LiteralValue::String(k)) = &c.args[1].expr else {
                return None;
            };
            Some(Operand::Entry(map, key(map, k.inner())))
        }
        _ => None,
    }
}

/// The guard of a condition that has no predicate as a whole, from those
/// of its top-level conjuncts that have one: `kind == "instance" &&
/// cost * 12.0 > 1000.0` still runs the interpreter on instances only.
pub fn guard_of_expr(e: &IdedExpr) -> Guard {
    fn conjuncts<'a>(e: &'a IdedExpr, out: &mut Vec<&'a IdedExpr>) {
        match &e.expr {
            Expr::Call(c) if c.func_name == op::LOGICAL_AND && c.target.is_none() && c.args.len() == 2 => {
                conjuncts(&c.args[0], out);
                conjuncts(&c.args[1], out);
            }
            _ => out.push(e),
        }
    }
    let mut cs = Vec::new();
    conjuncts(e, &mut cs);
    for c in cs {
        if let Some(p) = pred(c) {
            let g = guard(&p);
            if g != Guard::All {
                return g;
            }
        }
    }
    Guard::All
}

/// The guard of a predicate (see [`Guard`]).
pub fn guard(p: &Pred) -> Guard {
    fn conjuncts<'a>(p: &'a Pred, out: &mut Vec<&'a Pred>) {
        match p {
            Pred::And(a, b) => {
                conjuncts(a, out);
                conjuncts(b, out);
            }
            p => out.push(p),
        }
    }
    let mut cs = Vec::new();
    conjuncts(p, &mut cs);
    for c in cs {
        match c {
            Pred::SymEq {
                field: f @ (Field::Kind | Field::Type),
                lit,
                negate: false,
                ..
            } => {
                return if *f == Field::Kind {
                    Guard::Kinds(vec![lit.clone()])
                } else {
                    Guard::Types(vec![lit.clone()])
                };
            }
            Pred::SymIn {
                field: f @ (Field::Kind | Field::Type),
                lits,
                ..
            } => {
                return if *f == Field::Kind {
                    Guard::Kinds(lits.clone())
                } else {
                    Guard::Types(lits.clone())
                };
            }
            _ => {}
        }
    }
    Guard::All
}

/// Resolves the literal strings and map keys of `p` to symbols, once per
/// evaluation (`get` looks up without interning).
pub fn bind(p: &Pred, get: &dyn Fn(&str) -> Option<Sym>) -> Pred {
    let bind_key = |k: &Key| Key {
        sym: get(&k.name),
        ..k.clone()
    };
    let bind_operand = |o: &Operand| match o {
        Operand::Entry(m, k) => Operand::Entry(*m, bind_key(k)),
        o => o.clone(),
    };
    match p {
        Pred::SymEq { field, lit, negate, .. } => Pred::SymEq {
            field: *field,
            lit: lit.clone(),
            sym: get(lit),
            negate: *negate,
        },
        Pred::SymIn { field, lits, .. } => Pred::SymIn {
            field: *field,
            lits: lits.clone(),
            syms: lits.iter().filter_map(|l| get(l)).collect(),
        },
        Pred::Truth(o) => Pred::Truth(bind_operand(o)),
        Pred::Eq { a, b, negate } => Pred::Eq {
            a: bind_operand(a),
            b: bind_operand(b),
            negate: *negate,
        },
        Pred::Ord { op, a, b } => Pred::Ord {
            op: *op,
            a: bind_operand(a),
            b: bind_operand(b),
        },
        Pred::In { a, list } => Pred::In {
            a: bind_operand(a),
            list: list.clone(),
        },
        Pred::Has(m, k) => Pred::Has(*m, bind_key(k)),
        Pred::Str { f, a, b } => Pred::Str {
            f: *f,
            a: bind_operand(a),
            b: bind_operand(b),
        },
        Pred::Not(a) => Pred::Not(Box::new(bind(a, get))),
        Pred::And(a, b) => Pred::And(Box::new(bind(a, get)), Box::new(bind(b, get))),
        Pred::Or(a, b) => Pred::Or(Box::new(bind(a, get)), Box::new(bind(b, get))),
        Pred::Const(b) => Pred::Const(*b),
    }
}

impl Pred {
    /// Evaluates the predicate on one node.
    pub fn eval(&self, n: &NodeCtx<'_>) -> Tri {
        match self {
            Pred::Const(b) => Tri::of(*b),
            Pred::Truth(o) => match n.operand(o) {
                V::Bool(b) => Tri::of(b),
                _ => Tri::Error,
            },
            Pred::SymEq { field, sym, negate, .. } => {
                let hit = sym.is_some_and(|s| n.sym_field(*field) == s);
                Tri::of(hit != *negate)
            }
            Pred::SymIn { field, syms, .. } => {
                let v = n.sym_field(*field);
                Tri::of(syms.contains(&v))
            }
            Pred::Eq { a, b, negate } => match eq(n.operand(a), n.operand(b)) {
                Tri::True if *negate => Tri::False,
                Tri::False if *negate => Tri::True,
                t => t,
            },
            Pred::Ord { op, a, b } => match cmp(n.operand(a), n.operand(b)) {
                None => Tri::Error,
                Some(o) => Tri::of(match op {
                    OrdOp::Lt => o == Ordering::Less,
                    OrdOp::Le => o != Ordering::Greater,
                    OrdOp::Gt => o == Ordering::Greater,
                    OrdOp::Ge => o != Ordering::Less,
                }),
            },
            Pred::In { a, list } => {
                let v = n.operand(a);
                if matches!(v, V::Err) {
                    return Tri::Error;
                }
                let mut found = false;
                for l in list {
                    match eq(v, lit_value(l)) {
                        Tri::True => {
                            found = true;
                            break;
                        }
                        Tri::False => {}
                        t => return t,
                    }
                }
                Tri::of(found)
            }
            Pred::Has(m, k) => Tri::of(n.has(*m, k)),
            // A CRN ends with its physical id, after a ':'; a suffix without
            // ':' is a suffix of the CRN exactly when it is one of the id,
            // so the CRN need not be built.
            Pred::Str {
                f: StrFn::EndsWith,
                a: Operand::Field(Field::Crn),
                b: Operand::Lit(Lit::Str(suffix)),
            } if !suffix.contains(':') => Tri::of(n.physical_id().ends_with(suffix.as_str())),
            Pred::Str { f, a, b } => match (n.operand(a), n.operand(b)) {
                (V::Str(a), V::Str(b)) => Tri::of(match f {
                    StrFn::StartsWith => a.starts_with(b),
                    StrFn::EndsWith => a.ends_with(b),
                    StrFn::Contains => a.contains(b),
                }),
                _ => Tri::Error,
            },
            Pred::Not(a) => match a.eval(n) {
                Tri::True => Tri::False,
                Tri::False => Tri::True,
                t => t,
            },
            Pred::And(a, b) => {
                let x = a.eval(n);
                if x == Tri::False {
                    return Tri::False;
                }
                let y = b.eval(n);
                if y == Tri::False {
                    return Tri::False;
                }
                join(x, y)
            }
            Pred::Or(a, b) => {
                let x = a.eval(n);
                if x == Tri::True {
                    return Tri::True;
                }
                let y = b.eval(n);
                if y == Tri::True {
                    return Tri::True;
                }
                join(x, y)
            }
        }
    }
}

/// Neither side absorbed the other: a fallback wins (the interpreter
/// decides), then an error, else both agree.
fn join(x: Tri, y: Tri) -> Tri {
    match (x, y) {
        (Tri::Fallback, _) | (_, Tri::Fallback) => Tri::Fallback,
        (Tri::Error, _) | (_, Tri::Error) => Tri::Error,
        (x, _) => x,
    }
}

/// CEL equality: values of different types are unequal, except numbers,
/// which compare by value.
fn eq(a: V<'_>, b: V<'_>) -> Tri {
    use V::*;
    Tri::of(match (a, b) {
        (Err, _) | (_, Err) => return Tri::Error,
        (Other, Other) => return Tri::Fallback,
        (Null, Null) => true,
        (Bool(x), Bool(y)) => x == y,
        (Int(x), Int(y)) => x == y,
        (UInt(x), UInt(y)) => x == y,
        (Double(x), Double(y)) => x == y,
        (Str(x), Str(y)) => x == y,
        (Int(x), UInt(y)) | (UInt(y), Int(x)) => u64::try_from(x).is_ok_and(|x| x == y),
        (Int(x), Double(y)) | (Double(y), Int(x)) => (x as f64) == y,
        (UInt(x), Double(y)) | (Double(y), UInt(x)) => (x as f64) == y,
        _ => false,
    })
}

/// CEL ordering; `None` where CEL has no overload (an error).
fn cmp(a: V<'_>, b: V<'_>) -> Option<Ordering> {
    use V::*;
    match (a, b) {
        (Int(x), Int(y)) => Some(x.cmp(&y)),
        (UInt(x), UInt(y)) => Some(x.cmp(&y)),
        (Double(x), Double(y)) => x.partial_cmp(&y),
        (Str(x), Str(y)) => Some(x.cmp(y)),
        (Bool(x), Bool(y)) => Some(x.cmp(&y)),
        (Int(x), UInt(y)) => Some(u64::try_from(x).map_or(Ordering::Less, |x| x.cmp(&y))),
        (UInt(x), Int(y)) => Some(i64::try_from(x).map_or(Ordering::Greater, |x| x.cmp(&y))),
        (Int(x), Double(y)) => (x as f64).partial_cmp(&y),
        (UInt(x), Double(y)) => (x as f64).partial_cmp(&y),
        (Double(x), Int(y)) => x.partial_cmp(&(y as f64)),
        (Double(x), UInt(y)) => x.partial_cmp(&(y as f64)),
        _ => None,
    }
}
