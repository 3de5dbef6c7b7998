//! Policy rules in `graph.redb`, table `policies`:
//!
//! - `rules`: every rule in priority order (id, condition, action,
//!   message, mode, origin, when added), rewritten whole by each change in
//!   one durable transaction, so the order and the rules never disagree.
//! - `last_evaluation`: what each rule did in the last scan (by rule id),
//!   so the mesh still shows it after a restart.
//!
//! Rules are stored as written and compiled again at start. Decoding never
//! panics: a malformed value is a `Corrupt` error naming the table.

use redb::{ReadableDatabase, TableDefinition, TableError};

use super::bytes::{DecodeError, Reader, Writer};
use super::graph_store::{GraphStore, StoreError};

const POLICIES: TableDefinition<&str, &[u8]> = TableDefinition::new("policies");
const RULES_KEY: &str = "rules";
const EVAL_KEY: &str = "last_evaluation";
const V1: u8 = 1;

/// A rule as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRule {
    pub id: String,
    pub condition: String,
    pub action: String,
    pub message: String,
    pub mode: String,
    /// `api` or `pack:<name>`.
    pub origin: String,
    pub created_us: u64,
}

/// What one rule did in the last scan, as stored.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct StoredEvaluation {
    pub id: String,
    pub scan_seq: u64,
    pub at_us: u64,
    pub matches: u64,
    pub errors: u64,
    pub mode: String,
    pub first_error: String,
}

fn encode_rules(rules: &[StoredRule]) -> Vec<u8> {
    let mut out = vec![V1];
    let mut w = Writer::new(&mut out);
    w.u32(rules.len() as u32);
    for r in rules {
        w.str(&r.id);
        w.str(&r.condition);
        w.str(&r.action);
        w.str(&r.message);
        w.str(&r.mode);
        w.str(&r.origin);
        w.u64(r.created_us);
    }
    out
}

fn decode_rules(b: &[u8]) -> Result<Vec<StoredRule>, DecodeError> {
    let mut r = Reader::new(b);
    if r.u8("policy rules version")? != V1 {
        return Err(DecodeError("policy rules version"));
    }
    let n = r.u32("policy rule count")? as usize;
    // Every rule takes at least 32 bytes: the count is bounded by what is left.
    let mut out = Vec::with_capacity(n.min(b.len() / 32));
    for _ in 0..n {
        out.push(StoredRule {
            id: r.string("policy rule id")?,
            condition: r.string("policy rule condition")?,
            action: r.string("policy rule action")?,
            message: r.string("policy rule message")?,
            mode: r.string("policy rule mode")?,
            origin: r.string("policy rule origin")?,
            created_us: r.u64("policy rule time")?,
        });
    }
    r.end("policy rules trailing bytes")?;
    Ok(out)
}

fn encode_evals(evals: &[StoredEvaluation]) -> Vec<u8> {
    let mut out = vec![V1];
    let mut w = Writer::new(&mut out);
    w.u32(evals.len() as u32);
    for e in evals {
        w.str(&e.id);
        w.u64(e.scan_seq);
        w.u64(e.at_us);
        w.u64(e.matches);
        w.u64(e.errors);
        w.str(&e.mode);
        w.str(&e.first_error);
    }
    out
}

fn decode_evals(b: &[u8]) -> Result<Vec<StoredEvaluation>, DecodeError> {
    let mut r = Reader::new(b);
    if r.u8("policy evaluation version")? != V1 {
        return Err(DecodeError("policy evaluation version"));
    }
    let n = r.u32("policy evaluation count")? as usize;
    let mut out = Vec::with_capacity(n.min(b.len() / 44));
    for _ in 0..n {
        out.push(StoredEvaluation {
            id: r.string("policy evaluation id")?,
            scan_seq: r.u64("policy evaluation scan")?,
            at_us: r.u64("policy evaluation time")?,
            matches: r.u64("policy evaluation matches")?,
            errors: r.u64("policy evaluation errors")?,
            mode: r.string("policy evaluation mode")?,
            first_error: r.string("policy evaluation error")?,
        });
    }
    r.end("policy evaluation trailing bytes")?;
    Ok(out)
}

impl GraphStore {
    fn policy_err(&self) -> impl Fn(redb::Error) -> StoreError + '_ {
        self.db_err()
    }

    fn policy_corrupt(&self, cause: DecodeError) -> StoreError {
        StoreError::Corrupt {
            path: self.path().to_owned(),
            what: "policies".to_owned(),
            cause,
        }
    }

    fn put_policy_value(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let err = self.policy_err();
        let txn = self.begin_write()?;
        {
            let mut t = txn.open_table(POLICIES).map_err(|e| err(e.into()))?;
            t.insert(key, value).map_err(|e| err(e.into()))?;
        }
        txn.commit()?;
        Ok(())
    }

    fn policy_value(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let err = self.policy_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let table = match txn.open_table(POLICIES) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(err(e.into())),
        };
        Ok(table.get(key).map_err(|e| err(e.into()))?.map(|v| v.value().to_vec()))
    }

    /// Replaces every stored rule, durably.
    pub fn put_policies(&self, rules: &[StoredRule]) -> Result<(), StoreError> {
        self.put_policy_value(RULES_KEY, &encode_rules(rules))
    }

    /// The stored rules in priority order (none before the first is added).
    pub fn load_policies(&self) -> Result<Vec<StoredRule>, StoreError> {
        match self.policy_value(RULES_KEY)? {
            None => Ok(Vec::new()),
            Some(b) => decode_rules(&b).map_err(|e| self.policy_corrupt(e)),
        }
    }

    /// Replaces the stored last evaluation.
    pub fn put_policy_evaluations(&self, evals: &[StoredEvaluation]) -> Result<(), StoreError> {
        self.put_policy_value(EVAL_KEY, &encode_evals(evals))
    }

    pub fn load_policy_evaluations(&self) -> Result<Vec<StoredEvaluation>, StoreError> {
        match self.policy_value(EVAL_KEY)? {
            None => Ok(Vec::new()),
            Some(b) => decode_evals(&b).map_err(|e| self.policy_corrupt(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_the_decoders(tail in proptest::collection::vec(any::<u8>(), 0..300)) {
            let b = [&[V1][..], &tail].concat();
            let _ = decode_rules(&b);
            let _ = decode_evals(&b);
            let _ = decode_rules(&tail);
        }
    }

    #[test]
    fn rules_round_trip_and_truncation_is_an_error() {
        let rules = vec![StoredRule {
            id: "r1".into(),
            condition: "kind == \"volume\"".into(),
            action: "flag".into(),
            message: "ünïcode".into(),
            mode: "shadow".into(),
            origin: "pack:cost-hygiene".into(),
            created_us: 42,
        }];
        let b = encode_rules(&rules);
        assert_eq!(decode_rules(&b).unwrap(), rules);
        for cut in 0..b.len() {
            assert!(decode_rules(&b[..cut]).is_err(), "cut {cut}");
        }
        let evals = vec![StoredEvaluation {
            id: "r1".into(),
            scan_seq: 3,
            at_us: 9,
            matches: 7,
            errors: 1,
            mode: "enforcing".into(),
            first_error: "No such key: x".into(),
        }];
        let b = encode_evals(&evals);
        assert_eq!(decode_evals(&b).unwrap(), evals);
        for cut in 0..b.len() {
            assert!(decode_evals(&b[..cut]).is_err(), "cut {cut}");
        }
    }
}
