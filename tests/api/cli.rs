//! The `seqvend` command line, run as a real process against a running seqvend: every
//! command, its tables and its `--json`, and what it does when the server says no.

use std::process::Output;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::process::BINARY;
use crate::helpers::*;

/// `seqvend ARGS` with SEQVEND_URL pointing at `app` and SEQVEND_TOKEN set to `token`.
async fn seqvend(app: &TestApp, token: &str, args: &[&str]) -> Output {
    tokio::process::Command::new(BINARY)
        .args(args)
        .env("SEQVEND_URL", &app.address)
        .env("SEQVEND_TOKEN", token)
        .output()
        .await
        .expect("the binary runs")
}

/// Its stdout, after checking it succeeded.
fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}; stderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The table row whose first cell is `first`, split into cells.
fn row<'a>(table: &'a str, first: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&first))
        .unwrap_or_else(|| panic!("no row {first:?} in\n{table}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn sequences_commands_create_show_list_extend_change_and_retire() {
    let app = spawn_app().await;
    let created = stdout(
        &seqvend(
            &app,
            ADMIN_TOKEN,
            &[
                "sequences",
                "create",
                "fedex",
                "--min",
                "100",
                "--max",
                "199",
            ],
        )
        .await,
    );
    assert!(created.contains("name:        fedex\n"), "{created}");
    assert_eq!(app.get("fedex").await.status, StatusCode::OK);

    let added = stdout(
        &seqvend(
            &app,
            ADMIN_TOKEN,
            &[
                "sequences",
                "add-range",
                "fedex",
                "--min",
                "500",
                "--max",
                "549",
            ],
        )
        .await,
    );
    assert_eq!(
        row(&added, "500"),
        ["500", "549", "pending", "500", "50", "seqvend_ranges.r2"]
    );

    let changed = stdout(
        &seqvend(
            &app,
            ADMIN_TOKEN,
            &[
                "sequences",
                "set",
                "fedex",
                "--cache-size",
                "40",
                "--buffer-seconds",
                "5",
                "--min",
                "8",
            ],
        )
        .await,
    );
    assert!(
        changed.contains("cache:       40 per instance, 5s buffer, min 8\n"),
        "{changed}"
    );
    assert_eq!(
        app.get("fedex").await.body["cache"],
        json!({"size": 40, "buffer_seconds": 5, "min": 8})
    );

    app.create_ok("alpha", 1, 10).await;
    let listed = stdout(&seqvend(&app, VEND_TOKEN, &["sequences", "list"]).await);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "NAME",
            "STATUS",
            "NEXT",
            "REMAINING",
            "PER_SEC_24H",
            "DAYS_LEFT",
            "ALERTS",
            "RANGES",
            "CACHE"
        ]
    );
    assert_eq!(
        row(&listed, "alpha"),
        ["alpha", "active", "1", "10", "0.00", "-", "-", "1", "strict"]
    );
    assert_eq!(
        row(&listed, "fedex")[..8],
        ["fedex", "active", "100", "150", "0.00", "-", "-", "2"]
    );
    assert_eq!(lines.len(), 3, "{listed}");
    let first_page =
        stdout(&seqvend(&app, VEND_TOKEN, &["sequences", "list", "--limit", "1"]).await);
    assert!(
        first_page.ends_with("more: seqvend sequences list --after alpha\n"),
        "{first_page}"
    );
    let second_page =
        stdout(&seqvend(&app, VEND_TOKEN, &["sequences", "list", "--after", "alpha"]).await);
    assert_eq!(second_page.lines().count(), 2, "{second_page}");

    let shown = stdout(&seqvend(&app, VEND_TOKEN, &["sequences", "show", "fedex"]).await);
    assert!(shown.contains("remaining:   150\n"), "{shown}");
    assert!(shown.contains("days left:   -\n"), "{shown}");
    assert!(
        shown.contains("alerts:      - (remaining below 15, days left below 14)\n"),
        "{shown}"
    );

    // Alert thresholds alone, then nothing at all (refused before any request).
    let alerted = stdout(
        &seqvend(
            &app,
            ADMIN_TOKEN,
            &[
                "sequences",
                "set",
                "fedex",
                "--alert-remaining-below",
                "20",
                "--alert-days-left-below",
                "30",
            ],
        )
        .await,
    );
    assert!(
        alerted.contains("alerts:      - (remaining below 20, days left below 30)\n"),
        "{alerted}"
    );
    assert_eq!(app.get("fedex").await.body["cache"]["size"], 40);
    let nothing = seqvend(&app, ADMIN_TOKEN, &["sequences", "set", "fedex"]).await;
    assert!(!nothing.status.success());
    assert!(
        stderr(&nothing).contains("--cache-size"),
        "{}",
        stderr(&nothing)
    );
    assert_eq!(
        row(&shown, "100"),
        ["100", "199", "active", "100", "100", "seqvend_ranges.r1"]
    );
    assert_eq!(row(&shown, "500")[2], "pending");
    // The columns line up: each range's cells start where their headers do.
    let header = shown.lines().find(|l| l.starts_with("MIN")).unwrap();
    let first = shown.lines().find(|l| l.starts_with("100")).unwrap();
    assert_eq!(header.find("STATUS"), first.find("active"), "{shown}");

    let retired = stdout(&seqvend(&app, ADMIN_TOKEN, &["sequences", "retire", "fedex"]).await);
    assert!(retired.contains("status:      retired\n"), "{retired}");
    app.next("fedex")
        .await
        .assert_error(410, "sequence_retired");
}

#[tokio::test(flavor = "multi_thread")]
async fn next_prints_one_value_per_line_and_formatted_sequences_their_numbers() {
    let app = spawn_app().await;
    app.create_ok("plain", 1, 100).await;
    assert_eq!(
        stdout(&seqvend(&app, VEND_TOKEN, &["next", "plain"]).await),
        "1\n"
    );
    assert_eq!(
        stdout(&seqvend(&app, VEND_TOKEN, &["next", "plain", "--count", "3"]).await),
        "2\n3\n4\n"
    );

    let format = r#"{"kind": "ups_1z", "account": "5R8939", "service": "03"}"#;
    let created = seqvend(
        &app,
        ADMIN_TOKEN,
        &[
            "sequences",
            "create",
            "ups",
            "--min",
            "5756712",
            "--max",
            "5756799",
            "--format",
            format,
        ],
    )
    .await;
    assert!(stdout(&created).contains("format:"), "{}", stdout(&created));
    let vended = stdout(&seqvend(&app, VEND_TOKEN, &["next", "ups"]).await);
    assert_eq!(vended, "5756712  1Z5R89390357567127\n");

    let checked = stdout(&seqvend(&app, VEND_TOKEN, &["check", "1z 5r8 939 03 5756712 7"]).await);
    for line in [
        "number:  1Z5R89390357567127",
        "valid:   true",
        "carrier: UPS",
        "kind:    ups_1z",
        "issued:  by sequence ups, value 5756712",
    ] {
        assert!(checked.contains(line), "{line:?} in\n{checked}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn events_prints_the_history_and_json_prints_what_the_server_answered() {
    let app = spawn_app().await;
    app.create_ok("hist", 1, 2).await;
    app.add_range_ok("hist", 10, 19).await;
    for _ in 0..3 {
        app.next_value("hist").await;
    }
    let table = stdout(&seqvend(&app, VEND_TOKEN, &["events", "hist"]).await);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().skip(2).collect())
        .collect();
    assert_eq!(
        rows,
        [
            ["created", "[1,", "2]", "admin", "-"],
            ["range_added", "[10,", "19]", "admin", "-"],
            ["rollover", "[10,", "19]", "vend", "-"],
        ],
        "{table}"
    );
    let paged = stdout(&seqvend(&app, VEND_TOKEN, &["events", "hist", "--limit", "1"]).await);
    assert!(
        paged.contains("more: seqvend events hist --after "),
        "{paged}"
    );

    // --json may come anywhere after the command's name.
    for (args, path) in [
        (vec!["events", "hist", "--json"], "/sequences/hist/events"),
        (
            vec!["sequences", "--json", "show", "hist"],
            "/sequences/hist",
        ),
        (vec!["sequences", "list", "--json"], "/sequences"),
        (
            vec!["check", "--json", "1Z5R89390357567127"],
            "/tracking-numbers/1Z5R89390357567127",
        ),
    ] {
        let printed = stdout(&seqvend(&app, VEND_TOKEN, &args).await);
        let printed: Value = serde_json::from_str(&printed)
            .unwrap_or_else(|err| panic!("{args:?} printed no JSON: {err}"));
        let served = app.request(Method::GET, path, Some(VEND_TOKEN), None).await;
        assert_eq!(printed, served.body, "{args:?}");
    }
    let vended = stdout(
        &seqvend(
            &app,
            VEND_TOKEN,
            &["next", "hist", "--count", "2", "--json"],
        )
        .await,
    );
    let vended: Value = serde_json::from_str(&vended).unwrap();
    assert_eq!(
        vended,
        json!({"sequence": "hist", "values": [11, 12], "exhausted": false})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_exits_1_with_the_server_s_message_and_code_on_stderr() {
    let app = spawn_app().await;
    app.create_ok("known", 1, 10).await;

    let unknown = seqvend(&app, VEND_TOKEN, &["sequences", "show", "nope"]).await;
    assert_eq!(unknown.status.code(), Some(1));
    assert!(unknown.stdout.is_empty());
    assert_eq!(
        stderr(&unknown),
        "seqvend: no sequence is named \"nope\" (not_found, HTTP 404)\n"
    );
    let vend_token_retiring = seqvend(&app, VEND_TOKEN, &["sequences", "retire", "known"]).await;
    assert_eq!(vend_token_retiring.status.code(), Some(1));
    assert!(
        stderr(&vend_token_retiring).contains("(forbidden, HTTP 403)"),
        "{}",
        stderr(&vend_token_retiring)
    );
    assert_eq!(app.get("known").await.body["status"], "active");

    // --url and --token stand in for the environment.
    let flags = tokio::process::Command::new(BINARY)
        .args(["next", "known", "--url", &app.address, "--token", "wrong"])
        .env_remove("SEQVEND_URL")
        .env_remove("SEQVEND_TOKEN")
        .output()
        .await
        .unwrap();
    assert_eq!(flags.status.code(), Some(1));
    assert!(
        stderr(&flags).contains("(unauthorized, HTTP 401)"),
        "{}",
        stderr(&flags)
    );
    let right = tokio::process::Command::new(BINARY)
        .args([
            "next",
            "known",
            "--url",
            &app.address,
            "--token",
            VEND_TOKEN,
        ])
        .env_remove("SEQVEND_URL")
        .env_remove("SEQVEND_TOKEN")
        .output()
        .await
        .unwrap();
    assert_eq!(stdout(&right), "1\n");

    let usage = seqvend(
        &app,
        ADMIN_TOKEN,
        &["sequences", "create", "x", "--min", "1"],
    )
    .await;
    assert_eq!(usage.status.code(), Some(2), "usage errors are clap's 2");
    assert!(stderr(&usage).contains("--max"), "{}", stderr(&usage));
    let help = stdout(&seqvend(&app, ADMIN_TOKEN, &["sequences", "set", "--help"]).await);
    assert!(help.contains("--cache-size"), "{help}");
    assert!(
        !help.contains(ADMIN_TOKEN),
        "help never prints the token: {help}"
    );
}
