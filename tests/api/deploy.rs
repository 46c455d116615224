//! What can be checked of the Docker files without Docker: they parse, and they agree with
//! each other and with seqvend's defaults.

use serde_yaml::Value;

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
