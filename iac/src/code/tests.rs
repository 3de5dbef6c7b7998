//! Tests against real git repositories built with the `git` CLI in a
//! temporary directory, with fixed authors and dates.

mod fixture;

use std::path::PathBuf;

use fixture::{ALICE, ALICE_TIME, BOB, BOB_TIME, Fixture};

use super::hcl::{self, Mode};
use super::lines::Lines;
use super::source;
use super::{Blame, Block, Repo};

/// The root module: comments and a heredoc that look like blocks, a local
/// module call, a registry one, a git one, and a data source.
const ROOT_MAIN: &str = r#"terraform {
  required_version = ">= 1.5"
}

# resource "aws_instance" "web" {
/* resource "aws_instance" "web" { } */
# café ☕ – not ASCII before the block

resource "aws_instance" "web" {
  ami           = "ami-123"
  instance_type = "t3.micro"
  user_data     = <<-EOT
    #!/bin/sh
    echo "}"
    resource "aws_instance" "web" {
  EOT
  tags = {
    Name = "web } {"
  }
}

module "app" {
  source = "./modules/app"
}

module "consul" {
  source  = "hashicorp/consul/aws"
  version = "0.1.0"
}

module "network" {
  source = "git::https://example.com/network.git?ref=v1.0.0"
}

module "escape" {
  source = "../outside"
}

data "aws_ami" "ubuntu" {
  most_recent = true
}
"#;

/// The `app` module as Alice wrote it: a counted and a for_each resource,
/// and a call of a sibling module through `..`.
const APP_MAIN_ALICE: &str = r#"resource "aws_ebs_volume" "data" {
  count             = 3
  availability_zone = "eu-west-1a"
  size              = 10
}

resource "aws_s3_bucket" "logs" {
  for_each = toset(["a", "b"])
  bucket   = "logs-${each.key}"
}

module "db" {
  source = "./../db"
}
"#;

/// Bob's change to the `app` module: one line in Alice's volume, and a new
/// queue at the end.
const APP_MAIN_BOB: &str = r#"resource "aws_ebs_volume" "data" {
  count             = 3
  availability_zone = "eu-west-1a"
  size              = 10
  encrypted         = true
}

resource "aws_s3_bucket" "logs" {
  for_each = toset(["a", "b"])
  bucket   = "logs-${each.key}"
}

module "db" {
  source = "./../db"
}

resource "aws_sqs_queue" "jobs" {
  name = "jobs"
}
"#;

/// A file of the `app` module that is not valid HCL.
const APP_BROKEN: &str = "resource \"aws_sqs_queue\" \"broken\" {\n  name = \n";

/// The `db` module, reached from `app`.
const DB_MAIN: &str = "resource \"aws_db_instance\" \"main\" { engine = \"postgres\" }\n";

/// Alice's commit, then Bob's; the repository and both commits.
fn two_authors() -> (Fixture, String, String) {
    let fixture = Fixture::new();
    fixture.write("main.tf", ROOT_MAIN);
    fixture.write("modules/app/main.tf", APP_MAIN_ALICE);
    fixture.write("modules/app/broken.tf", APP_BROKEN);
    fixture.write("modules/db/main.tf", DB_MAIN);
    let alice = fixture.commit(&ALICE, ALICE_TIME, "Add web server and app module\n\nWith a body.");
    fixture.write("modules/app/main.tf", APP_MAIN_BOB);
    let bob = fixture.commit(&BOB, BOB_TIME, "Encrypt volumes, add job queue");
    (fixture, alice, bob)
}

/// Lines `first..=last` (1-based) of `text`, as a block's text.
fn lines(text: &str, first: usize, last: usize) -> String {
    text.lines()
        .skip(first - 1)
        .take(last - first + 1)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `locate` with a `managed` resource, failing the test on an error.
fn managed(repo: &Repo, modules: &[&str], ty: &str, name: &str) -> Option<Block> {
    repo.locate(modules, "managed", ty, name).expect("locate")
}

#[test]
fn locates_a_root_resource_past_lookalike_comments_heredocs_and_strings() {
    let (fixture, _, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");

    let web = managed(&repo, &[], "aws_instance", "web").expect("web is declared");

    assert_eq!(web.file, "main.tf");
    assert_eq!((web.line, web.end_line), (9, 20));
    assert_eq!(web.text, lines(ROOT_MAIN, 9, 20));
    assert!(web.text.starts_with("resource \"aws_instance\" \"web\" {\n  ami"));
    assert!(web.text.ends_with("    Name = \"web } {\"\n  }\n}"));
}

#[test]
fn locates_a_data_source_only_as_data() {
    let (fixture, _, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");

    let ubuntu = repo.locate(&[], "data", "aws_ami", "ubuntu").expect("locate");

    let expected = Block {
        file: "main.tf".to_owned(),
        line: 39,
        end_line: 41,
        text: "data \"aws_ami\" \"ubuntu\" {\n  most_recent = true\n}".to_owned(),
    };
    assert_eq!(ubuntu, Some(expected));
    assert_eq!(managed(&repo, &[], "aws_ami", "ubuntu"), None);
    assert_eq!(repo.locate(&[], "unknown", "aws_ami", "ubuntu").expect("locate"), None);
}

#[test]
fn locates_resources_in_local_modules() {
    let (fixture, _, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");

    let volume = managed(&repo, &["app"], "aws_ebs_volume", "data").expect("volume is declared");
    let logs = managed(&repo, &["app"], "aws_s3_bucket", "logs").expect("logs is declared");
    let queue = managed(&repo, &["app"], "aws_sqs_queue", "jobs").expect("queue is declared");
    let db = managed(&repo, &["app", "db"], "aws_db_instance", "main").expect("db is declared");

    assert_eq!(volume.file, "modules/app/main.tf");
    assert_eq!((volume.line, volume.end_line), (1, 6));
    assert_eq!(volume.text, lines(APP_MAIN_BOB, 1, 6));
    assert_eq!(
        (logs.file.as_str(), logs.line, logs.end_line),
        ("modules/app/main.tf", 8, 11)
    );
    assert_eq!(
        (queue.file.as_str(), queue.line, queue.end_line),
        ("modules/app/main.tf", 17, 19)
    );
    assert_eq!((db.file.as_str(), db.line, db.end_line), ("modules/db/main.tf", 1, 1));
    assert_eq!(db.text, DB_MAIN.trim_end());
}

#[test]
fn a_resource_is_only_found_in_its_own_module() {
    let (fixture, _, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");

    assert_eq!(managed(&repo, &[], "aws_ebs_volume", "data"), None);
    assert_eq!(managed(&repo, &["app"], "aws_instance", "web"), None);
    assert_eq!(managed(&repo, &["db"], "aws_db_instance", "main"), None);
}

#[test]
fn modules_outside_the_repository_are_not_located() {
    let (fixture, _, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");

    assert_eq!(managed(&repo, &["consul"], "aws_instance", "server"), None);
    assert_eq!(managed(&repo, &["network"], "aws_vpc", "main"), None);
    assert_eq!(managed(&repo, &["escape"], "aws_vpc", "main"), None);
    assert_eq!(managed(&repo, &["missing"], "aws_vpc", "main"), None);
}

#[test]
fn a_missing_block_is_none() {
    let (fixture, _, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");

    assert_eq!(managed(&repo, &[], "aws_instance", "api"), None);
    assert_eq!(managed(&repo, &["app"], "aws_ebs_volume", "logs"), None);
}

#[test]
fn a_file_that_does_not_parse_is_skipped_and_reported() {
    let (fixture, _, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");

    assert_eq!(managed(&repo, &["app"], "aws_sqs_queue", "broken"), None);
    let volume = managed(&repo, &["app"], "aws_ebs_volume", "data").expect("main.tf still read");

    assert_eq!(volume.file, "modules/app/main.tf");
    let warnings = repo.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].file, "modules/app/broken.tf");
    assert_eq!(warnings[0].line, 2);
}

#[test]
fn blame_names_the_author_of_each_line() {
    let (fixture, alice, bob) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");
    let alices = Blame {
        commit: alice,
        author: ALICE.name.to_owned(),
        email: ALICE.email.to_owned(),
        time: ALICE_TIME,
        summary: "Add web server and app module".to_owned(),
    };
    let bobs = Blame {
        commit: bob,
        author: BOB.name.to_owned(),
        email: BOB.email.to_owned(),
        time: BOB_TIME,
        summary: "Encrypt volumes, add job queue".to_owned(),
    };
    let volume = managed(&repo, &["app"], "aws_ebs_volume", "data").expect("volume");
    let queue = managed(&repo, &["app"], "aws_sqs_queue", "jobs").expect("queue");

    assert_eq!(
        repo.blame(&volume.file, volume.line).expect("blame"),
        Some(alices.clone())
    );
    assert_eq!(repo.blame(&volume.file, 4).expect("blame"), Some(alices.clone()));
    assert_eq!(repo.blame(&volume.file, 5).expect("blame"), Some(bobs.clone()));
    assert_eq!(
        repo.blame(&volume.file, volume.end_line).expect("blame"),
        Some(alices.clone())
    );
    assert_eq!(repo.blame(&queue.file, queue.line).expect("blame"), Some(bobs));
    assert_eq!(repo.blame("main.tf", 9).expect("blame"), Some(alices));
}

#[test]
fn blame_follows_a_renamed_file() {
    let (fixture, alice, _) = two_authors();
    fixture.git(&BOB, BOB_TIME, &["mv", "modules/db/main.tf", "modules/db/database.tf"]);
    let moved = fixture.commit(&BOB, BOB_TIME + 60, "Rename the database file");
    let repo = Repo::open(fixture.path()).expect("open");

    let db = managed(&repo, &["app", "db"], "aws_db_instance", "main").expect("db");
    let blame = repo.blame(&db.file, db.line).expect("blame").expect("line 1");

    assert_eq!(db.file, "modules/db/database.tf");
    assert_ne!(blame.commit, moved);
    assert_eq!((blame.commit, blame.author.as_str()), (alice, ALICE.name));
}

#[test]
fn blame_of_a_missing_file_or_line_is_none() {
    let (fixture, _, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");
    let last_line = u32::try_from(APP_MAIN_BOB.lines().count()).expect("few lines");

    assert!(repo.blame("modules/app/main.tf", last_line).expect("blame").is_some());
    assert_eq!(repo.blame("modules/app/main.tf", last_line + 1).expect("blame"), None);
    assert_eq!(repo.blame("modules/app/main.tf", 0).expect("blame"), None);
    assert_eq!(repo.blame("modules/app/missing.tf", 1).expect("blame"), None);
    assert_eq!(repo.blame("modules/app", 1).expect("blame"), None);
    assert_eq!(repo.blame("../main.tf", 1).expect("blame"), None);
    assert_eq!(repo.blame("", 1).expect("blame"), None);
}

#[test]
fn a_new_commit_is_seen_by_the_next_call() {
    let (fixture, _, bob) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");
    assert_eq!(repo.head().expect("head"), bob);
    assert_eq!(managed(&repo, &[], "aws_instance", "api"), None);
    assert_eq!(repo.blame("main.tf", 42).expect("blame"), None);

    let api = "\nresource \"aws_instance\" \"api\" {\n  ami = \"ami-456\"\n}\n";
    fixture.write("main.tf", &format!("{ROOT_MAIN}{api}"));
    let third = fixture.commit(&BOB, BOB_TIME + 60, "Add api server");

    assert_eq!(repo.head().expect("head"), third);
    let located = managed(&repo, &[], "aws_instance", "api").expect("api is declared now");
    assert_eq!((located.line, located.end_line), (43, 45));
    let blame = repo.blame("main.tf", 43).expect("blame").expect("line 43 exists now");
    assert_eq!((blame.commit, blame.summary), (third, "Add api server".to_owned()));
}

#[test]
fn a_detached_head_is_read_where_it_points() {
    let (fixture, alice, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");
    assert!(managed(&repo, &["app"], "aws_sqs_queue", "jobs").is_some());

    fixture.git(&ALICE, ALICE_TIME, &["checkout", "--quiet", "--detach", &alice]);

    assert_eq!(repo.head().expect("head"), alice);
    assert_eq!(managed(&repo, &["app"], "aws_sqs_queue", "jobs"), None);
    let volume = managed(&repo, &["app"], "aws_ebs_volume", "data").expect("volume");
    assert_eq!((volume.line, volume.end_line), (1, 5));
    let blame = repo.blame("modules/app/main.tf", 5).expect("blame").expect("line 5");
    assert_eq!(blame.commit, alice);
}

#[test]
fn a_head_pointing_at_an_annotated_tag_is_peeled_to_its_commit() {
    let (fixture, _, bob) = two_authors();
    fixture.git(&BOB, BOB_TIME, &["tag", "--annotate", "--message", "Release", "v1"]);
    let tag = fixture.git(&BOB, BOB_TIME, &["rev-parse", "v1"]).trim().to_owned();
    // Git's commands refuse to point HEAD at a tag; other tools need not.
    std::fs::write(fixture.path().join(".git/HEAD"), format!("{tag}\n")).expect("write HEAD");
    let repo = Repo::open(fixture.path()).expect("open");

    assert_ne!(tag, bob);
    assert_eq!(repo.head().expect("head"), bob);
    assert!(managed(&repo, &["app"], "aws_sqs_queue", "jobs").is_some());
    let blame = repo.blame("modules/app/main.tf", 17).expect("blame").expect("line 17");
    assert_eq!(blame.commit, bob);
}

#[test]
fn the_work_tree_is_not_read() {
    let (fixture, _, _) = two_authors();
    fixture.write("main.tf", "resource \"aws_instance\" \"uncommitted\" {}\n");
    fixture.write("extra.tf", "resource \"aws_instance\" \"untracked\" {}\n");
    let repo = Repo::open(fixture.path()).expect("open");

    assert_eq!(managed(&repo, &[], "aws_instance", "uncommitted"), None);
    assert_eq!(managed(&repo, &[], "aws_instance", "untracked"), None);
    let web = managed(&repo, &[], "aws_instance", "web").expect("committed web");
    assert_eq!((web.line, web.end_line), (9, 20));
}

#[test]
fn a_subdirectory_is_the_root_module() {
    let (fixture, _, _) = two_authors();
    let repo = Repo::open(&fixture.path().join("modules/app")).expect("open");

    let volume = managed(&repo, &[], "aws_ebs_volume", "data").expect("volume");
    let db = managed(&repo, &["db"], "aws_db_instance", "main").expect("db");

    assert_eq!(volume.file, "modules/app/main.tf");
    assert_eq!(db.file, "modules/db/main.tf");
    assert_eq!(managed(&repo, &[], "aws_instance", "web"), None);
}

#[test]
fn override_files_redirect_module_calls_but_declare_nothing() {
    let fixture = Fixture::new();
    fixture.write("main.tf", "module \"net\" {\n  source = \"./old\"\n}\n");
    fixture.write(
        "net_override.tf",
        "module \"net\" {\n  source = \"./new\"\n}\n\nresource \"aws_vpc\" \"main\" {}\n",
    );
    fixture.write("old/main.tf", "resource \"aws_vpc\" \"main\" {}\n");
    fixture.write("new/main.tf", "\nresource \"aws_vpc\" \"main\" {}\n");
    fixture.commit(&ALICE, ALICE_TIME, "Network");
    let repo = Repo::open(fixture.path()).expect("open");

    let vpc = managed(&repo, &["net"], "aws_vpc", "main").expect("vpc");

    assert_eq!((vpc.file.as_str(), vpc.line), ("new/main.tf", 2));
    assert_eq!(managed(&repo, &[], "aws_vpc", "main"), None);
}

#[test]
fn opening_outside_a_repository_fails_with_the_path() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let missing: PathBuf = dir.path().join("missing");

    let error = Repo::open(&missing).expect_err("no repository there");

    assert!(error.to_string().contains("missing"), "{error}");
}

#[test]
fn an_unborn_head_is_an_error() {
    let fixture = Fixture::new();
    let repo = Repo::open(fixture.path()).expect("open");

    let error = repo.locate(&[], "managed", "aws_vpc", "main").expect_err("no commit");

    assert!(error.to_string().starts_with("cannot resolve HEAD"), "{error}");
}

#[test]
fn concurrent_lookups_agree() {
    let (fixture, alice, _) = two_authors();
    let repo = Repo::open(fixture.path()).expect("open");

    let answers: Vec<(Option<Block>, Option<String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let web = managed(&repo, &[], "aws_instance", "web");
                    let blame = repo.blame("main.tf", 9).expect("blame").map(|blame| blame.commit);
                    (web, blame)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("worker"))
            .collect()
    });

    for (web, blame) in answers {
        assert_eq!(web.map(|web| (web.line, web.end_line)), Some((9, 20)));
        assert_eq!(blame.as_deref(), Some(alice.as_str()));
    }
}

#[test]
fn repo_is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Repo>();
}

#[test]
fn module_sources_resolve_relative_to_the_caller() {
    assert_eq!(source::resolve("", "./modules/app").as_deref(), Some("modules/app"));
    assert_eq!(
        source::resolve("infra", "./modules/app/").as_deref(),
        Some("infra/modules/app")
    );
    assert_eq!(source::resolve("modules/app", "../db").as_deref(), Some("modules/db"));
    assert_eq!(source::resolve("modules/app", "./../../x/./y").as_deref(), Some("x/y"));
    assert_eq!(source::resolve("a", ".\\b\\c").as_deref(), Some("a/b/c"));
    assert_eq!(source::resolve("modules/app", "../.."), Some(String::new()));
    assert_eq!(source::resolve("modules", "../../outside"), None);
    assert_eq!(source::resolve("", "modules/app"), None);
    assert_eq!(source::resolve("", "hashicorp/consul/aws"), None);
    assert_eq!(source::resolve("", "git::https://example.com/x.git"), None);
    assert_eq!(source::resolve("", "s3::https://bucket.s3.amazonaws.com/x.zip"), None);
    assert_eq!(source::resolve("", "https://example.com/x.zip"), None);
}

#[test]
fn a_bom_and_crlf_line_endings_keep_lines_right() {
    let text = "\u{feff}# first\r\nresource \"a\" \"b\" {\r\n  x = 1\r\n}\r\n";

    let parsed = hcl::parse("a.tf", text.as_bytes()).expect("parses");

    let [resource] = parsed.resources.as_slice() else {
        panic!("one resource expected: {:?}", parsed.resources);
    };
    assert_eq!(resource.mode, Mode::Managed);
    assert_eq!((resource.ty.as_str(), resource.name.as_str()), ("a", "b"));
    assert_eq!((resource.block.line, resource.block.end_line), (2, 4));
    assert_eq!(resource.block.text, "resource \"a\" \"b\" {\r\n  x = 1\r\n}");
}

#[test]
fn a_file_that_is_not_utf8_is_a_warning() {
    let warning = hcl::parse("bad.tf", b"resource \"a\" \"b\" { x = \"\xff\" }\n").expect_err("not UTF-8");

    assert_eq!((warning.file.as_str(), warning.line), ("bad.tf", 0));
}

#[test]
fn line_numbers_count_newlines() {
    let lines = Lines::new("a\nbc\n\nd");

    assert_eq!(
        [0, 1, 2, 4, 5, 6].map(|offset| lines.line_of(offset)),
        [1, 1, 2, 2, 3, 4]
    );
    assert_eq!(lines.text_of(2, 3), Some("bc\n"));
    assert_eq!(lines.text_of(4, 4), Some("d"));
    assert_eq!(lines.text_of(5, 5), None);
    assert_eq!(lines.text_of(0, 1), None);
    assert_eq!(lines.text_of(3, 2), None);
}
