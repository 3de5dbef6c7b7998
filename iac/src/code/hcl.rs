//! The top-level declarations of one `.tf` file: its `resource` and `data`
//! blocks with their lines, and its module calls with their sources.
//!
//! The file is parsed with hcl-edit, so braces, `resource` keywords and
//! labels inside strings, heredocs and comments are never mistaken for
//! blocks.

use hcl_edit::Span;
use hcl_edit::structure::{Block as HclBlock, Structure};

use super::block::{Block, ParseWarning};
use super::lines::Lines;

/// The byte order mark some editors put at the start of a file; HCL does
/// not allow it, Terraform skips it.
const BOM: char = '\u{feff}';

/// Which block keyword declares a resource, as Terraform state calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Mode {
    /// A `resource` block (`"mode": "managed"` in state).
    Managed,
    /// A `data` block (`"mode": "data"` in state).
    Data,
}

impl Mode {
    /// The mode named as in Terraform state (`managed`, `data`).
    pub(super) fn from_state(mode: &str) -> Option<Mode> {
        match mode {
            "managed" => Some(Mode::Managed),
            "data" => Some(Mode::Data),
            _ => None,
        }
    }

    /// The mode of a top-level block with keyword `keyword`.
    fn from_keyword(keyword: &str) -> Option<Mode> {
        match keyword {
            "resource" => Some(Mode::Managed),
            "data" => Some(Mode::Data),
            _ => None,
        }
    }
}

/// A `resource` or `data` block: `resource "<ty>" "<name>" { … }`.
#[derive(Debug)]
pub(super) struct Resource {
    /// `resource` or `data`.
    pub(super) mode: Mode,
    /// The resource type, such as `aws_ebs_volume`.
    pub(super) ty: String,
    /// The resource name, such as `data`.
    pub(super) name: String,
    /// Where the block is and its text.
    pub(super) block: Block,
}

/// The `source` argument of a module call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CallSource {
    /// No `source` argument (allowed in override files, which keep the
    /// original's).
    Absent,
    /// A literal string.
    Literal(String),
    /// Any other expression, which Terraform rejects; nothing to follow.
    Computed,
}

/// A `module "<name>" { source = … }` block.
#[derive(Debug)]
pub(super) struct ModuleCall {
    /// The call's name, as in `module.<name>` addresses.
    pub(super) name: String,
    /// Its `source` argument.
    pub(super) source: CallSource,
}

/// What one file declares at its top level, in source order.
#[derive(Debug, Default)]
pub(super) struct FileDecls {
    /// Its `resource` and `data` blocks.
    pub(super) resources: Vec<Resource>,
    /// Its module calls.
    pub(super) calls: Vec<ModuleCall>,
}

/// Parses the committed bytes of `file` (repository-relative); a file
/// that is not UTF-8 or not valid HCL gives the warning to record instead.
pub(super) fn parse(file: &str, bytes: &[u8]) -> Result<FileDecls, ParseWarning> {
    let text = std::str::from_utf8(bytes).map_err(|error| ParseWarning {
        file: file.to_owned(),
        line: 0,
        message: format!("not UTF-8: {error}"),
    })?;
    // Spans are offsets into the parsed text; the BOM is skipped, so they
    // are shifted by its length to index `text`.
    let (shift, body) = match text.strip_prefix(BOM) {
        Some(rest) => (BOM.len_utf8(), rest),
        None => (0, text),
    };
    let body = hcl_edit::parser::parse_body(body).map_err(|error| ParseWarning {
        file: file.to_owned(),
        line: u32::try_from(error.location().line()).unwrap_or(u32::MAX),
        message: format!("{} (column {})", error.message(), error.location().column()),
    })?;
    let lines = Lines::new(text);
    let mut decls = FileDecls::default();
    for block in body.iter().filter_map(Structure::as_block) {
        if let Some(resource) = resource(file, &lines, shift, block) {
            decls.resources.push(resource);
        } else if let Some(call) = module_call(block) {
            decls.calls.push(call);
        }
    }
    Ok(decls)
}

/// `block` as a resource declaration, if it is a `resource` or `data`
/// block with a type and a name.
fn resource(file: &str, lines: &Lines<'_>, shift: usize, block: &HclBlock) -> Option<Resource> {
    let mode = Mode::from_keyword(block.ident.as_str())?;
    let [ty, name] = block.labels.as_slice() else {
        return None;
    };
    let span = block.span()?;
    let line = lines.line_of(span.start + shift);
    // The span ends after the closing brace; the brace is its last byte.
    let end_line = lines.line_of((span.end + shift).saturating_sub(1)).max(line);
    let text = lines.text_of(line, end_line)?.to_owned();
    Some(Resource {
        mode,
        ty: ty.as_str().to_owned(),
        name: name.as_str().to_owned(),
        block: Block {
            file: file.to_owned(),
            line,
            end_line,
            text,
        },
    })
}

/// `block` as a module call, if it is a `module` block with a name.
fn module_call(block: &HclBlock) -> Option<ModuleCall> {
    if block.ident.as_str() != "module" {
        return None;
    }
    let [name] = block.labels.as_slice() else {
        return None;
    };
    let source = match block.body.get_attribute("source") {
        None => CallSource::Absent,
        Some(attribute) => match attribute.value.as_str() {
            Some(path) => CallSource::Literal(path.to_owned()),
            None => CallSource::Computed,
        },
    };
    Some(ModuleCall {
        name: name.as_str().to_owned(),
        source,
    })
}
