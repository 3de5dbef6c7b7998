//! `sau.audit_bucket`, `sau.audit_export_interval` and
//! `sau.audit_export_max_events`: where the export goes, how often and in
//! what sizes, as the daemon's configuration sets them. Plain values
//! checked without I/O but for a directory bucket's parent.

use std::path::PathBuf;
use std::time::Duration;

/// Default of `sau.audit_export_interval` (SPEC 8).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(3600);
/// Default of `sau.audit_export_max_events`: most events in one object; a
/// larger backlog goes out as several objects in one run, so memory stays
/// bounded (~30 MB of JSON before gzip).
pub const DEFAULT_MAX_EVENTS: usize = 100_000;
/// Upper bound of `sau.audit_export_max_events`.
pub const MAX_EVENTS_LIMIT: usize = 1_000_000;

/// Where the export goes: `sau.audit_bucket`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bucket {
    /// `file:///abs/dir`
    Dir(PathBuf),
    /// `s3://bucket/prefix`; the prefix has no leading or trailing `/`.
    S3 { bucket: String, prefix: String },
}

/// Trees a `file://` bucket may not be in ([`Bucket::parse`]).
const SYSTEM_DIRS: [&str; 10] = [
    "/proc", "/sys", "/dev", "/etc", "/boot", "/bin", "/sbin", "/usr", "/lib", "/lib64",
];

impl Bucket {
    /// Parses `file:///abs/dir` (not in the system's trees, its parent
    /// existing) or `s3://bucket[/prefix]`. The error names the value and
    /// what is expected.
    pub fn parse(url: &str) -> Result<Bucket, String> {
        let expected = "expected file:///absolute/dir or s3://bucket/prefix";
        if let Some(path) = url.strip_prefix("file://") {
            if !path.starts_with('/') || path.len() < 2 {
                return Err(format!(
                    "sau.audit_bucket {url:?}: a file URL needs an absolute directory, as in file:///var/lib/svc/audit"
                ));
            }
            if path.split('/').any(|seg| seg == "..") {
                return Err(format!("sau.audit_bucket {url:?}: the path may not contain .."));
            }
            if path.contains('\0') {
                return Err(format!("sau.audit_bucket {url:?}: the path may not contain a NUL byte"));
            }
            let dir = PathBuf::from(path);
            if let Some(system) = SYSTEM_DIRS.iter().find(|s| dir.starts_with(s)) {
                return Err(format!(
                    "sau.audit_bucket {url:?}: {system} belongs to the system; choose a directory of the daemon's own"
                ));
            }
            match dir.parent().map(std::fs::metadata) {
                Some(Ok(m)) if m.is_dir() => {}
                _ => {
                    return Err(format!(
                        "sau.audit_bucket {url:?}: its parent directory does not exist; create it first (the daemon creates only the last directory)"
                    ));
                }
            }
            return Ok(Bucket::Dir(dir));
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let valid_name = (3..=63).contains(&bucket.len())
                && bucket
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
                && !bucket.starts_with(['.', '-'])
                && !bucket.ends_with(['.', '-']);
            if !valid_name {
                return Err(format!(
                    "sau.audit_bucket {url:?}: {bucket:?} is not an S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens)"
                ));
            }
            let prefix = prefix.trim_matches('/');
            if prefix
                .split('/')
                .any(|seg| (seg.is_empty() && !prefix.is_empty()) || seg == "..")
            {
                return Err(format!(
                    "sau.audit_bucket {url:?}: the prefix may not contain empty segments or .."
                ));
            }
            return Ok(Bucket::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.to_owned(),
            });
        }
        Err(format!("sau.audit_bucket {url:?}: {expected}"))
    }
}

impl std::fmt::Display for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bucket::Dir(p) => write!(f, "file://{}", p.display()),
            Bucket::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Bucket::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// `sau.audit_bucket` (none: export off), `sau.audit_export_interval` and
/// `sau.audit_export_max_events`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportSettings {
    pub bucket: Option<Bucket>,
    pub interval: Duration,
    /// Most events in one object.
    pub max_events: usize,
}

impl Default for ExportSettings {
    fn default() -> Self {
        ExportSettings {
            bucket: None,
            interval: DEFAULT_INTERVAL,
            max_events: DEFAULT_MAX_EVENTS,
        }
    }
}
