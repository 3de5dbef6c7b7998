//! What upserting rows does: how one upsert changed its row ([`Upsert`])
//! and the counts of an ingest ([`IngestStats`]), returned by the shards
//! and summed over them by the graph.

/// How an upsert changed a row.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Upsert {
    Inserted,
    Changed,
    Unchanged,
    Revived,
}

/// Node counts of one ingest.
#[derive(Copy, Clone, Default, Debug, PartialEq, Eq)]
pub struct IngestStats {
    pub inserted: usize,
    pub changed: usize,
    pub unchanged: usize,
    pub revived: usize,
    /// Edges whose source or target is not in the graph.
    pub dangling: usize,
}

impl IngestStats {
    pub(super) fn add(&mut self, u: Upsert) {
        match u {
            Upsert::Inserted => self.inserted += 1,
            Upsert::Changed => self.changed += 1,
            Upsert::Unchanged => self.unchanged += 1,
            Upsert::Revived => self.revived += 1,
        }
    }
    pub(super) fn merge(a: IngestStats, b: IngestStats) -> IngestStats {
        IngestStats {
            inserted: a.inserted + b.inserted,
            changed: a.changed + b.changed,
            unchanged: a.unchanged + b.unchanged,
            revived: a.revived + b.revived,
            dangling: a.dangling + b.dangling,
        }
    }
    /// Rows seen, changed or not.
    pub fn total(&self) -> usize {
        self.inserted + self.changed + self.unchanged + self.revived
    }
}
