//! The web dashboard: the files of `web/dist`, embedded at build time
//! (`api/build.rs`), served at `/` and `/assets/*` with no authentication
//! (they hold no data; the page signs in against `/api/v1/session`).
//!
//! Each file is kept twice, plain and gzipped; a client that accepts gzip
//! gets the smaller one. Hashed assets are cached for a year; `index.html`
//! is revalidated on every load, so a new daemon serves its new bundle.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// One file of the built dashboard.
pub struct Asset {
    /// Its path from the dashboard's root, such as `/index.html`.
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
    pub gzip: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/dashboard_assets.rs"));

/// The page's own rules: scripts, styles and connections to this daemon
/// only (the WebSocket included), never inside another site's frame.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

pub fn asset(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

/// `GET /` and `GET /index.html`.
pub async fn index(headers: HeaderMap) -> Response {
    serve("/index.html", &headers, "no-cache")
}

/// `GET /assets/{*file}`.
pub async fn assets(Path(file): Path<String>, headers: HeaderMap) -> Response {
    serve(
        &format!("/assets/{file}"),
        &headers,
        "public, max-age=31536000, immutable",
    )
}

fn serve(path: &str, headers: &HeaderMap, cache: &'static str) -> Response {
    let Some(a) = asset(path) else {
        let message = if ASSETS.is_empty() {
            "this daemon was built without its dashboard (web/dist was missing)"
        } else {
            "no such dashboard file"
        };
        return (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            message,
        )
            .into_response();
    };
    let gzip = accepts_gzip(headers);
    let body: &'static [u8] = if gzip { a.gzip } else { a.body };
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(a.content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if a.content_type.starts_with("text/html") {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    if gzip {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    res
}

/// Whether `Accept-Encoding` lists gzip (or `*`) with a non-zero q-value.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let zero = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !zero
        })
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, header};

    fn with(v: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(v));
        h
    }

    #[test]
    fn reads_accept_encoding() {
        assert!(super::accepts_gzip(&with("gzip, deflate, br")));
        assert!(super::accepts_gzip(&with("br;q=1.0, GZIP;q=0.5")));
        assert!(super::accepts_gzip(&with("*")));
        assert!(!super::accepts_gzip(&with("gzip;q=0")));
        assert!(!super::accepts_gzip(&with("br")));
        assert!(!super::accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn the_bundle_is_embedded_with_its_index() {
        let index = super::asset("/index.html").expect("web/dist/index.html is embedded");
        assert!(index.content_type.starts_with("text/html"));
        let text = std::str::from_utf8(index.body).expect("utf-8");
        for a in super::ASSETS.iter().filter(|a| a.path.starts_with("/assets/")) {
            if a.path.ends_with(".js") || a.path.ends_with(".css") {
                assert!(text.contains(a.path), "index.html links {}", a.path);
            }
        }
    }
}
