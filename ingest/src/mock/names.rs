//! Names the estate draws from, and id formats shared by providers.

use std::fmt::Write as _;

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
}
