//! TLS to PostgreSQL: a server that turns away every unencrypted connection (`hostssl` only,
//! `hostnossl … reject`), with a CA and a server certificate made here, and seqvend connecting
//! with each `sslmode` as libpq would.

use std::fs;
use std::os::unix::fs::{chown, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use seqvend::local_pg::LocalCluster;
use seqvend::startup::Application;

use crate::helpers::*;

/// Plain TCP is refused before authentication; TLS sessions authenticate as usual.
const PG_HBA: &str = "\
hostnossl all all all          reject
hostssl   all all 127.0.0.1/32 scram-sha-256
hostssl   all all ::1/128      scram-sha-256
";

/// A certificate authority of the test's own.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    fn new(name: &str) -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Self { cert, key }
    }

    /// A server certificate for 127.0.0.1 and localhost, and its key, as PEM.
    fn server_certificate(&self) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params
            .distinguished_name
            .push(DnType::CommonName, "seqvend test server");
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// The TLS-only cluster these tests share, the CA that signed its certificate, and a CA
/// that did not.
struct TlsCluster {
    cluster: LocalCluster,
    ca: PathBuf,
    other_ca: PathBuf,
}

fn tls_cluster() -> &'static TlsCluster {
    static CLUSTER: OnceLock<TlsCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let settings = [
            "ssl=on",
            "ssl_cert_file=server.crt",
            "ssl_key_file=server.key",
        ];
        let cluster = LocalCluster::open(&scratch_dir("tls"), &settings).expect("cluster prepared");
        let pgdata = cluster.dir().join("pgdata");
        let ca = Ca::new("seqvend test CA");
        let (cert, key) = ca.server_certificate();
        write_for_server(&pgdata, "server.crt", &cert);
        // PostgreSQL refuses a key that others may read.
        write_for_server(&pgdata, "server.key", &key);
        write_for_server(&pgdata, "pg_hba.conf", PG_HBA);
        cluster.start().expect("cluster started");

        let client = scratch_dir("tls-client");
        fs::create_dir_all(&client).unwrap();
        let (ca_file, other_ca) = (client.join("ca.pem"), client.join("other-ca.pem"));
        fs::write(&ca_file, ca.cert.pem()).unwrap();
        fs::write(&other_ca, Ca::new("seqvend test CA").cert.pem()).unwrap();
        TlsCluster {
            cluster,
            ca: ca_file,
            other_ca,
        }
    })
}

/// Writes a file into the data directory, private to the server's user.
fn write_for_server(pgdata: &Path, name: &str, contents: &str) {
    let path = pgdata.join(name);
    fs::write(&path, contents).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    let owner = fs::metadata(pgdata).unwrap();
    chown(&path, Some(owner.uid()), Some(owner.gid())).unwrap();
}

/// A fresh database on the TLS cluster, reached with `parameters` added to its URL.
async fn database(parameters: &str) -> TestDb {
    let db = TestDb::create(&tls_cluster().cluster).await;
    TestDb {
        url: format!("{}?{parameters}", db.url),
    }
}

/// Starting seqvend must fail, at once (no waiting out the startup patience), saying why.
async fn refused(db: &TestDb) -> String {
    init_logging();
    let started = Instant::now();
    let err = match Application::build(&test_settings(), &db.url).await {
        Ok(_) => panic!("seqvend started"),
        Err(err) => format!("{err:#}"),
    };
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?} to fail",
        started.elapsed()
    );
    err
}

/// What the vend pool says when it cannot connect.
async fn vend_pool_refused(db: &TestDb) -> String {
    let pool = seqvend::db::vend_pool(&db.url, &test_settings().database).unwrap();
    match pool.get().await {
        Ok(_) => panic!("the vend pool connected"),
        Err(err) => format!("{:#}", anyhow::Error::from(err)),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_sslmode_require_seqvend_creates_and_vends_over_encrypted_sessions_only() {
    let db = database("sslmode=require").await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("tls", 1, 1000).await;
    assert_eq!(app.next_value("tls").await, 1);
    assert_eq!(values_of(&app.next_batch("tls", 3).await), [2, 3, 4]);

    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let (plain, encrypted): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE NOT s.ssl), count(*) FILTER (WHERE s.ssl)
         FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
         WHERE a.application_name = 'seqvend' AND a.datname = current_database()",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    // One registry and one vend connection at least, none of them plain.
    assert_eq!(plain, 0);
    assert!(encrypted >= 2, "{encrypted} encrypted sessions");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_verify_full_and_the_servers_ca_seqvend_serves() {
    let ca = tls_cluster().ca.display();
    let db = database(&format!("sslmode=verify-full&sslrootcert={ca}")).await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("verified", 1, 1000).await;
    assert_eq!(app.next_value("verified").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_verify_full_and_another_ca_seqvend_refuses_to_start_and_says_why() {
    let other = tls_cluster().other_ca.display();
    let db = database(&format!("sslmode=verify-full&sslrootcert={other}")).await;
    let err = refused(&db).await;
    assert!(err.contains("invalid peer certificate"), "{err}");
    let err = vend_pool_refused(&db).await;
    assert!(err.contains("invalid peer certificate"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn require_with_a_root_certificate_checks_the_chain_as_libpq_does() {
    let other = tls_cluster().other_ca.display();
    let db = database(&format!("sslmode=require&sslrootcert={other}")).await;
    let err = refused(&db).await;
    assert!(err.contains("invalid peer certificate"), "{err}");
    let err = vend_pool_refused(&db).await;
    assert!(err.contains("invalid peer certificate"), "{err}");

    let ca = tls_cluster().ca.display();
    let db = database(&format!("sslmode=verify-ca&sslrootcert={ca}")).await;
    let app = spawn_app_on(&db, test_settings()).await;
    app.create_ok("chain", 1, 1000).await;
    assert_eq!(app.next_value("chain").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_sslmode_disable_the_server_refuses_seqvend_and_startup_says_so() {
    let db = database("sslmode=disable").await;
    let err = refused(&db).await;
    assert!(err.contains("no encryption"), "{err}");
    let err = vend_pool_refused(&db).await;
    assert!(err.contains("no encryption"), "{err}");
}
