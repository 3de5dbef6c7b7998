//! Which form a topology endpoint answers, and the binary answer itself.
//!
//! `Accept` is honoured minimally: when one of its media ranges is exactly
//! `application/x-flatbuffers` (any case, parameters allowed) with a
//! q-value above 0, the answer is the binary graph form (SPEC 2.4,
//! [`crate::fbs`]); otherwise JSON, as before. No 406: a client that
//! accepts neither gets JSON. Both answers say `Vary: Accept`.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;

use crate::error::{ApiError, ApiResult};
use crate::fbs::{Finished, MEDIA_TYPE};

/// Whether `Accept` asks for the binary graph form.
pub(crate) fn wants_binary(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or_default().trim();
            media.eq_ignore_ascii_case(MEDIA_TYPE)
                && parts.all(|p| {
                    let Some((k, v)) = p.split_once('=') else {
                        return true;
                    };
                    !k.trim().eq_ignore_ascii_case("q") || v.trim().parse::<f32>().is_ok_and(|q| q > 0.0)
                })
        })
}

/// Adds `Vary: Accept`: the body depends on that header.
pub(crate) fn vary(mut resp: Response) -> Response {
    resp.headers_mut()
        .append(header::VARY, HeaderValue::from_static("accept"));
    resp
}

/// A finished buffer as a `200` with content type `application/x-flatbuffers`.
pub(crate) fn respond(graph: Finished) -> ApiResult<Response> {
    let Finished { buf, head } = graph;
    let body = Bytes::from(buf).slice(head..);
    let resp = Response::builder()
        .header(header::CONTENT_TYPE, MEDIA_TYPE)
        .body(Body::from(body))
        .map_err(ApiError::internal)?;
    Ok(vary(resp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_exact_media_type_with_a_positive_q_asks_for_binary() {
        for yes in [
            &["application/x-flatbuffers"][..],
            &["application/json;q=0.5, application/x-flatbuffers"],
            &["Application/X-FlatBuffers ; q=0.1"],
            &["text/html", "application/x-flatbuffers;q=1.0"],
            &["application/x-flatbuffers;charset=binary"],
        ] {
            assert!(wants_binary(&accept(yes)), "{yes:?}");
        }
        for no in [
            &[][..],
            &["application/json"],
            &["*/*"],
            &["application/*"],
            &["application/x-flatbuffers;q=0"],
            &["application/x-flatbuffers;q=0.0, application/json"],
            &["application/x-flatbuffers;q=abc"],
            &["application/x-flatbuffersx"],
        ] {
            assert!(!wants_binary(&accept(no)), "{no:?}");
        }
    }
}
