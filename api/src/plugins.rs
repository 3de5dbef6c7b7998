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

/// A package as the registry lists it (`GET /api/v1/registry/search`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct RegistryPackage {
    /// Assigned by the registry team; absent: listed, but refused at install.
    pub category: Option<String>,
    pub description: String,
    pub author: String,
    /// The version installed here, if any.
    pub installed_version: Option<String>,
    /// Why it cannot be installed here (no category, no binary for this
    /// os and architecture); absent when it can.
    pub problem: Option<String>,
    /// `free`, `paid` or `freemium`.
    pub pricing_model: String,
    /// Monthly price of a paid package.
    pub price_usd: f64,
    /// Package name, for example `svc-plugin-mock` or `cost-hygiene`.
    pub name: String,
    /// A plugin's role (`provider` or `heuristic`); absent for a policy pack.
    pub role: Option<String>,
    /// Whether it is the latest stable version of its name.
    pub latest: bool,
    /// `plugin` or `policy`.
    #[serde(rename = "type")]
    pub kind: String,
    /// With a leading `v`.
    pub version: String,
}

/// The registry's answer to a search, with where the index came from.
#[derive(Clone, Debug, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct RegistryListing {
    /// Seconds since the index was fetched.
    pub age_seconds: u64,
    /// When the index was fetched, Unix seconds.
    pub fetched_at: i64,
    /// Whether the answer comes from the cached index.
    pub from_cache: bool,
    pub packages: Vec<RegistryPackage>,
    /// Index entries left out as invalid, each with why.
    pub skipped: Vec<String>,
    /// The index URL.
    pub source: String,
    /// Why the registry could not be reached, when the cache answered instead.
    pub warning: Option<String>,
}

/// An installed plugin or policy pack (`GET /api/v1/registry/installed`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct InstalledPackage {
    /// A plugin in `plugins.active`; a policy pack is always active.
    pub active: bool,
    pub category: String,
    /// When the registry installed it, Unix seconds; absent for a local install.
    pub installed_at: Option<i64>,
    /// The name it is installed under: a plugin's provider name, a pack's name.
    pub name: String,
    /// Where the file is: the plugin binary or the pack directory.
    pub path: String,
    /// SHA-256 of the plugin binary, or of the pack's file listing.
    pub sha256: String,
    /// `registry <index url>`, `release <owner/name@version> <url>` or `local`.
    pub source: String,
    /// `plugin` or `policy`.
    #[serde(rename = "type")]
    pub kind: String,
    pub version: String,
}

/// What an install did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct InstallOutcome {
    /// False when that version was installed and verified already.
    pub changed: bool,
    pub message: String,
    pub package: InstalledPackage,
    /// The version it replaced, if any.
    pub previous_version: Option<String>,
}

/// What a request to the registry asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallRequest {
    /// `name`, `name@vX.Y.Z` or `owner/name@vX.Y.Z`.
    pub name: String,
    pub activate: bool,
    pub force: bool,
    /// Only plugins (`POST /api/v1/plugins/install`).
    pub plugins_only: bool,
}

/// How a registry operation failed, as the API answers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegistryFailureKind {
    /// 400: a malformed name.
    BadRequest,
    /// 404: unknown package or version, or not installed.
    NotFound,
    /// 409: the installed binary fails verification (`force` replaces it),
    /// or no registry is configured.
    Conflict,
    /// 422: a check refused the package (checksum, handshake, category, no binary).
    Refused,
    /// 502: the registry or a download failed.
    BadGateway,
    /// 500.
    Internal,
}

#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct RegistryFailure {
    pub kind: RegistryFailureKind,
    pub message: String,
}

pub type RegistryFuture<'a, T> = futures::future::BoxFuture<'a, Result<T, RegistryFailure>>;

/// The registry client of the daemon: index, cache, install and removal
/// (each recorded in the ledger with `actor`).
pub trait PackageRegistry: Send + Sync {
    /// Packages matching `q` (name, description, type, category; empty: all).
    fn search<'a>(&'a self, q: &'a str, refresh: bool) -> RegistryFuture<'a, RegistryListing>;
    /// What is installed: plugins and policy packs.
    fn installed(&self) -> RegistryFuture<'_, Vec<InstalledPackage>>;
    fn install<'a>(&'a self, request: InstallRequest, actor: &'a str) -> RegistryFuture<'a, InstallOutcome>;
    /// Uninstalls `name` (deactivating a plugin); answers what was removed.
    fn remove<'a>(&'a self, name: &'a str, actor: &'a str) -> RegistryFuture<'a, InstalledPackage>;
}
