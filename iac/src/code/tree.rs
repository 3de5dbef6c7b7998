//! Reading HEAD's committed tree: a module directory's `.tf` files, and
//! whether a file exists.

use gix::ObjectId;

use super::error::CodeError;
use super::module::TfFile;

/// The `.tf` files directly in directory `dir` (repository-relative,
/// `""` for the root) of commit `commit`, in name order. Empty when the
/// directory does not exist there.
pub(super) fn tf_files(repo: &gix::Repository, commit: ObjectId, dir: &str) -> Result<Vec<TfFile>, CodeError> {
    let Some(tree) = dir_tree(repo, commit, dir)? else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    for entry in tree.iter() {
        let entry = entry.map_err(|error| CodeError::read(format!("tree {dir:?}"), commit, error))?;
        let Ok(name) = std::str::from_utf8(entry.filename()) else {
            continue;
        };
        if !entry.mode().is_blob() || !is_tf_file(name) {
            continue;
        }
        let path = join(dir, name);
        let blob = repo
            .find_blob(entry.object_id())
            .map_err(|error| CodeError::read(format!("file {path:?}"), commit, error))?;
        files.push(TfFile {
            path,
            bytes: blob.detach().data,
        });
    }
    Ok(files)
}

/// Whether `file` (repository-relative) is a file (not a directory,
/// symlink or submodule) in commit `commit`.
pub(super) fn is_file(repo: &gix::Repository, commit: ObjectId, file: &str) -> Result<bool, CodeError> {
    let tree = root_tree(repo, commit)?;
    let entry = tree
        .lookup_entry_by_path(file)
        .map_err(|error| CodeError::read(format!("file {file:?}"), commit, error))?;
    Ok(entry.is_some_and(|entry| entry.mode().is_blob()))
}

/// The tree of directory `dir` in commit `commit`, `None` when there is no
/// such directory.
fn dir_tree<'repo>(
    repo: &'repo gix::Repository,
    commit: ObjectId,
    dir: &str,
) -> Result<Option<gix::Tree<'repo>>, CodeError> {
    let root = root_tree(repo, commit)?;
    if dir.is_empty() {
        return Ok(Some(root));
    }
    let what = || format!("tree {dir:?}");
    let Some(entry) = root
        .lookup_entry_by_path(dir)
        .map_err(|error| CodeError::read(what(), commit, error))?
    else {
        return Ok(None);
    };
    if !entry.mode().is_tree() {
        return Ok(None);
    }
    let tree = entry
        .object()
        .map_err(|error| CodeError::read(what(), commit, error))?
        .peel_to_tree()
        .map_err(|error| CodeError::read(what(), commit, error))?;
    Ok(Some(tree))
}

/// The root tree of commit `commit`.
fn root_tree(repo: &gix::Repository, commit: ObjectId) -> Result<gix::Tree<'_>, CodeError> {
    let what = || format!("the tree of commit {commit}");
    repo.find_commit(commit)
        .map_err(|error| CodeError::read(what(), commit, error))?
        .tree()
        .map_err(|error| CodeError::read(what(), commit, error))
}

/// Whether Terraform reads a file named `name` as configuration: `*.tf`,
/// but not the hidden and editor backup files it skips.
fn is_tf_file(name: &str) -> bool {
    let hidden = name.starts_with('.') || name.ends_with('~') || (name.starts_with('#') && name.ends_with('#'));
    name.ends_with(".tf") && !hidden
}

/// `dir`/`name`, `/`-separated, without a leading separator at the root.
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}
