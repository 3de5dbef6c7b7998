//! The daemon's registry client: the index fetched from `registry.url` and
//! cached in `registry-index.json`, installs and removals of plugins and
//! policy packs (checked by `svc_ingest::registry`), what the registry
//! installed (`registry-installed.json`), and a ledger event for each
//! install and removal.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use reqwest::Url;
use serde::{Deserialize, Serialize};
use svc_api::plugins::{
    InstallOutcome, InstallRequest, InstalledPackage, PackageRegistry, RegistryFailure, RegistryFailureKind,
    RegistryFuture, RegistryListing, RegistryPackage,
};
use svc_engine::Engine;
use svc_engine::store::atomic::write_bytes_atomic;
use svc_engine::store::ledger::events::{NewEvent, RegistryInstall, RegistryRemove};
use svc_ingest::host::manifest::{manifest_path, sha256_file};
use svc_ingest::host::{LaunchOptions, Manifest, PLUGIN_PREFIX, PackageType, discover, verify};
use svc_ingest::registry::index::short_name;
use svc_ingest::registry::{Fetcher, Index, Package, PackageRef, RegistryError, location, stage_pack, stage_plugin};
use tracing::{info, warn};

use crate::config::RegistrySettings;
use crate::plugins::{PluginState, Plugins};

/// The cached index, in the data directory.
pub const INDEX_CACHE_FILE: &str = "registry-index.json";
/// What the registry installed, in the data directory.
pub const INSTALLED_FILE: &str = "registry-installed.json";
/// Largest index or release manifest read.
const MAX_INDEX_BYTES: u64 = 16 * 1024 * 1024;

/// The index as cached: where it came from, when, and the document.
#[derive(Clone, Serialize, Deserialize)]
struct CachedFile {
    url: String,
    fetched_at: i64,
    index: serde_json::Value,
}

struct Cached {
    url: String,
    fetched_at: i64,
    index: Index,
}

/// One package the registry installed.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Record {
    #[serde(rename = "type")]
    kind: String,
    version: String,
    category: String,
    sha256: String,
    source: String,
    installed_at: i64,
}

pub struct Registry {
    settings: RwLock<RegistrySettings>,
    data_dir: PathBuf,
    plugins_dir: PathBuf,
    policies_dir: PathBuf,
    plugins: Arc<Plugins>,
    engine: Arc<Engine>,
    cache: Mutex<Option<Arc<Cached>>>,
    /// One install or removal at a time.
    busy: tokio::sync::Mutex<()>,
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn failure(e: RegistryError) -> RegistryFailure {
    let kind = match &e {
        RegistryError::BadRef { .. } => RegistryFailureKind::BadRequest,
        RegistryError::UnknownPackage(_) | RegistryError::UnknownVersion { .. } | RegistryError::NoStable { .. } => {
            RegistryFailureKind::NotFound
        }
        RegistryError::NoCategory { .. }
        | RegistryError::BadCategory { .. }
        | RegistryError::WrongType { .. }
        | RegistryError::NoBinary { .. }
        | RegistryError::Checksum { .. }
        | RegistryError::Handshake { .. }
        | RegistryError::BadPack { .. }
        | RegistryError::BadRelease { .. } => RegistryFailureKind::Refused,
        RegistryError::Download { .. } | RegistryError::Unavailable(_) => RegistryFailureKind::BadGateway,
        RegistryError::NotConfigured => RegistryFailureKind::Conflict,
        RegistryError::Io { .. } => RegistryFailureKind::Internal,
    };
    RegistryFailure {
        kind,
        message: e.to_string(),
    }
}

fn internal(message: impl std::fmt::Display) -> RegistryFailure {
    RegistryFailure {
        kind: RegistryFailureKind::Internal,
        message: message.to_string(),
    }
}

fn kind_name(kind: PackageType) -> &'static str {
    match kind {
        PackageType::Plugin => "plugin",
        PackageType::Policy => "policy",
    }
}

fn lower(v: impl Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl Registry {
    pub fn new(settings: RegistrySettings, data_dir: &Path, plugins: Arc<Plugins>, engine: Arc<Engine>) -> Registry {
        Registry {
            settings: RwLock::new(settings),
            data_dir: data_dir.to_owned(),
            plugins_dir: data_dir.join(crate::paths::PLUGINS_DIR),
            policies_dir: data_dir.join(crate::paths::POLICIES_DIR),
            plugins,
            engine,
            cache: Mutex::new(None),
            busy: tokio::sync::Mutex::new(()),
        }
    }

    /// Applies `[registry]` from a changed configuration.
    pub fn configure(&self, settings: RegistrySettings) {
        let mut current = self.settings.write();
        if *current != settings {
            info!(url = %settings.url, "registry settings changed");
            *current = settings;
        }
    }

    fn fetcher(&self) -> Result<Fetcher, RegistryFailure> {
        let s = self.settings.read();
        Fetcher::new(s.timeout, s.max_bytes).map_err(internal)
    }

    fn cache_path(&self) -> PathBuf {
        self.data_dir.join(INDEX_CACHE_FILE)
    }

    /// The cached index of `url`, from memory or the cache file.
    fn cached(&self, url: &str) -> Option<Arc<Cached>> {
        if let Some(c) = self.cache.lock().as_ref().filter(|c| c.url == url) {
            return Some(c.clone());
        }
        let text = std::fs::read(self.cache_path()).ok()?;
        let file: CachedFile = serde_json::from_slice(&text).ok()?;
        if file.url != url {
            return None;
        }
        let index = Index::parse(file.index.to_string().as_bytes()).ok()?;
        let cached = Arc::new(Cached {
            url: file.url,
            fetched_at: file.fetched_at,
            index,
        });
        *self.cache.lock() = Some(cached.clone());
        Some(cached)
    }

    /// The index: the cache while it is younger than `registry.cache_ttl`
    /// (unless `refresh`), else fetched (and cached); the cache, with a
    /// warning, when the registry cannot be reached.
    async fn index(&self, refresh: bool) -> Result<(Arc<Cached>, bool, Option<String>), RegistryFailure> {
        let (url_text, ttl) = {
            let s = self.settings.read();
            (s.url.clone(), s.cache_ttl)
        };
        if url_text.trim().is_empty() {
            return Err(failure(RegistryError::NotConfigured));
        }
        let url = location(&url_text).map_err(|e| failure(RegistryError::Unavailable(e)))?;
        let key = url.to_string();
        let cached = self.cached(&key);
        if let Some(c) = &cached {
            let age = now().saturating_sub(c.fetched_at).max(0) as u64;
            if !refresh && age < ttl.as_secs() {
                return Ok((c.clone(), true, None));
            }
        }
        let fetched = async {
            let bytes = self.fetcher()?.get(&url, MAX_INDEX_BYTES).await.map_err(failure)?;
            let index = Index::parse(&bytes).map_err(|e| failure(RegistryError::Unavailable(format!("{key}: {e}"))))?;
            let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(internal)?;
            Ok::<_, RegistryFailure>((index, value))
        }
        .await;
        match fetched {
            Ok((index, value)) => {
                for why in &index.skipped {
                    warn!(index = %key, problem = %why, "registry index entry left out");
                }
                let fetched_at = now();
                let file = CachedFile {
                    url: key.clone(),
                    fetched_at,
                    index: value,
                };
                let bytes = serde_json::to_vec(&file).map_err(internal)?;
                if let Err(e) = write_bytes_atomic(&self.cache_path(), &bytes) {
                    warn!(error = %e, "cannot write the registry cache; the index is kept in memory");
                }
                let c = Arc::new(Cached {
                    url: key,
                    fetched_at,
                    index,
                });
                *self.cache.lock() = Some(c.clone());
                Ok((c, false, None))
            }
            Err(e) => match cached {
                Some(c) => {
                    let age = now().saturating_sub(c.fetched_at).max(0);
                    let warning = format!("{}; answering from the cached index fetched {age} s ago", e.message);
                    warn!(%warning, "registry unreachable");
                    Ok((c, true, Some(warning)))
                }
                None => Err(e),
            },
        }
    }

    fn records(&self) -> BTreeMap<String, Record> {
        std::fs::read(self.data_dir.join(INSTALLED_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn set_record(&self, key: &str, record: Option<Record>) -> Result<(), RegistryFailure> {
        let mut all = self.records();
        match record {
            Some(r) => all.insert(key.to_owned(), r),
            None => all.remove(key),
        };
        let bytes = serde_json::to_vec_pretty(&all).map_err(internal)?;
        write_bytes_atomic(&self.data_dir.join(INSTALLED_FILE), &bytes).map_err(internal)
    }

    fn plugin_path(&self, short: &str) -> PathBuf {
        self.plugins_dir.join(format!("{PLUGIN_PREFIX}{short}"))
    }

    fn list_installed(&self) -> Vec<InstalledPackage> {
        let records = self.records();
        let mut out = Vec::new();
        for found in discover(&self.plugins_dir) {
            let key = format!("plugin:{}", found.name);
            let m = found.manifest.as_ref().ok();
            let sha256 = m.map(|m| m.sha256.clone()).unwrap_or_default();
            let record = records.get(&key).filter(|r| r.sha256.eq_ignore_ascii_case(&sha256));
            out.push(InstalledPackage {
                active: self.plugins.state(&found.name) == PluginState::Active,
                category: m.map(|m| lower(m.category)).unwrap_or_default(),
                installed_at: record.map(|r| r.installed_at),
                name: found.name.clone(),
                path: found.path.display().to_string(),
                sha256,
                source: record.map_or_else(|| "local".to_owned(), |r| r.source.clone()),
                kind: "plugin".into(),
                version: m.map(|m| m.version.clone()).unwrap_or_default(),
            });
        }
        let mut packs: Vec<PathBuf> = std::fs::read_dir(&self.policies_dir)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        packs.retain(|p| p.is_dir() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')));
        packs.sort();
        for dir in packs {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let record = records.get(&format!("policy:{name}"));
            let version = match svc_ingest::packs::read_pack(&dir) {
                Ok(info) => info.pack.version,
                Err(_) => String::new(),
            };
            let record = record.filter(|r| r.version == version);
            out.push(InstalledPackage {
                active: !version.is_empty(),
                category: record.map(|r| r.category.clone()).unwrap_or_default(),
                installed_at: record.map(|r| r.installed_at),
                name,
                path: dir.display().to_string(),
                sha256: record.map(|r| r.sha256.clone()).unwrap_or_default(),
                source: record.map_or_else(|| "local".to_owned(), |r| r.source.clone()),
                kind: "policy".into(),
                version,
            });
        }
        out
    }

    /// The package `reference` names, with the URL its relative URLs
    /// resolve against and where it came from.
    async fn resolve(&self, reference: &PackageRef) -> Result<(Package, Url, String), RegistryFailure> {
        if reference.owner.is_some() {
            let template = self.settings.read().release_url.clone();
            let text = reference.release_url(&template);
            let bad = |reason: String| {
                failure(RegistryError::BadRelease {
                    reference: reference.to_string(),
                    url: text.clone(),
                    reason,
                })
            };
            let url = location(&text).map_err(bad)?;
            let bytes = self.fetcher()?.get(&url, MAX_INDEX_BYTES).await.map_err(failure)?;
            let pkg: Package = serde_json::from_slice(&bytes).map_err(|e| bad(format!("not a manifest: {e}")))?;
            if pkg.short_name() != short_name(&reference.name) || Some(&pkg.version) != reference.version.as_ref() {
                return Err(bad(format!("it describes {} {}", pkg.name, pkg.version)));
            }
            let source = format!("release {reference} {url}");
            return Ok((pkg, url, source));
        }
        let version = reference.version.as_deref();
        let (cached, from_cache, _) = self.index(false).await?;
        let found = cached.index.resolve(&reference.name, version).cloned();
        let (cached, found) = match found {
            // A fresh cache may predate the package: look again.
            Err(_) if from_cache => {
                let (fresh, _, _) = self.index(true).await?;
                let found = fresh.index.resolve(&reference.name, version).cloned();
                (fresh, found)
            }
            other => (cached, other),
        };
        let pkg = found.map_err(failure)?;
        let url = Url::parse(&cached.url).map_err(internal)?;
        let source = format!("registry {}", cached.url);
        Ok((pkg, url, source))
    }

    fn append(&self, event: NewEvent) -> Result<(), RegistryFailure> {
        // A durable commit: off the async workers' turn.
        tokio::task::block_in_place(|| self.engine.ledger().append_one(event))
            .map(|_| ())
            .map_err(|e| internal(format!("the ledger cannot record it: {e}")))
    }

    async fn install_plugin(
        &self,
        pkg: Package,
        base: Url,
        source: String,
        request: &InstallRequest,
        actor: &str,
    ) -> Result<InstallOutcome, RegistryFailure> {
        let short = pkg.short_name().to_owned();
        let target = self.plugin_path(&short);
        let mpath = manifest_path(&target);
        let previous = if target.exists() {
            let manifest = std::fs::read_to_string(&mpath)
                .map_err(|e| e.to_string())
                .and_then(|t| Manifest::from_yaml(&t));
            let verified = verify(&target, &manifest);
            let version = manifest.as_ref().map(|m| m.version.clone()).ok();
            match verified {
                Ok(()) if version.as_deref() == Some(pkg.version.as_str()) => {
                    let activated = request.activate && self.activate(&short, true)?;
                    let package = self.installed_one("plugin", &short)?;
                    return Ok(InstallOutcome {
                        changed: activated,
                        message: format!(
                            "{} {} is installed already{}",
                            pkg.name,
                            pkg.version,
                            if activated { "; activated" } else { "" }
                        ),
                        package,
                        previous_version: version,
                    });
                }
                Err(e) if !request.force => {
                    return Err(RegistryFailure {
                        kind: RegistryFailureKind::Conflict,
                        message: format!(
                            "installed plugin {short} fails verification ({e}); install with force to replace it"
                        ),
                    });
                }
                _ => version,
            }
        } else {
            None
        };
        let staged = stage_plugin(
            &self.fetcher()?,
            &pkg,
            &base,
            &self.plugins_dir,
            &LaunchOptions::default(),
        )
        .await
        .map_err(failure)?;
        let yaml = staged.manifest.to_yaml().map_err(internal)?;
        let sha256 = staged.manifest.sha256.clone();
        let category = lower(staged.category);
        // The previous files are kept until the install is recorded.
        let backup = self.plugins_dir.join(format!(".{PLUGIN_PREFIX}{short}.previous"));
        let backup_manifest = manifest_path(&backup);
        let _ = std::fs::remove_file(&backup);
        let _ = std::fs::remove_file(&backup_manifest);
        if target.exists() {
            std::fs::hard_link(&target, &backup).map_err(internal)?;
            if mpath.exists() {
                std::fs::copy(&mpath, &backup_manifest).map_err(internal)?;
            }
        }
        let undo = || {
            if backup.exists() {
                let _ = std::fs::rename(&backup, &target);
                let _ = std::fs::rename(&backup_manifest, &mpath);
            } else {
                let _ = std::fs::remove_file(&target);
                let _ = std::fs::remove_file(&mpath);
            }
        };
        let placed = write_bytes_atomic(&mpath, yaml.as_bytes())
            .map_err(internal)
            .and_then(|()| {
                staged
                    .binary
                    .persist(&target)
                    .map(|_| ())
                    .map_err(|e| internal(e.error))
            });
        if let Err(e) = placed {
            undo();
            return Err(e);
        }
        let event = NewEvent::of(
            None,
            actor,
            format!("{actor} installed plugin {short} {} from {source}", pkg.version),
            &RegistryInstall {
                name: short.clone(),
                kind: "plugin".into(),
                version: pkg.version.clone(),
                category: category.clone(),
                sha256: sha256.clone(),
                source: source.clone(),
                actor: actor.to_owned(),
                previous_version: previous.clone(),
                activated: request.activate,
            },
        );
        if let Err(e) = self.append(event) {
            undo();
            return Err(e);
        }
        let _ = std::fs::remove_file(&backup);
        let _ = std::fs::remove_file(&backup_manifest);
        let record = Record {
            kind: "plugin".into(),
            version: pkg.version.clone(),
            category,
            sha256,
            source,
            installed_at: now(),
        };
        if let Err(e) = self.set_record(&format!("plugin:{short}"), Some(record)) {
            warn!(error = %e, "cannot write the registry's record of installs");
        }
        // A replaced binary may serve another role: discovered afresh.
        self.plugins.reload(&short);
        let activated = request.activate && self.activate(&short, true)?;
        info!(plugin = %short, version = %pkg.version, activated, "plugin installed from the registry");
        Ok(InstallOutcome {
            changed: true,
            message: format!(
                "installed plugin {short} {}{}",
                pkg.version,
                if activated {
                    "; activated: scanned from the next scan"
                } else if request.activate {
                    "; active already"
                } else {
                    "; turn it on with `svc plugins toggle` or install with activate"
                }
            ),
            package: self.installed_one("plugin", &short)?,
            previous_version: previous,
        })
    }

    async fn install_pack(
        &self,
        pkg: Package,
        base: Url,
        source: String,
        actor: &str,
    ) -> Result<InstallOutcome, RegistryFailure> {
        let name = pkg.short_name().to_owned();
        let target = self.policies_dir.join(&name);
        let previous = svc_ingest::packs::read_pack(&target).ok().map(|i| i.pack.version);
        let staged = stage_pack(&self.fetcher()?, &pkg, &base, &self.policies_dir)
            .await
            .map_err(failure)?;
        let key = format!("policy:{name}");
        if previous.as_deref() == Some(pkg.version.as_str())
            && self.records().get(&key).is_some_and(|r| r.sha256 == staged.sha256)
        {
            return Ok(InstallOutcome {
                changed: false,
                message: format!("policy pack {name} {} is installed already", pkg.version),
                package: self.installed_one("policy", &name)?,
                previous_version: previous,
            });
        }
        let category = lower(staged.category);
        let backup = self.policies_dir.join(format!(".{name}.previous"));
        if backup.exists() {
            std::fs::remove_dir_all(&backup).map_err(internal)?;
        }
        if target.exists() {
            std::fs::rename(&target, &backup).map_err(internal)?;
        }
        let undo = || {
            let _ = std::fs::remove_dir_all(&target);
            if backup.exists() {
                let _ = std::fs::rename(&backup, &target);
            }
        };
        if let Err(e) = svc_ingest::packs::install(&staged.path(), &self.policies_dir) {
            undo();
            return Err(internal(e));
        }
        let rules = staged.info.pack.rules.len();
        let event = NewEvent::of(
            None,
            actor,
            format!(
                "{actor} installed policy pack {name} {} ({rules} rules) from {source}",
                pkg.version
            ),
            &RegistryInstall {
                name: name.clone(),
                kind: "policy".into(),
                version: pkg.version.clone(),
                category: category.clone(),
                sha256: staged.sha256.clone(),
                source: source.clone(),
                actor: actor.to_owned(),
                previous_version: previous.clone(),
                activated: true,
            },
        );
        if let Err(e) = self.append(event) {
            undo();
            return Err(e);
        }
        let _ = std::fs::remove_dir_all(&backup);
        let record = Record {
            kind: "policy".into(),
            version: pkg.version.clone(),
            category,
            sha256: staged.sha256.clone(),
            source,
            installed_at: now(),
        };
        if let Err(e) = self.set_record(&key, Some(record)) {
            warn!(error = %e, "cannot write the registry's record of installs");
        }
        info!(pack = %name, version = %pkg.version, rules, "policy pack installed from the registry");
        Ok(InstallOutcome {
            changed: true,
            message: format!(
                "installed policy pack {name} {} ({rules} rules); evaluated from the next scan",
                pkg.version
            ),
            package: self.installed_one("policy", &name)?,
            previous_version: previous,
        })
    }

    /// Sets a plugin's active flag (persisted); whether it changed.
    fn activate(&self, name: &str, active: bool) -> Result<bool, RegistryFailure> {
        tokio::task::block_in_place(|| self.plugins.set_active(name, active)).map_err(internal)
    }

    fn installed_one(&self, kind: &str, name: &str) -> Result<InstalledPackage, RegistryFailure> {
        self.list_installed()
            .into_iter()
            .find(|p| p.kind == kind && p.name == name)
            .ok_or_else(|| internal(format!("{kind} {name} is not where it was installed")))
    }

    async fn do_install(&self, request: InstallRequest, actor: &str) -> Result<InstallOutcome, RegistryFailure> {
        let reference = PackageRef::parse(&request.name).map_err(failure)?;
        let _busy = self.busy.lock().await;
        let (pkg, base, source) = self.resolve(&reference).await?;
        match pkg.kind {
            PackageType::Plugin => self.install_plugin(pkg, base, source, &request, actor).await,
            PackageType::Policy if request.plugins_only => Err(failure(RegistryError::WrongType {
                name: pkg.name,
                want: "plugin",
            })),
            PackageType::Policy => self.install_pack(pkg, base, source, actor).await,
        }
    }

    async fn do_remove(&self, name: &str, actor: &str) -> Result<InstalledPackage, RegistryFailure> {
        let _busy = self.busy.lock().await;
        let short = short_name(name.trim()).to_owned();
        let all = self.list_installed();
        let package = all
            .iter()
            .find(|p| p.kind == "plugin" && p.name == short)
            .or_else(|| all.iter().find(|p| p.kind == "policy" && p.name == name.trim()))
            .cloned()
            .ok_or_else(|| RegistryFailure {
                kind: RegistryFailureKind::NotFound,
                message: format!("no installed plugin or policy pack named {name:?}"),
            })?;
        let removed = if package.kind == "plugin" {
            self.activate(&package.name, false)?;
            let target = self.plugin_path(&package.name);
            std::fs::remove_file(&target)
                .map_err(internal)
                .and_then(|()| match std::fs::remove_file(manifest_path(&target)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(internal(e)),
                    _ => Ok(()),
                })
                .inspect(|()| self.plugins.forget(&package.name))
        } else {
            std::fs::remove_dir_all(self.policies_dir.join(&package.name)).map_err(internal)
        };
        removed?;
        let _ = self.set_record(&format!("{}:{}", package.kind, package.name), None);
        let sha256 = if package.sha256.is_empty() && package.kind == "plugin" {
            sha256_file(Path::new(&package.path)).unwrap_or_default()
        } else {
            package.sha256.clone()
        };
        self.append(NewEvent::of(
            None,
            actor,
            format!("{actor} removed {} {} {}", package.kind, package.name, package.version),
            &RegistryRemove {
                name: package.name.clone(),
                kind: package.kind.clone(),
                version: package.version.clone(),
                category: package.category.clone(),
                sha256,
                source: package.source.clone(),
                actor: actor.to_owned(),
            },
        ))?;
        info!(kind = %package.kind, name = %package.name, "package removed");
        Ok(package)
    }

    async fn do_search(&self, q: &str, refresh: bool) -> Result<RegistryListing, RegistryFailure> {
        let (cached, from_cache, warning) = self.index(refresh).await?;
        let installed = self.list_installed();
        let q = q.trim().to_lowercase();
        let mut packages: Vec<&Package> = cached.index.packages.iter().filter(|p| p.matches(&q)).collect();
        packages.sort_by(|a, b| {
            a.name.cmp(&b.name).then_with(|| {
                match (
                    svc_ingest::registry::Version::parse(&a.version),
                    svc_ingest::registry::Version::parse(&b.version),
                ) {
                    (Ok(x), Ok(y)) => x.cmp(&y),
                    _ => a.version.cmp(&b.version),
                }
            })
        });
        let rows = packages
            .into_iter()
            .map(|p| {
                let kind = kind_name(p.kind);
                let latest = cached
                    .index
                    .resolve(&p.name, None)
                    .is_ok_and(|l| l.version == p.version);
                let problem = p
                    .category()
                    .err()
                    .or_else(|| {
                        (p.kind == PackageType::Plugin)
                            .then(|| svc_ingest::registry::stage::binary_for_host(p).err())
                            .flatten()
                    })
                    .map(|e| e.to_string());
                RegistryPackage {
                    category: p.category.clone(),
                    description: p.description.clone(),
                    author: p.author.clone(),
                    installed_version: installed
                        .iter()
                        .find(|i| i.kind == kind && i.name == p.short_name())
                        .map(|i| i.version.clone()),
                    problem,
                    pricing_model: lower(p.pricing.model),
                    price_usd: p.pricing.price_usd,
                    name: p.name.clone(),
                    role: (p.kind == PackageType::Plugin).then(|| lower(p.role)),
                    latest,
                    kind: kind.into(),
                    version: p.version.clone(),
                }
            })
            .collect();
        Ok(RegistryListing {
            age_seconds: now().saturating_sub(cached.fetched_at).max(0) as u64,
            fetched_at: cached.fetched_at,
            from_cache,
            packages: rows,
            skipped: cached.index.skipped.clone(),
            source: cached.url.clone(),
            warning,
        })
    }
}

impl PackageRegistry for Registry {
    fn search<'a>(&'a self, q: &'a str, refresh: bool) -> RegistryFuture<'a, RegistryListing> {
        Box::pin(self.do_search(q, refresh))
    }

    fn installed(&self) -> RegistryFuture<'_, Vec<InstalledPackage>> {
        Box::pin(async move { Ok(self.list_installed()) })
    }

    fn install<'a>(&'a self, request: InstallRequest, actor: &'a str) -> RegistryFuture<'a, InstallOutcome> {
        Box::pin(self.do_install(request, actor))
    }

    fn remove<'a>(&'a self, name: &'a str, actor: &'a str) -> RegistryFuture<'a, InstalledPackage> {
        Box::pin(self.do_remove(name, actor))
    }
}
