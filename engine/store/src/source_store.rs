//! What each scan source answered for, in `graph.redb`: `source_providers`,
//! `source name -> providers` (newline-separated), the providers the
//! source's last successful scan declared or reported. A scan in which a
//! source fails keeps the resources of every provider it answered for,
//! also after a restart, when the engine has not yet seen it succeed.

use std::collections::{BTreeMap, BTreeSet};

use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError};

use super::graph_store::{GraphStore, StoreError};

const SOURCE_PROVIDERS: TableDefinition<&str, &str> = TableDefinition::new("source_providers");

impl GraphStore {
    /// Every source's providers as last stored (none before the first scan).
    pub fn load_source_providers(&self) -> Result<BTreeMap<String, BTreeSet<String>>, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let table = match txn.open_table(SOURCE_PROVIDERS) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(BTreeMap::new()),
            Err(e) => return Err(err(e.into())),
        };
        let mut out = BTreeMap::new();
        for item in table.iter().map_err(|e| err(e.into()))? {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            let providers = v
                .value()
                .split('\n')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect();
            out.insert(k.value().to_owned(), providers);
        }
        Ok(out)
    }

    /// Stores `source`'s providers durably, replacing what it had.
    pub fn put_source_providers(&self, source: &str, providers: &BTreeSet<String>) -> Result<(), StoreError> {
        let err = self.db_err();
        let joined = providers.iter().map(String::as_str).collect::<Vec<_>>().join("\n");
        let txn = self.begin_write()?;
        {
            let mut t = txn.open_table(SOURCE_PROVIDERS).map_err(|e| err(e.into()))?;
            t.insert(source, joined.as_str()).map_err(|e| err(e.into()))?;
        }
        txn.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_providers_round_trip_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.redb");
        let store = GraphStore::open(&path).unwrap();
        assert!(store.load_source_providers().unwrap().is_empty(), "none before a scan");
        let set = |ps: &[&str]| ps.iter().map(|p| (*p).to_owned()).collect::<BTreeSet<String>>();
        store
            .put_source_providers("mock", &set(&["aws", "gcp", "mock"]))
            .unwrap();
        store.put_source_providers("aws-dev", &set(&["aws"])).unwrap();
        store.put_source_providers("mock", &set(&["aws", "mock"])).unwrap();
        drop(store);
        let store = GraphStore::open(&path).unwrap();
        let got = store.load_source_providers().unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got["mock"], set(&["aws", "mock"]));
        assert_eq!(got["aws-dev"], set(&["aws"]));
    }
}
