//! [`Repo`]: the repository in `iac.repository`, with what was read from
//! its HEAD commit cached until HEAD moves.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use gix::ObjectId;

use super::blame::{self, FileBlame};
use super::block::{Blame, Block, ParseWarning};
use super::error::CodeError;
use super::hcl::{CallSource, Mode};
use super::memo::{Memo, lock};
use super::module::ModuleDecls;
use super::{source, tree};

/// A git repository holding Terraform code, read as committed at HEAD.
///
/// Every call first reads what HEAD points at (a few small file reads);
/// what was parsed and blamed is kept for that commit, and dropped when
/// HEAD has moved. Safe to share between threads: each call works on its
/// own thread-local handle of the repository, and threads asking for the
/// same module or file wait for one parse or blame.
pub struct Repo {
    /// The opened repository, shared by all threads.
    repo: gix::ThreadSafeRepository,
    /// The root module's directory, repository-relative, `/`-separated,
    /// `""` for the repository's root.
    root: String,
    /// What was read from the HEAD commit last seen.
    cache: Mutex<Option<Arc<HeadCache>>>,
}

/// What was read from one HEAD commit.
struct HeadCache {
    /// What HEAD points at, unpeeled: the cache's key.
    target: ObjectId,
    /// The commit `target` is or peels to, which is read.
    head: ObjectId,
    /// Module directories' declarations, by repository-relative directory.
    modules: Memo<String, ModuleDecls>,
    /// Files' blame, by repository-relative path; `None` for a path that
    /// is not a file at `head`.
    blames: Memo<String, Option<FileBlame>>,
    /// Commits' authors and summaries, by commit.
    commits: Memo<ObjectId, Blame>,
}

impl Repo {
    /// Opens the repository containing `path` (discovering upwards); the
    /// root module is the directory `path` itself.
    pub fn open(path: &Path) -> Result<Repo, CodeError> {
        let repo = gix::ThreadSafeRepository::discover(path).map_err(|error| CodeError::Open {
            path: path.to_owned(),
            source: Box::new(error),
        })?;
        let root = match repo.work_dir() {
            Some(work_dir) => root_module(path, work_dir)?,
            None => String::new(),
        };
        Ok(Repo {
            repo,
            root,
            cache: Mutex::new(None),
        })
    }

    /// The commit HEAD points at, hex.
    pub fn head(&self) -> Result<String, CodeError> {
        Ok(self.head_cache(&self.repo.to_thread_local())?.head.to_string())
    }

    /// The declaration of resource `ty`.`name` (`"aws_ebs_volume"`,
    /// `"data"`) in the module reached from the root module through the
    /// module calls named `modules` (`["app", "db"]` for
    /// `module.app.module.db`, without instance keys), as committed at
    /// HEAD. `mode` is `"managed"` for a `resource` block or `"data"` for a
    /// `data` block.
    ///
    /// `None` when a module call on the way is not declared or its source
    /// is not a path inside this repository (a registry or git source),
    /// when no such block is declared, or when `mode` is neither.
    pub fn locate(&self, modules: &[&str], mode: &str, ty: &str, name: &str) -> Result<Option<Block>, CodeError> {
        let Some(mode) = Mode::from_state(mode) else {
            return Ok(None);
        };
        let repo = self.repo.to_thread_local();
        let cache = self.head_cache(&repo)?;
        let mut dir = self.root.clone();
        for call in modules {
            let decls = module(&repo, &cache, &dir)?;
            let Some(CallSource::Literal(call_source)) = decls.call_source(call) else {
                return Ok(None);
            };
            let Some(child) = source::resolve(&dir, call_source) else {
                return Ok(None);
            };
            dir = child;
        }
        Ok(module(&repo, &cache, &dir)?.resource(mode, ty, name).cloned())
    }

    /// Who last changed line `line` (1-based) of `file` (repository-relative,
    /// `/`-separated) as of HEAD. `None` when HEAD has no such file or line.
    pub fn blame(&self, file: &str, line: u32) -> Result<Option<Blame>, CodeError> {
        let repo = self.repo.to_thread_local();
        let cache = self.head_cache(&repo)?;
        let blamed = cache
            .blames
            .get_or_try_init(file, || blame::blame_file(&repo, cache.head, file, &cache.commits))?;
        Ok(blamed.as_ref().as_ref().and_then(|blamed| blamed.line(line)).cloned())
    }

    /// The `.tf` files skipped so far because they did not parse, in the
    /// modules read since HEAD last moved.
    pub fn warnings(&self) -> Vec<ParseWarning> {
        let Some(cache) = lock(&self.cache).clone() else {
            return Vec::new();
        };
        let mut warnings: Vec<ParseWarning> = cache
            .modules
            .values()
            .iter()
            .flat_map(|decls| decls.warnings().iter().cloned())
            .collect();
        warnings.sort_by(|a, b| a.file.cmp(&b.file));
        warnings
    }

    /// The cache of the commit HEAD points at now, started afresh when HEAD
    /// has moved since the last call.
    fn head_cache(&self, repo: &gix::Repository) -> Result<Arc<HeadCache>, CodeError> {
        let target = head_target(repo)?;
        if let Some(current) = lock(&self.cache).as_ref().filter(|current| current.target == target) {
            return Ok(Arc::clone(current));
        }
        let fresh = Arc::new(HeadCache::new(target, peel_to_commit(repo, target)?));
        let mut cache = lock(&self.cache);
        match cache.as_ref() {
            // Another thread saw the same HEAD first: share its cache.
            Some(current) if current.target == target => Ok(Arc::clone(current)),
            _ => {
                *cache = Some(Arc::clone(&fresh));
                Ok(fresh)
            }
        }
    }
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("git_dir", &self.repo.git_dir())
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl HeadCache {
    /// An empty cache for HEAD at `target`, which is (or peels to) `head`.
    fn new(target: ObjectId, head: ObjectId) -> Self {
        HeadCache {
            target,
            head,
            modules: Memo::new(),
            blames: Memo::new(),
            commits: Memo::new(),
        }
    }
}

/// What HEAD points at: read without peeling when HEAD names a branch,
/// the common case and the cheap one, as it is read on every call.
fn head_target(repo: &gix::Repository) -> Result<ObjectId, CodeError> {
    let head_error = |error: gix::Error| CodeError::Head {
        git_dir: repo.git_dir().to_owned(),
        source: Box::new(error),
    };
    match repo.head().map_err(head_error)?.id() {
        Some(target) => Ok(target.detach()),
        None => repo.head_id().map(gix::Id::detach).map_err(head_error),
    }
}

/// The commit `target` is or peels to (a branch may point at a tag).
fn peel_to_commit(repo: &gix::Repository, target: ObjectId) -> Result<ObjectId, CodeError> {
    let what = || format!("HEAD {target}");
    let object = repo
        .find_object(target)
        .map_err(|error| CodeError::read(what(), target, error))?;
    let commit = object
        .peel_to_commit()
        .map_err(|error| CodeError::read(what(), target, error))?;
    Ok(commit.id)
}

/// The declarations of module directory `dir` at the cache's commit, read
/// on first use.
fn module(repo: &gix::Repository, cache: &HeadCache, dir: &str) -> Result<Arc<ModuleDecls>, CodeError> {
    cache.modules.get_or_try_init(dir, || {
        let files = tree::tf_files(repo, cache.head, dir)?;
        Ok(ModuleDecls::from_files(&files))
    })
}

/// The directory `path`, relative to `work_dir` and `/`-separated.
fn root_module(path: &Path, work_dir: &Path) -> Result<String, CodeError> {
    let outside = || CodeError::OutsideWorkTree {
        path: path.to_owned(),
        work_dir: work_dir.to_owned(),
    };
    let absolute = |dir: &Path| -> Result<PathBuf, CodeError> {
        std::fs::canonicalize(dir).map_err(|error| CodeError::Open {
            path: dir.to_owned(),
            source: Box::new(error),
        })
    };
    let (path_abs, work_dir_abs) = (absolute(path)?, absolute(work_dir)?);
    let relative = path_abs.strip_prefix(&work_dir_abs).map_err(|_| outside())?;
    let mut parts = Vec::new();
    for component in relative.components() {
        let Component::Normal(part) = component else {
            return Err(outside());
        };
        let part = part
            .to_str()
            .ok_or_else(|| CodeError::NotUtf8 { path: path.to_owned() })?;
        parts.push(part);
    }
    Ok(parts.join("/"))
}
