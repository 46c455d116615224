//! docs/api.md against `/openapi.json`: the reference documents exactly the operations the
//! document names, each with exactly its statuses and every error code its answers name, so
//! neither can change without the other.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::helpers::spawn_app;

const REFERENCE: &str = include_str!("../../docs/api.md");

/// Served, and documented, beside the operations the document lists: it does not list itself.
const OUTSIDE_THE_DOCUMENT: &str = "GET /openapi.json";

/// Operations (`"POST /sequences"`) and the statuses each answers.
type Operations = BTreeMap<String, BTreeSet<u16>>;

/// Each `### `METHOD /path`` section of the reference, with the statuses of its table rows
/// (`| 409 | … |`) and the text of the section.
fn documented() -> BTreeMap<String, (BTreeSet<u16>, String)> {
    let mut sections = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in REFERENCE.lines() {
        if let Some(heading) = line.strip_prefix("#") {
            current = heading
                .trim_start_matches('#')
                .trim()
                .strip_prefix('`')
                .and_then(|rest| rest.strip_suffix('`'))
                .filter(|operation| operation.contains(" /"))
                .map(str::to_owned);
            if let Some(operation) = &current {
                let fresh = sections.insert(operation.clone(), Default::default());
                assert!(fresh.is_none(), "{operation} is documented twice");
            }
            continue;
        }
        let Some(operation) = &current else { continue };
        let (statuses, text): &mut (BTreeSet<u16>, String) = sections.get_mut(operation).unwrap();
        text.push_str(line);
        text.push('\n');
        let status = line
            .strip_prefix("| ")
            .and_then(|row| row.split(' ').next())
            .and_then(|cell| cell.parse::<u16>().ok());
        statuses.extend(status);
    }
    sections
}

/// The error codes the reference lists (`| 409 | `name_taken` | … |` under "Error codes").
fn error_codes() -> BTreeSet<String> {
    let table = REFERENCE
        .split("\n## Error codes\n")
        .nth(1)
        .expect("docs/api.md has an Error codes section");
    table
        .lines()
        .filter_map(|row| row.split('|').nth(2))
        .filter_map(|cell| cell.trim().strip_prefix('`')?.strip_suffix('`'))
        .map(str::to_owned)
        .collect()
}

fn operations(document: &Value) -> Operations {
    let mut operations = Operations::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            let statuses = operation["responses"]
                .as_object()
                .expect("responses")
                .keys()
                .map(|status| status.parse().expect("a numeric status"))
                .collect();
            operations.insert(format!("{} {path}", method.to_uppercase()), statuses);
        }
    }
    operations
}

/// Every error code a response's description names, in each operation.
fn codes_named(document: &Value, known: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut named = BTreeMap::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            let codes = operation["responses"]
                .as_object()
                .expect("responses")
                .values()
                .filter_map(|response| response["description"].as_str())
                .flat_map(|text| text.split(|c: char| !(c.is_ascii_lowercase() || c == '_')))
                .filter(|word| known.contains(*word))
                .map(str::to_owned)
                .collect();
            named.insert(format!("{} {path}", method.to_uppercase()), codes);
        }
    }
    named
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_reference_documents_every_operation_of_the_openapi_document() {
    let app = spawn_app().await;
    let reply = app.request(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);

    let mut documented = documented();
    assert!(
        documented.remove(OUTSIDE_THE_DOCUMENT).is_some(),
        "docs/api.md documents {OUTSIDE_THE_DOCUMENT}"
    );
    let in_the_document = operations(&reply.body);
    let in_the_reference: Operations = documented
        .iter()
        .map(|(operation, (statuses, _))| (operation.clone(), statuses.clone()))
        .collect();
    assert_eq!(
        in_the_reference.keys().collect::<Vec<_>>(),
        in_the_document.keys().collect::<Vec<_>>(),
        "docs/api.md (left) and /openapi.json (right) name different operations"
    );
    assert_eq!(
        in_the_reference, in_the_document,
        "docs/api.md (left) and /openapi.json (right) give an operation different statuses"
    );

    let known = error_codes();
    for (operation, codes) in codes_named(&reply.body, &known) {
        let (_, text) = &documented[&operation];
        for code in codes {
            assert!(
                text.contains(&format!("`{code}`")),
                "/openapi.json names {code} for {operation}, docs/api.md does not"
            );
        }
    }
}
