//! The console's files, compiled into the binary (no separate server, no CDN: it works
//! offline), and the one ETag they share.

use std::sync::LazyLock;

use sha2::{Digest, Sha256};

pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
}

/// `asset!("js/main.js")`: the file under `assets/`, typed by its extension.
macro_rules! asset {
    ($path:literal) => {
        Asset {
            path: $path,
            content_type: content_type($path),
            body: include_str!(concat!("assets/", $path)),
        }
    };
}

static ASSETS: &[Asset] = &[
    asset!("index.html"),
    asset!("console.css"),
    asset!("favicon.svg"),
    asset!("js/main.js"),
    asset!("js/api.js"),
    asset!("js/dom.js"),
    asset!("js/format.js"),
    asset!("js/scopes.js"),
    asset!("js/signin.js"),
    asset!("js/overview.js"),
    asset!("js/sequence.js"),
    asset!("js/chart.js"),
    asset!("js/actions.js"),
    asset!("js/tokens.js"),
    asset!("js/lookup.js"),
];

const fn content_type(path: &str) -> &'static str {
    let bytes = path.as_bytes();
    match bytes[bytes.len() - 1] {
        b'l' => "text/html; charset=utf-8",
        b's' if bytes[bytes.len() - 2] == b'j' => "text/javascript; charset=utf-8",
        b's' => "text/css; charset=utf-8",
        _ => "image/svg+xml",
    }
}

pub fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.path == path)
}

/// A digest of every file: changes with any of them, so a browser revalidating after an
/// upgrade gets the new files and otherwise a 304.
pub fn etag() -> &'static str {
    static ETAG: LazyLock<String> = LazyLock::new(|| {
        let mut digest = Sha256::new();
        for asset in ASSETS {
            digest.update(asset.path);
            digest.update(asset.body);
        }
        format!("\"{}\"", hex::encode(&digest.finalize()[..12]))
    });
    &ETAG
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_has_the_type_its_extension_says() {
        assert_eq!(
            find("index.html").unwrap().content_type,
            "text/html; charset=utf-8"
        );
        assert_eq!(
            find("js/main.js").unwrap().content_type,
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            find("console.css").unwrap().content_type,
            "text/css; charset=utf-8"
        );
        assert_eq!(find("favicon.svg").unwrap().content_type, "image/svg+xml");
        assert!(find("../Cargo.toml").is_none());
    }
}
