//! What must bypass the pooler (the notification listener, migrations) refuses to start on
//! one, whether PgBouncer refuses seqvend's startup options or drops them.

use seqvend::settings::DirectUrl;
use seqvend::startup::Application;

use crate::bouncer::Bouncer;
use crate::helpers::*;

async fn start_with_direct_url_through(bouncer: &Bouncer, db: &TestDb) -> String {
    init_logging();
    let through = bouncer.url_for(&db.url);
    let mut settings = test_settings();
    settings.database.direct_url = Some(DirectUrl(through.clone()));
    match Application::build(&settings, &through).await {
        Ok(_) => panic!("seqvend started with a pooler as its direct URL"),
        Err(err) => format!("{err:#}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn seqvend_refuses_a_pooler_that_refuses_its_startup_options_as_the_direct_url() {
    let db = TestDb::shared().await;
    let bouncer = Bouncer::start(&db.url);
    let err = start_with_direct_url_through(&bouncer, &db).await;
    assert!(err.contains("SEQVEND_DIRECT_DATABASE_URL"), "{err}");
    assert!(err.contains("unsupported startup parameter"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn seqvend_refuses_a_pooler_that_drops_its_startup_options_as_the_direct_url() {
    let db = TestDb::shared().await;
    let bouncer = Bouncer::start_with(
        &db.url,
        "ignore_startup_parameters = options, extra_float_digits",
    );
    let err = start_with_direct_url_through(&bouncer, &db).await;
    assert!(err.contains("SEQVEND_DIRECT_DATABASE_URL"), "{err}");
    assert!(err.contains("dropped seqvend's startup options"), "{err}");
}
