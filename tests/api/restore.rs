//! A restore drill: pg_dump of seqvend's database, pg_restore into a new cluster whose oids
//! differ, and seqvend continues where it stood.

use std::process::Command;

use seqvend::local_pg::LocalCluster;

use crate::helpers::*;

/// Runs one of the server's client programs against `cluster` as its superuser.
fn run_client(cluster: &LocalCluster, program: &str, args: &[&str]) {
    let status = Command::new(cluster.bin_dir().join(program))
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &cluster.port().to_string(),
            "-U",
            "seqvend",
        ])
        .args(args)
        .env("PGPASSWORD", cluster.password())
        .status()
        .expect("client program runs");
    assert!(status.success(), "{program} {args:?} failed ({status})");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_pg_dump_and_pg_restore_into_a_new_cluster_seqvend_continues_where_it_stood() {
    let source = Pg::start("dump-source", &[]).await;
    let source_db = TestDb::create(&source.cluster).await;
    let app = spawn_app_on(&source_db, test_settings()).await;
    app.create_ok("moved", 1, 100).await;
    app.create_ok("other", 1000, 1100).await;
    assert_eq!(
        values_of(&app.next_batch("moved", 5).await),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(
        values_of(&app.next_batch("other", 3).await),
        [1000, 1001, 1002]
    );
    drop(app);

    let target = Pg::start("dump-target", &[]).await;
    let target_db = TestDb::create(&target.cluster).await;
    // Objects made first take the oids the source's sequences had.
    target_db
        .connect()
        .await
        .batch_execute(
            "DO $$ BEGIN FOR i IN 1..40 LOOP \
             EXECUTE format('CREATE SEQUENCE public.pad%s', i); END LOOP; END $$",
        )
        .await
        .unwrap();

    let dump = scratch_dir("dump").with_extension("pgdump");
    let dump_path = dump.to_str().unwrap();
    let database = |url: &str| url.rsplit('/').next().unwrap().to_owned();
    run_client(
        &source.cluster,
        "pg_dump",
        &["-Fc", "-f", dump_path, &database(&source_db.url)],
    );
    run_client(
        &target.cluster,
        "pg_restore",
        &[
            "--exit-on-error",
            "-d",
            &database(&target_db.url),
            dump_path,
        ],
    );
    let _ = std::fs::remove_file(&dump);

    let restored = spawn_app_on(&target_db, test_settings()).await;
    assert_eq!(values_of(&restored.next_batch("moved", 2).await), [6, 7]);
    assert_eq!(restored.next_value("other").await, 1003);
    let shown = restored.get("moved").await;
    assert_eq!(shown.body["ranges"][0]["next"], 8, "{}", shown.body);
}
