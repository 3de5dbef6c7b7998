//! A git repository built with the `git` CLI in a temporary directory,
//! committed to by fixed authors at fixed times, with no configuration
//! but its own.

use std::path::Path;
use std::process::Command;

/// A commit author with a fixed identity.
pub(super) struct Person {
    /// The author and committer name.
    pub(super) name: &'static str,
    /// The author and committer email.
    pub(super) email: &'static str,
}

/// The first author.
pub(super) const ALICE: Person = Person {
    name: "Alice Example",
    email: "alice@example.com",
};
/// The second author.
pub(super) const BOB: Person = Person {
    name: "Bob Example",
    email: "bob@example.com",
};

/// Alice's first commit time and Bob's, Unix seconds.
pub(super) const ALICE_TIME: i64 = 1_700_000_000;
pub(super) const BOB_TIME: i64 = 1_700_100_000;

/// A git repository in a temporary directory.
pub(super) struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    /// An empty repository on branch `main`.
    pub(super) fn new() -> Fixture {
        let fixture = Fixture {
            dir: tempfile::tempdir().expect("temporary directory"),
        };
        fixture.git(&ALICE, ALICE_TIME, &["init", "--quiet", "--initial-branch=main"]);
        fixture
    }

    /// The work tree's root.
    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `content` to `file` (work-tree-relative), creating directories.
    pub(super) fn write(&self, file: &str, content: &str) {
        let path = self.path().join(file);
        std::fs::create_dir_all(path.parent().expect("file has a parent")).expect("create directories");
        std::fs::write(path, content).expect("write file");
    }

    /// Commits everything in the work tree as `author` at `time`; the new
    /// commit's hex id.
    pub(super) fn commit(&self, author: &Person, time: i64, message: &str) -> String {
        self.git(author, time, &["add", "--all"]);
        self.git(author, time, &["commit", "--quiet", "--no-verify", "-m", message]);
        self.git(author, time, &["rev-parse", "HEAD"]).trim().to_owned()
    }

    /// Runs `git args` in the work tree with no configuration but ours.
    pub(super) fn git(&self, author: &Person, time: i64, args: &[&str]) -> String {
        let date = format!("@{time} +0000");
        let output = Command::new("git")
            .current_dir(self.path())
            .args(["-c", "user.useConfigOnly=false", "-c", "commit.gpgSign=false"])
            .args(args)
            .env("HOME", self.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", author.name)
            .env("GIT_AUTHOR_EMAIL", author.email)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_NAME", author.name)
            .env("GIT_COMMITTER_EMAIL", author.email)
            .env("GIT_COMMITTER_DATE", &date)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .output()
            .expect("run git");
        assert!(
            output.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("git prints UTF-8")
    }
}
