//! What can be checked of the Docker files without Docker: they parse, they agree with
//! each other and with seqvend's defaults, and their health check works on a real seqvend.

use std::process::{Command, Output};

use serde_yaml::Value;

use crate::helpers::scratch_dir;
use crate::serve::Served;

const BINARY: &str = env!("CARGO_BIN_EXE_seqvend");

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
    assert_eq!(
        job["static_configs"][0]["targets"][0].as_str(),
        Some("seqvend:8080")
    );
}

#[test]
fn the_image_listens_where_compose_and_prometheus_look() {
    let dockerfile =
        std::fs::read_to_string(format!("{}/Dockerfile", env!("CARGO_MANIFEST_DIR"))).unwrap();
    assert!(dockerfile.contains("SEQVEND_LISTEN=0.0.0.0:8080"));
    assert!(dockerfile.contains("EXPOSE 8080"));
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

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
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
