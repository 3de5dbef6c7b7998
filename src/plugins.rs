//! The daemon's plugins: discovered at start in `$SVC_DATA_DIR/plugins`,
//! verified, and turned into scan sources when they are in `plugins.active`.
//! Toggling a plugin rewrites `plugins.active` in `config.toml` and takes
//! effect from the next scan.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use parking_lot::Mutex;
use svc_api::plugins::{PluginCatalog, PluginInfo, ToggleError};
use svc_engine::Engine;
use svc_engine::heuristics::Analyzer;
use svc_engine::scan::Source;
use svc_engine::store::atomic::write_atomic;
use svc_ingest::host::{
    Category, Discovered, HeuristicPlugin, Integrity, Manifest, PLUGIN_PREFIX, PluginSource, Role, SourceOptions,
    discover, write_manifest_for,
};
use tokio::runtime::Handle;
use tracing::{info, warn};

/// Makes a fresh non-plugin source (the mock estate) whenever sources are rebuilt.
pub type MakeSource = Box<dyn Fn() -> Box<dyn Source> + Send + Sync>;

/// One discovered plugin, whether it is active, and its integrity check.
struct Entry {
    found: Discovered,
    active: bool,
    /// Its integrity check, run at start, before each launch and when the
    /// plugins are listed.
    integrity: Arc<Integrity>,
}

impl Entry {
    /// A plugin just found, checked, and active when `active` names it.
    fn new(found: Discovered, active: &[String]) -> Entry {
        let integrity = Arc::new(Integrity::default());
        match integrity.check(&found.path) {
            Ok(_) => info!(plugin = %found.name, path = %found.path.display(), "plugin discovered and verified"),
            Err(e) => warn!(plugin = %found.name, problem = %e, "plugin discovered but not usable"),
        }
        let active = active.contains(&found.name);
        Entry {
            found,
            active,
            integrity,
        }
    }
}

/// Whether a plugin is installed, and active.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PluginState {
    /// No `svc-plugin-<name>` in the plugin directory (listed in
    /// `plugins.active` or not).
    NotInstalled,
    /// Installed, not in `plugins.active`.
    Inactive,
    /// Installed and in `plugins.active` (its integrity is checked at each launch).
    Active,
}

/// The plugin catalog the API lists and toggles.
pub struct Plugins {
    entries: Mutex<Vec<Entry>>,
    /// The plugin directory, looked at again for plugins installed since.
    dir: PathBuf,
    config_path: PathBuf,
    engine: Arc<Engine>,
    handle: Handle,
    /// The mock estate stays a source when the daemon runs with it.
    extra: Mutex<Vec<MakeSource>>,
    /// The sources scan workers run (`[workers]`, [`crate::workers`]).
    remote: Mutex<Vec<MakeSource>>,
    /// The mock estate when no credentials were found: a source until a
    /// provider plugin is first asked for ([`Plugins::apply`]).
    fallback: Mutex<Option<MakeSource>>,
    /// `plugins.active` as configured, names not installed included.
    wanted: Mutex<Vec<String>>,
}

fn role_name(m: &Result<Manifest, String>) -> &'static str {
    match m.as_ref().map(|m| m.role) {
        Ok(Role::Heuristic) => "heuristic",
        _ => "provider",
    }
}

fn lower(v: impl serde::Serialize, default: &str) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| default.to_owned())
}

/// A colour per category when the manifest names none.
fn default_color(category: &str) -> &'static str {
    match category {
        "cloud" => "#2563eb",
        "database" => "#16a34a",
        "infrastructure" => "#9333ea",
        "saas" => "#db2777",
        "iot" => "#ea580c",
        "devops" => "#0891b2",
        _ => "#6b7280",
    }
}

impl Plugins {
    /// Discovers and verifies the plugins in `dir`; `active` is `plugins.active`.
    pub fn discover(
        dir: &Path,
        config_path: PathBuf,
        active: &[String],
        engine: Arc<Engine>,
        handle: Handle,
    ) -> Plugins {
        let entries: Vec<Entry> = discover(dir)
            .into_iter()
            .map(|found| Entry::new(found, active))
            .collect();
        for name in active {
            if !entries.iter().any(|e| &e.found.name == name) {
                warn!(plugin = %name, dir = %dir.display(),
                    "plugins.active names a plugin that is not installed: it is not scanned; install it with \
                     `svc plugins install-local PATH/svc-plugin-{name}`");
            }
        }
        Plugins {
            entries: Mutex::new(entries),
            dir: dir.to_owned(),
            config_path,
            engine,
            handle,
            extra: Mutex::new(Vec::new()),
            remote: Mutex::new(Vec::new()),
            fallback: Mutex::new(None),
            wanted: Mutex::new(active.to_vec()),
        }
    }

    /// The scan configuration of a plugin source.
    pub fn set_scan_config(&self, name: &str, config: std::collections::BTreeMap<String, String>) {
        self.engine.set_source_config(name, config);
    }

    /// Adds the plugins installed in the directory since it was last looked
    /// at (`svc plugins install-local` while the daemon runs), active when
    /// `plugins.active` names them; their sources are rebuilt when one is.
    /// Runs as each scan starts, and when the plugins are listed, toggled
    /// or configured.
    pub fn rediscover(&self) {
        let active_added = {
            let mut entries = self.entries.lock();
            let wanted = self.wanted.lock().clone();
            let mut active_added = false;
            for found in discover(&self.dir) {
                if entries.iter().any(|e| e.found.name == found.name) {
                    continue;
                }
                let entry = Entry::new(found, &wanted);
                active_added |= entry.active;
                entries.push(entry);
            }
            entries.sort_by(|a, b| a.found.name.cmp(&b.found.name));
            active_added
        };
        if active_added {
            self.apply();
        }
    }

    /// Sets plugin `name`'s active flag as a toggle does (persisted in
    /// `plugins.active`); whether it changed.
    pub fn set_active(&self, name: &str, active: bool) -> Result<bool, ToggleError> {
        self.rediscover();
        let now = match self.state(name) {
            PluginState::NotInstalled => return Err(ToggleError::NotFound(name.to_owned())),
            state => state == PluginState::Active,
        };
        if now == active {
            return Ok(false);
        }
        self.toggle(name)?;
        Ok(true)
    }

    /// Drops plugin `name` from the catalog (its binary removed); the
    /// sources are rebuilt without it.
    pub fn forget(&self, name: &str) {
        let was_active = {
            let mut entries = self.entries.lock();
            let before = entries.iter().any(|e| e.found.name == name && e.active);
            entries.retain(|e| e.found.name != name);
            before
        };
        if was_active {
            self.apply();
        }
    }

    /// Discovers plugin `name` afresh (its binary and manifest replaced),
    /// active as before.
    pub fn reload(&self, name: &str) {
        let was_active = {
            let mut entries = self.entries.lock();
            let before = entries.iter().any(|e| e.found.name == name && e.active);
            entries.retain(|e| e.found.name != name);
            before
        };
        self.rediscover();
        if was_active && self.state(name) != PluginState::Active {
            self.apply();
        }
    }

    /// Keeps a non-plugin source (the mock estate) among the sources.
    pub fn keep_source(&self, make: MakeSource) {
        self.extra.lock().push(make);
    }

    /// Replaces the sources scan workers run; from the next scan on.
    pub fn set_remote_sources(&self, make: Vec<MakeSource>) {
        *self.remote.lock() = make;
        self.apply();
    }

    /// The source scanned until a provider plugin is asked for (the mock
    /// estate, when the daemon found no cloud credentials): from then on,
    /// for the rest of the run, it is not, so a simulated estate never
    /// mixes with, or retires, what a real provider reported.
    pub fn set_fallback(&self, make: MakeSource) {
        *self.fallback.lock() = Some(make);
    }

    /// Whether plugin `name` is installed, and active.
    pub fn state(&self, name: &str) -> PluginState {
        match self.entries.lock().iter().find(|e| e.found.name == name) {
            None => PluginState::NotInstalled,
            Some(e) if e.active => PluginState::Active,
            Some(_) => PluginState::Inactive,
        }
    }

    /// Whether a provider plugin is asked for: one in `plugins.active`,
    /// whether or not it passes its integrity check, a name there that
    /// is not installed (its role unknown, it is taken for a provider), or
    /// a source a scan worker runs.
    pub fn provider_asked(&self) -> bool {
        if !self.remote.lock().is_empty() {
            return true;
        }
        let entries = self.entries.lock();
        let installed_provider = entries
            .iter()
            .any(|e| e.active && role_name(&e.found.manifest) == "provider");
        let missing = self
            .wanted
            .lock()
            .iter()
            .any(|name| !entries.iter().any(|e| &e.found.name == name));
        installed_provider || missing
    }

    /// Applies `plugins.active` and every plugin's scan settings from the
    /// configuration, at start and whenever it changes through the API:
    /// from the next scan on.
    pub fn configure(&self, config: &crate::config::PluginsConfig) {
        self.rediscover();
        // Plugins not installed yet get theirs too, for when they are.
        let mut names: Vec<String> = self.entries.lock().iter().map(|e| e.found.name.clone()).collect();
        names.extend(config.config.keys().cloned());
        names.sort_unstable();
        names.dedup();
        for name in &names {
            self.set_scan_config(name, config.scan_config(name));
        }
        let changed = {
            let mut entries = self.entries.lock();
            let mut changed = *self.wanted.lock() != config.active;
            for e in entries.iter_mut() {
                let active = config.active.contains(&e.found.name);
                if e.active != active {
                    e.active = active;
                    changed = true;
                    info!(plugin = %e.found.name, active, "plugin activation changed by the configuration");
                }
            }
            changed
        };
        if changed {
            *self.wanted.lock() = config.active.clone();
            self.apply();
        }
    }

    /// Gives the engine one source per active provider plugin, plus the
    /// kept sources, and one analyzer per active heuristic plugin. Each
    /// binary's integrity is checked before each launch, so a plugin that
    /// failed its check at start fails its scans with the reason (and its
    /// resources stay as they were) until it is installed again.
    pub fn apply(&self) {
        let mut sources: Vec<Box<dyn Source>> = self.extra.lock().iter().map(|make| make()).collect();
        sources.extend(self.remote.lock().iter().map(|make| make()));
        {
            let mut fallback = self.fallback.lock();
            if self.provider_asked() {
                // For good: scans stay with the providers asked for, and
                // find nothing if they are all turned off again.
                if fallback.take().is_some() {
                    info!("a provider plugin is active: the simulated estate is no longer scanned");
                }
            } else if let Some(make) = &*fallback {
                warn!("mock mode: no cloud credentials and no active plugins found; scanning a simulated estate");
                sources.push(make());
            }
        }
        let mut analyzers: Vec<Box<dyn Analyzer>> = Vec::new();
        for e in self.entries.lock().iter() {
            if !e.active {
                continue;
            }
            // Timeouts and limits come with each scan (Engine::set_scan_limits).
            let mut opts = SourceOptions::default();
            opts.launch.integrity = Some(e.integrity.clone());
            opts.launch.env = crate::telemetry::plugin_env();
            let path = e.found.path.clone();
            match role_name(&e.found.manifest) {
                "heuristic" => analyzers.push(Box::new(HeuristicPlugin::new(path, opts, self.handle.clone()))),
                _ => sources.push(Box::new(PluginSource::new(path, opts, self.handle.clone()))),
            }
        }
        let names: Vec<String> = sources.iter().map(|s| s.name().to_owned()).collect();
        let heuristics: Vec<String> = analyzers.iter().map(|a| a.name().to_owned()).collect();
        info!(sources = ?names, heuristics = ?heuristics, "scan sources and heuristic plugins");
        self.engine.set_sources(sources);
        self.engine.set_analyzers(analyzers);
    }

    fn info(e: &Entry) -> PluginInfo {
        let m = e.found.manifest.as_ref().ok();
        let category = m.map(|m| lower(m.category, "cloud")).unwrap_or_else(|| "cloud".into());
        PluginInfo {
            name: e.found.name.clone(),
            display_name: m
                .and_then(|m| m.display_name.clone())
                .unwrap_or_else(|| e.found.name.clone()),
            color: m
                .and_then(|m| m.color.clone())
                .unwrap_or_else(|| default_color(&category).into()),
            category,
            path: e.found.path.display().to_string(),
            active: e.active,
            role: role_name(&e.found.manifest).into(),
            // As it is now: a binary installed again since the start
            // shows (and is used) as verified.
            status: match e.integrity.check(&e.found.path) {
                Ok(_) => "verified".into(),
                Err(problem) => problem.to_string(),
            },
        }
    }

    /// Rewrites `plugins.active` in the configuration file, keeping the rest.
    fn persist(&self, active: &[String]) -> anyhow::Result<()> {
        persist_active(&self.config_path, active)
    }
}

/// Sets `plugins.active` in the configuration file at `config_path`, as an
/// edit of the file that keeps everything else as the operator wrote it.
fn persist_active(config_path: &Path, active: &[String]) -> anyhow::Result<()> {
    let mut plugins = serde_json::Map::new();
    plugins.insert("active".into(), serde_json::Value::from(active.to_vec()));
    let mut patch = serde_json::Map::new();
    patch.insert("plugins".into(), serde_json::Value::Object(plugins));
    crate::settings::edit(config_path, &patch)?;
    Ok(())
}

impl PluginCatalog for Plugins {
    fn list(&self) -> Vec<PluginInfo> {
        self.rediscover();
        self.entries.lock().iter().map(Plugins::info).collect()
    }

    fn toggle(&self, name: &str) -> Result<PluginInfo, ToggleError> {
        self.rediscover();
        let (info, active) = {
            let mut entries = self.entries.lock();
            let Some(e) = entries.iter_mut().find(|e| e.found.name == name) else {
                return Err(ToggleError::NotFound(name.to_owned()));
            };
            e.active = !e.active;
            let info = Plugins::info(e);
            // Names not installed stay listed, as the operator wrote them.
            let mut active: Vec<String> = self
                .wanted
                .lock()
                .iter()
                .filter(|n| !entries.iter().any(|e| &e.found.name == *n))
                .cloned()
                .collect();
            active.extend(entries.iter().filter(|e| e.active).map(|e| e.found.name.clone()));
            (info, active)
        };
        if let Err(e) = self.persist(&active) {
            // Undo in memory so the list matches the file.
            if let Some(entry) = self.entries.lock().iter_mut().find(|e| e.found.name == name) {
                entry.active = !entry.active;
            }
            return Err(ToggleError::Failed(format!("{e:#}")));
        }
        *self.wanted.lock() = active;
        info!(plugin = name, active = info.active, "plugin toggled");
        self.apply();
        Ok(info)
    }
}

/// `svc plugins install-local PATH`: copies the binary to
/// `$SVC_DATA_DIR/plugins/svc-plugin-<name>` (mode 0755) and writes its
/// manifest with the binary's SHA-256.
pub fn install_local(path: &Path, name: Option<&str>, category: &str, role: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or_default();
    let name = match name {
        Some(n) => n.to_owned(),
        None => file.strip_prefix(PLUGIN_PREFIX).unwrap_or(file).to_owned(),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        anyhow::bail!("invalid plugin name {name:?}: use letters, digits, '-' and '_' (or pass --name)");
    }
    let category: Category = serde_json::from_value(serde_json::Value::String(category.to_owned())).map_err(|_| {
        anyhow::anyhow!("unknown category {category:?}: cloud, database, infrastructure, saas, iot, devops or security")
    })?;
    let role: Role = serde_json::from_value(serde_json::Value::String(role.to_owned()))
        .map_err(|_| anyhow::anyhow!("unknown role {role:?}: provider or heuristic"))?;
    let dir = crate::paths::data_dir().join(crate::paths::PLUGINS_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let target = dir.join(format!("{PLUGIN_PREFIX}{name}"));
    write_atomic(&target, |f| {
        std::io::copy(&mut std::fs::File::open(path)?, f)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o755))
    })
    .with_context(|| format!("cannot install {} as {}", path.display(), target.display()))?;
    let manifest = write_manifest_for(&target, &name, role, category)?;
    println!(
        "installed {} (sha256 {}); unless it is active already, turn it on with `svc plugins toggle {name}` \
         or list it in plugins.active: a running daemon uses it from its next scan",
        target.display(),
        manifest.sha256
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn persisted(start: Option<&str>, active: &[&str]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        if let Some(text) = start {
            std::fs::write(&path, text).unwrap();
        }
        let active: Vec<String> = active.iter().map(|&a| a.to_owned()).collect();
        persist_active(&path, &active).unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        let config = Config::validate_text(&written).unwrap();
        assert_eq!(config.plugins.active, active, "{written}");
        written
    }

    #[test]
    fn toggling_keeps_the_operators_comments_and_order() {
        let start = r#"# plugins first on this host
[plugins]
# the team's accounts; gcp comes next quarter
active = ["aws"]   # keep in step with the credentials

[plugins.config.aws]
region = "eu-west-1" # the only region we use

[daemon]
scan_interval = "10m"
"#;
        assert_eq!(
            persisted(Some(start), &["aws", "gcp"]),
            start.replace(r#"["aws"]"#, r#"["aws", "gcp"]"#)
        );
        let start = "plugins.active = [\"aws\"] # dotted\nplugins.config.aws.region = \"eu-west-1\"\n";
        assert_eq!(persisted(Some(start), &[]), start.replace("[\"aws\"]", "[]"));
        let start = "# inline\nplugins = { config = { aws = { region = \"eu-west-1\" } } }\n";
        assert_eq!(
            persisted(Some(start), &["aws"]),
            "# inline\nplugins = { config = { aws = { region = \"eu-west-1\" } }, active = [\"aws\"] }\n"
        );
    }

    #[test]
    fn toggling_without_a_file_writes_one() {
        assert_eq!(persisted(None, &["aws"]), "[plugins]\nactive = [\"aws\"]\n");
        assert_eq!(
            persisted(Some("# nothing yet\n"), &["aws"]),
            "# nothing yet\n\n[plugins]\nactive = [\"aws\"]\n"
        );
    }

    #[test]
    fn toggling_leaves_an_invalid_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        for bad in ["plugins = 3\n", "[plugins\nactive = []\n"] {
            std::fs::write(&path, bad).unwrap();
            assert!(persist_active(&path, &["aws".to_owned()]).is_err(), "{bad}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), bad);
        }
    }
}
