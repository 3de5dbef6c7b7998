//! Names the estate draws from, and id formats shared by providers.

use std::cell::{Cell, RefCell};
use std::fmt::{self, Write as _};
use std::ops::Deref;

pub(crate) const APPS: &[&str] = &[
    "orders",
    "billing",
    "checkout",
    "search",
    "catalog",
    "payments",
    "auth",
    "inventory",
    "shipping",
    "reports",
    "notify",
    "analytics",
    "profile",
    "gateway",
    "ledger",
    "pricing",
];

pub(crate) const FUNCTIONS: &[&str] = &["api", "worker", "cron", "thumbnail", "webhook", "etl", "notifier"];

pub(crate) const BUCKET_PURPOSES: &[&str] = &["assets", "uploads", "backups", "exports", "artifacts"];

pub(crate) const NAMESPACES: &[&str] = &[
    "payments",
    "checkout",
    "search",
    "platform",
    "data",
    "ml",
    "identity",
    "monitoring",
    "ingest",
    "web",
];

pub(crate) const DEPLOYMENTS: &[&str] = &[
    "api",
    "worker",
    "frontend",
    "scheduler",
    "consumer",
    "gateway",
    "indexer",
    "exporter",
    "cache-warmer",
];

thread_local! {
    /// The strings of dropped [`Text`]s, for the next ones on this thread.
    static SPARE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    /// Whether this thread is planning units, which keeps no text.
    static PLANNING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with [`Text`]s left empty on this thread: a plan keeps only
/// its slots' presence, never a name or address (every argument is still
/// evaluated, so the random streams advance as when generating).
pub(crate) fn planning<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            PLANNING.set(self.0);
        }
    }
    let _reset = Reset(PLANNING.replace(true));
    f()
}

/// Spare strings a thread keeps.
const SPARES: usize = 16;

/// Formatted text in a string reused from one value to the next on a
/// thread: the estate formats a few names and addresses for most of its
/// resources, each used once or twice and then dropped. Made by [`text!`].
pub(crate) struct Text(String);

impl Text {
    pub(crate) fn new(args: fmt::Arguments<'_>) -> Text {
        let spare = SPARE
            .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
            .ok()
            .flatten();
        let mut text = spare.unwrap_or_else(|| String::with_capacity(64));
        text.clear();
        if !PLANNING.get() {
            let _ = text.write_fmt(args);
        }
        Text(text)
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Drop for Text {
    fn drop(&mut self) {
        let text = std::mem::take(&mut self.0);
        // At thread exit the spares may be gone already: then it is freed.
        let _ = SPARE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut()
                && s.len() < SPARES
            {
                s.push(text);
            }
        });
    }
}

/// `format!` into a [`Text`].
macro_rules! text {
    ($($arg:tt)*) => {
        $crate::names::Text::new(format_args!($($arg)*))
    };
}
pub(crate) use text;

/// The alphabet Kubernetes uses for generated name suffixes.
const K8S_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Appends a Kubernetes-style random suffix of `len` characters.
pub(crate) fn k8s_suffix(out: &mut String, mut h: u64, len: usize) {
    for _ in 0..len {
        out.push(char::from(K8S_ALPHABET[(h % K8S_ALPHABET.len() as u64) as usize]));
        h /= K8S_ALPHABET.len() as u64;
        if h == 0 {
            h = super::rng::fmix(h ^ 0xA5A5);
        }
    }
}

/// A version-4 style GUID from two hashes.
pub(crate) fn guid(a: u64, b: u64) -> String {
    let mut s = String::with_capacity(36);
    let _ = write!(
        s,
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFF,
        0x8000 | (b >> 48) & 0x3FFF,
        b & 0xFFFF_FFFF_FFFF
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_and_guids_have_their_shapes() {
        let mut s = String::new();
        k8s_suffix(&mut s, 12345, 5);
        assert_eq!(s.len(), 5);
        assert!(s.bytes().all(|b| K8S_ALPHABET.contains(&b)));
        let g = guid(u64::MAX, 0);
        assert_eq!(g.len(), 36);
        assert_eq!(g.split('-').map(str::len).collect::<Vec<_>>(), vec![8, 4, 4, 4, 12]);
    }

    #[test]
    fn texts_read_as_format_writes_them_in_reused_strings() {
        let s = "ab".to_owned();
        let (a, b) = (text!("{}-{:x}", "app", 255), text!("{s}/{}", 7));
        assert_eq!((&*a, &*b), ("app-ff", &*format!("{s}/7")));
        drop(a);
        let c = text!("{}", "x".repeat(100));
        assert_eq!(c.len(), 100, "a reused string that was shorter grows");
    }
}
