//! The answers of [`Repo`](super::repo::Repo): where a block is declared,
//! who last changed a line, and which files could not be read.

/// A `resource` or `data` block as committed at HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The file declaring the block, relative to the repository's root,
    /// `/`-separated (`modules/app/main.tf`).
    pub file: String,
    /// The 1-based line of the block's keyword (`resource`, `data`).
    pub line: u32,
    /// The 1-based line of the block's closing brace.
    pub end_line: u32,
    /// The source of lines `line..=end_line`, exactly as committed, without
    /// the last line's line ending.
    pub text: String,
}

/// Who last changed a line, as `git blame` at HEAD tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blame {
    /// The commit that last changed the line, full hex.
    pub commit: String,
    /// The commit author's name.
    pub author: String,
    /// The commit author's email.
    pub email: String,
    /// The author time, seconds since the Unix epoch.
    pub time: i64,
    /// The first line of the commit message.
    pub summary: String,
}

/// A `.tf` file at HEAD that was skipped because it is not valid HCL (or
/// not UTF-8); the lookups went on without its declarations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseWarning {
    /// The file, relative to the repository's root, `/`-separated.
    pub file: String,
    /// The 1-based line of the error, 0 when the file is not UTF-8.
    pub line: u32,
    /// What the parser expected or found.
    pub message: String,
}
