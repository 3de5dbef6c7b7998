//! The cost of evaluating a condition on one node, bounded before it runs.
//!
//! A comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) runs
//! its body once per element, so its cost grows with the collection it
//! ranges over, and nested ones multiply. [`estimate`] walks the tree and
//! gives an upper bound in cost units (one unit is roughly one step of the
//! interpreter: a literal, a variable, a call, one iteration), from the
//! sizes the bindings can have ([`Sizes`]):
//!
//! - `tags` and `props` hold at most [`MAX_MAP_ENTRIES`] entries and a
//!   collection nested in `props` at most [`MAX_PROPERTY_ELEMENTS`]
//!   elements: a node's properties arrive as one JSON document of at most
//!   256 KiB (the ingest decoder refuses larger ones), and an entry takes at
//!   least 6 bytes of it (`"k":1,`), an array element 2 (`1,`). `out` and
//!   `incoming` have one entry per relation; the other bindings are
//!   scalars.
//! - a list or map literal has its literal size; an element of a collection
//!   is at most as large as the collection; `+` on lists adds the sizes;
//!   `map` builds one element per iteration.
//!
//! A rule is compiled only when the bound at the largest sizes is within
//! [`COST_BUDGET`]. Before the interpreter runs a rule with a comprehension
//! on a node, the bound is worked out again from that node's actual sizes
//! (how many tags and properties it has; its properties' encoded length): a
//! node larger than
//! the graph should hold gets an evaluation error instead of an unbounded
//! evaluation. String operations count one unit whatever the length: every
//! string a rule reads is bounded by the same 256 KiB.

use cel::common::ast::{EntryExpr, Expr, IdedExpr, operators as op};

use super::node::Row;

/// Most cost units one evaluation of a condition on one node may take.
pub const COST_BUDGET: u64 = 5_000_000;
/// Most entries of the `tags` and `props` maps.
pub const MAX_MAP_ENTRIES: u64 = 43_690;
/// Most elements of a collection nested in `props`.
pub const MAX_PROPERTY_ELEMENTS: u64 = 131_072;
/// Entries of `out` and `incoming`: one per relation.
const RELATIONS: u64 = 7;

/// How large the collections a rule reads can be.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub tags: u64,
    pub props: u64,
    /// Elements of a collection nested in `props`.
    pub nested: u64,
}

impl Sizes {
    /// The largest sizes the graph holds.
    pub const MAX: Sizes = Sizes {
        tags: MAX_MAP_ENTRIES,
        props: MAX_MAP_ENTRIES,
        nested: MAX_PROPERTY_ELEMENTS,
    };

    /// A node's actual sizes: its tag and property counts, and half its
    /// properties' encoded length (a bound on the elements of any JSON
    /// value among them).
    pub fn of(row: Row<'_>) -> Sizes {
        let blob = row.shard.props[row.r].get(&row.shard.arena);
        Sizes {
            tags: row.tags().count() as u64,
            props: row.props().offsets().count() as u64,
            nested: (blob.len() as u64).div_ceil(2),
        }
    }
}

/// An upper bound on the cost of evaluating `e` once, given `sizes`.
pub fn estimate(e: &IdedExpr, sizes: Sizes) -> u64 {
    let mut w = Estimator {
        sizes,
        scope: Vec::new(),
    };
    w.walk(e).cost
}

/// Whether `e` has a comprehension (its cost depends on the data).
pub fn has_comprehension(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Comprehension(_) => true,
        Expr::Select(s) => has_comprehension(&s.operand),
        Expr::List(l) => l.elements.iter().any(has_comprehension),
        Expr::Map(m) => m.entries.iter().any(|en| match &en.expr {
            EntryExpr::MapEntry(me) => has_comprehension(&me.key) || has_comprehension(&me.value),
            EntryExpr::StructField(f) => has_comprehension(&f.value),
        }),
        Expr::Struct(s) => s.entries.iter().any(|en| match &en.expr {
            EntryExpr::MapEntry(me) => has_comprehension(&me.key) || has_comprehension(&me.value),
            EntryExpr::StructField(f) => has_comprehension(&f.value),
        }),
        Expr::Call(c) => c.target.as_deref().is_some_and(has_comprehension) || c.args.iter().any(has_comprehension),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => false,
    }
}

/// The cost of an expression, the size of its value (elements of a list
/// or entries of a map; 0 for a scalar) and the largest size of a
/// collection nested in it, at any depth.
#[derive(Copy, Clone, Debug, Default)]
struct Est {
    cost: u64,
    size: u64,
    elem: u64,
}

struct Estimator<'a> {
    sizes: Sizes,
    /// Comprehension variables in scope, innermost last, with their size
    /// and their elements' size.
    scope: Vec<(&'a str, (u64, u64))>,
}

impl<'a> Estimator<'a> {
    /// A variable's size and its elements' size: `tags` and `out` hold
    /// strings and ints, `props` values can be collections.
    fn var(&self, name: &str) -> (u64, u64) {
        if let Some((_, s)) = self.scope.iter().rev().find(|(n, _)| *n == name) {
            return *s;
        }
        match name {
            "tags" => (self.sizes.tags, 0),
            "props" => (self.sizes.props, self.sizes.nested),
            "out" | "incoming" => (RELATIONS, 0),
            _ => (0, 0),
        }
    }

    fn walk(&mut self, e: &'a IdedExpr) -> Est {
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) => Est {
                cost: 1,
                ..Est::default()
            },
            Expr::Ident(name) => {
                let (size, elem) = self.var(name);
                Est { cost: 1, size, elem }
            }
            Expr::Select(s) => {
                // A field of a map is one of its elements; `has()` a bool.
                let o = self.walk(&s.operand);
                let elem = if s.test { 0 } else { o.elem };
                Est {
                    cost: o.cost.saturating_add(1),
                    size: elem,
                    elem,
                }
            }
            Expr::List(l) => l.elements.iter().fold(
                Est {
                    cost: 1,
                    ..Est::default()
                },
                |acc, x| {
                    let x = self.walk(x);
                    Est {
                        cost: acc.cost.saturating_add(x.cost),
                        size: acc.size.saturating_add(1),
                        elem: acc.elem.max(x.size).max(x.elem),
                    }
                },
            ),
            Expr::Map(m) => {
                let mut acc = Est {
                    cost: 1,
                    ..Est::default()
                };
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        let k = self.walk(&me.key);
                        let v = self.walk(&me.value);
                        acc.cost = acc.cost.saturating_add(k.cost).saturating_add(v.cost);
                        acc.size = acc.size.saturating_add(1);
                        acc.elem = acc.elem.max(k.size).max(v.size).max(v.elem);
                    }
                }
                acc
            }
            Expr::Struct(_) => Est {
                cost: 1,
                ..Est::default()
            },
            Expr::Call(c) => {
                let mut args: Vec<Est> = Vec::with_capacity(c.args.len() + 1);
                if let Some(t) = &c.target {
                    args.push(self.walk(t));
                }
                for a in &c.args {
                    args.push(self.walk(a));
                }
                let size = |i: usize| args.get(i).map_or(0, |a: &Est| a.size);
                let elem = |i: usize| args.get(i).map_or(0, |a: &Est| a.elem);
                let mut cost = args.iter().fold(1u64, |acc, a| acc.saturating_add(a.cost));
                let (mut out, mut out_elem) = (0, 0);
                match c.func_name.as_str() {
                    op::CONDITIONAL => {
                        // The condition, then one branch.
                        let then = args.get(1).copied().unwrap_or_default();
                        let other = args.get(2).copied().unwrap_or_default();
                        cost = 1u64
                            .saturating_add(args.first().map_or(0, |a| a.cost))
                            .saturating_add(then.cost.max(other.cost));
                        out = then.size.max(other.size);
                        out_elem = then.elem.max(other.elem);
                    }
                    op::ADD => {
                        // Concatenation copies both sides.
                        out = size(0).saturating_add(size(1));
                        out_elem = elem(0).max(elem(1));
                        cost = cost.saturating_add(out);
                    }
                    op::IN => cost = cost.saturating_add(size(1)),
                    // Collections of different sizes are unequal at once.
                    op::EQUALS | op::NOT_EQUALS => cost = cost.saturating_add(size(0).min(size(1))),
                    op::INDEX => (out, out_elem) = (elem(0), elem(0)),
                    "dyn" => (out, out_elem) = (size(0), elem(0)),
                    _ => {}
                }
                Est {
                    cost,
                    size: out,
                    elem: out_elem,
                }
            }
            Expr::Comprehension(c) => {
                let range = self.walk(&c.iter_range);
                let n = range.size;
                let init = self.walk(&c.accu_init);
                let depth = self.scope.len();
                // The second variable of a two-variable comprehension is a
                // value (or, over a list, the first an index).
                self.scope.push((c.iter_var.as_str(), (range.elem, range.elem)));
                if let Some(v2) = &c.iter_var2 {
                    self.scope.push((v2.as_str(), (range.elem, range.elem)));
                }
                // Within the loop the accumulator is built in place (values
                // are shared, not copied): adding to it costs what is added.
                self.scope.push((c.accu_var.as_str(), (0, 0)));
                let cond = self.walk(&c.loop_cond);
                let step = self.walk(&c.loop_step);
                self.scope.truncate(depth);
                let accu = init.size.saturating_add(n.saturating_mul(step.size));
                let accu_elem = init.elem.max(step.elem);
                self.scope.push((c.accu_var.as_str(), (accu, accu_elem)));
                let result = self.walk(&c.result);
                self.scope.truncate(depth);
                let per_iteration = cond.cost.saturating_add(step.cost).saturating_add(1);
                Est {
                    cost: range
                        .cost
                        .saturating_add(init.cost)
                        .saturating_add(n.saturating_mul(per_iteration))
                        .saturating_add(result.cost),
                    size: result.size,
                    elem: result.elem,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cel::Program;

    fn cost(src: &str, sizes: Sizes) -> u64 {
        estimate(Program::compile(src).unwrap().expression(), sizes)
    }

    #[test]
    fn scalar_conditions_cost_their_terms() {
        let c = cost("kind == 'volume' && cost > 1.0", Sizes::MAX);
        assert!((5..20).contains(&c), "{c}");
    }

    #[test]
    fn a_comprehension_costs_per_element_and_nesting_multiplies() {
        let small = Sizes {
            tags: 10,
            props: 10,
            nested: 10,
        };
        let one = cost("tags.exists(k, k == 'env')", small);
        let ten = cost("tags.exists(k, k == 'env')", Sizes { tags: 100, ..small });
        assert!(ten > 9 * one && ten < 11 * one, "{one} {ten}");
        let nested = cost("tags.all(k, tags.exists(j, j == k))", small);
        assert!(nested > 10 * one, "{one} {nested}");
        assert!(cost("tags.all(k, tags.exists(j, j == k))", Sizes::MAX) > COST_BUDGET);
        assert!(cost("tags.all(k, k != '')", Sizes::MAX) < COST_BUDGET);
    }

    #[test]
    fn literal_lists_have_their_size_and_map_builds_one_element_per_iteration() {
        let three = cost("[1, 2, 3].all(x, x > 0)", Sizes::MAX);
        let six = cost("[1, 2, 3, 4, 5, 6].all(x, x > 0)", Sizes::MAX);
        assert!(six > three && six < 3 * three, "{three} {six}");
        // The mapped list is ranged over again: its size carries.
        let twice = cost("[1, 2, 3].map(x, [x, x]).all(y, size(y) == 2)", Sizes::MAX);
        let once = cost("[1, 2, 3].map(x, [x, x])", Sizes::MAX);
        assert!(twice > once + 6, "{once} {twice}");
        // Concatenation adds the sizes.
        let cat = cost(
            "(props.a + props.b).exists(x, x == 1)",
            Sizes {
                tags: 0,
                props: 2,
                nested: 100,
            },
        );
        assert!(cat > 200, "{cat}");
    }
}
