//! What one module directory declares: the `.tf` files directly in it,
//! merged as Terraform merges them.
//!
//! Primary files are read in name order and the first declaration of a
//! name wins (Terraform rejects duplicates, so a valid module has one).
//! Override files (`override.tf`, `*_override.tf`) only amend blocks the
//! primary files declare: their resources are never the declaration, but a
//! `source` they give replaces the module call's.

use std::collections::HashMap;

use super::block::{Block, ParseWarning};
use super::hcl::{self, CallSource, FileDecls, Mode};

/// A `.tf` file of the module: its repository-relative path and committed bytes.
pub(super) struct TfFile {
    /// Repository-relative, `/`-separated.
    pub(super) path: String,
    /// The blob's content at HEAD.
    pub(super) bytes: Vec<u8>,
}

/// The declarations of one module directory, ready for lookups.
#[derive(Debug, Default)]
pub(super) struct ModuleDecls {
    /// `resource` and `data` blocks by mode, type and name.
    resources: HashMap<(Mode, String, String), Block>,
    /// Module calls by name: the effective `source`.
    calls: HashMap<String, CallSource>,
    /// Files skipped because they did not parse.
    warnings: Vec<ParseWarning>,
}

impl ModuleDecls {
    /// Merges the module's files; files that do not parse are skipped and
    /// kept as warnings.
    pub(super) fn from_files(files: &[TfFile]) -> ModuleDecls {
        let mut decls = ModuleDecls::default();
        let (overrides, primaries): (Vec<&TfFile>, Vec<&TfFile>) =
            files.iter().partition(|file| is_override(&file.path));
        for file in primaries {
            if let Some(parsed) = decls.parse(file) {
                decls.add_primary(parsed);
            }
        }
        for file in overrides {
            if let Some(parsed) = decls.parse(file) {
                decls.add_override(parsed);
            }
        }
        decls
    }

    /// The block declaring resource `ty`.`name` of `mode`.
    pub(super) fn resource(&self, mode: Mode, ty: &str, name: &str) -> Option<&Block> {
        self.resources.get(&(mode, ty.to_owned(), name.to_owned()))
    }

    /// The effective `source` of module call `name`, `None` when the
    /// module declares no such call.
    pub(super) fn call_source(&self, name: &str) -> Option<&CallSource> {
        self.calls.get(name)
    }

    /// The files of this module that were skipped.
    pub(super) fn warnings(&self) -> &[ParseWarning] {
        &self.warnings
    }

    /// Parses `file`, keeping its warning when it does not parse.
    fn parse(&mut self, file: &TfFile) -> Option<FileDecls> {
        match hcl::parse(&file.path, &file.bytes) {
            Ok(parsed) => Some(parsed),
            Err(warning) => {
                self.warnings.push(warning);
                None
            }
        }
    }

    /// Adds a primary file's declarations; earlier files win.
    fn add_primary(&mut self, parsed: FileDecls) {
        for resource in parsed.resources {
            self.resources
                .entry((resource.mode, resource.ty, resource.name))
                .or_insert(resource.block);
        }
        for call in parsed.calls {
            self.calls.entry(call.name).or_insert(call.source);
        }
    }

    /// Applies an override file: a `source` it gives to a declared module
    /// call replaces the call's; nothing else here is affected.
    fn add_override(&mut self, parsed: FileDecls) {
        for call in parsed.calls {
            if call.source == CallSource::Absent {
                continue;
            }
            if let Some(source) = self.calls.get_mut(&call.name) {
                *source = call.source;
            }
        }
    }
}

/// Whether `path` names a Terraform override file.
fn is_override(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.strip_suffix(".tf").unwrap_or(name);
    stem == "override" || stem.ends_with("_override")
}
