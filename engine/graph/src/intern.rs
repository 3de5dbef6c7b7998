//! The engine-owned string interner.
//!
//! Keys and low-cardinality values (types, providers, regions, states,
//! property and tag keys) are interned once; a [`Sym`] is four bytes. The table
//! only grows, and it is persisted in `graph.redb` in index order so symbols
//! keep their values across restarts.

use std::sync::Arc;

use hashbrown::HashMap;
use parking_lot::{RwLock, RwLockReadGuard};
use rustc_hash::FxBuildHasher;

use crate::ids::Sym;

/// Symbols every interner holds at fixed positions, in this order.
const WELL_KNOWN: &[&str] = &[
    "",
    "aws",
    "gcp",
    "azure",
    "kubernetes",
    "global",
    "unknown",
    "running",
    "stopped",
    "available",
    "in-use",
    "deleted",
];

/// Predeclared symbols (see `WELL_KNOWN`).
pub mod well_known {
    use super::Sym;
    macro_rules! syms {
        ($($name:ident = $idx:expr),* $(,)?) => {
            $(pub const $name: Sym = match Sym::from_raw_const($idx + 1) { Some(s) => s, None => unreachable!() };)*
        };
    }
    syms!(
        EMPTY = 0,
        AWS = 1,
        GCP = 2,
        AZURE = 3,
        KUBERNETES = 4,
        GLOBAL = 5,
        UNKNOWN = 6,
        RUNNING = 7,
        STOPPED = 8,
        AVAILABLE = 9,
        IN_USE = 10,
        DELETED = 11
    );
}

impl Sym {
    pub const fn from_raw_const(raw: u32) -> Option<Sym> {
        match std::num::NonZeroU32::new(raw) {
            Some(n) => Some(Sym::from_nonzero(n)),
            None => None,
        }
    }
}

struct Table {
    map: HashMap<Arc<str>, Sym, FxBuildHasher>,
    strings: Vec<Arc<str>>,
}

/// A thread-safe interner: lookups of known strings take a shared lock only.
pub struct Interner {
    table: RwLock<Table>,
}

impl Default for Interner {
    fn default() -> Self {
        Interner::new()
    }
}

impl Interner {
    pub fn new() -> Interner {
        let interner = Interner {
            table: RwLock::new(Table {
                map: HashMap::default(),
                strings: Vec::new(),
            }),
        };
        for s in WELL_KNOWN {
            interner.intern(s);
        }
        interner
    }

    /// Rebuilds an interner from a persisted table (index order). The
    /// well-known prefix must match, which it does for any table this type wrote.
    pub fn from_strings<I, S>(strings: I) -> Result<Interner, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let interner = Interner {
            table: RwLock::new(Table {
                map: HashMap::default(),
                strings: Vec::new(),
            }),
        };
        for (i, s) in strings.into_iter().enumerate() {
            let sym = interner.intern(s.as_ref());
            if sym.index() != i {
                return Err(format!("symbol table entry {i} ({:?}) is a duplicate", s.as_ref()));
            }
        }
        for (i, s) in WELL_KNOWN.iter().enumerate() {
            let sym = interner.intern(s);
            if sym.index() != i {
                return Err(format!(
                    "symbol table does not start with the well-known symbols (entry {i})"
                ));
            }
        }
        Ok(interner)
    }

    /// The symbol for `s`, adding it if new.
    pub fn intern(&self, s: &str) -> Sym {
        if let Some(sym) = self.table.read().map.get(s) {
            return *sym;
        }
        let mut table = self.table.write();
        if let Some(sym) = table.map.get(s) {
            return *sym;
        }
        let sym = Sym::from_index(table.strings.len());
        let arc: Arc<str> = Arc::from(s);
        table.strings.push(arc.clone());
        table.map.insert(arc, sym);
        sym
    }

    /// The symbol for `s` if it was ever interned.
    pub fn get(&self, s: &str) -> Option<Sym> {
        self.table.read().map.get(s).copied()
    }

    /// The string of `sym`; empty for a symbol this interner never issued.
    pub fn resolve(&self, sym: Sym) -> Arc<str> {
        self.table
            .read()
            .strings
            .get(sym.index())
            .cloned()
            .unwrap_or_else(|| Arc::from(""))
    }

    /// A read view that resolves many symbols under one lock acquisition.
    pub fn reader(&self) -> InternerReader<'_> {
        InternerReader {
            table: self.table.read(),
        }
    }

    pub fn len(&self) -> usize {
        self.table.read().strings.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Strings from table position `start` on, for persisting new symbols.
    pub fn strings_from(&self, start: usize) -> Vec<Arc<str>> {
        let table = self.table.read();
        table.strings.get(start..).map(<[_]>::to_vec).unwrap_or_default()
    }
}

/// Resolves symbols under a held shared lock. Do not hold it across a call
/// that interns (that would wait on itself).
pub struct InternerReader<'a> {
    table: RwLockReadGuard<'a, Table>,
}

impl InternerReader<'_> {
    pub fn resolve(&self, sym: Sym) -> &str {
        self.table.strings.get(sym.index()).map(|s| &**s).unwrap_or("")
    }
    pub fn get(&self, s: &str) -> Option<Sym> {
        self.table.map.get(s).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_idempotent_and_resolves() {
        let i = Interner::new();
        let a = i.intern("ec2:volume");
        let b = i.intern("ec2:volume");
        assert_eq!(a, b);
        assert_eq!(&*i.resolve(a), "ec2:volume");
        assert_eq!(i.get("nope"), None);
        assert_eq!(i.reader().resolve(well_known::AWS), "aws");
        assert_eq!(i.intern("kubernetes"), well_known::KUBERNETES);
        assert_eq!(i.intern(""), well_known::EMPTY);
    }

    #[test]
    fn table_round_trips_with_stable_symbols() {
        let i = Interner::new();
        let x = i.intern("us-east-1");
        let y = i.intern("ec2");
        let restored = Interner::from_strings(i.strings_from(0).iter().map(|s| &**s)).unwrap();
        assert_eq!(restored.get("us-east-1"), Some(x));
        assert_eq!(restored.get("ec2"), Some(y));
        assert_eq!(restored.len(), i.len());
    }

    #[test]
    fn duplicate_table_entries_are_rejected() {
        assert!(Interner::from_strings(["", "", "x"]).is_err());
    }
}
