//! What can be checked of the Docker files without Docker: they parse, they agree with
//! each other and with seqvend's defaults, and their health check works on a real seqvend.
//! The Prometheus alert rules pass promtool's check and unit tests; the Grafana dashboard is
//! provisioned with the datasource it names and queries in PromQL promtool accepts; both
//! read only metrics seqvend exports.

use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value as Json};
use serde_yaml::Value;

use crate::common::process::BINARY;
use crate::helpers::{
    eventually, scratch_dir, spawn_app_on, stderr, test_settings, TestDb, ADMIN_TOKEN, VEND_TOKEN,
};
use crate::serve::Served;

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|err| panic!("{path} is not valid YAML: {err}"))
}

#[test]
fn compose_runs_postgresql_seqvend_and_a_prometheus_that_scrapes_it() {
    let compose = yaml("docker-compose.yml");
    let services = &compose["services"];
    for service in ["postgres", "seqvend", "prometheus"] {
        assert!(
            services[service].is_mapping(),
            "service {service} is missing"
        );
    }
    let seqvend = &services["seqvend"];
    let url = seqvend["environment"]["DATABASE_URL"].as_str().unwrap();
    assert!(
        url.contains("@postgres:5432/"),
        "seqvend must reach the postgres service: {url}"
    );
    assert_eq!(seqvend["ports"][0].as_str(), Some("8080:8080"));
    let mounted = services["prometheus"]["volumes"][0].as_str().unwrap();
    let config_path = mounted.split(':').next().unwrap().trim_start_matches("./");
    let prometheus = yaml(config_path);
    let job = &prometheus["scrape_configs"][0];
    assert_eq!(job["metrics_path"].as_str(), Some("/metrics"));
    // /metrics is served on its own listener, off the API port.
    let metrics_port = metrics_port(&compose);
    assert_ne!(metrics_port, "8080");
    assert_eq!(
        job["static_configs"][0]["targets"][0].as_str(),
        Some(format!("seqvend:{metrics_port}").as_str())
    );
    // Prometheus loads the alert rules from where compose mounts them.
    let rule_files = prometheus["rule_files"].as_sequence().expect("rule_files");
    assert_eq!(rule_files.len(), 1, "{rule_files:?}");
    let mounts: Vec<&str> = services["prometheus"]["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let rules_mount = format!("./{ALERT_RULES}:{}:ro", rule_files[0].as_str().unwrap());
    assert!(
        mounts.contains(&rules_mount.as_str()),
        "{rules_mount} in {mounts:?}"
    );
}

/// The port of seqvend's metrics listener in docker-compose.yml (`SEQVEND_METRICS_LISTEN`).
fn metrics_port(compose: &Value) -> String {
    let listen = compose["services"]["seqvend"]["environment"]["SEQVEND_METRICS_LISTEN"]
        .as_str()
        .expect("compose gives seqvend a metrics listener");
    let (host, port) = listen.rsplit_once(':').unwrap();
    assert_eq!(
        host, "0.0.0.0",
        "Prometheus reaches it from another container"
    );
    port.to_owned()
}

#[test]
fn the_image_listens_where_compose_and_prometheus_look() {
    let dockerfile =
        std::fs::read_to_string(format!("{}/Dockerfile", env!("CARGO_MANIFEST_DIR"))).unwrap();
    assert!(dockerfile.contains("SEQVEND_LISTEN=0.0.0.0:8080"));
    let exposed: Vec<&str> = dockerfile
        .lines()
        .filter_map(|line| line.strip_prefix("EXPOSE "))
        .flat_map(str::split_whitespace)
        .collect();
    let metrics_port = metrics_port(&yaml("docker-compose.yml"));
    for port in ["8080", metrics_port.as_str()] {
        assert!(exposed.contains(&port), "EXPOSE {port}: {exposed:?}");
    }
    assert!(
        dockerfile.contains("ENV SQLX_OFFLINE=true"),
        "the image builds from the committed .sqlx data"
    );
}

#[test]
fn compose_and_the_image_check_health_with_the_binary_itself() {
    let compose = yaml("docker-compose.yml");
    let check = &compose["services"]["seqvend"]["healthcheck"];
    let test: Vec<&str> = check["test"]
        .as_sequence()
        .expect("a healthcheck test list")
        .iter()
        .map(|word| word.as_str().unwrap())
        .collect();
    // CMD, not CMD-SHELL: the image's /bin/sh is dash, and it has no curl.
    assert_eq!(test, ["CMD", "seqvend", "healthcheck"]);
    let timeout = check["timeout"].as_str().unwrap();
    let seconds: u64 = timeout.trim_end_matches('s').parse().unwrap();
    assert!(
        seconds > 2,
        "the healthcheck gives up after 2 s by itself; compose must wait longer: {timeout}"
    );

    let dockerfile =
        std::fs::read_to_string(format!("{}/Dockerfile", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let healthcheck = dockerfile
        .lines()
        .find(|line| line.starts_with("HEALTHCHECK "))
        .expect("a HEALTHCHECK instruction");
    assert!(
        healthcheck.ends_with(r#"CMD ["seqvend", "healthcheck"]"#),
        "{healthcheck}"
    );
}

/// `seqvend healthcheck [url]` with `SEQVEND_LISTEN` set to `listen` (or unset).
fn healthcheck(url: Option<&str>, listen: Option<&str>) -> Output {
    let mut command = Command::new(BINARY);
    command
        .arg("healthcheck")
        .args(url)
        .env_remove("SEQVEND_LISTEN");
    if let Some(listen) = listen {
        command.env("SEQVEND_LISTEN", listen);
    }
    command.output().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_healthcheck_command_passes_only_while_seqvend_is_ready() {
    let served = Served::start(&scratch_dir("healthcheck")).await;
    // As in the image: listening on the wildcard address, no URL given.
    let listen = format!("0.0.0.0:{}", served.port);
    let ready = healthcheck(None, Some(&listen));
    assert!(ready.status.success(), "{}", stderr(&ready));
    let explicit = healthcheck(Some(&format!("{}/readyz", served.address)), None);
    assert!(explicit.status.success(), "{}", stderr(&explicit));
    let missing = healthcheck(Some(&format!("{}/no-such-page", served.address)), None);
    assert_eq!(missing.status.code(), Some(1), "only a 200 is healthy");
    assert!(stderr(&missing).contains("404"), "{}", stderr(&missing));

    served.terminate_cleanly();
    let stopped = healthcheck(None, Some(&listen));
    assert_eq!(stopped.status.code(), Some(1), "nothing listens any more");
    assert!(
        stderr(&stopped).contains("connecting"),
        "{}",
        stderr(&stopped)
    );
}

const ALERT_RULES: &str = "deploy/prometheus/alerts.yml";

/// promtool, which scripts/test.sh installs when it is missing (Debian package prometheus).
fn promtool(args: &[&str]) -> Output {
    Command::new("promtool")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|err| {
            panic!("promtool must be on PATH (scripts/test.sh installs it: apt-get install prometheus): {err}")
        })
}

#[test]
fn the_alert_rules_pass_promtool_s_check_and_their_unit_tests() {
    for args in [
        ["check", "rules", ALERT_RULES],
        ["test", "rules", "deploy/prometheus/alerts_test.yml"],
    ] {
        let output = promtool(&args);
        assert!(
            output.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            stderr(&output)
        );
    }
}

const DASHBOARD: &str = "deploy/grafana/dashboards/seqvend.json";

fn dashboard() -> Json {
    let text =
        std::fs::read_to_string(format!("{}/{DASHBOARD}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{DASHBOARD} is not valid JSON: {err}"))
}

/// Every panel of the dashboard, rows and the panels inside (collapsed) rows included.
fn panels(dashboard: &Json) -> Vec<&Json> {
    fn walk<'a>(list: &'a Json, into: &mut Vec<&'a Json>) {
        for panel in list.as_array().into_iter().flatten() {
            into.push(panel);
            walk(&panel["panels"], into);
        }
    }
    let mut all = Vec::new();
    walk(&dashboard["panels"], &mut all);
    all
}

/// Every panel query's PromQL.
fn dashboard_expressions(dashboard: &Json) -> Vec<String> {
    panels(dashboard)
        .iter()
        .flat_map(|panel| panel["targets"].as_array().into_iter().flatten())
        .map(|target| target["expr"].as_str().expect("a PromQL expr").to_owned())
        .collect()
}

/// The template variables' queries, stored by Grafana as a string or as `{"query": …}`.
fn variable_queries(dashboard: &Json) -> Vec<String> {
    dashboard["templating"]["list"]
        .as_array()
        .expect("templating")
        .iter()
        .filter(|variable| variable["type"] == "query")
        .map(|variable| {
            let query = &variable["query"];
            let text = query.as_str().or_else(|| query["query"].as_str());
            text.expect("a variable query").to_owned()
        })
        .collect()
}

/// The series selector and the label of `label_values(selector, label)`.
fn label_values(query: &str) -> (&str, &str) {
    query
        .trim()
        .strip_prefix("label_values(")
        .and_then(|inner| inner.strip_suffix(')'))
        .and_then(|inner| inner.rsplit_once(','))
        .map(|(selector, label)| (selector.trim(), label.trim()))
        .unwrap_or_else(|| panic!("not a label_values(selector, label) query: {query}"))
}

/// The host path, relative to the repository, that a compose service mounts read-only at
/// `target`.
fn mounted_at(service: &Value, target: &str) -> String {
    let mounts = service["volumes"].as_sequence().expect("volumes");
    let mount = mounts
        .iter()
        .map(|mount| mount.as_str().unwrap())
        .find(|mount| mount.split(':').nth(1) == Some(target))
        .unwrap_or_else(|| panic!("nothing mounted at {target}: {mounts:?}"));
    assert!(mount.ends_with(":ro"), "{mount} must be read-only");
    mount
        .split(':')
        .next()
        .unwrap()
        .trim_start_matches("./")
        .to_owned()
}

/// The entries under `key` of every YAML file in a provisioning folder.
fn provisioned(dir: &str, key: &str) -> Vec<Value> {
    let path = format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = std::fs::read_dir(&path)
        .unwrap_or_else(|err| panic!("{dir}: {err}"))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yml") || name.ends_with(".yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|file| {
            let entries = yaml(&format!("{dir}/{file}"))[key].clone();
            entries.as_sequence().cloned().unwrap_or_default()
        })
        .collect()
}

#[test]
fn compose_provisions_grafana_with_the_dashboard_and_the_datasource_it_names() {
    let compose = yaml("docker-compose.yml");
    let grafana = &compose["services"]["grafana"];
    let image = grafana["image"].as_str().expect("a grafana image");
    let tag = image.rsplit_once(':').map(|(_, tag)| tag);
    assert!(
        tag.is_some_and(|tag| tag.starts_with(|c: char| c.is_ascii_digit())),
        "pin a Grafana version: {image}"
    );
    assert_eq!(grafana["ports"][0].as_str(), Some("3000:3000"));
    assert!(
        grafana["depends_on"]
            .as_sequence()
            .is_some_and(|services| services.iter().any(|s| s == "prometheus")),
        "Grafana starts after Prometheus"
    );
    let provisioning = mounted_at(grafana, "/etc/grafana/provisioning");

    // One datasource: the compose Prometheus, under a fixed uid.
    let datasources = provisioned(&format!("{provisioning}/datasources"), "datasources");
    assert_eq!(datasources.len(), 1, "{datasources:?}");
    let source = &datasources[0];
    assert_eq!(source["type"].as_str(), Some("prometheus"));
    let published = compose["services"]["prometheus"]["ports"][0]
        .as_str()
        .unwrap();
    let port = published.rsplit(':').next().unwrap();
    assert_eq!(
        source["url"].as_str(),
        Some(format!("http://prometheus:{port}").as_str())
    );
    let uid = source["uid"].as_str().expect("a fixed datasource uid");

    // The dashboards are read from a folder compose mounts: the one holding seqvend's.
    let providers = provisioned(&format!("{provisioning}/dashboards"), "providers");
    assert_eq!(providers.len(), 1, "{providers:?}");
    assert_eq!(providers[0]["type"].as_str(), Some("file"));
    let inside = providers[0]["options"]["path"].as_str().expect("a path");
    let folder = mounted_at(grafana, inside);
    assert_eq!(format!("{folder}/seqvend.json"), DASHBOARD);
    if let Some(home) = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"].as_str()
    {
        assert_eq!(home, format!("{inside}/seqvend.json"));
    }

    // Every panel and query of the dashboard asks that datasource, by its uid.
    let dashboard = dashboard();
    let mut asked = 0;
    for panel in panels(&dashboard) {
        let title = &panel["title"];
        if panel["type"] == "row" {
            continue;
        }
        let targets = panel["targets"].as_array().into_iter().flatten();
        for datasource in
            std::iter::once(&panel["datasource"]).chain(targets.map(|t| &t["datasource"]))
        {
            assert_eq!(datasource["uid"].as_str(), Some(uid), "panel {title}");
            asked += 1;
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        assert_eq!(
            variable["datasource"]["uid"].as_str(),
            Some(uid),
            "{variable}"
        );
    }
    assert!(asked > 0);
}

#[test]
fn the_dashboard_parses_and_every_panel_has_a_query() {
    let dashboard = dashboard();
    assert_eq!(
        dashboard["uid"].as_str(),
        Some("seqvend"),
        "a stable address"
    );
    // Grafana 10 and 11 load schema 36 onwards as they are; older ones are migrated.
    let schema = dashboard["schemaVersion"]
        .as_u64()
        .expect("a schemaVersion");
    assert!(schema >= 36, "schemaVersion {schema}");
    let mut ids = BTreeSet::new();
    let mut queried = 0;
    for panel in panels(&dashboard) {
        let title = panel["title"].as_str().expect("a title");
        let id = panel["id"].as_u64().expect("an id");
        assert!(ids.insert(id), "panel id {id} twice ({title})");
        let place = &panel["gridPos"];
        let right = place["x"].as_u64().unwrap() + place["w"].as_u64().unwrap();
        assert!(right <= 24, "panel {title} is wider than the dashboard");
        if panel["type"] == "row" {
            continue;
        }
        let targets = panel["targets"].as_array().map_or(&[][..], Vec::as_slice);
        assert!(!targets.is_empty(), "panel {title} has no query");
        let mut refs = BTreeSet::new();
        for target in targets {
            let expr = target["expr"].as_str().unwrap_or_default();
            assert!(
                !expr.trim().is_empty(),
                "panel {title}: a query without PromQL"
            );
            let reference = target["refId"].as_str().expect("a refId");
            assert!(
                refs.insert(reference),
                "panel {title}: refId {reference} twice"
            );
        }
        queried += 1;
    }
    assert!(queried > 0);
    // The sequence variable lists the sequences seqvend exports gauges for.
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let sequence = variables
        .iter()
        .find(|variable| variable["name"] == "sequence")
        .expect("a sequence variable");
    let query = sequence["query"]["query"].as_str().unwrap();
    assert_eq!(
        label_values(query),
        ("seqvend_sequence_remaining", "sequence")
    );
}

#[test]
fn the_dashboard_queries_are_promql_promtool_accepts() {
    // Grafana's variables replaced by what they stand for, each query a recording rule.
    let dashboard = dashboard();
    let selectors = variable_queries(&dashboard);
    let selectors = selectors
        .iter()
        .map(|query| label_values(query).0.to_owned());
    let rules: Vec<Json> = dashboard_expressions(&dashboard)
        .into_iter()
        .chain(selectors)
        .enumerate()
        .map(|(i, expr)| {
            let expr = expr
                .replace("$__rate_interval", "1m")
                .replace("$sequence", ".*");
            assert!(
                !expr.contains('$'),
                "a variable promtool cannot read: {expr}"
            );
            json!({"record": format!("dashboard:query_{i}"), "expr": expr})
        })
        .collect();
    // JSON is YAML: promtool reads it as a rule file.
    let file = json!({"groups": [{"name": "dashboard", "rules": rules}]});
    let dir = scratch_dir("dashboard-rules");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dashboard.rules.yml");
    std::fs::write(&path, file.to_string()).unwrap();
    let output = promtool(&["check", "rules", path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        output.status.success(),
        "promtool check rules on the dashboard's queries:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
}

/// Every rule's PromQL expression.
fn alert_expressions() -> Vec<String> {
    let rules = yaml(ALERT_RULES);
    let groups = rules["groups"].as_sequence().expect("rule groups");
    let expressions: Vec<String> = groups
        .iter()
        .flat_map(|group| group["rules"].as_sequence().expect("rules"))
        .map(|rule| rule["expr"].as_str().expect("an expr").to_owned())
        .collect();
    assert!(!expressions.is_empty());
    expressions
}

/// The metric names a PromQL expression reads: its identifiers, less functions and
/// aggregations (followed by `(`), keywords, the labels of `by`/`on`/… lists, and whatever
/// sits in label matchers (`{…}`), range selectors (`[…]`) or quotes.
fn metric_names(expr: &str) -> BTreeSet<String> {
    // Aggregations are here too: `sum by (le) (…)` puts no `(` right after `sum`.
    const KEYWORDS: [&str; 20] = [
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "inf",
        "nan",
        "atan2",
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
    ];
    const LABEL_LISTS: [&str; 6] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, '"' | '\'' | '`' | '{' | '[') {
            let close = match c {
                '{' => '}',
                '[' => ']',
                quote => quote,
            };
            i = past(&chars, i, close);
        } else if c.is_ascii_digit() || c == '.' {
            // A number, duration or exponent: never a name.
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            let called = chars.get(next) == Some(&'(');
            if LABEL_LISTS.contains(&word.as_str()) && called {
                i = past(&chars, next, ')');
            } else if !called && !KEYWORDS.contains(&word.to_lowercase().as_str()) {
                names.insert(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The index just past the `close` that ends what opens at `from`; quoted strings inside a
/// `{…}` are stepped over whole, so a `}` in a label value does not end the matchers.
fn past(chars: &[char], from: usize, close: char) -> usize {
    let in_quotes = matches!(close, '"' | '\'' | '`');
    let mut j = from + 1;
    while j < chars.len() && chars[j] != close {
        j = match chars[j] {
            '\\' if in_quotes => j + 2,
            quote @ ('"' | '\'' | '`') if !in_quotes => past(chars, j, quote),
            _ => j + 1,
        };
    }
    j + 1
}

#[test]
fn the_promql_reader_finds_the_metric_names_and_nothing_else() {
    let expr = r#"histogram_quantile(0.99, sum by (instance, le) (rate(a_bucket{route="/x/{name}", le!~"b|c"}[5m])))
        > 0.25 unless on (instance) max without (x) (b_total offset 1h) / ignoring (y) c:recorded and bool 2e3"#;
    let expected: BTreeSet<String> = ["a_bucket", "b_total", "c:recorded"]
        .map(String::from)
        .into();
    assert_eq!(metric_names(expr), expected);
}

/// Every series name the scrape shows: histograms as their `_bucket`, `_count` and `_sum`.
fn exported_names(scrape: &str) -> BTreeSet<String> {
    scrape
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .flat_map(|declared| {
            let (name, kind) = declared.split_once(' ').unwrap();
            match kind {
                "histogram" => ["_bucket", "_count", "_sum"]
                    .map(|suffix| format!("{name}{suffix}"))
                    .to_vec(),
                "summary" => vec![
                    name.to_owned(),
                    format!("{name}_count"),
                    format!("{name}_sum"),
                ],
                _ => vec![name.to_owned()],
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_metric_the_alert_rules_and_the_dashboard_use_is_one_seqvend_exports() {
    let db = TestDb::shared().await;
    let mut settings = test_settings();
    settings.watch.interval = Duration::from_millis(50);
    let app = spawn_app_on(&db, settings).await;
    // Traffic, so that the labelled metrics have series to show: a cached sequence refills
    // its cache, and a sequence in use gets a rate and a forecast.
    let cached = json!({"name": "cached", "min": 1, "max": 1_000_000, "cache": {"size": 100}});
    let reply = app.create(cached).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    app.next_value("cached").await;
    app.create_ok("alerted", 1, 1_000_000).await;
    eventually(
        Duration::from_secs(20),
        "the sequence's forecast appears",
        || async {
            app.next_value("alerted").await;
            app.scrape()
                .await
                .contains(r#"seqvend_sequence_seconds_until_exhausted{sequence="alerted"}"#)
        },
    )
    .await;
    // A counter family drawn until a counter runs out.
    let family = json!({"name": "chat", "min": 1, "max": 2, "start": 2});
    let reply = app
        .request(Method::POST, "/families", Some(ADMIN_TOKEN), Some(family))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    for expected in [StatusCode::OK, StatusCode::CONFLICT] {
        let path = "/families/chat/counters/room/next";
        let reply = app
            .request(Method::POST, path, Some(VEND_TOKEN), None)
            .await;
        assert_eq!(reply.status, expected, "{}", reply.body);
    }
    let scrape = app.scrape().await;
    let exported = exported_names(&scrape);

    let dashboard = dashboard();
    let mut expressions = alert_expressions();
    expressions.extend(dashboard_expressions(&dashboard));
    let mut used = BTreeSet::new();
    for expr in &expressions {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "no metric in {expr}");
        used.extend(names);
        // A route matched exactly must be one seqvend labels its requests with.
        for quoted in expr.split(r#"route=""#).skip(1) {
            let route = quoted.split('"').next().unwrap();
            assert!(
                scrape.contains(&format!(r#"route="{route}""#)),
                "route {route:?} is not a label seqvend exports"
            );
        }
    }
    // A template variable lists a label of a metric: both must be there.
    let mut listed = Vec::new();
    for query in variable_queries(&dashboard) {
        let (selector, label) = label_values(&query);
        let names = metric_names(selector);
        assert!(!names.is_empty(), "no metric in {query}");
        listed.extend(names.iter().map(|name| (name.clone(), label.to_owned())));
        used.extend(names);
    }
    let unknown: Vec<&String> = used.difference(&exported).collect();
    assert!(
        unknown.is_empty(),
        "the alert rules or the dashboard read metrics seqvend does not export: {unknown:?}"
    );
    for (name, label) in listed {
        let labelled = scrape.lines().any(|line| {
            line.starts_with(&format!("{name}{{")) && line.contains(&format!(r#"{label}=""#))
        });
        assert!(labelled, "seqvend exports no {name} with a {label} label");
    }
}
