//! The rule book: every rule in priority order, persisted in `graph.redb`
//! (table `policies`), with what the last evaluation found.
//!
//! A change (add, remove, toggle, reorder, a pack synchronised at scan
//! time) is checked whole first, so a bad request changes nothing; then it
//! is written durably, swapped in, and one `POLICY_CHANGE` event per rule
//! is appended to the ledger. Scans read an `Arc` of the rules, so a change
//! never waits for a scan and a scan sees one consistent book.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use thiserror::Error;
use tracing::warn;

use super::compile::{self, CompileError};
use super::{Action, MAX_MESSAGE_BYTES, MAX_RULES, Mode, Origin, Rule, RuleSpec, check_id};
use svc_graph::ids::NodeId;
use svc_store::ledger::events::PolicyChange;
use svc_store::ledger::{Ledger, LedgerError, NewEvent};
use svc_store::{GraphStore, StoreError, StoredEvaluation, StoredRule};

#[derive(Debug, Error)]
pub enum PolicyError {
    /// A rule of the request is not acceptable (422); `index` is its place
    /// in the request.
    #[error("rule {id:?}: {message}")]
    Invalid {
        index: Option<usize>,
        id: String,
        message: String,
        /// Where in the condition, for a compile error (1-based; 0 when none).
        line: u32,
        column: u32,
    },
    /// A rule with this id exists (409).
    #[error("a rule with id {0:?} already exists")]
    Duplicate(String),
    /// No rule with this id (404).
    #[error("no policy rule with id {0:?}")]
    NotFound(String),
    /// The rule belongs to an installed pack (409).
    #[error("rule {id:?} belongs to the policy pack {pack:?}; it changes with the pack")]
    FromPack { id: String, pack: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl PolicyError {
    fn invalid(index: Option<usize>, id: &str, message: impl Into<String>) -> PolicyError {
        PolicyError::Invalid {
            index,
            id: id.to_owned(),
            message: message.into(),
            line: 0,
            column: 0,
        }
    }
    fn compile(index: Option<usize>, id: &str, e: CompileError) -> PolicyError {
        PolicyError::Invalid {
            index,
            id: id.to_owned(),
            message: format!("invalid condition: {}", e.message),
            line: e.line,
            column: e.column,
        }
    }
}

/// What one rule did in the last scan that evaluated it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RuleState {
    pub scan_seq: u64,
    pub at_us: u64,
    pub matches: u64,
    pub errors: u64,
    /// The mode the rule was evaluated in.
    pub mode: String,
    /// The first evaluation error: node CRN and message.
    pub first_error: String,
    /// Up to ten matching CRNs (what a shadow rule would have acted on).
    pub samples: Vec<String>,
    /// Nodes the interpreter decided.
    pub interpreted: u64,
}

/// The last evaluation of every rule, by id.
#[derive(Clone, Debug, Default)]
pub struct LastEvaluation {
    pub by_rule: HashMap<String, RuleState>,
    pub duration_us: u64,
    pub nodes: u64,
}

/// What the last policy phase decided for remediation.
#[derive(Clone, Debug, Default)]
pub struct PolicyOutcome {
    pub scan_seq: u64,
    /// Nodes an enforcing `block` rule matched, with the ids of those
    /// rules in priority order.
    pub blocked: HashMap<NodeId, Vec<Arc<str>>>,
    /// Nodes an enforcing `flag` rule marked as waste, with the deciding rule.
    pub flagged: HashMap<NodeId, Arc<str>>,
}

pub struct Book {
    rules: RwLock<Arc<Vec<Rule>>>,
    /// Serialises changes.
    write: Mutex<()>,
    last: RwLock<Arc<LastEvaluation>>,
    outcome: RwLock<Arc<PolicyOutcome>>,
    /// The evaluations in the store, sorted by rule id: a scan that would
    /// write the same (no rule installed) writes nothing.
    written: Mutex<Vec<StoredEvaluation>>,
}

fn stored(r: &Rule) -> StoredRule {
    StoredRule {
        id: r.spec.id.clone(),
        condition: r.spec.condition.clone(),
        action: r.spec.action.name().to_owned(),
        message: r.spec.message.clone(),
        mode: r.spec.mode.name().to_owned(),
        origin: r.origin.label(),
        created_us: r.created_us,
    }
}

fn from_stored(s: &StoredRule) -> Result<Rule, String> {
    let action = Action::parse(&s.action).ok_or_else(|| format!("unknown action {:?}", s.action))?;
    let mode = Mode::parse(&s.mode).ok_or_else(|| format!("unknown mode {:?}", s.mode))?;
    let origin = match s.origin.strip_prefix("pack:") {
        Some(p) => Origin::Pack(p.to_owned()),
        None => Origin::Api,
    };
    let compiled = compile::compile(&s.condition).map_err(|e| e.to_string())?;
    Ok(Rule {
        spec: RuleSpec {
            id: s.id.clone(),
            condition: s.condition.clone(),
            action,
            message: s.message.clone(),
            mode,
        },
        origin,
        created_us: s.created_us,
        compiled: Arc::new(compiled),
    })
}

/// Checks one rule of a request and compiles it.
pub fn check_spec(index: Option<usize>, spec: &RuleSpec, origin: &Origin, now_us: u64) -> Result<Rule, PolicyError> {
    check_id(&spec.id, matches!(origin, Origin::Pack(_))).map_err(|m| PolicyError::invalid(index, &spec.id, m))?;
    if spec.message.len() > MAX_MESSAGE_BYTES {
        return Err(PolicyError::invalid(
            index,
            &spec.id,
            format!(
                "message is {} bytes long; at most {MAX_MESSAGE_BYTES}",
                spec.message.len()
            ),
        ));
    }
    let compiled = compile::compile(&spec.condition).map_err(|e| PolicyError::compile(index, &spec.id, e))?;
    Ok(Rule {
        spec: spec.clone(),
        origin: origin.clone(),
        created_us: now_us,
        compiled: Arc::new(compiled),
    })
}

fn change_event(rule: &Rule, action: &str, author: &str) -> NewEvent {
    NewEvent::of(
        None,
        author,
        format!(
            "policy rule {} {} ({}, {})",
            rule.spec.id,
            action.to_ascii_lowercase(),
            rule.spec.action.name(),
            rule.spec.mode.name()
        ),
        &PolicyChange {
            rule_id: rule.spec.id.clone(),
            action: action.to_owned(),
            enforcement_mode: rule.spec.mode.name().to_owned(),
            author: author.to_owned(),
            rule_action: Some(rule.spec.action.name().to_owned()),
            condition: Some(rule.spec.condition.clone()),
            origin: Some(rule.origin.label().to_owned()),
            order: None,
        },
    )
}

/// A policy pack as read from `$SVC_DATA_DIR/policies/`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pack {
    pub name: String,
    pub version: String,
    pub rules: Vec<RuleSpec>,
}

/// Where installed packs come from (the daemon reads the policies
/// directory; tests give them in memory). Problems with a pack are the
/// implementer's to log; it returns the packs it could read.
pub trait PackSource: Send + Sync {
    fn packs(&self) -> Vec<Pack>;
}

impl Book {
    /// Loads the stored rules, compiling each again. A stored rule that no
    /// longer compiles is kept out with a warning, never dropped from the store.
    pub fn open(store: &GraphStore) -> Result<Book, StoreError> {
        let mut rules = Vec::new();
        for s in store.load_policies()? {
            match from_stored(&s) {
                Ok(r) => rules.push(r),
                Err(e) => warn!(rule = %s.id, error = %e, "stored policy rule not loaded"),
            }
        }
        let mut last = LastEvaluation::default();
        let mut written = store.load_policy_evaluations()?;
        written.sort_by(|a, b| a.id.cmp(&b.id));
        for e in written.iter().cloned() {
            last.by_rule.insert(
                e.id.clone(),
                RuleState {
                    scan_seq: e.scan_seq,
                    at_us: e.at_us,
                    matches: e.matches,
                    errors: e.errors,
                    mode: e.mode,
                    first_error: e.first_error,
                    samples: Vec::new(),
                    interpreted: 0,
                },
            );
        }
        Ok(Book {
            rules: RwLock::new(Arc::new(rules)),
            write: Mutex::new(()),
            last: RwLock::new(Arc::new(last)),
            outcome: RwLock::new(Arc::new(PolicyOutcome::default())),
            written: Mutex::new(written),
        })
    }

    /// Every rule, in priority order.
    pub fn rules(&self) -> Arc<Vec<Rule>> {
        self.rules.read().clone()
    }

    pub fn get(&self, id: &str) -> Option<Rule> {
        self.rules.read().iter().find(|r| r.spec.id == id).cloned()
    }

    pub fn last_evaluation(&self) -> Arc<LastEvaluation> {
        self.last.read().clone()
    }

    pub fn outcome(&self) -> Arc<PolicyOutcome> {
        self.outcome.read().clone()
    }

    pub fn set_outcome(&self, o: PolicyOutcome) {
        *self.outcome.write() = Arc::new(o);
    }

    /// Records a scan's evaluation, in memory and in the store.
    pub fn set_last(&self, last: LastEvaluation, store: &GraphStore) {
        let mut stored: Vec<StoredEvaluation> = last
            .by_rule
            .iter()
            .map(|(id, s)| StoredEvaluation {
                id: id.clone(),
                scan_seq: s.scan_seq,
                at_us: s.at_us,
                matches: s.matches,
                errors: s.errors,
                mode: s.mode.clone(),
                first_error: s.first_error.clone(),
            })
            .collect();
        stored.sort_by(|a, b| a.id.cmp(&b.id));
        let mut written = self.written.lock();
        if *written != stored {
            match store.put_policy_evaluations(&stored) {
                Ok(()) => *written = stored,
                Err(e) => warn!(error = %e, "cannot store the policy evaluation; the mesh shows it until a restart"),
            }
        }
        drop(written);
        *self.last.write() = Arc::new(last);
    }

    /// Writes `next`, swaps it in, then appends `events`.
    fn commit(
        &self,
        next: Vec<Rule>,
        events: Vec<NewEvent>,
        store: &GraphStore,
        ledger: &Ledger,
    ) -> Result<(), PolicyError> {
        store.put_policies(&next.iter().map(stored).collect::<Vec<_>>())?;
        *self.rules.write() = Arc::new(next);
        ledger.append(events)?;
        Ok(())
    }

    /// Adds rules (all or none), after the existing ones.
    pub fn add(
        &self,
        specs: &[RuleSpec],
        author: &str,
        now_us: u64,
        store: &GraphStore,
        ledger: &Ledger,
    ) -> Result<Vec<Rule>, PolicyError> {
        let _w = self.write.lock();
        let current = self.rules();
        let mut seen: HashSet<&str> = current.iter().map(|r| r.spec.id.as_str()).collect();
        let mut added = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            let rule = check_spec(Some(i), spec, &Origin::Api, now_us)?;
            if !seen.insert(&spec.id) {
                return Err(PolicyError::Duplicate(spec.id.clone()));
            }
            added.push(rule);
        }
        if current.len() + added.len() > MAX_RULES {
            return Err(PolicyError::invalid(
                None,
                "",
                format!(
                    "the book would hold {} rules; at most {MAX_RULES}",
                    current.len() + added.len()
                ),
            ));
        }
        let mut next = (*current).clone();
        next.extend(added.iter().cloned());
        let events = added.iter().map(|r| change_event(r, "ADDED", author)).collect();
        self.commit(next, events, store, ledger)?;
        Ok(added)
    }

    /// Removes an API rule.
    pub fn remove(&self, id: &str, author: &str, store: &GraphStore, ledger: &Ledger) -> Result<Rule, PolicyError> {
        let _w = self.write.lock();
        let current = self.rules();
        let Some(pos) = current.iter().position(|r| r.spec.id == id) else {
            return Err(PolicyError::NotFound(id.to_owned()));
        };
        if let Origin::Pack(pack) = &current[pos].origin {
            return Err(PolicyError::FromPack {
                id: id.to_owned(),
                pack: pack.clone(),
            });
        }
        let mut next = (*current).clone();
        let rule = next.remove(pos);
        self.commit(next, vec![change_event(&rule, "REMOVED", author)], store, ledger)?;
        Ok(rule)
    }

    /// Switches a rule between enforcing and shadow (pack rules too: a
    /// pack's update keeps the mode an operator chose).
    pub fn toggle(&self, id: &str, author: &str, store: &GraphStore, ledger: &Ledger) -> Result<Rule, PolicyError> {
        let _w = self.write.lock();
        let current = self.rules();
        let Some(pos) = current.iter().position(|r| r.spec.id == id) else {
            return Err(PolicyError::NotFound(id.to_owned()));
        };
        let mut next = (*current).clone();
        next[pos].spec.mode = next[pos].spec.mode.toggled();
        let rule = next[pos].clone();
        self.commit(next, vec![change_event(&rule, "TOGGLED", author)], store, ledger)?;
        Ok(rule)
    }

    /// Puts the rules named in `ids` first, in that order; the others keep
    /// their relative order after them.
    pub fn reorder(
        &self,
        ids: &[String],
        author: &str,
        store: &GraphStore,
        ledger: &Ledger,
    ) -> Result<Vec<Rule>, PolicyError> {
        let _w = self.write.lock();
        let current = self.rules();
        if ids.is_empty() {
            return Err(PolicyError::invalid(None, "", "order is empty"));
        }
        let mut seen = HashSet::new();
        for id in ids {
            if !seen.insert(id.as_str()) {
                return Err(PolicyError::invalid(None, id, "named twice in the order"));
            }
            if !current.iter().any(|r| &r.spec.id == id) {
                return Err(PolicyError::NotFound(id.clone()));
            }
        }
        let mut next: Vec<Rule> = ids
            .iter()
            .filter_map(|id| current.iter().find(|r| &r.spec.id == id).cloned())
            .collect();
        next.extend(current.iter().filter(|r| !seen.contains(r.spec.id.as_str())).cloned());
        let order: Vec<&str> = next.iter().map(|r| r.spec.id.as_str()).collect();
        let event = NewEvent::of(
            None,
            author,
            format!("policy rules reordered: {}", order.join(", ")),
            &PolicyChange {
                rule_id: ids.first().cloned().unwrap_or_default(),
                action: "REORDERED".to_owned(),
                enforcement_mode: next
                    .first()
                    .map(|r| r.spec.mode.name())
                    .unwrap_or("enforcing")
                    .to_owned(),
                author: author.to_owned(),
                rule_action: None,
                condition: None,
                origin: None,
                order: Some(order.iter().map(|s| (*s).to_owned()).collect()),
            },
        );
        self.commit(next.clone(), vec![event], store, ledger)?;
        Ok(next)
    }

    /// Brings the pack rules in line with the installed packs: new rules
    /// are added (enforcing unless the pack says shadow), changed ones
    /// replaced in place keeping the operator's mode, rules of packs no
    /// longer installed removed. A rule that does not compile is skipped
    /// with a warning. Returns how many rules changed.
    pub fn sync_packs(
        &self,
        packs: &[Pack],
        now_us: u64,
        store: &GraphStore,
        ledger: &Ledger,
    ) -> Result<usize, PolicyError> {
        let _w = self.write.lock();
        let current = self.rules();
        let mut wanted: Vec<Rule> = Vec::new();
        for p in packs {
            let origin = Origin::Pack(p.name.clone());
            for spec in &p.rules {
                let mut spec = spec.clone();
                spec.id = format!("{}/{}", p.name, spec.id);
                match check_spec(None, &spec, &origin, now_us) {
                    Ok(r) if !wanted.iter().any(|w| w.spec.id == r.spec.id) => wanted.push(r),
                    Ok(r) => warn!(rule = %r.spec.id, "policy pack names a rule twice; the first is kept"),
                    Err(e) => warn!(pack = %p.name, error = %e, "policy pack rule skipped"),
                }
            }
        }
        let mut next: Vec<Rule> = Vec::with_capacity(current.len() + wanted.len());
        let mut events = Vec::new();
        let author = |r: &Rule| r.origin.label();
        for r in current.iter() {
            match &r.origin {
                Origin::Api => next.push(r.clone()),
                Origin::Pack(_) => match wanted.iter().find(|w| w.spec.id == r.spec.id) {
                    Some(w)
                        if w.spec.condition == r.spec.condition
                            && w.spec.action == r.spec.action
                            && w.spec.message == r.spec.message
                            && w.origin == r.origin =>
                    {
                        next.push(r.clone())
                    }
                    Some(w) => {
                        let mut w = w.clone();
                        w.spec.mode = r.spec.mode;
                        w.created_us = r.created_us;
                        events.push(change_event(&w, "UPDATED", &author(&w)));
                        next.push(w);
                    }
                    None => events.push(change_event(r, "REMOVED", &author(r))),
                },
            }
        }
        for w in wanted {
            if !current.iter().any(|r| r.spec.id == w.spec.id) {
                if current.iter().any(|r| r.spec.id == w.spec.id) || next.len() >= MAX_RULES {
                    warn!(rule = %w.spec.id, "policy pack rule not added: the book is full");
                    continue;
                }
                events.push(change_event(&w, "ADDED", &author(&w)));
                next.push(w);
            }
        }
        if events.is_empty() {
            return Ok(0);
        }
        let n = events.len();
        self.commit(next, events, store, ledger)?;
        Ok(n)
    }
}
