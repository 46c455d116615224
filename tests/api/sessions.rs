//! What seqvend's statements rely on of their sessions holds whatever the database's defaults
//! say. They are written for read committed: a statement that waited for a lock reads what
//! the holder committed (the vend statement reads its rows after its locks; a keyed retry that
//! waited for its key finds the first answer). At repeatable read or serializable they would
//! read a snapshot taken before the wait.

use seqvend::settings::Pooler;

use crate::helpers::{test_settings, TestDb};

const CURRENT_ISOLATION: &str = "SELECT current_setting('transaction_isolation')";

#[tokio::test]
async fn every_seqvend_session_runs_at_read_committed_whatever_the_database_default() {
    let db = TestDb::shared().await;
    let dba = db.connect().await;
    dba.batch_execute(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation \
         = serializable', current_database()); END $$",
    )
    .await
    .unwrap();
    let other_application = db.connect().await;
    let default: String = other_application
        .query_one(CURRENT_ISOLATION, &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        default, "serializable",
        "the database's default, as others see it"
    );

    for pooler in [Pooler::None, Pooler::Transaction] {
        let mut settings = test_settings().database;
        settings.pooler = pooler;
        let (registry, vend) = seqvend::db::pools(&db.url, &settings).unwrap();

        let connection = vend.get().await.unwrap();
        let rows = connection
            .run_statement(CURRENT_ISOLATION, &[])
            .await
            .unwrap();
        let seen: String = rows[0].get(0);
        assert_eq!(seen, "read committed", "a vend statement, {pooler:?}");

        let seen: String = sqlx::query_scalar(CURRENT_ISOLATION)
            .fetch_one(&registry)
            .await
            .unwrap();
        assert_eq!(seen, "read committed", "a registry statement, {pooler:?}");

        let mut tx = registry.begin().await.unwrap();
        let seen: String = sqlx::query_scalar(CURRENT_ISOLATION)
            .fetch_one(&mut tx)
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        assert_eq!(seen, "read committed", "a registry transaction, {pooler:?}");
    }
}
