//! Compiling a condition, once, when a rule is added.
//!
//! Bounds come first, on the text, because the CEL parser recurses (a few
//! dozen nested parentheses exhaust an 8 MiB stack in a debug build):
//! at most [`MAX_CONDITION_BYTES`] bytes, [`MAX_NESTING`] levels of
//! brackets and [`MAX_OPERATORS`] operator characters. The parse then runs
//! on its own thread with a large stack. The tree is checked next: at most
//! [`MAX_AST_NODES`] nodes and [`MAX_AST_DEPTH`] levels, only the bindings
//! of [`super::BINDINGS`] (and the variables of the comprehensions around
//! a term) as variables and only standard functions. Last, the cost of one
//! evaluation is bounded from the largest sizes the bindings can have
//! ([`super::cost`]): a comprehension (`all`, `exists`, `exists_one`,
//! `map`, `filter`) costs per element, so a rule whose bound exceeds
//! [`cost::COST_BUDGET`] is refused. What passes costs a bounded amount
//! per node.

use std::fmt;

use cel::Program;
use cel::common::ast::{EntryExpr, Expr, IdedExpr};

use super::BINDINGS;
use super::cost;
use super::fast::{self, Pred};

pub const MAX_CONDITION_BYTES: usize = 4096;
pub const MAX_NESTING: usize = 16;
pub const MAX_OPERATORS: usize = 256;
pub const MAX_AST_NODES: usize = 1024;
pub const MAX_AST_DEPTH: usize = 48;
/// Stack of the thread that parses (reserved, touched only as used).
const PARSE_STACK_BYTES: usize = 256 << 20;

/// Standard functions a condition may call (CEL's standard library), besides
/// the operators and the macros.
const FUNCTIONS: [&str; 25] = [
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "type",
    "dyn",
    "timestamp",
    "duration",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
];

/// Type names usable as values (`type(x) == string`).
const TYPE_NAMES: [&str; 10] = [
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// Why a condition does not compile, with where (1-based line and column;
/// 0 when the whole condition is at fault).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    pub message: String,
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{} at line {}, column {}", self.message, self.line, self.column)
        }
    }
}

impl std::error::Error for CompileError {}

fn whole(message: impl Into<String>) -> CompileError {
    CompileError {
        message: message.into(),
        line: 0,
        column: 0,
    }
}

/// A compiled condition: the CEL program, and the column predicate when
/// the condition has a shape the fast path covers.
pub struct Compiled {
    /// The condition as written.
    pub source: String,
    pub program: Program,
    pub fast: Option<Pred>,
    pub guard: fast::Guard,
    /// The bound on one evaluation's cost at the largest sizes the
    /// bindings can have (at most [`cost::COST_BUDGET`]).
    pub cost: u64,
    /// Whether the cost depends on the node (the condition has a
    /// comprehension): the bound is then checked again on each node.
    pub data_dependent: bool,
    /// Whether the condition reads a binding of the node (anything but
    /// `now`): when it does not, it has one value for the whole pass.
    pub reads_node: bool,
}

impl fmt::Debug for Compiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiled")
            .field("fast", &self.fast)
            .field("guard", &self.guard)
            .field("cost", &self.cost)
            .finish()
    }
}

impl Compiled {
    /// Whether the condition runs as a column predicate.
    pub fn is_fast(&self) -> bool {
        self.fast.is_some()
    }
}

/// Compiles `source`, or says what is wrong and where.
pub fn compile(source: &str) -> Result<Compiled, CompileError> {
    if source.trim().is_empty() {
        return Err(whole("condition is empty"));
    }
    if source.len() > MAX_CONDITION_BYTES {
        return Err(whole(format!(
            "condition is {} bytes long; at most {MAX_CONDITION_BYTES}",
            source.len()
        )));
    }
    check_text(source)?;
    let owned = source.to_owned();
    let parsed = std::thread::Builder::new()
        .name("svc-cel-parse".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(move || parse_and_check(&owned))
        .map_err(|e| whole(format!("cannot start the parser: {e}")))?
        .join()
        .map_err(|_| whole("the condition could not be parsed"))?;
    let program = parsed?;
    let worst = cost::estimate(program.expression(), cost::Sizes::MAX);
    if worst > cost::COST_BUDGET {
        return Err(whole(format!(
            "condition may cost up to {worst} per resource, over the budget of {}; \
             nested comprehensions over tags or props multiply their sizes",
            cost::COST_BUDGET
        )));
    }
    let data_dependent = cost::has_comprehension(program.expression());
    let reads_node = program
        .references()
        .variables()
        .iter()
        .any(|v| *v != "now" && BINDINGS.iter().any(|(b, _)| b == v));
    let (fast, guard) = match fast::compile(program.expression()) {
        Some(p) => {
            let g = fast::guard(&p);
            (Some(p), g)
        }
        None => (None, fast::guard_of_expr(program.expression())),
    };
    Ok(Compiled {
        source: source.to_owned(),
        program,
        fast,
        guard,
        cost: worst,
        data_dependent,
        reads_node,
    })
}

/// Bounds on the raw text: bracket nesting and operator count, outside
/// string literals.
fn check_text(source: &str) -> Result<(), CompileError> {
    let (mut depth, mut max_depth, mut ops) = (0usize, 0usize, 0usize);
    let (mut line, mut col) = (1u32, 0u32);
    let mut chars = source.chars().peekable();
    let mut quote: Option<(char, bool)> = None; // (quote char, triple)
    let mut pending_quotes: Vec<char> = Vec::new();
    while let Some(c) = chars.next() {
        col += 1;
        if c == '\n' {
            line += 1;
            col = 0;
        }
        if let Some((q, triple)) = quote {
            if c == '\\' {
                chars.next();
                col += 1;
                continue;
            }
            if c == q {
                if !triple {
                    quote = None;
                } else {
                    pending_quotes.push(c);
                    if pending_quotes.len() == 3 {
                        quote = None;
                        pending_quotes.clear();
                    }
                    continue;
                }
            }
            pending_quotes.clear();
            continue;
        }
        match c {
            '"' | '\'' => {
                let triple = {
                    let mut look = chars.clone();
                    look.next() == Some(c) && look.next() == Some(c)
                };
                if triple {
                    chars.next();
                    chars.next();
                    col += 2;
                }
                quote = Some((c, triple));
            }
            '(' | '[' | '{' => {
                depth += 1;
                max_depth = max_depth.max(depth);
                if max_depth > MAX_NESTING {
                    return Err(CompileError {
                        message: format!("condition nests brackets deeper than {MAX_NESTING} levels"),
                        line,
                        column: col,
                    });
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '&' | '|' | '!' | '-' | '+' | '*' | '/' | '%' | '<' | '>' | '=' | '?' | '.' => {
                ops += 1;
                if ops > MAX_OPERATORS {
                    return Err(CompileError {
                        message: format!("condition has more than {MAX_OPERATORS} operators"),
                        line,
                        column: col,
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn parse_and_check(source: &str) -> Result<Program, CompileError> {
    let program = Program::compile(source).map_err(|errors| match errors.errors.first() {
        Some(e) => CompileError {
            message: e.msg.clone(),
            line: u32::try_from(e.pos.0).unwrap_or(0),
            column: u32::try_from(e.pos.1).unwrap_or(0),
        },
        None => whole("the condition could not be parsed"),
    })?;
    let mut walk = Walk {
        program: &program,
        nodes: 0,
        source,
        scope: Vec::new(),
    };
    walk.check(program.expression(), 1)?;
    Ok(program)
}

struct Walk<'a> {
    program: &'a Program,
    nodes: usize,
    source: &'a str,
    /// Variables of the comprehensions around the term being checked.
    scope: Vec<String>,
}

impl Walk<'_> {
    fn at(&self, e: &IdedExpr, message: String) -> CompileError {
        let (line, column) = self
            .program
            .source_info()
            .offset_for(e.id)
            .map(|(start, _)| position(self.source, start as usize))
            .unwrap_or((0, 0));
        CompileError { message, line, column }
    }

    fn check(&mut self, e: &IdedExpr, depth: usize) -> Result<(), CompileError> {
        self.nodes += 1;
        if self.nodes > MAX_AST_NODES {
            return Err(whole(format!("condition has more than {MAX_AST_NODES} terms")));
        }
        if depth > MAX_AST_DEPTH {
            return Err(self.at(e, format!("condition nests deeper than {MAX_AST_DEPTH} levels")));
        }
        match &e.expr {
            Expr::Unspecified => Err(self.at(e, "incomplete expression".to_owned())),
            Expr::Comprehension(c) => {
                self.check(&c.iter_range, depth + 1)?;
                self.check(&c.accu_init, depth + 1)?;
                let outer = self.scope.len();
                self.scope.push(c.iter_var.clone());
                if let Some(v2) = &c.iter_var2 {
                    self.scope.push(v2.clone());
                }
                self.scope.push(c.accu_var.clone());
                let inner = self
                    .check(&c.loop_cond, depth + 1)
                    .and_then(|()| self.check(&c.loop_step, depth + 1))
                    .and_then(|()| self.check(&c.result, depth + 1));
                self.scope.truncate(outer);
                inner
            }
            Expr::Struct(_) => Err(self.at(e, "message construction is not supported".to_owned())),
            Expr::Ident(name) => {
                if self.scope.iter().any(|v| v == name)
                    || BINDINGS.iter().any(|(b, _)| b == name)
                    || TYPE_NAMES.contains(&name.as_str())
                {
                    Ok(())
                } else {
                    Err(self.at(e, format!("undeclared reference to '{name}'")))
                }
            }
            Expr::Literal(_) => Ok(()),
            Expr::Select(s) => self.check(&s.operand, depth + 1),
            Expr::List(l) => {
                for x in &l.elements {
                    self.check(x, depth + 1)?;
                }
                Ok(())
            }
            Expr::Map(m) => {
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        self.check(&me.key, depth + 1)?;
                        self.check(&me.value, depth + 1)?;
                    }
                }
                Ok(())
            }
            Expr::Call(c) => {
                let name = c.func_name.as_str();
                let operator = name.starts_with('_') || name.starts_with('@') || name == "!_" || name == "-_";
                if !operator && !FUNCTIONS.contains(&name) {
                    return Err(self.at(e, format!("unknown function '{name}'")));
                }
                if let Some(t) = &c.target {
                    self.check(t, depth + 1)?;
                }
                for a in &c.args {
                    self.check(a, depth + 1)?;
                }
                Ok(())
            }
        }
    }
}

/// 1-based line and column of a character offset.
fn position(source: &str, offset: usize) -> (u32, u32) {
    let (mut line, mut col) = (1u32, 1u32);
    for c in source.chars().take(offset) {
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> CompileError {
        match compile(src) {
            Ok(_) => panic!("{src:?} compiled"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_syntax_error_has_its_position() {
        let e = err("kind == ");
        assert_eq!((e.line, e.column), (1, 9), "{e}");
        let e = err("kind == \"volume\" &&\n  cost >");
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn bounds_are_enforced_before_parsing() {
        assert!(err("").message.contains("empty"));
        assert!(err("   ").message.contains("empty"));
        let long = format!("kind == \"{}\"", "x".repeat(MAX_CONDITION_BYTES));
        assert!(err(&long).message.contains("bytes long"));
        let deep = format!("{}true{}", "(".repeat(200), ")".repeat(200));
        assert!(err(&deep).message.contains("nests brackets"));
        let many = vec!["cost > 1.0"; 200].join(" && ");
        assert!(err(&many).message.contains("operators"));
        // Brackets inside strings do not count.
        assert!(compile(&format!("kind == \"{}\"", "(".repeat(100))).is_ok());
        assert!(compile(&format!("kind == '''{}'''", "((\"".repeat(30))).is_ok());
        // The deepest allowed nesting still parses.
        let ok = format!("{}true{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert!(compile(&ok).is_ok());
        let chain = format!("{}true", "!".repeat(100));
        assert!(compile(&chain).is_ok());
    }

    #[test]
    fn costly_comprehensions_unknown_names_and_functions_are_refused() {
        let e = err("tags.all(k, tags.exists(j, props.exists(p, p == j + k)))");
        assert!(e.message.contains("over the budget of 5000000"), "{e}");
        assert!(e.message.contains("may cost up to"), "{e}");
        let c = compile("[1, 2].all(x, x > 0) && tags.exists(k, k == 'env')").unwrap();
        assert!(c.data_dependent && c.reads_node && !c.is_fast());
        assert!(c.cost > 43_690 && c.cost <= cost::COST_BUDGET, "{}", c.cost);
        // A comprehension's variable is known only inside it.
        let e = err("[1].exists(x, x > 0) && x > 0");
        assert!(e.message.contains("undeclared reference to 'x'"), "{e}");
        let c = compile("now - created > duration('720h')").unwrap();
        assert!(c.reads_node && !c.data_dependent);
        assert!(!compile("now > timestamp('2020-01-01T00:00:00Z')").unwrap().reads_node);
        let e = err("kind == \"volume\" && foo > 1");
        assert!(e.message.contains("undeclared reference to 'foo'"), "{e}");
        assert_eq!((e.line, e.column), (1, 21));
        assert!(err("frobnicate(kind)").message.contains("unknown function"));
        assert!(compile("size(kind) > 3 && kind.matches('^vol') && type(cost) == double").is_ok());
    }

    #[test]
    fn common_shapes_take_the_fast_path() {
        for src in [
            "kind == \"volume\" && props.state == \"available\" && out[\"AttachedTo\"] == 0",
            "cost > 100.0 || !is_waste",
            "region in [\"us-east-1\", \"eu-west-1\"] && has(tags.owner)",
            "provider == 'aws' && tags['env'].startsWith('prod')",
            "age_days >= 90 && state != 'running' && risk_score < 50.0",
            "crn.contains(':volume:') && reachability == 'unreachable'",
            "incoming.Runs > 0 && !(props.size_gb <= 100)",
        ] {
            assert!(compile(src).unwrap().is_fast(), "{src}");
        }
        for src in ["size(tags) == 0", "cost * 2.0 > 10.0", "(kind == 'volume') == true"] {
            assert!(!compile(src).unwrap().is_fast(), "{src}");
        }
        // A condition the interpreter runs is still guarded by its kind.
        let c = compile("cost * 12.0 > 1000.0 && kind == 'instance'").unwrap();
        assert!(!c.is_fast());
        assert_eq!(c.guard, fast::Guard::Kinds(vec!["instance".into()]));
    }
}
