//! The state record: what one write transaction of `graph.redb` did, as
//! table groups of ops (`docs/formats.md`, "State records"). Decoding
//! checks every key and value against its table's shape before anything
//! reads it as that type (redb's `from_bytes` panics on a malformed
//! form), so arbitrary bytes decode to a [`RecordError`], never a panic.

use std::collections::BTreeMap;

use redb::{Database, Key, ReadableDatabase, TableDefinition, TableError, TableHandle, Value};

use crate::bytes::{DecodeError, Reader, Writer};

/// The record format's version, its first byte.
pub const RECORD_V1: u8 = 1;

pub(super) const OP_REMOVE: u8 = 0;
pub(super) const OP_INSERT: u8 = 1;
/// The fewest bytes an op takes: its kind and an empty key's length.
const OP_MIN_BYTES: usize = 5;

/// A record that cannot be decoded or applied; the text says where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RecordError(pub String);

impl From<DecodeError> for RecordError {
    fn from(e: DecodeError) -> RecordError {
        RecordError(e.0.to_owned())
    }
}

/// A key or value type of a recorded table: whether bytes are a valid
/// stored form of it.
pub trait Part: Key + 'static {
    fn valid(bytes: &[u8]) -> bool;
}

macro_rules! fixed_parts {
    ($($t:ty),*) => {$(
        impl Part for $t {
            fn valid(bytes: &[u8]) -> bool {
                <$t as Value>::fixed_width() == Some(bytes.len())
            }
        }
    )*};
}
fixed_parts!(u8, u16, u32, u64, (u64, u8, u16));

impl Part for &'static str {
    fn valid(bytes: &[u8]) -> bool {
        std::str::from_utf8(bytes).is_ok()
    }
}

impl Part for &'static [u8] {
    fn valid(_: &[u8]) -> bool {
        true
    }
}

/// A key/value type pair a recorded table may have, with its tag in a record.
pub trait Shape {
    const TAG: u8;
}

/// The shapes of `graph.redb`'s tables: each pair's tag, and the dispatch
/// from a tag to the table's types.
macro_rules! shapes {
    ($($tag:literal => ($k:ty, $v:ty),)*) => {
        $(impl Shape for ($k, $v) {
            const TAG: u8 = $tag;
        })*

        fn known(shape: u8) -> bool {
            [$($tag),*].contains(&shape)
        }

        /// Whether `key` and `value` (`None`: a removal) fit `shape`.
        fn check(shape: u8, key: &[u8], value: Option<&[u8]>) -> Result<(), &'static str> {
            let (k, v) = match shape {
                $($tag => (<$k as Part>::valid(key), value.is_none_or(<$v as Part>::valid)),)*
                _ => return Err("unknown shape"),
            };
            match (k, v) {
                (false, _) => Err("a key that is not of the table's key type"),
                (_, false) => Err("a value that is not of the table's value type"),
                _ => Ok(()),
            }
        }

        fn apply_group(txn: &redb::WriteTransaction, group: &TableOps<'_>) -> Result<(), ApplyError> {
            match group.shape {
                $($tag => apply_ops::<$k, $v>(txn, group),)*
                _ => Err(ApplyError::Bad(RecordError(format!("table {:?}: unknown shape", group.name)))),
            }
        }

        /// Hands every row of table `name` to `row`, in key order, as
        /// stored bytes; returns the table's shape.
        pub(super) fn visit_rows(
            txn: &redb::ReadTransaction,
            name: &str,
            row: &mut RowSink<'_>,
        ) -> Result<u8, redb::Error> {
            $(match visit_of::<$k, $v>(txn, name, $tag, row) {
                Err(redb::Error::TableTypeMismatch { .. }) => {}
                other => return other.map(|()| $tag),
            })*
            Err(redb::Error::TableTypeMismatch {
                table: name.to_owned(),
                key: redb::TypeName::new("unknown"),
                value: redb::TypeName::new("unknown"),
            })
        }

        fn read_rows(txn: &redb::ReadTransaction, name: &str) -> Result<Rows, redb::Error> {
            $(match rows_of::<$k, $v>(txn, name) {
                Err(redb::Error::TableTypeMismatch { .. }) => {}
                other => return other,
            })*
            Err(redb::Error::TableTypeMismatch {
                table: name.to_owned(),
                key: redb::TypeName::new("unknown"),
                value: redb::TypeName::new("unknown"),
            })
        }
    };
}

shapes! {
    1 => (u32, &'static str),
    2 => (u64, u8),
    3 => ((u64, u8, u16), &'static [u8]),
    4 => (&'static str, u64),
    5 => (&'static str, &'static str),
    6 => (&'static str, &'static [u8]),
    7 => (u64, &'static [u8]),
}

/// One op: a row written (key and value bytes) or removed (key bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op<'a> {
    Insert(&'a [u8], &'a [u8]),
    Remove(&'a [u8]),
}

/// The ops on one table, in the order they were done; a group without
/// ops creates the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableOps<'a> {
    pub name: &'a str,
    pub shape: u8,
    pub ops: Vec<Op<'a>>,
}

/// A decoded record: its table groups in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateRecord<'a> {
    pub tables: Vec<TableOps<'a>>,
}

/// Appends one op to a table group's bytes.
pub(super) fn write_op(out: &mut Vec<u8>, op: Op<'_>) {
    let mut w = Writer::new(out);
    match op {
        Op::Insert(key, value) => {
            w.u8(OP_INSERT);
            w.bytes(key);
            w.bytes(value);
        }
        Op::Remove(key) => {
            w.u8(OP_REMOVE);
            w.bytes(key);
        }
    }
}

/// Appends a table group's header and its ops' bytes to a record.
pub(super) fn write_group(out: &mut Vec<u8>, name: &str, shape: u8, ops: u32, bytes: &[u8]) {
    let mut w = Writer::new(out);
    w.str(name);
    w.u8(shape);
    w.u32(ops);
    w.raw(bytes);
}

impl<'a> StateRecord<'a> {
    /// Reads a record, checking every key and value against its table's shape.
    pub fn decode(bytes: &'a [u8]) -> Result<StateRecord<'a>, RecordError> {
        let mut r = Reader::new(bytes);
        let version = r.u8("empty state record")?;
        if version != RECORD_V1 {
            return Err(RecordError(format!("unknown state record version {version}")));
        }
        let mut tables = Vec::new();
        while !r.is_empty() {
            let name = r.str("state record table name")?;
            if name.is_empty() {
                // redb has no table without a name (and panics on one).
                return Err(RecordError("a table without a name".to_owned()));
            }
            let shape = r.u8("state record table shape")?;
            if !known(shape) {
                return Err(RecordError(format!("table {name:?}: unknown shape {shape}")));
            }
            let n = r.count(OP_MIN_BYTES, "state record op count")?;
            let mut ops = Vec::with_capacity(n);
            for i in 0..n {
                let at = |what: &str| RecordError(format!("table {name:?}, op {i}: {what}"));
                let op = match r.u8("state record op").map_err(|e| at(e.0))? {
                    OP_INSERT => Op::Insert(
                        r.bytes("state record key").map_err(|e| at(e.0))?,
                        r.bytes("state record value").map_err(|e| at(e.0))?,
                    ),
                    OP_REMOVE => Op::Remove(r.bytes("state record key").map_err(|e| at(e.0))?),
                    kind => return Err(at(&format!("unknown op kind {kind}"))),
                };
                let (key, value) = match op {
                    Op::Insert(k, v) => (k, Some(v)),
                    Op::Remove(k) => (k, None),
                };
                check(shape, key, value).map_err(|what| at(&format!("shape {shape}: {what}")))?;
                ops.push(op);
            }
            tables.push(TableOps { name, shape, ops });
        }
        Ok(StateRecord { tables })
    }

    /// The record's bytes, as [`StateRecord::decode`] reads them.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![RECORD_V1];
        for t in &self.tables {
            let mut ops = Vec::new();
            for &op in &t.ops {
                write_op(&mut ops, op);
            }
            write_group(&mut out, t.name, t.shape, t.ops.len() as u32, &ops);
        }
        out
    }

    /// Does every op in `txn`, table by table (a table is created if it is
    /// not there). A table that exists with other types is an error.
    pub(super) fn apply(&self, txn: &redb::WriteTransaction) -> Result<(), ApplyError> {
        self.tables.iter().try_for_each(|group| apply_group(txn, group))
    }
}

/// Why a decoded record cannot be applied.
pub(super) enum ApplyError {
    Bad(RecordError),
    Db(redb::Error),
}

fn apply_ops<K: Part, V: Part>(txn: &redb::WriteTransaction, group: &TableOps<'_>) -> Result<(), ApplyError> {
    let mut table = txn
        .open_table(TableDefinition::<K, V>::new(group.name))
        .map_err(|e| match e {
            TableError::TableTypeMismatch { .. }
            | TableError::TypeDefinitionChanged { .. }
            | TableError::TableIsMultimap(_)
            | TableError::TableIsNotMultimap(_) => ApplyError::Bad(RecordError(e.to_string())),
            e => ApplyError::Db(e.into()),
        })?;
    let db = |e: redb::StorageError| ApplyError::Db(e.into());
    for op in &group.ops {
        // Each key and value was checked against the shape when decoded.
        match *op {
            Op::Insert(k, v) => {
                table.insert(K::from_bytes(k), V::from_bytes(v)).map_err(db)?;
            }
            Op::Remove(k) => {
                table.remove(K::from_bytes(k)).map_err(db)?;
            }
        }
    }
    Ok(())
}

/// Takes one row of a table: its shape, key and value as stored bytes.
pub(super) type RowSink<'a> = dyn FnMut(u8, &[u8], &[u8]) -> Result<(), redb::Error> + 'a;

/// A table's rows, as stored bytes, in key order.
pub type Rows = Vec<(Vec<u8>, Vec<u8>)>;

fn rows_of<K: Part, V: Part>(txn: &redb::ReadTransaction, name: &str) -> Result<Rows, redb::Error> {
    use redb::ReadableTable;
    let table = txn.open_table(TableDefinition::<K, V>::new(name))?;
    let mut rows = Vec::new();
    for item in table.iter()? {
        let (k, v) = item?;
        rows.push((
            K::as_bytes(&k.value()).as_ref().to_vec(),
            V::as_bytes(&v.value()).as_ref().to_vec(),
        ));
    }
    Ok(rows)
}

fn visit_of<K: Part, V: Part>(
    txn: &redb::ReadTransaction,
    name: &str,
    shape: u8,
    row: &mut RowSink<'_>,
) -> Result<(), redb::Error> {
    use redb::ReadableTable;
    let table = txn.open_table(TableDefinition::<K, V>::new(name))?;
    for item in table.iter()? {
        let (k, v) = item?;
        row(
            shape,
            K::as_bytes(&k.value()).as_ref(),
            V::as_bytes(&v.value()).as_ref(),
        )?;
    }
    Ok(())
}

/// Every table of `db` with its rows as stored bytes, by name: two stores
/// hold the same state when these are equal. A table of a shape no
/// record has is a `TableTypeMismatch` error.
pub fn contents(db: &Database) -> Result<BTreeMap<String, Rows>, redb::Error> {
    let txn = db.begin_read()?;
    let mut out = BTreeMap::new();
    for handle in txn.list_tables()? {
        let name = handle.name().to_owned();
        let rows = read_rows(&txn, &name)?;
        out.insert(name, rows);
    }
    Ok(out)
}
