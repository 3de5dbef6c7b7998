//! Embeds the built web dashboard (`web/dist`, committed; rebuilt with
//! `npm run build` in `web/`) into the binary: a table of every file with
//! its content type, its bytes and its gzip form, written to
//! `$OUT_DIR/dashboard_assets.rs` and included by `src/dashboard.rs`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dist = manifest.join("../web/dist");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed={}", dist.display());

    let mut files = Vec::new();
    if dist.is_dir() {
        collect(&dist, &dist, &mut files);
    } else {
        println!(
            "cargo:warning=web/dist is missing: the daemon serves no dashboard (run `npm ci && npm run build` in web/)"
        );
    }
    files.sort();

    let mut table = String::from("pub static ASSETS: &[Asset] = &[\n");
    for (i, (url, path)) in files.iter().enumerate() {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let gz_path = out.join(format!("asset-{i}.gz"));
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&bytes).expect("gzip into memory");
        let gz = enc.finish().expect("gzip into memory");
        std::fs::write(&gz_path, &gz).unwrap_or_else(|e| panic!("cannot write {}: {e}", gz_path.display()));
        writeln!(
            table,
            "    Asset {{ path: {url:?}, content_type: {ct:?}, body: include_bytes!({p:?}), gzip: include_bytes!({g:?}) }},",
            ct = content_type(url),
            p = path.display().to_string(),
            g = gz_path.display().to_string(),
        )
        .expect("write to a String");
    }
    table.push_str("];\n");
    std::fs::write(out.join("dashboard_assets.rs"), table).expect("write dashboard_assets.rs");
}

/// Every file under `dir`, as (`/path/from/dist`, absolute path).
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("read a directory entry").path();
        if path.is_dir() {
            collect(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).expect("under the root");
            let url = format!("/{}", rel.to_string_lossy().replace('\\', "/"));
            out.push((url, path));
        }
    }
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}
