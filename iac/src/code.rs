//! A resource's declaration in the `.tf` files of a git repository, and
//! who last changed it.
//!
//! [`Repo`] reads the repository named by `iac.repository` as committed at
//! HEAD, never the work tree, so that a block's lines are the lines
//! `git blame` speaks of. A resource address's module path is followed
//! through the module calls' local `source` paths from the root module;
//! each module directory is parsed once and each file blamed once per HEAD
//! commit.
//!
//! - `repo`: [`Repo`], the lookups and their per-HEAD caches.
//! - `module`, `hcl`, `lines`: a module directory's declarations, parsed
//!   with hcl-edit, with their line numbers.
//! - `source`: where a module call's `source` leads.
//! - `tree`, `blame`: reading HEAD's tree and blaming a file.
//! - `memo`: values computed once per key, shared between threads.
//! - `block`, `error`: the answers and the errors.

mod blame;
mod block;
mod error;
mod hcl;
mod lines;
mod memo;
mod module;
mod repo;
mod source;
mod tree;

#[cfg(test)]
mod tests;

pub use block::{Blame, Block, ParseWarning};
pub use error::{Cause, CodeError};
pub use repo::Repo;
