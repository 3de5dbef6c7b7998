//! Who last changed each line of a file at HEAD: one whole-file blame,
//! then any number of line lookups.

use std::sync::Arc;

use gix::ObjectId;

use super::block::Blame;
use super::error::CodeError;
use super::memo::Memo;
use super::tree;

/// A run of consecutive lines last changed by one commit.
struct Hunk {
    /// The 0-based line it starts at.
    start: u32,
    /// How many lines it spans (at least one).
    len: u32,
    /// The commit that last changed them.
    blame: Arc<Blame>,
}

/// The blame of every line of one file, in line order.
pub(super) struct FileBlame {
    hunks: Vec<Hunk>,
}

impl FileBlame {
    /// Who last changed line `line` (1-based); `None` past the end.
    pub(super) fn line(&self, line: u32) -> Option<&Blame> {
        let index = line.checked_sub(1)?;
        let at = self
            .hunks
            .partition_point(|hunk| hunk.start.saturating_add(hunk.len) <= index);
        let hunk = self.hunks.get(at)?;
        (hunk.start <= index).then_some(hunk.blame.as_ref())
    }
}

/// Blames all of `file` (repository-relative) as of commit `head`,
/// following renames as `git blame` does. `None` when `file` is not a file
/// in `head`. Commits already described are taken from `commits`.
pub(super) fn blame_file(
    repo: &gix::Repository,
    head: ObjectId,
    file: &str,
    commits: &Memo<ObjectId, Blame>,
) -> Result<Option<FileBlame>, CodeError> {
    if !tree::is_file(repo, head, file)? {
        return Ok(None);
    }
    let options = gix::repository::blame_file::Options {
        rewrites: Some(gix::diff::Rewrites::default()),
        ..Default::default()
    };
    let outcome = repo
        .blame_file(file.into(), head, options)
        .map_err(|error| CodeError::Blame {
            file: file.to_owned(),
            commit: head.to_string(),
            source: Box::new(error),
        })?;
    let hunks = outcome
        .entries
        .iter()
        .map(|entry| {
            let blame = commits.get_or_try_init(&entry.commit_id, || describe(repo, head, entry.commit_id))?;
            Ok(Hunk {
                start: entry.start_in_blamed_file,
                len: entry.len.get(),
                blame,
            })
        })
        .collect::<Result<Vec<_>, CodeError>>()?;
    Ok(Some(FileBlame { hunks }))
}

/// The author and summary of commit `id`, read while blaming at `head`.
fn describe(repo: &gix::Repository, head: ObjectId, id: ObjectId) -> Result<Blame, CodeError> {
    let what = || format!("commit {id}");
    let commit = repo
        .find_commit(id)
        .map_err(|error| CodeError::read(what(), head, error))?;
    let author = commit.author().map_err(|error| CodeError::read(what(), head, error))?;
    let summary = commit
        .message()
        .map_err(|error| CodeError::read(what(), head, error))?
        .summary()
        .to_string();
    Ok(Blame {
        commit: id.to_string(),
        author: author.name.to_string(),
        email: author.email.to_string(),
        // Seconds since the epoch, read leniently: a malformed date is 0.
        time: author.seconds(),
        summary,
    })
}
