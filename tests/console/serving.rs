//! The console over plain HTTP: its page and files with their security headers, relative
//! URLs only, and nothing at all once turned off.

use reqwest::StatusCode;

use crate::setup::Served;

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

async fn get(url: &str) -> reqwest::Response {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(url)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_console_is_served_with_a_strict_content_security_policy() {
    let served = Served::start("console-headers", &[]).await;
    let address = served.address();
    for (path, content_type) in [
        ("/console/", "text/html; charset=utf-8"),
        ("/console/js/main.js", "text/javascript; charset=utf-8"),
        ("/console/console.css", "text/css; charset=utf-8"),
    ] {
        let response = get(&format!("{address}{path}")).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_else(|| panic!("{path} has no {name}"))
        };
        assert_eq!(header("content-security-policy"), CSP, "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(header("content-type"), content_type, "{path}");
    }
}

#[tokio::test]
async fn the_console_uses_relative_urls_only_so_it_works_under_a_path_prefix() {
    let served = Served::start("console-relative", &[]).await;
    let address = served.address();
    let redirect = get(&format!("{address}/console")).await;
    assert_eq!(redirect.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(redirect.headers()["location"], "console/");
    let page = get(&format!("{address}/console/"))
        .await
        .text()
        .await
        .unwrap();
    for absolute in [
        "src=\"/", "href=\"/", "http://", "https://", "<script>", "style=",
    ] {
        assert!(!page.contains(absolute), "the page holds {absolute:?}");
    }
    let api = get(&format!("{address}/console/js/api.js"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        api.contains("fetch(`../${path}`"),
        "the API is called relative to the console"
    );
    let missing = get(&format!("{address}/console/js/nothing.js")).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_revalidating_browser_is_answered_304_while_the_files_are_unchanged() {
    let served = Served::start("console-etag", &[]).await;
    let url = format!("{}/console/js/main.js", served.address());
    let first = get(&url).await;
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    assert_eq!(first.headers()["cache-control"], "no-cache");
    let again = reqwest::Client::new()
        .get(&url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn with_the_console_turned_off_nothing_of_it_is_served() {
    let served = Served::start("console-off", &[("SEQVEND_CONSOLE", "false")]).await;
    let address = served.address();
    for path in ["/console", "/console/", "/console/js/main.js"] {
        let response = get(&format!("{address}{path}")).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
    // The API it calls is still there.
    let api = get(&format!("{address}/healthz")).await;
    assert_eq!(api.status(), StatusCode::OK);
}
