//! Policy packs (SPEC 2.7, 2.8, 3.6): a directory with a `manifest.yaml`
//! (the registry manifest, `type: policy`) and YAML rule files, each
//! `rules: [{id, condition, action, message, mode?}]`. Installing copies
//! the pack into `$SVC_DATA_DIR/policies/<name>/`; the daemon reads that
//! directory at every scan ([`PackDir`]), so an installed pack is
//! evaluated from the next scan. Its rules are named `<pack>/<id>`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use svc_engine::policy::{Action, Mode, Origin, Pack, PackSource, RuleSpec, check_spec};
use thiserror::Error;
use tracing::warn;

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.yaml";
/// Largest manifest or rule file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

#[derive(Debug, Error)]
pub enum PackError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

fn invalid(path: &Path, message: impl Into<String>) -> PackError {
    PackError::Invalid {
        path: path.to_owned(),
        message: message.into(),
    }
}

#[derive(Deserialize)]
struct Manifest {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    version: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    author: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    rules: Vec<RuleEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleEntry {
    id: String,
    condition: String,
    action: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    mode: Option<String>,
}

/// A pack read from disk, with its manifest's description and author.
#[derive(Clone, Debug)]
pub struct PackInfo {
    pub pack: Pack,
    pub description: String,
    pub author: String,
}

fn read_small(path: &Path) -> Result<String, PackError> {
    let io = |source| PackError::Io {
        path: path.to_owned(),
        source,
    };
    // Not followed: a link could make the daemon read (and report on) any
    // file it may read.
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(invalid(
            path,
            "not a regular file (a pack holds regular files only, no links)",
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(invalid(path, format!("larger than {MAX_FILE_BYTES} bytes")));
    }
    std::fs::read_to_string(path).map_err(io)
}

/// Whether `p` is a regular file, not following a link.
fn regular_file(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file())
}

/// A YAML error of a pack file without what the file says: its location
/// and kind, every quoted value left out, so a file that is not a pack
/// (a link or a mistake naming a secret) is never echoed into the log.
fn yaml_error(e: &serde_yaml_ng::Error) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in e.to_string().chars() {
        match (c, quoted) {
            ('"' | '`', false) => {
                quoted = true;
                out.push_str("\"...\"");
            }
            ('"' | '`', true) => quoted = false,
            (_, true) => {}
            (c, false) => out.push(c),
        }
    }
    out.chars().take(200).collect()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Reads and checks a pack: the manifest, then every `*.yaml`/`*.yml` file
/// but the manifest, in name order; every rule must compile.
pub fn read_pack(dir: &Path) -> Result<PackInfo, PackError> {
    let manifest_path = dir.join(MANIFEST);
    let m = manifest(&manifest_path, &read_small(&manifest_path)?)?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| PackError::Io {
            path: dir.to_owned(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            regular_file(p)
                && p.file_name().is_some_and(|n| n != MANIFEST)
                && p.extension().is_some_and(|x| x == "yaml" || x == "yml")
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(no_rule_files(dir));
    }
    let mut rules = Vec::new();
    for f in &files {
        rules_of(&m, f, &read_small(f)?, &mut rules)?;
    }
    Ok(pack_info(m, rules))
}

/// [`read_pack`] on texts already read: the manifest's, and each rule
/// file's with its path, in name order. For the fuzz targets.
#[doc(hidden)]
pub fn parse_pack(dir: &Path, manifest_text: &str, files: &[(PathBuf, String)]) -> Result<PackInfo, PackError> {
    let m = manifest(&dir.join(MANIFEST), manifest_text)?;
    if files.is_empty() {
        return Err(no_rule_files(dir));
    }
    let mut rules = Vec::new();
    for (f, text) in files {
        rules_of(&m, f, text, &mut rules)?;
    }
    Ok(pack_info(m, rules))
}

fn no_rule_files(dir: &Path) -> PackError {
    invalid(dir, "no rule files (*.yaml) beside the manifest")
}

/// The manifest `text` of the file at `path`, checked.
fn manifest(path: &Path, text: &str) -> Result<Manifest, PackError> {
    let m: Manifest =
        serde_yaml_ng::from_str(text).map_err(|e| invalid(path, format!("not a pack manifest: {}", yaml_error(&e))))?;
    if m.kind != "policy" {
        return Err(invalid(
            path,
            format!("type is {:?}; a policy pack has type \"policy\"", m.kind),
        ));
    }
    if !valid_name(&m.name) {
        return Err(invalid(
            path,
            format!("name {:?}: use 1 to 64 lowercase letters, digits, '-' or '_'", m.name),
        ));
    }
    if !m.version.starts_with('v') {
        return Err(invalid(path, format!("version {:?} needs a leading 'v'", m.version)));
    }
    Ok(m)
}

/// Adds the rules of the rule file `f`, whose text is `text`, to `rules`:
/// each must compile, and no id may be there already.
fn rules_of(m: &Manifest, f: &Path, text: &str, rules: &mut Vec<RuleSpec>) -> Result<(), PackError> {
    let origin = Origin::Pack(m.name.clone());
    let parsed: RuleFile =
        serde_yaml_ng::from_str(text).map_err(|e| invalid(f, format!("not a rule file: {}", yaml_error(&e))))?;
    for r in parsed.rules {
        let action = Action::parse(&r.action).ok_or_else(|| {
            invalid(
                f,
                format!(
                    "rule {:?}: unknown action {:?}; expected block, flag or warn",
                    r.id, r.action
                ),
            )
        })?;
        let mode = match r.mode.as_deref() {
            None => Mode::Enforcing,
            Some(s) => Mode::parse(s).ok_or_else(|| invalid(f, format!("rule {:?}: unknown mode {s:?}", r.id)))?,
        };
        let spec = RuleSpec {
            id: r.id,
            condition: r.condition,
            action,
            message: r.message,
            mode,
        };
        if spec.id.contains('/') {
            return Err(invalid(f, format!("rule id {:?} may not contain '/'", spec.id)));
        }
        let mut named = spec.clone();
        named.id = format!("{}/{}", m.name, spec.id);
        check_spec(None, &named, &origin, 0).map_err(|e| invalid(f, e.to_string()))?;
        if rules.iter().any(|x: &RuleSpec| x.id == spec.id) {
            return Err(invalid(f, format!("rule id {:?} appears twice in the pack", spec.id)));
        }
        rules.push(spec);
    }
    Ok(())
}

fn pack_info(m: Manifest, rules: Vec<RuleSpec>) -> PackInfo {
    PackInfo {
        pack: Pack {
            name: m.name,
            version: m.version,
            rules,
        },
        description: m.description,
        author: m.author,
    }
}

/// Checks the pack at `src` and copies it to `<policies>/<name>/`,
/// replacing an installed version (written beside it, then renamed).
pub fn install(src: &Path, policies: &Path) -> Result<PackInfo, PackError> {
    let info = read_pack(src)?;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| PackError::Io { path, source }
    };
    std::fs::create_dir_all(policies).map_err(io(policies))?;
    let target = policies.join(&info.pack.name);
    let staging = policies.join(format!(".{}.installing", info.pack.name));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    std::fs::create_dir_all(&staging).map_err(io(&staging))?;
    for entry in std::fs::read_dir(src).map_err(io(src))? {
        let p = entry.map_err(io(src))?.path();
        let is_yaml = p.extension().is_some_and(|x| x == "yaml" || x == "yml");
        if let (true, true, Some(name)) = (regular_file(&p), is_yaml, p.file_name()) {
            std::fs::copy(&p, staging.join(name)).map_err(io(&p))?;
        }
    }
    let old = policies.join(format!(".{}.old", info.pack.name));
    if target.exists() {
        if old.exists() {
            std::fs::remove_dir_all(&old).map_err(io(&old))?;
        }
        std::fs::rename(&target, &old).map_err(io(&target))?;
    }
    std::fs::rename(&staging, &target).map_err(io(&staging))?;
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(io(&old))?;
    }
    Ok(info)
}

/// The installed packs under a directory, read at every scan.
pub struct PackDir {
    dir: PathBuf,
}

impl PackDir {
    pub fn new(dir: PathBuf) -> PackDir {
        PackDir { dir }
    }
}

impl PackSource for PackDir {
    fn packs(&self) -> Vec<Pack> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_dir())
                    && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        dirs.sort();
        let mut out: Vec<Pack> = Vec::new();
        for d in dirs {
            match read_pack(&d) {
                Ok(info) if out.iter().any(|p| p.name == info.pack.name) => {
                    warn!(dir = %d.display(), pack = %info.pack.name, "two installed packs share a name; the first is used");
                }
                Ok(info) => out.push(info.pack),
                Err(e) => warn!(error = %e, "installed policy pack not used"),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    /// A pack is regular files: a link is refused, not followed, and what
    /// a file that is not a pack says never reaches the error (or the log).
    #[test]
    fn links_are_not_followed_and_contents_are_not_echoed() {
        let src = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let secret = tempfile::tempdir().unwrap();
        write(secret.path(), "token", "rules: hunter2-SECRET\n");
        write(
            src.path(),
            MANIFEST,
            "name: hygiene\ntype: policy\nversion: v1.0.0\ndescription: d\nauthor: a\n",
        );
        std::os::unix::fs::symlink(secret.path().join("token"), src.path().join("rules.yaml")).unwrap();
        let e = install(src.path(), data.path()).unwrap_err().to_string();
        assert!(e.contains("no rule files"), "the link is not a rule file: {e}");
        assert!(!e.contains("SECRET"), "{e}");

        std::fs::copy(secret.path().join("token"), src.path().join("copied.yaml")).unwrap();
        let e = install(src.path(), data.path()).unwrap_err().to_string();
        assert!(e.contains("copied.yaml") && e.contains("not a rule file"), "{e}");
        assert!(!e.contains("SECRET") && !e.contains("hunter2"), "{e}");

        std::fs::remove_file(src.path().join(MANIFEST)).unwrap();
        std::os::unix::fs::symlink(secret.path().join("token"), src.path().join(MANIFEST)).unwrap();
        let e = install(src.path(), data.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file") && !e.contains("SECRET"), "{e}");
    }

    #[test]
    fn a_pack_installs_and_bad_ones_are_refused() {
        let src = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        write(
            src.path(),
            MANIFEST,
            "name: hygiene\ntype: policy\nversion: v1.0.0\ndescription: d\nauthor: a\n",
        );
        write(
            src.path(),
            "volumes.yaml",
            "rules:\n  - id: gp2\n    condition: kind == 'volume' && props.volume_type == 'gp2'\n    action: warn\n    message: gp2\n",
        );
        let info = install(src.path(), data.path()).unwrap();
        assert_eq!(info.pack.rules.len(), 1);
        let packs = PackDir::new(data.path().to_owned()).packs();
        assert_eq!(packs.len(), 1);
        assert_eq!(packs[0].name, "hygiene");

        write(
            src.path(),
            "bad.yaml",
            "rules:\n  - id: x\n    condition: kind ==\n    action: warn\n",
        );
        let e = install(src.path(), data.path()).unwrap_err().to_string();
        assert!(e.contains("bad.yaml") && e.contains("invalid condition"), "{e}");
        std::fs::remove_file(src.path().join("bad.yaml")).unwrap();
        write(src.path(), MANIFEST, "name: hygiene\ntype: plugin\nversion: v1\n");
        assert!(
            install(src.path(), data.path())
                .unwrap_err()
                .to_string()
                .contains("policy")
        );
        // The installed pack is untouched by the refused installs.
        assert_eq!(PackDir::new(data.path().to_owned()).packs()[0].rules.len(), 1);
    }
}
