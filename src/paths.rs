//! Where svc keeps its files.

use std::path::PathBuf;

/// `$SVC_DATA_DIR`, else the platform data directory (`~/.local/share/svc`).
pub fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SVC_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("svc");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".local").join("share").join("svc")
}

pub const TOKEN_FILE: &str = "token";
/// Named API tokens with their roles, as hashes (`svc token`).
pub const TOKENS_FILE: &str = "tokens.json";
/// The simulated estate's record of what remediation changed (mock mode).
pub const MOCK_EFFECTS_FILE: &str = "mock-estate.json";
pub const CONFIG_FILE: &str = "config.toml";
pub const PLUGINS_DIR: &str = "plugins";
pub const POLICIES_DIR: &str = "policies";
/// The daemon's identity in compliance exports (a UUID, one line).
pub const DAEMON_UUID_FILE: &str = "daemon_uuid";
