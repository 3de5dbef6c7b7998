//! Compliance export (SPEC 6.2): the ledger's new events, every
//! `sau.audit_export_interval`, as one gzip JSONL object per flush in
//! `sau.audit_bucket` (a local directory `file:///path` or S3
//! `s3://bucket/prefix`).
//!
//! Exactly once, also across crashes: the last exported seq is kept in
//! `events.redb` ([`svc_engine::store::ledger::Ledger::exported_through`])
//! and moved only after the object holding the events is written. An
//! object's name depends only on its first event (its time and seq), so a
//! retry after a crash between the write and the bookkeeping rewrites the
//! same object, now possibly with more events, instead of adding a second
//! copy. Files therefore hold disjoint seq ranges that together cover every
//! exported event once.
//!
//! Each line is `{daemon_uuid, daemon_version, os_arch, event_idx, event}`
//! where `event_idx` is the ledger seq and `event` the stream envelope of
//! [`crate::routes::history::Envelope`] (SPEC 6.1 plus seq and hashes, so an
//! auditor can check the chain from the files alone).
//!
//! The object-store I/O lives here, not in the engine: the engine only
//! stores events and the mark.

mod schedule;
mod settings;

pub use schedule::{observe, schedule};
pub use settings::{Bucket, DEFAULT_INTERVAL, DEFAULT_MAX_EVENTS, ExportSettings, MAX_EVENTS_LIMIT};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use flate2::Compression;
use flate2::write::GzEncoder;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use parking_lot::RwLock;
use serde::Serialize;
use svc_engine::Engine;
use svc_engine::store::ledger::LedgerError;
use tokio::sync::{Mutex, Notify};
use tracing::info;

use crate::routes::history::body::Envelope;

/// Events read from the ledger per step while building an object.
const READ_PAGE: usize = 5_000;

/// The envelope fields that name the writer.
#[derive(Clone, Debug)]
pub struct Identity {
    pub daemon_uuid: String,
    pub daemon_version: String,
    /// `linux/x86_64`
    pub os_arch: String,
}

impl Identity {
    pub fn new(daemon_uuid: String) -> Identity {
        Identity {
            daemon_uuid,
            daemon_version: env!("CARGO_PKG_VERSION").to_owned(),
            os_arch: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// One line of an export object. Fields are declared in the order they are
/// written: by name.
#[derive(Serialize)]
struct Line<'a> {
    daemon_uuid: &'a str,
    daemon_version: &'a str,
    event: Envelope<'a>,
    event_idx: u64,
    os_arch: &'a str,
}

/// One object written.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportedFile {
    /// Object name without the bucket prefix: `ledger-<timestamp>.jsonl.gz`.
    pub name: String,
    pub first_seq: u64,
    pub last_seq: u64,
    pub events: u64,
    pub bytes: u64,
}

/// What one export run did.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportRun {
    pub bucket: String,
    pub files: Vec<ExportedFile>,
    /// The mark after the run: every event through it is in the bucket.
    pub exported_through: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("compliance export is off: set sau.audit_bucket (file:///dir or s3://bucket/prefix)")]
    NotConfigured,
    #[error("cannot write {name} to {bucket}: {reason}")]
    Bucket {
        bucket: String,
        name: String,
        reason: String,
    },
    #[error("ledger: {0}")]
    Ledger(#[from] LedgerError),
    #[error("export task failed: {0}")]
    Task(String),
}

/// Runs exports, one at a time, on a schedule and on request.
pub struct Exporter {
    engine: Arc<Engine>,
    settings: RwLock<ExportSettings>,
    /// Wakes the schedule when the settings change.
    changed: Notify,
    /// Held for the length of a run: runs never overlap.
    running: Mutex<()>,
    identity: Identity,
}

impl Exporter {
    pub fn new(engine: Arc<Engine>, settings: ExportSettings, identity: Identity) -> Exporter {
        Exporter {
            engine,
            settings: RwLock::new(settings),
            changed: Notify::new(),
            running: Mutex::new(()),
            identity,
        }
    }

    pub fn settings(&self) -> ExportSettings {
        self.settings.read().clone()
    }

    /// Applies new settings; the schedule restarts its wait with the new interval.
    pub fn set_settings(&self, settings: ExportSettings) {
        let mut current = self.settings.write();
        if *current != settings {
            *current = settings;
            self.changed.notify_one();
        }
    }

    /// Exports every event after the mark, in objects of at most
    /// `max_events`, moving the mark after each object.
    pub async fn export_now(&self) -> Result<ExportRun, ExportError> {
        let _running = self.running.lock().await;
        let (bucket, max_events) = {
            let s = self.settings.read();
            (s.bucket.clone().ok_or(ExportError::NotConfigured)?, s.max_events.max(1))
        };
        let target = Target::open(&bucket)?;
        let mut run = ExportRun {
            bucket: bucket.to_string(),
            files: Vec::new(),
            exported_through: 0,
        };
        loop {
            let engine = self.engine.clone();
            let identity = self.identity.clone();
            let built = tokio::task::spawn_blocking(move || build_object(&engine, &identity, max_events))
                .await
                .map_err(|e| ExportError::Task(e.to_string()))??;
            let Some(object) = built else {
                break;
            };
            target.put(&object.file.name, object.bytes).await?;
            let (engine, last) = (self.engine.clone(), object.file.last_seq);
            tokio::task::spawn_blocking(move || engine.ledger().mark_exported(last))
                .await
                .map_err(|e| ExportError::Task(e.to_string()))??;
            info!(
                bucket = %run.bucket,
                name = %object.file.name,
                first_seq = object.file.first_seq,
                last_seq = object.file.last_seq,
                "ledger exported"
            );
            run.files.push(object.file);
        }
        let engine = self.engine.clone();
        run.exported_through = tokio::task::spawn_blocking(move || engine.ledger().exported_through())
            .await
            .map_err(|e| ExportError::Task(e.to_string()))??;
        Ok(run)
    }
}

/// One encoded object.
struct Object {
    file: ExportedFile,
    bytes: Vec<u8>,
}

/// Reads up to `max_events` events after the mark and encodes them; `None`
/// when there is nothing new.
fn build_object(engine: &Engine, identity: &Identity, max_events: usize) -> Result<Option<Object>, ExportError> {
    let ledger = engine.ledger();
    let mut after = ledger.exported_through()?;
    // Nothing at or past a broken link leaves the daemon: the export stops
    // before it, and says so once everything before it is out.
    let broken = ledger.broken();
    let end = broken.as_ref().map_or(u64::MAX, |b| b.seq);
    let max_events = max_events.min(usize::try_from(end.saturating_sub(after + 1)).unwrap_or(usize::MAX));
    if max_events == 0
        && let Some(b) = broken
    {
        return Err(ExportError::Ledger(LedgerError::Broken(b)));
    }
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    let mut first: Option<(u64, u64)> = None;
    let mut last = 0u64;
    let mut count = 0u64;
    let mut line = Vec::with_capacity(1024);
    while (count as usize) < max_events {
        let want = READ_PAGE.min(max_events - count as usize);
        let page = ledger.events_after(after, want)?;
        if page.is_empty() {
            break;
        }
        for e in &page {
            first.get_or_insert((e.seq, e.ts_us));
            line.clear();
            let value = Line {
                daemon_uuid: &identity.daemon_uuid,
                daemon_version: &identity.daemon_version,
                event: Envelope::of(e),
                event_idx: e.seq,
                os_arch: &identity.os_arch,
            };
            serde_json::to_writer(&mut line, &value).map_err(|e| ExportError::Task(e.to_string()))?;
            line.push(b'\n');
            gz.write_all(&line).map_err(|e| ExportError::Task(e.to_string()))?;
            last = e.seq;
            count += 1;
        }
        after = last;
        if page.len() < want {
            break;
        }
    }
    let Some((first_seq, first_ts_us)) = first else {
        return Ok(None);
    };
    let bytes = gz.finish().map_err(|e| ExportError::Task(e.to_string()))?;
    Ok(Some(Object {
        file: ExportedFile {
            name: object_name(first_ts_us, first_seq),
            first_seq,
            last_seq: last,
            events: count,
            bytes: bytes.len() as u64,
        },
        bytes,
    }))
}

/// `ledger-<timestamp>.jsonl.gz`: the time of the object's first event in
/// UTC, then its seq, so names sort in ledger order and a retry of the same
/// range gets the same name.
pub fn object_name(first_ts_us: u64, first_seq: u64) -> String {
    let secs = i64::try_from(first_ts_us / 1_000_000).unwrap_or(i64::MAX);
    let stamp = chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|| "00000000T000000Z".to_owned());
    format!("ledger-{stamp}-{first_seq:012}.jsonl.gz")
}

/// S3 bucket `name`, its credentials, region and endpoint from the usual
/// AWS variables (`AWS_ACCESS_KEY_ID`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
/// ...; plain HTTP when the endpoint says so), a request retried twice
/// within 20 s. The compliance export's buckets and a cluster's shared
/// store are opened so.
pub fn s3_bucket(name: &str) -> Result<AmazonS3, object_store::Error> {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .or_else(|_| std::env::var("AWS_ENDPOINT"))
        .unwrap_or_default();
    let retry = RetryConfig {
        max_retries: 2,
        retry_timeout: Duration::from_secs(20),
        ..RetryConfig::default()
    };
    AmazonS3Builder::from_env()
        .with_bucket_name(name)
        .with_allow_http(endpoint.starts_with("http://"))
        .with_retry(retry)
        .build()
}

/// An opened bucket.
enum Target {
    Dir(PathBuf),
    S3 {
        store: Arc<dyn ObjectStore>,
        prefix: String,
        url: String,
    },
}

impl Target {
    fn open(bucket: &Bucket) -> Result<Target, ExportError> {
        match bucket {
            Bucket::Dir(dir) => Ok(Target::Dir(dir.clone())),
            Bucket::S3 { bucket: name, prefix } => {
                let store = s3_bucket(name).map_err(|e| ExportError::Bucket {
                    bucket: bucket.to_string(),
                    name: String::new(),
                    reason: e.to_string(),
                })?;
                Ok(Target::S3 {
                    store: Arc::new(store),
                    prefix: prefix.clone(),
                    url: bucket.to_string(),
                })
            }
        }
    }

    async fn put(&self, name: &str, bytes: Vec<u8>) -> Result<(), ExportError> {
        match self {
            Target::Dir(dir) => {
                let (dir, name_owned) = (dir.clone(), name.to_owned());
                tokio::task::spawn_blocking(move || write_file(&dir, &name_owned, &bytes))
                    .await
                    .map_err(|e| ExportError::Task(e.to_string()))?
                    .map_err(|e| ExportError::Bucket {
                        bucket: format!("file://{}", self.dir_display()),
                        name: name.to_owned(),
                        reason: e.to_string(),
                    })
            }
            Target::S3 { store, prefix, url } => {
                let key = if prefix.is_empty() {
                    name.to_owned()
                } else {
                    format!("{prefix}/{name}")
                };
                store
                    .put(&object_store::path::Path::from(key), PutPayload::from(bytes))
                    .await
                    .map(|_| ())
                    .map_err(|e| ExportError::Bucket {
                        bucket: url.clone(),
                        name: name.to_owned(),
                        reason: e.to_string(),
                    })
            }
        }
    }

    fn dir_display(&self) -> String {
        match self {
            Target::Dir(d) => d.display().to_string(),
            Target::S3 { url, .. } => url.clone(),
        }
    }
}

/// Writes `dir/name` atomically and durably: a temporary file, fsync,
/// rename over the name, fsync of the directory.
fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    // Only the bucket's own directory is created (private), never a chain
    // of them: its parent was there when the bucket was set.
    if !dir.is_dir() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(dir)?;
    }
    // A crash mid-write leaves a temporary file; the retry of its range
    // rewrites the object, so leftovers are only garbage.
    for entry in std::fs::read_dir(dir)?.flatten() {
        let n = entry.file_name();
        let n = n.to_string_lossy();
        if n.starts_with(".ledger-") && n.contains(".jsonl.gz.tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    svc_engine::store::atomic::write_bytes_atomic(&dir.join(name), bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_bucket_stays_out_of_the_system_and_creates_one_directory() {
        for (url, want) in [
            ("file:///etc", "belongs to the system"),
            ("file:///proc/self", "belongs to the system"),
            ("file:///usr/local/audit", "belongs to the system"),
            ("file:///tmp/a\0b", "NUL"),
            ("file:///no-such-dir-here/x/audit", "parent directory does not exist"),
        ] {
            let e = Bucket::parse(url).unwrap_err();
            assert!(e.contains(want), "{url}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let bucket = dir.path().join("audit");
        assert_eq!(
            Bucket::parse(&format!("file://{}", bucket.display())),
            Ok(Bucket::Dir(bucket.clone()))
        );
        write_file(&bucket, "o", b"x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&bucket).unwrap().permissions().mode() & 0o777, 0o700);
        assert!(
            write_file(&dir.path().join("a/b"), "o", b"x").is_err(),
            "no chain of directories"
        );
    }

    #[test]
    fn bucket_urls_parse_or_say_what_is_wrong() {
        assert_eq!(
            Bucket::parse("file:///var/audit"),
            Ok(Bucket::Dir(PathBuf::from("/var/audit")))
        );
        assert_eq!(
            Bucket::parse("s3://audit-logs/svc/prod/"),
            Ok(Bucket::S3 {
                bucket: "audit-logs".into(),
                prefix: "svc/prod".into()
            })
        );
        assert_eq!(
            Bucket::parse("s3://audit-logs"),
            Ok(Bucket::S3 {
                bucket: "audit-logs".into(),
                prefix: String::new()
            })
        );
        for bad in [
            "",
            "audit",
            "http://x",
            "file://relative",
            "file:///a/../b",
            "s3://",
            "s3://AB",
            "s3://Upper-Case",
            "s3://b..c/x//y",
        ] {
            let e = Bucket::parse(bad).expect_err(bad);
            assert!(e.contains("sau.audit_bucket"), "{e}");
        }
        assert_eq!(
            Bucket::parse("s3://audit-logs/svc").map(|b| b.to_string()),
            Ok("s3://audit-logs/svc".to_owned())
        );
    }

    #[test]
    fn object_names_sort_by_time_then_seq() {
        let a = object_name(1_763_735_412_000_000, 1);
        assert_eq!(a, "ledger-20251121T143012Z-000000000001.jsonl.gz");
        let b = object_name(1_763_735_412_999_999, 101);
        let c = object_name(1_763_735_413_000_000, 102);
        assert!(a < b && b < c);
    }
}
