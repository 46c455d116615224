//! The floor of strict `POST next` on this machine: what any server built the way seqvend is
//! pays, measured beside seqvend in the same run by `loadtest/speed.sh`. One actix-web server
//! (as many workers as seqvend's default, one per core) with three routes:
//!
//! - `GET /noop`: answers at once;
//! - `POST /hop`: through one mpsc + oneshot hop to a task that counts, and back;
//! - `POST /floor`: through the same hop to one lane that serves every request waiting for it
//!   with one statement, `nextval` once per request on one PostgreSQL sequence, on its own
//!   connection, committed with `synchronous_commit = on`, an assigned transaction id and a
//!   logical message, so that every commit writes WAL and waits for its flush, as a strict
//!   vend's must.
//!
//! Each answers the JSON a strict vend answers. Nothing is authorised, checked, recorded or
//! logged, and there are no metrics: it is the floor, not a vend.
//!
//! Usage: `floor LISTEN DATABASE_URL`, e.g. `floor 127.0.0.1:18090 postgres://…/seqvend`.

use actix_web::{web, App, HttpResponse, HttpServer};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

/// The sequence `/floor` draws from, created when missing.
const SEQUENCE: &str = "seqvend_floor";

/// As many requests as seqvend's lane takes into one statement by default.
const BATCH_MAX: usize = 512;

type Reply = oneshot::Sender<i64>;

/// The two queues behind the hop routes.
#[derive(Clone)]
struct Queues {
    counter: mpsc::Sender<Reply>,
    lane: mpsc::Sender<Reply>,
}

#[derive(Serialize)]
struct Vended {
    sequence: &'static str,
    value: i64,
}

async fn noop() -> HttpResponse {
    HttpResponse::Ok().body("ok")
}

async fn hop(queues: web::Data<Queues>) -> HttpResponse {
    through(&queues.counter).await
}

async fn floor(queues: web::Data<Queues>) -> HttpResponse {
    through(&queues.lane).await
}

/// Sends a reply slot down `queue` and answers with the value that comes back.
async fn through(queue: &mpsc::Sender<Reply>) -> HttpResponse {
    let (reply, answer) = oneshot::channel();
    if queue.try_send(reply).is_err() {
        return HttpResponse::ServiceUnavailable().finish();
    }
    match answer.await {
        Ok(value) => HttpResponse::Ok().json(Vended {
            sequence: SEQUENCE,
            value,
        }),
        Err(_) => HttpResponse::InternalServerError().finish(),
    }
}

/// Answers each request with the next number: the hop alone.
async fn count(mut queue: mpsc::Receiver<Reply>) {
    let mut value = 0;
    while let Some(reply) = queue.recv().await {
        value += 1;
        let _ = reply.send(value);
    }
}

/// Serves every request waiting when the last statement returned with one statement, as
/// seqvend's lane does. The transaction id and the logical message make every commit write
/// WAL and wait for its flush: `nextval` writes WAL once in 32 values, and PostgreSQL flushes
/// at commit only a transaction that wrote WAL of its own (`RecordTransactionCommit`), so
/// without the message a statement that drew from values already logged committed without a
/// flush (measured with `pg_stat_wal`: 788 flushes for 1,000 statements of 26 values).
async fn lane(client: tokio_postgres::Client, mut queue: mpsc::Receiver<Reply>) {
    let statement = client
        .prepare(&format!(
            "SELECT array_agg(nextval('{SEQUENCE}')), pg_current_xact_id()::text, \
                    pg_logical_emit_message(true, 'seqvend_floor', '') \
             FROM generate_series(1, $1::int4)"
        ))
        .await
        .expect("the floor statement prepares");
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH_MAX {
            let Ok(reply) = queue.try_recv() else { break };
            batch.push(reply);
        }
        let asked = i32::try_from(batch.len()).expect("at most BATCH_MAX");
        let row = client
            .query_one(&statement, &[&asked])
            .await
            .expect("the floor statement runs");
        let values: Vec<i64> = row.get(0);
        for (reply, value) in batch.into_iter().zip(values) {
            let _ = reply.send(value);
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(listen), Some(url)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: floor LISTEN DATABASE_URL");
    };
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "SET synchronous_commit = on; CREATE SEQUENCE IF NOT EXISTS {SEQUENCE}"
        ))
        .await?;

    let (counter, counted) = mpsc::channel(8192);
    let (to_lane, lane_queue) = mpsc::channel(8192);
    tokio::spawn(count(counted));
    tokio::spawn(lane(client, lane_queue));
    let queues = Queues {
        counter,
        lane: to_lane,
    };
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(queues.clone()))
            .route("/noop", web::get().to(noop))
            .route("/hop", web::post().to(hop))
            .route("/floor", web::post().to(floor))
    })
    .workers(workers)
    .backlog(4096)
    .bind(listen)?
    .run()
    .await?;
    Ok(())
}
