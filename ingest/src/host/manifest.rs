//! The registry manifest kept next to each plugin binary as `<binary>.yaml`
//! (SPEC 2.8), plus the host's own fields: the binary's `sha256` and its
//! `role`.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::HostError;

/// `plugin` or `policy` (a policy pack).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PackageType {
    #[default]
    Plugin,
    Policy,
}

/// Registry category, assigned by the registry team.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Cloud,
    Database,
    Infrastructure,
    Saas,
    Iot,
    Devops,
    Security,
}

/// What a plugin binary serves: provider RPCs (the default) or heuristics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Provider,
    Heuristic,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PricingModel {
    #[default]
    Free,
    Paid,
    Freemium,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    pub model: PricingModel,
    /// Monthly price for paid plugins.
    #[serde(default)]
    pub price_usd: f64,
}

/// One downloadable build of the package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binary {
    pub os: String,
    pub arch: String,
    pub url: String,
    pub sha256: String,
}

/// `<binary>.yaml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Package name, for example `svc-plugin-aws`.
    pub name: String,
    #[serde(rename = "type", default)]
    pub kind: PackageType,
    /// Version with a leading `v`.
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub author: String,
    pub category: Category,
    #[serde(default)]
    pub pricing: Pricing,
    #[serde(default)]
    pub binaries: Vec<Binary>,
    /// SHA-256 (hex) of the binary this manifest sits next to.
    pub sha256: String,
    #[serde(default)]
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

impl Manifest {
    pub fn from_yaml(text: &str) -> Result<Manifest, String> {
        serde_yaml_ng::from_str(text).map_err(|e| e.to_string())
    }

    pub fn to_yaml(&self) -> Result<String, String> {
        serde_yaml_ng::to_string(self).map_err(|e| e.to_string())
    }
}

/// Where the manifest of `binary` lives: the binary's path plus `.yaml`.
pub fn manifest_path(binary: &Path) -> PathBuf {
    let mut p = binary.as_os_str().to_owned();
    p.push(".yaml");
    PathBuf::from(p)
}

/// SHA-256 of a file, lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String, HostError> {
    let io = |source| HostError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Writes `<binary>.yaml` for a locally built plugin, with the binary's
/// SHA-256, and returns the manifest written.
pub fn write_manifest_for(binary: &Path, name: &str, role: Role, category: Category) -> Result<Manifest, HostError> {
    let sha256 = sha256_file(binary)?;
    let url = std::fs::canonicalize(binary).unwrap_or_else(|_| binary.to_owned());
    let manifest = Manifest {
        name: name.to_owned(),
        kind: PackageType::Plugin,
        version: "v0.0.0-local".to_owned(),
        description: format!("{name}, installed from a local build"),
        author: "local".to_owned(),
        category,
        pricing: Pricing::default(),
        binaries: vec![Binary {
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
            url: format!("file://{}", url.display()),
            sha256: sha256.clone(),
        }],
        sha256,
        role,
        display_name: None,
        color: None,
    };
    let path = manifest_path(binary);
    let text = manifest.to_yaml().map_err(|reason| HostError::Manifest {
        path: binary.to_owned(),
        reason,
    })?;
    std::fs::write(&path, text).map_err(|source| HostError::Io { path, source })?;
    Ok(manifest)
}
