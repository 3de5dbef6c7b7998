//! The installed plugins as the API sees them. The daemon supplies the
//! catalog (discovery, verification and the `plugins.active` list live in
//! the plugin host); the API only lists and toggles.

/// One installed plugin (SPEC 4.2 `GET /api/v1/plugins`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginInfo {
    /// The provider it serves (`svc-plugin-<name>`).
    pub name: String,
    pub display_name: String,
    /// One of cloud, database, infrastructure, saas, iot, devops, security.
    pub category: String,
    /// `#rrggbb`.
    pub color: String,
    /// Filesystem path of the binary.
    pub path: String,
    pub active: bool,
    /// `provider` or `heuristic`.
    pub role: String,
    /// `verified`, or why the plugin cannot be used (not executable, hash mismatch, ...).
    pub status: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ToggleError {
    #[error("no installed plugin named {0:?}")]
    NotFound(String),
    #[error("{0}")]
    Failed(String),
}

/// Lists installed plugins and flips their active flag.
pub trait PluginCatalog: Send + Sync {
    fn list(&self) -> Vec<PluginInfo>;
    /// Flips `name` between active and inactive, persists the list, and
    /// returns the plugin as it now is.
    fn toggle(&self, name: &str) -> Result<PluginInfo, ToggleError>;
}
