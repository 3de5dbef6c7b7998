//! Fetching and checking one package before it is installed (SPEC 4.10):
//! a plugin's binary for this os and architecture, its SHA-256 against the
//! manifest, its handshake by launching it once, its registry category;
//! a policy pack's files, each against its SHA-256, and the pack as a whole.
//! Nothing is placed where the daemon looks until every check passed.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use http_client::Url;
use sha2::{Digest, Sha256};

use super::RegistryError;
use super::fetch::{Fetcher, resolve};
use super::index::Package;
use crate::host::manifest::Binary;
use crate::host::{Category, LaunchOptions, Manifest, PLUGIN_PREFIX, PackageType, PluginProcess};
use crate::packs::{self, PackInfo};

/// The registry's names for an os and an architecture: Rust's
/// (`std::env::consts`) and Go's, both accepted.
fn aliases(value: &str) -> &'static [&'static str] {
    match value {
        "x86_64" | "amd64" | "x64" => &["x86_64", "amd64", "x64"],
        "aarch64" | "arm64" => &["aarch64", "arm64"],
        "x86" | "i386" | "i686" | "386" => &["x86", "i386", "i686", "386"],
        "macos" | "darwin" => &["macos", "darwin"],
        "linux" => &["linux"],
        "windows" => &["windows"],
        _ => &[],
    }
}

fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    a == b || aliases(&a).contains(&b.as_str())
}

/// The build of `pkg` for this os and architecture.
pub fn binary_for_host(pkg: &Package) -> Result<&Binary, RegistryError> {
    let (os, arch) = (std::env::consts::OS, std::env::consts::ARCH);
    pkg.binaries
        .iter()
        .find(|b| same(&b.os, os) && same(&b.arch, arch))
        .ok_or_else(|| RegistryError::NoBinary {
            name: pkg.name.clone(),
            version: pkg.version.clone(),
            os: os.to_owned(),
            arch: arch.to_owned(),
            available: pkg
                .binaries
                .iter()
                .map(|b| format!("{}/{}", b.os, b.arch))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// A plugin binary that passed every check, in a temporary file of the
/// plugin directory (removed when dropped), with the manifest to write
/// beside it.
pub struct StagedPlugin {
    pub binary: tempfile::TempPath,
    pub manifest: Manifest,
    pub category: Category,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> RegistryError + '_ {
    move |source| RegistryError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Fetches and checks plugin `pkg` (its URLs relative to `base`) into a
/// temporary file of `dir`.
pub async fn stage_plugin(
    fetcher: &Fetcher,
    pkg: &Package,
    base: &Url,
    dir: &Path,
    launch: &LaunchOptions,
) -> Result<StagedPlugin, RegistryError> {
    if pkg.kind != PackageType::Plugin {
        return Err(RegistryError::WrongType {
            name: pkg.name.clone(),
            want: "plugin",
        });
    }
    let category = pkg.category()?;
    let build = binary_for_host(pkg)?;
    let url = resolve(base, &build.url)?;
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    // A dot-file: discovery never takes it for a plugin.
    let mut file = tempfile::Builder::new()
        .prefix(&format!(".{PLUGIN_PREFIX}{}.", pkg.short_name()))
        .suffix(".installing")
        .tempfile_in(dir)
        .map_err(io(dir))?;
    let actual = fetcher.download(&url, file.as_file_mut()).await?;
    file.as_file_mut().flush().map_err(io(dir))?;
    let expected = build.sha256.trim().to_ascii_lowercase();
    if actual != expected {
        return Err(RegistryError::Checksum {
            name: pkg.name.clone(),
            what: url.to_string(),
            actual,
            expected,
        });
    }
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o755))
        .map_err(io(dir))?;
    file.as_file().sync_all().map_err(io(dir))?;
    // Closed before it is run: a file open for writing cannot be executed.
    let binary = file.into_temp_path();
    let mut opts = launch.clone();
    opts.integrity = None;
    match PluginProcess::launch(&binary, pkg.role, &opts).await {
        Ok(process) => process.shutdown().await,
        Err(e) => {
            return Err(RegistryError::Handshake {
                name: pkg.name.clone(),
                reason: e.to_string(),
            });
        }
    }
    let manifest = Manifest {
        name: pkg.name.clone(),
        kind: PackageType::Plugin,
        version: pkg.version.clone(),
        description: pkg.description.clone(),
        author: pkg.author.clone(),
        category,
        pricing: pkg.pricing.clone(),
        binaries: pkg.binaries.clone(),
        sha256: actual,
        role: pkg.role,
        display_name: None,
        color: None,
    };
    Ok(StagedPlugin {
        binary,
        manifest,
        category,
    })
}

/// A policy pack that passed every check, in a temporary directory of the
/// policies directory (removed when dropped).
pub struct StagedPack {
    pub dir: tempfile::TempDir,
    pub info: PackInfo,
    pub category: Category,
    /// SHA-256 of the pack: of its `sha256sum` listing (`<sha256>  <file>`
    /// lines in file name order).
    pub sha256: String,
}

impl StagedPack {
    pub fn path(&self) -> PathBuf {
        self.dir.path().to_owned()
    }
}

fn valid_file_name(name: &str) -> bool {
    !name.starts_with('.')
        && (name.ends_with(".yaml") || name.ends_with(".yml"))
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Fetches and checks policy pack `pkg` (its URLs relative to `base`)
/// into a temporary directory of `policies`.
pub async fn stage_pack(
    fetcher: &Fetcher,
    pkg: &Package,
    base: &Url,
    policies: &Path,
) -> Result<StagedPack, RegistryError> {
    if pkg.kind != PackageType::Policy {
        return Err(RegistryError::WrongType {
            name: pkg.name.clone(),
            want: "policy",
        });
    }
    let category = pkg.category()?;
    if pkg.files.is_empty() {
        return Err(RegistryError::BadPack {
            name: pkg.name.clone(),
            reason: "the index lists no files for it".to_owned(),
        });
    }
    std::fs::create_dir_all(policies).map_err(io(policies))?;
    // A dot-directory: the daemon's pack reader skips it.
    let dir = tempfile::Builder::new()
        .prefix(".registry-")
        .tempdir_in(policies)
        .map_err(io(policies))?;
    let mut files = pkg.files.clone();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    let mut listing = String::new();
    for f in &files {
        if !valid_file_name(&f.name) {
            return Err(RegistryError::BadPack {
                name: pkg.name.clone(),
                reason: format!(
                    "file name {:?}: a pack holds *.yaml files named with letters, digits, '-', '_', '.'",
                    f.name
                ),
            });
        }
        let target = dir.path().join(&f.name);
        if target.exists() {
            return Err(RegistryError::BadPack {
                name: pkg.name.clone(),
                reason: format!("file {:?} is listed twice", f.name),
            });
        }
        let url = resolve(base, &f.url)?;
        let mut out = std::fs::File::create(&target).map_err(io(&target))?;
        let actual = fetcher.download(&url, &mut out).await?;
        let expected = f.sha256.trim().to_ascii_lowercase();
        if actual != expected {
            return Err(RegistryError::Checksum {
                name: pkg.name.clone(),
                what: f.name.clone(),
                actual,
                expected,
            });
        }
        listing.push_str(&format!("{actual}  {}\n", f.name));
    }
    let info = packs::read_pack(dir.path()).map_err(|e| RegistryError::BadPack {
        name: pkg.name.clone(),
        reason: e.to_string(),
    })?;
    if info.pack.name != pkg.short_name() || info.pack.version != pkg.version {
        return Err(RegistryError::BadPack {
            name: pkg.name.clone(),
            reason: format!(
                "its manifest says {} {}, the index {} {}",
                info.pack.name, info.pack.version, pkg.name, pkg.version
            ),
        });
    }
    Ok(StagedPack {
        dir,
        info,
        category,
        sha256: hex::encode(Sha256::digest(listing.as_bytes())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_is_picked_by_rust_or_go_names() {
        assert!(same("amd64", "x86_64") && same("x86_64", "AMD64") && same("arm64", "aarch64"));
        assert!(same("darwin", "macos") && !same("amd64", "arm64") && !same("linux", "windows"));
        let build = |os: &str, arch: &str| Binary {
            os: os.into(),
            arch: arch.into(),
            url: format!("{os}-{arch}"),
            sha256: String::new(),
        };
        let mut pkg: Package = serde_json::from_value(serde_json::json!({
            "name": "svc-plugin-x", "type": "plugin", "version": "v1.0.0", "category": "cloud"
        }))
        .unwrap();
        pkg.binaries = vec![
            build("plan9", "mips"),
            build(std::env::consts::OS, std::env::consts::ARCH),
        ];
        assert_eq!(binary_for_host(&pkg).unwrap().url, pkg.binaries[1].url);
        pkg.binaries.pop();
        let e = binary_for_host(&pkg).unwrap_err().to_string();
        assert!(
            e.contains("no binary of svc-plugin-x v1.0.0") && e.contains("plan9/mips"),
            "{e}"
        );
    }

    #[test]
    fn pack_file_names_stay_in_the_pack() {
        for ok in ["manifest.yaml", "rules-1.yml"] {
            assert!(valid_file_name(ok), "{ok}");
        }
        for bad in ["../x.yaml", ".hidden.yaml", "a/b.yaml", "rules.txt", ""] {
            assert!(!valid_file_name(bad), "{bad}");
        }
    }
}
