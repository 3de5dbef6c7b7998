//! The token store: named tokens with a role, kept as SHA-256 hashes in
//! `$SVC_DATA_DIR/tokens.json` (mode 0600, replaced atomically). The
//! plaintext of a token is shown once, when it is created, and never
//! stored. The token of the `token` file is the admin token `admin`: always
//! present, registered at every start, never revoked.
//!
//! In a cluster the named tokens (all but `admin`) are the cluster's: a
//! [`Publisher`] hands every change to etcd before it is kept here, and
//! [`TokenStore::adopt`] takes the set the cluster holds, so a token made
//! on one leader works on the next.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::roles::Role;

/// Name of the token file's token.
pub const ADMIN_NAME: &str = "admin";
/// Longest token name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Version of the file format.
const FORMAT: u32 = 1;

/// Why a token operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    NotFound(String),
    #[error("cannot write the token store {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot read the token store {path}: {message}; fix or move the file away (nothing in it was changed)")]
    Read { path: PathBuf, message: String },
    #[error("cannot draw random bytes for a token: {0}")]
    Random(String),
    /// The cluster did not take the change (this node does not lead, or
    /// etcd cannot be reached); nothing changed.
    #[error("the cluster did not take the token change: {0}")]
    Replicate(String),
}

/// Hands the named tokens, as they are to be after a change, to the rest
/// of a cluster; `Err` says why it could not (and nothing changes).
pub type Publisher = std::sync::Arc<dyn Fn(&[Entry]) -> Result<(), String> + Send + Sync>;

/// One stored token: what it is called, what it may do and its hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub name: String,
    pub role: Role,
    /// Hex SHA-256 of the token.
    pub sha256: String,
    /// When the token was created, RFC 3339.
    pub created: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    tokens: Vec<Entry>,
}

/// Who presented a token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub name: String,
    pub role: Role,
}

pub struct TokenStore {
    /// `None`: kept in memory only (tests, benches).
    path: Option<PathBuf>,
    entries: Mutex<Vec<Entry>>,
    /// In a cluster: where a change goes before it is kept here.
    publisher: RwLock<Option<Publisher>>,
}

/// Hex SHA-256 of `token`.
pub fn hash_hex(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new token: 32 random bytes, hex.
pub fn generate() -> Result<String, TokenError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
    Ok(hex::encode(bytes))
}

/// A token name: 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
pub fn check_name(name: &str) -> Result<(), TokenError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(TokenError::Invalid(format!(
            "invalid token name {name:?}: 1 to {MAX_NAME_CHARS} characters of A-Z, a-z, 0-9, '.', '_' and '-'"
        )))
    }
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl TokenStore {
    /// A store in memory only, holding the admin token `admin_token`.
    pub fn in_memory(admin_token: &str) -> TokenStore {
        TokenStore {
            path: None,
            entries: Mutex::new(vec![admin_entry(admin_token, now_rfc3339())]),
            publisher: RwLock::new(None),
        }
    }

    /// Opens the store at `path` (absent: empty) and registers
    /// `admin_token` as the admin token `admin`, writing the file when that
    /// changed it. A file that cannot be read or parsed is an error naming
    /// it, and is left as it is.
    pub fn open(path: &Path, admin_token: &str) -> Result<TokenStore, TokenError> {
        let read_err = |message: String| TokenError::Read {
            path: path.to_owned(),
            message,
        };
        let mut entries = match std::fs::read(path) {
            Ok(bytes) => decode(&bytes).map_err(read_err)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(read_err(e.to_string())),
        };
        let hash = hash_hex(admin_token);
        let changed = match entries.iter_mut().find(|e| e.name == ADMIN_NAME) {
            Some(e) if e.sha256 == hash && e.role == Role::Admin => false,
            Some(e) => {
                *e = admin_entry(admin_token, now_rfc3339());
                true
            }
            None => {
                entries.insert(0, admin_entry(admin_token, now_rfc3339()));
                true
            }
        };
        let store = TokenStore {
            path: Some(path.to_owned()),
            entries: Mutex::new(entries),
            publisher: RwLock::new(None),
        };
        if changed {
            store.save(&store.entries.lock())?;
        }
        Ok(store)
    }

    /// Who holds `token`, if anyone.
    pub fn authenticate(&self, token: &str) -> Option<Holder> {
        let hash = hash_hex(token);
        self.entries
            .lock()
            .iter()
            .find(|e| constant_time_eq(e.sha256.as_bytes(), hash.as_bytes()))
            .map(|e| Holder {
                name: e.name.clone(),
                role: e.role,
            })
    }

    /// Every token, by name.
    pub fn list(&self) -> Vec<Entry> {
        let mut v = self.entries.lock().clone();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Creates token `name` with `role`: its entry and its plaintext, which
    /// is not kept. 422 on a bad name, 409 when the name is taken.
    pub fn create(&self, name: &str, role: Role) -> Result<(Entry, String), TokenError> {
        check_name(name)?;
        let secret = generate()?;
        let entry = Entry {
            name: name.to_owned(),
            role,
            sha256: hash_hex(&secret),
            created: now_rfc3339(),
        };
        let mut entries = self.entries.lock();
        if entries.iter().any(|e| e.name == name) {
            return Err(TokenError::Conflict(format!("a token named {name:?} exists")));
        }
        let mut next = entries.clone();
        next.push(entry.clone());
        self.commit(&mut entries, next)?;
        Ok((entry, secret))
    }

    /// Revokes token `name`: 404 when there is none, 409 for the admin token.
    pub fn revoke(&self, name: &str) -> Result<Entry, TokenError> {
        if name == ADMIN_NAME {
            return Err(TokenError::Conflict(format!(
                "the token {ADMIN_NAME:?} is the token file's and cannot be revoked; replace the token file and restart the daemon instead"
            )));
        }
        let mut entries = self.entries.lock();
        let Some(i) = entries.iter().position(|e| e.name == name) else {
            return Err(TokenError::NotFound(format!("no token named {name:?}")));
        };
        let mut next = entries.clone();
        let gone = next.remove(i);
        self.commit(&mut entries, next)?;
        Ok(gone)
    }

    /// Puts back an entry [`TokenStore::revoke`] removed, or removes one
    /// [`TokenStore::create`] added: undoes a change whose ledger event
    /// could not be written.
    pub fn undo(&self, entry: &Entry, was_created: bool) -> Result<(), TokenError> {
        let mut entries = self.entries.lock();
        let mut next = entries.clone();
        if was_created {
            next.retain(|e| e.name != entry.name);
        } else if !next.iter().any(|e| e.name == entry.name) {
            next.push(entry.clone());
        }
        self.commit(&mut entries, next)
    }

    /// Sets (or clears) where changes go before they are kept here.
    pub fn set_publisher(&self, publisher: Option<Publisher>) {
        *self.publisher.write() = publisher;
    }

    /// The named tokens (all but `admin`): what a cluster shares.
    pub fn named(&self) -> Vec<Entry> {
        named(&self.entries.lock())
    }

    /// Takes `shared` as the named tokens (the cluster's set), keeping this
    /// node's `admin`; writes the file when that changed anything. Returns
    /// the names of the tokens it removed, whose sessions should end.
    pub fn adopt(&self, shared: Vec<Entry>) -> Result<Vec<String>, TokenError> {
        for e in &shared {
            check_entry(e).map_err(TokenError::Invalid)?;
            if e.name == ADMIN_NAME {
                return Err(TokenError::Invalid(format!(
                    "a shared token set may not hold {ADMIN_NAME:?}: each node's is its token file's"
                )));
            }
        }
        let mut entries = self.entries.lock();
        let mut theirs = shared;
        theirs.sort_by(|a, b| a.name.cmp(&b.name));
        let mut mine = named(&entries);
        mine.sort_by(|a, b| a.name.cmp(&b.name));
        if mine == theirs {
            return Ok(Vec::new());
        }
        let removed = mine
            .iter()
            .filter(|m| !theirs.iter().any(|t| t.name == m.name && t.sha256 == m.sha256))
            .map(|m| m.name.clone())
            .collect();
        let mut next: Vec<Entry> = entries.iter().filter(|e| e.name == ADMIN_NAME).cloned().collect();
        next.extend(theirs);
        self.save(&next)?;
        *entries = next;
        Ok(removed)
    }

    /// Hands `next` to the cluster (if any), then keeps it: in the file,
    /// then in memory. A file that cannot be written puts the cluster's
    /// set back as it was.
    fn commit(&self, entries: &mut Vec<Entry>, next: Vec<Entry>) -> Result<(), TokenError> {
        let publisher = self.publisher.read().clone();
        if let Some(publish) = &publisher {
            publish(&named(&next)).map_err(TokenError::Replicate)?;
        }
        if let Err(e) = self.save(&next) {
            if let Some(publish) = &publisher
                && let Err(back) = publish(&named(entries))
            {
                tracing::error!(error = %back, "cannot put the cluster's tokens back after a failed write");
            }
            return Err(e);
        }
        *entries = next;
        Ok(())
    }

    fn save(&self, entries: &[Entry]) -> Result<(), TokenError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let write_err = |source| TokenError::Write {
            path: path.clone(),
            source,
        };
        let text = encode(entries).map_err(|e| write_err(std::io::Error::other(e)))?;
        svc_engine::store::atomic::write_atomic(path, |f| {
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            f.write_all(&text)?;
            f.write_all(b"\n")
        })
        .map_err(write_err)
    }
}

fn named(entries: &[Entry]) -> Vec<Entry> {
    entries.iter().filter(|e| e.name != ADMIN_NAME).cloned().collect()
}

/// Whether `e` is a well-formed entry: a valid name and a hex SHA-256.
fn check_entry(e: &Entry) -> Result<(), String> {
    check_name(&e.name).map_err(|err| err.to_string())?;
    if e.sha256.len() != 64 || !e.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("token {:?} has no valid sha256", e.name));
    }
    Ok(())
}

/// The tokens as the file (and a cluster's shared set) holds them.
pub fn encode(entries: &[Entry]) -> Result<Vec<u8>, serde_json::Error> {
    let file = File {
        version: FORMAT,
        tokens: entries.to_vec(),
    };
    serde_json::to_vec_pretty(&file)
}

/// Tokens read back from [`encode`]'s form; `Err` says what is wrong.
pub fn decode(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    let file: File = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if file.version != FORMAT {
        return Err(format!("format version {} is not the supported {FORMAT}", file.version));
    }
    for e in &file.tokens {
        check_entry(e)?;
    }
    Ok(file.tokens)
}

fn admin_entry(token: &str, created: String) -> Entry {
    Entry {
        name: ADMIN_NAME.to_owned(),
        role: Role::Admin,
        sha256: hash_hex(token),
        created,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn stores_hashes_only_and_finds_holders() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let store = TokenStore::open(&path, "admintoken").unwrap();
        let (entry, secret) = store.create("ci-bot", Role::Operator).unwrap();
        assert_eq!(secret.len(), 64);
        assert_eq!(entry.sha256, hash_hex(&secret));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&secret), "the plaintext is not stored");
        assert!(!text.contains("admintoken"));
        assert!(text.contains(&hash_hex("admintoken")));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            store.authenticate(&secret),
            Some(Holder {
                name: "ci-bot".into(),
                role: Role::Operator
            })
        );
        assert_eq!(store.authenticate("admintoken").unwrap().role, Role::Admin);
        assert_eq!(store.authenticate("nope"), None);
        // Reopened, it holds the same tokens.
        let again = TokenStore::open(&path, "admintoken").unwrap();
        assert_eq!(again.list(), store.list());
        assert_eq!(again.authenticate(&secret).unwrap().name, "ci-bot");
    }

    #[test]
    fn names_roles_and_conflicts() {
        let store = TokenStore::in_memory("a");
        for bad in ["", "has space", "slash/", "é", &"x".repeat(65)] {
            assert!(
                matches!(store.create(bad, Role::Viewer), Err(TokenError::Invalid(_))),
                "{bad:?}"
            );
        }
        store.create(&"x".repeat(64), Role::Viewer).unwrap();
        store.create("v.1_a-b", Role::Viewer).unwrap();
        assert!(matches!(
            store.create("v.1_a-b", Role::Admin),
            Err(TokenError::Conflict(_))
        ));
        assert!(matches!(
            store.create(ADMIN_NAME, Role::Admin),
            Err(TokenError::Conflict(_))
        ));
        assert!(matches!(store.revoke(ADMIN_NAME), Err(TokenError::Conflict(_))));
        assert!(matches!(store.revoke("ghost"), Err(TokenError::NotFound(_))));
        let gone = store.revoke("v.1_a-b").unwrap();
        assert_eq!(gone.role, Role::Viewer);
        store.undo(&gone, false).unwrap();
        assert!(store.list().iter().any(|e| e.name == "v.1_a-b"));
    }

    #[test]
    fn a_cluster_takes_each_change_first_and_a_refusal_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let store = TokenStore::open(&path, "admintoken").unwrap();
        let seen: std::sync::Arc<Mutex<Vec<Vec<String>>>> = Default::default();
        let refuse = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s, r) = (seen.clone(), refuse.clone());
        store.set_publisher(Some(std::sync::Arc::new(move |named: &[Entry]| {
            if r.load(std::sync::atomic::Ordering::SeqCst) {
                return Err("this node does not lead".to_owned());
            }
            s.lock().push(named.iter().map(|e| e.name.clone()).collect());
            Ok(())
        })));
        store.create("one", Role::Viewer).unwrap();
        store.create("two", Role::Operator).unwrap();
        store.revoke("one").unwrap();
        assert_eq!(
            *seen.lock(),
            [vec!["one"], vec!["one", "two"], vec!["two"]],
            "the named set after each change, never the admin token"
        );
        refuse.store(true, std::sync::atomic::Ordering::SeqCst);
        let before = std::fs::read(&path).unwrap();
        let e = store.create("three", Role::Viewer).unwrap_err();
        assert!(matches!(e, TokenError::Replicate(_)), "{e}");
        assert!(matches!(store.revoke("two"), Err(TokenError::Replicate(_))));
        assert_eq!(std::fs::read(&path).unwrap(), before, "the file is unchanged");
        let names: Vec<String> = store.list().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["admin", "two"]);
    }

    #[test]
    fn a_file_that_cannot_be_written_puts_the_clusters_set_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let store = TokenStore::open(&path, "admintoken").unwrap();
        store.create("one", Role::Viewer).unwrap();
        let seen: std::sync::Arc<Mutex<Vec<Vec<String>>>> = Default::default();
        let s = seen.clone();
        store.set_publisher(Some(std::sync::Arc::new(move |named: &[Entry]| {
            s.lock().push(named.iter().map(|e| e.name.clone()).collect());
            Ok(())
        })));
        let moved = dir.path().with_extension("moved");
        std::fs::rename(dir.path(), &moved).unwrap();
        let e = store.create("two", Role::Viewer).unwrap_err();
        std::fs::rename(&moved, dir.path()).unwrap();
        assert!(matches!(e, TokenError::Write { .. }), "{e}");
        assert_eq!(
            *seen.lock(),
            [vec!["one", "two"], vec!["one"]],
            "published, then put back as it was"
        );
        assert_eq!(store.named().len(), 1);
    }

    #[test]
    fn adopting_the_clusters_set_keeps_the_admin_token_and_names_what_went() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let store = TokenStore::open(&path, "admintoken").unwrap();
        let (kept, _) = store.create("kept", Role::Viewer).unwrap();
        store.create("gone", Role::Operator).unwrap();
        let other = TokenStore::in_memory("x");
        let (new, secret) = other.create("new", Role::Admin).unwrap();
        let removed = store.adopt(vec![new.clone(), kept.clone()]).unwrap();
        assert_eq!(removed, ["gone"]);
        assert_eq!(store.authenticate(&secret).unwrap().name, "new");
        assert_eq!(store.authenticate("admintoken").unwrap().name, ADMIN_NAME);
        assert_eq!(store.named(), [kept.clone(), new.clone()]);
        // The same set again changes nothing; the file holds it.
        assert_eq!(
            store.adopt(vec![kept.clone(), new.clone()]).unwrap(),
            Vec::<String>::new()
        );
        let reopened = TokenStore::open(&path, "admintoken").unwrap();
        assert_eq!(reopened.list(), store.list());
        // A set naming the admin token, or holding a bad entry, is refused.
        let admin = Entry {
            name: ADMIN_NAME.into(),
            ..kept.clone()
        };
        assert!(matches!(store.adopt(vec![admin]), Err(TokenError::Invalid(_))));
        let bad = Entry {
            sha256: "zz".into(),
            ..kept
        };
        assert!(matches!(store.adopt(vec![bad]), Err(TokenError::Invalid(_))));
        assert_eq!(store.named().len(), 2, "a refused set changes nothing");
        // The shared form reads back.
        assert_eq!(decode(&encode(&store.named()).unwrap()).unwrap(), store.named());
        assert!(decode(b"{}").is_err());
    }

    #[test]
    fn a_new_token_file_replaces_the_admin_hash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        TokenStore::open(&path, "old")
            .unwrap()
            .create("keep", Role::Viewer)
            .unwrap();
        let store = TokenStore::open(&path, "new").unwrap();
        assert_eq!(store.authenticate("old"), None);
        assert_eq!(store.authenticate("new").unwrap().name, ADMIN_NAME);
        assert!(store.list().iter().any(|e| e.name == "keep"));
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        for bad in [
            &b"{not json"[..],
            br#"{"version":9,"tokens":[]}"#,
            br#"{"version":1,"tokens":[{"name":"a b","role":"viewer","sha256":"00","created":""}]}"#,
        ] {
            std::fs::write(&path, bad).unwrap();
            let e = TokenStore::open(&path, "t").err().expect("refused");
            assert!(e.to_string().contains(&path.display().to_string()), "{e}");
            assert_eq!(std::fs::read(&path).unwrap(), bad, "the file is left as it was");
        }
    }

    #[test]
    fn a_failed_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let store = TokenStore::open(&path, "t").unwrap();
        store.create("one", Role::Viewer).unwrap();
        let before = std::fs::read(&path).unwrap();
        // The directory goes away: the atomic write cannot create its temporary file.
        let moved = dir.path().with_extension("moved");
        std::fs::rename(dir.path(), &moved).unwrap();
        let e = store.create("two", Role::Viewer).unwrap_err();
        assert!(matches!(e, TokenError::Write { .. }), "{e}");
        std::fs::rename(&moved, dir.path()).unwrap();
        assert!(!store.list().iter().any(|e| e.name == "two"), "not added in memory");
        assert_eq!(std::fs::read(&path).unwrap(), before, "the file is unchanged");
        assert!(matches!(store.revoke("two"), Err(TokenError::NotFound(_))));
    }
}
