//! The token store: named tokens with a role, kept as SHA-256 hashes in
//! `$SVC_DATA_DIR/tokens.json` (mode 0600, replaced atomically). The
//! plaintext of a token is shown once, when it is created, and never
//! stored. The token of the `token` file is the admin token `admin`: always
//! present, registered at every start, never revoked.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
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
}

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
            Ok(bytes) => {
                let file: File = serde_json::from_slice(&bytes).map_err(|e| read_err(e.to_string()))?;
                if file.version != FORMAT {
                    return Err(read_err(format!(
                        "format version {} is not the supported {FORMAT}",
                        file.version
                    )));
                }
                for e in &file.tokens {
                    check_name(&e.name).map_err(|e| read_err(e.to_string()))?;
                    if e.sha256.len() != 64 || !e.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(read_err(format!("token {:?} has no valid sha256", e.name)));
                    }
                }
                file.tokens
            }
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
        self.save(&next)?;
        *entries = next;
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
        self.save(&next)?;
        *entries = next;
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
        self.save(&next)?;
        *entries = next;
        Ok(())
    }

    fn save(&self, entries: &[Entry]) -> Result<(), TokenError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let file = File {
            version: FORMAT,
            tokens: entries.to_vec(),
        };
        let write_err = |source| TokenError::Write {
            path: path.clone(),
            source,
        };
        let text = serde_json::to_vec_pretty(&file).map_err(|e| write_err(std::io::Error::other(e)))?;
        svc_engine::store::atomic::write_atomic(path, |f| {
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            f.write_all(&text)?;
            f.write_all(b"\n")
        })
        .map_err(write_err)
    }
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
