//! What can go wrong while reading a repository's declarations and blame.
//!
//! Only the repository itself failing is an error: a `.tf` file that does
//! not parse, a module source outside the repository or a missing block is
//! an answer (`None`, or a [`ParseWarning`](super::block::ParseWarning)).

use std::path::PathBuf;

/// The cause of a failure inside gitoxide, kept as the source of a
/// [`CodeError`]; gitoxide has one error type per operation.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A failure to open or read the git repository holding the Terraform code.
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    /// No git repository contains the path, or it could not be opened.
    #[error("cannot open a git repository at {path:?}: {source}")]
    Open {
        /// The path handed to [`Repo::open`](super::repo::Repo::open).
        path: PathBuf,
        /// Why discovery or opening failed.
        #[source]
        source: Cause,
    },
    /// The root module's directory is not inside the repository's work tree.
    #[error("root module {path:?} is not inside the work tree {work_dir:?} of its repository")]
    OutsideWorkTree {
        /// The path handed to [`Repo::open`](super::repo::Repo::open).
        path: PathBuf,
        /// The work tree of the repository found for it.
        work_dir: PathBuf,
    },
    /// A path inside the work tree is not valid UTF-8, so it cannot name a tree entry.
    #[error("root module {path:?} is not valid UTF-8")]
    NotUtf8 {
        /// The offending path.
        path: PathBuf,
    },
    /// HEAD does not point at a commit (an unborn branch, a broken ref).
    #[error("cannot resolve HEAD of the repository at {git_dir:?}: {source}")]
    Head {
        /// The repository's git directory.
        git_dir: PathBuf,
        /// Why HEAD did not resolve.
        #[source]
        source: Cause,
    },
    /// An object (commit, tree, blob) could not be read or decoded.
    #[error("cannot read {what} at commit {commit}: {source}")]
    Read {
        /// What was read, such as `tree "modules/app"` or `commit 1a2b…`.
        what: String,
        /// The HEAD commit being read, hex.
        commit: String,
        /// Why reading failed.
        #[source]
        source: Cause,
    },
    /// Blaming a file failed.
    #[error("cannot blame {file:?} at commit {commit}: {source}")]
    Blame {
        /// The repository-relative file.
        file: String,
        /// The HEAD commit blamed, hex.
        commit: String,
        /// Why blame failed.
        #[source]
        source: Cause,
    },
}

impl CodeError {
    /// A [`CodeError::Read`] of `what` at `commit`.
    pub(super) fn read(
        what: String,
        commit: gix::ObjectId,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> CodeError {
        CodeError::Read {
            what,
            commit: commit.to_string(),
            source: Box::new(error),
        }
    }
}
