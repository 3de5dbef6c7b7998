//! The registry index: a JSON document listing package manifests (SPEC
//! 2.8), the versions of a package, and the `name[@vX.Y.Z]` and
//! `owner/name@vX.Y.Z` forms that select one.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::host::manifest::Binary;
use crate::host::{Category, PLUGIN_PREFIX, PackageType, Pricing, Role};

use super::RegistryError;

/// One file of a policy pack as the index lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackFile {
    /// Its file name in the pack directory (`manifest.yaml`, `rules.yaml`).
    pub name: String,
    /// Where to fetch it; relative to the index (or release manifest) URL.
    pub url: String,
    pub sha256: String,
}

/// One package version as the index lists it: the SPEC 2.8 manifest, plus
/// a plugin's `role` and a policy pack's `files`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Package {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: PackageType,
    /// With a leading `v`.
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub author: String,
    /// Assigned by the registry team; a package without one is listed
    /// but refused at install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default)]
    pub pricing: Pricing,
    /// A plugin's builds, one per os and architecture.
    #[serde(default)]
    pub binaries: Vec<Binary>,
    /// What a plugin serves: `provider` (the default) or `heuristic`.
    #[serde(default)]
    pub role: Role,
    /// A policy pack's files: its `manifest.yaml` and rule files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PackFile>,
}

impl Package {
    /// The name it is installed under: a plugin's without `svc-plugin-`
    /// (the provider it serves, the name in `plugins.active`).
    pub fn short_name(&self) -> &str {
        short_name(&self.name)
    }

    /// Its category, checked: present and one of SPEC 2.8's.
    pub fn category(&self) -> Result<Category, RegistryError> {
        let Some(c) = self.category.as_deref().filter(|c| !c.trim().is_empty()) else {
            return Err(RegistryError::NoCategory {
                name: self.name.clone(),
                version: self.version.clone(),
            });
        };
        serde_json::from_value(serde_json::Value::String(c.to_owned())).map_err(|_| RegistryError::BadCategory {
            name: self.name.clone(),
            category: c.to_owned(),
        })
    }

    /// Whether `q` (lowercase) matches its name, description, type or category.
    pub fn matches(&self, q: &str) -> bool {
        if q.is_empty() {
            return true;
        }
        let kind = match self.kind {
            PackageType::Plugin => "plugin",
            PackageType::Policy => "policy",
        };
        [
            self.name.as_str(),
            self.description.as_str(),
            kind,
            self.category.as_deref().unwrap_or(""),
        ]
        .iter()
        .any(|field| field.to_lowercase().contains(q))
    }

    fn check(&self) -> Result<(), String> {
        if !valid_name(self.short_name()) {
            return Err(format!("name {:?}: use 1 to 64 letters, digits, '-' or '_'", self.name));
        }
        Version::parse(&self.version).map_err(|e| format!("{}: {e}", self.name))?;
        Ok(())
    }
}

/// A package name without `svc-plugin-`.
pub fn short_name(name: &str) -> &str {
    name.strip_prefix(PLUGIN_PREFIX)
        .filter(|s| !s.is_empty())
        .unwrap_or(name)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The index document: `{"packages": [<manifest>, ...]}`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Index {
    pub packages: Vec<Package>,
    /// Entries left out, each with why (listed so an operator sees them).
    #[serde(skip)]
    pub skipped: Vec<String>,
}

#[derive(Deserialize)]
struct RawIndex {
    packages: Vec<serde_json::Value>,
}

impl Index {
    /// Parses an index; an entry that is not a valid manifest is skipped
    /// (and named in [`Index::skipped`]), a document that is not an index
    /// is an error.
    pub fn parse(bytes: &[u8]) -> Result<Index, String> {
        let raw: RawIndex = serde_json::from_slice(bytes).map_err(|e| format!("not a registry index: {e}"))?;
        let mut index = Index::default();
        for (i, entry) in raw.packages.into_iter().enumerate() {
            match serde_json::from_value::<Package>(entry).map_err(|e| e.to_string()) {
                Ok(p) => match p.check() {
                    Ok(()) => index.packages.push(p),
                    Err(why) => index.skipped.push(format!("package {i}: {why}")),
                },
                Err(why) => index.skipped.push(format!("package {i}: {why}")),
            }
        }
        Ok(index)
    }

    /// The versions of the package `name` (with or without `svc-plugin-`).
    pub fn versions<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Package> + 'a {
        let short = short_name(name);
        self.packages.iter().filter(move |p| p.short_name() == short)
    }

    /// The version `version` of `name`, or its latest stable version.
    pub fn resolve<'a>(&'a self, name: &'a str, version: Option<&str>) -> Result<&'a Package, RegistryError> {
        let mut all: Vec<&Package> = self.versions(name).collect();
        if all.is_empty() {
            return Err(RegistryError::UnknownPackage(name.to_owned()));
        }
        all.sort_by(|a, b| version_order(&a.version, &b.version));
        let listed = || all.iter().map(|p| p.version.clone()).collect::<Vec<_>>().join(", ");
        match version {
            Some(v) => all
                .iter()
                .copied()
                .find(|p| p.version == v)
                .ok_or_else(|| RegistryError::UnknownVersion {
                    name: name.to_owned(),
                    version: v.to_owned(),
                    available: listed(),
                }),
            None => all
                .iter()
                .rev()
                .copied()
                .find(|p| Version::parse(&p.version).is_ok_and(|v| v.pre.is_none()))
                .ok_or_else(|| RegistryError::NoStable {
                    name: name.to_owned(),
                    available: listed(),
                }),
        }
    }
}

fn version_order(a: &str, b: &str) -> Ordering {
    match (Version::parse(a), Version::parse(b)) {
        (Ok(a), Ok(b)) => a.cmp(&b),
        _ => a.cmp(b),
    }
}

/// `vMAJOR.MINOR.PATCH[-PRE][+BUILD]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Option<String>,
}

impl Version {
    pub fn parse(text: &str) -> Result<Version, String> {
        let bad = |why: &str| format!("version {text:?} {why}; expected vX.Y.Z such as v1.2.0");
        let rest = text.strip_prefix('v').ok_or_else(|| bad("has no leading 'v'"))?;
        let rest = rest.split_once('+').map_or(rest, |(v, _)| v);
        let (core, pre) = match rest.split_once('-') {
            Some((core, pre)) if !pre.is_empty() => (core, Some(pre.to_owned())),
            Some(_) => return Err(bad("has an empty pre-release")),
            None => (rest, None),
        };
        let parts: Vec<&str> = core.split('.').collect();
        let [major, minor, patch] = parts.as_slice() else {
            return Err(bad("does not have three numbers"));
        };
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad("does not have three numbers"));
        Ok(Version {
            major: num(major)?,
            minor: num(minor)?,
            patch: num(patch)?,
            pre,
        })
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (&self.pre, &other.pre) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(a), Some(b)) => a.cmp(b),
            })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What an install asks for: `name`, `name@vX.Y.Z` or `owner/name@vX.Y.Z`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageRef {
    /// The source repository's owner, for a release (`owner/name@vX.Y.Z`).
    pub owner: Option<String>,
    pub name: String,
    pub version: Option<String>,
}

impl PackageRef {
    pub fn parse(text: &str) -> Result<PackageRef, RegistryError> {
        let bad = |why: &str| RegistryError::BadRef {
            text: text.to_owned(),
            reason: why.to_owned(),
        };
        let text = text.trim();
        let (path, version) = match text.split_once('@') {
            Some((p, v)) => (p, Some(v)),
            None => (text, None),
        };
        if let Some(v) = version {
            Version::parse(v).map_err(|e| bad(&e))?;
        }
        let (owner, name) = match path.split_once('/') {
            Some((o, n)) => (Some(o), n),
            None => (None, path),
        };
        if !valid_name(name) {
            return Err(bad("the name takes 1 to 64 letters, digits, '-' or '_'"));
        }
        if let Some(o) = owner {
            if o.is_empty()
                || o.starts_with('.')
                || !o
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
            {
                return Err(bad("the owner takes letters, digits, '-', '_' or '.' (not first)"));
            }
            if version.is_none() {
                return Err(bad("a release of a source repository is written owner/name@vX.Y.Z"));
            }
        }
        Ok(PackageRef {
            owner: owner.map(str::to_owned),
            name: name.to_owned(),
            version: version.map(str::to_owned),
        })
    }

    /// The release manifest's URL: `template` with `{owner}`, `{name}` and
    /// `{version}` filled in.
    pub fn release_url(&self, template: &str) -> String {
        template
            .replace("{owner}", self.owner.as_deref().unwrap_or(""))
            .replace("{name}", &self.name)
            .replace("{version}", self.version.as_deref().unwrap_or(""))
    }
}

impl fmt::Display for PackageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(o) = &self.owner {
            write!(f, "{o}/")?;
        }
        f.write_str(&self.name)?;
        if let Some(v) = &self.version {
            write!(f, "@{v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, version: &str) -> serde_json::Value {
        serde_json::json!({"name": name, "type": "plugin", "version": version, "category": "cloud"})
    }

    #[test]
    fn latest_stable_is_the_highest_version_without_a_pre_release() {
        let doc = serde_json::json!({"packages": [
            pkg("svc-plugin-x", "v1.2.0"), pkg("svc-plugin-x", "v1.10.0"),
            pkg("svc-plugin-x", "v2.0.0-rc.1"), pkg("svc-plugin-x", "1.0"),
            {"name": "broken"},
        ]});
        let index = Index::parse(doc.to_string().as_bytes()).unwrap();
        assert_eq!(index.packages.len(), 3);
        assert_eq!(index.skipped.len(), 2, "{:?}", index.skipped);
        assert_eq!(index.resolve("x", None).unwrap().version, "v1.10.0");
        assert_eq!(index.resolve("svc-plugin-x", None).unwrap().version, "v1.10.0");
        assert_eq!(index.resolve("x", Some("v2.0.0-rc.1")).unwrap().version, "v2.0.0-rc.1");
        let e = index.resolve("x", Some("v9.9.9")).unwrap_err().to_string();
        assert!(
            e.contains("unknown version v9.9.9") && e.contains("v1.2.0, v1.10.0, v2.0.0-rc.1"),
            "{e}"
        );
        assert!(matches!(
            index.resolve("y", None),
            Err(RegistryError::UnknownPackage(_))
        ));
        assert!(Index::parse(b"[1]").is_err());
    }

    #[test]
    fn references_parse_and_fill_the_release_template() {
        let r = PackageRef::parse("acme/svc-plugin-gcp@v1.0.0").unwrap();
        assert_eq!(r.owner.as_deref(), Some("acme"));
        assert_eq!(
            r.release_url("https://h/{owner}/{name}/releases/download/{version}/manifest.json"),
            "https://h/acme/svc-plugin-gcp/releases/download/v1.0.0/manifest.json"
        );
        assert_eq!(PackageRef::parse("mock").unwrap().version, None);
        for bad in ["acme/mock", "mock@1.0", "../x@v1.0.0", "", "a b"] {
            assert!(PackageRef::parse(bad).is_err(), "{bad}");
        }
    }
}
