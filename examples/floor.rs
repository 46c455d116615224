//! The floor of strict `POST next` on this machine: what any server built the way seqvend is
//! pays, measured beside seqvend in the same run by `loadtest/speed.sh`. One actix-web server
//! (as many workers as seqvend's default, one per core) with four routes:
//!
//! - `GET /noop`: answers at once;
//! - `POST /hop`: through one mpsc + oneshot hop to a task that counts, and back;
//! - `POST /floor`: through the same hop to one lane that serves every request waiting for it
//!   with one statement, `nextval` once per request on one PostgreSQL sequence, on its own
//!   connection, committed with `synchronous_commit = on`, an assigned transaction id and a
//!   logical message, so that every commit writes WAL and waits for its flush, as a strict
//!   vend's must.
//! - `POST /floor/random`: the same, but each request draws from a PostgreSQL sequence chosen at
//!   random among those of seqvend's ranges (row 8 of the speed table draws from the same
//!   ones), through two lanes, as seqvend's default two lanes split sequences between them.
//!   What it draws is a gap in those ranges: harmless in a benchmark's database, and never to
//!   be pointed at one that vends for real.
//!
//! Each answers the JSON a strict vend answers. Nothing is authorised, checked, recorded or
//! logged, and there are no metrics: it is the floor, not a vend.
//!
//! Usage: `floor LISTEN DATABASE_URL`, e.g. `floor 127.0.0.1:18090 postgres://…/seqvend`.

use actix_web::{web, App, HttpResponse, HttpServer};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::types::Oid;

/// The sequence `/floor` draws from, created when missing.
const SEQUENCE: &str = "seqvend_floor";

/// As many requests as seqvend's lane takes into one statement by default.
const BATCH_MAX: usize = 512;

/// As many lanes as seqvend has by default (`SEQVEND_POOL_SIZE`): draws at random are split
/// between them, each sequence always on the same one.
const RANDOM_LANES: usize = 2;

/// The statement that commits like a strict vend: an assigned transaction id and a logical
/// message make every commit write WAL and wait for its flush (see `lane`).
const DURABLE_COLUMNS: &str =
    "pg_current_xact_id()::text, pg_logical_emit_message(true, 'seqvend_floor', '')";

type Reply = oneshot::Sender<i64>;

/// A draw at random: which sequence (a random number the lane maps onto its share of them),
/// and where the value goes.
type RandomDraw = (u64, Reply);

/// The queues behind the hop routes.
#[derive(Clone)]
struct Queues {
    counter: mpsc::Sender<Reply>,
    lane: mpsc::Sender<Reply>,
    random_lanes: Vec<mpsc::Sender<RandomDraw>>,
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

async fn floor_random(queues: web::Data<Queues>) -> HttpResponse {
    let pick: u64 = rand::random();
    let lane = &queues.random_lanes[(pick % RANDOM_LANES as u64) as usize];
    let (reply, answer) = oneshot::channel();
    if lane.try_send((pick / RANDOM_LANES as u64, reply)).is_err() {
        return HttpResponse::ServiceUnavailable().finish();
    }
    answer_with(answer).await
}

/// Sends a reply slot down `queue` and answers with the value that comes back.
async fn through(queue: &mpsc::Sender<Reply>) -> HttpResponse {
    let (reply, answer) = oneshot::channel();
    if queue.try_send(reply).is_err() {
        return HttpResponse::ServiceUnavailable().finish();
    }
    answer_with(answer).await
}

/// The JSON a strict vend answers, once the value has come back.
async fn answer_with(answer: oneshot::Receiver<i64>) -> HttpResponse {
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
            "SELECT array_agg(nextval('{SEQUENCE}')), {DURABLE_COLUMNS} \
             FROM generate_series(1, $1::int4)"
        ))
        .await
        .expect("the floor statement prepares");
    while let Some(batch) = next_batch(&mut queue).await {
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

/// Every request waiting once the lane is free, as seqvend's lane takes them: the first one
/// awaited, the rest as they stand, up to `BATCH_MAX`. None once the queue is closed.
async fn next_batch<T>(queue: &mut mpsc::Receiver<T>) -> Option<Vec<T>> {
    let mut batch = vec![queue.recv().await?];
    while batch.len() < BATCH_MAX {
        let Ok(item) = queue.try_recv() else { break };
        batch.push(item);
    }
    Some(batch)
}

/// Lane `index` of `RANDOM_LANES` for draws at random: each request's `nextval` on a sequence
/// of this lane's share of seqvend's range sequences, the batch in one statement committed as
/// `lane`'s is. The sequences are read at the first batch, so that the server can start before
/// they exist (the speed run creates them after its first row).
async fn random_lane(
    index: usize,
    client: tokio_postgres::Client,
    mut queue: mpsc::Receiver<RandomDraw>,
) {
    let statement = client
        .prepare(&format!(
            "SELECT array_agg(nextval(s::regclass) ORDER BY n), {DURABLE_COLUMNS} \
             FROM unnest($1::oid[]) WITH ORDINALITY AS t(s, n)"
        ))
        .await
        .expect("the random floor statement prepares");
    let mut sequences: Vec<Oid> = Vec::new();
    while let Some(batch) = next_batch(&mut queue).await {
        if sequences.is_empty() {
            sequences = lane_share(&client, index).await;
        }
        let share = sequences.len() as u64;
        let chosen: Vec<Oid> = batch
            .iter()
            .map(|(pick, _)| sequences[(pick % share) as usize])
            .collect();
        let row = client
            .query_one(&statement, &[&chosen])
            .await
            .expect("the random floor statement runs");
        let values: Vec<i64> = row.get(0);
        for ((_, reply), value) in batch.into_iter().zip(values) {
            let _ = reply.send(value);
        }
    }
}

/// Lane `index`'s share of the PostgreSQL sequences of seqvend's ranges: every
/// `RANDOM_LANES`-th one, in oid order.
async fn lane_share(client: &tokio_postgres::Client, index: usize) -> Vec<Oid> {
    let rows = client
        .query(
            "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
              WHERE n.nspname = 'seqvend_ranges' AND c.relkind = 'S' ORDER BY c.oid",
            &[],
        )
        .await
        .expect("the range sequences are read");
    let share: Vec<Oid> = rows
        .iter()
        .skip(index)
        .step_by(RANDOM_LANES)
        .map(|row| row.get(0))
        .collect();
    assert!(
        !share.is_empty(),
        "POST /floor/random needs seqvend's range sequences to exist"
    );
    share
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(listen), Some(url)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: floor LISTEN DATABASE_URL");
    };
    let client = connect(&url).await?;
    client
        .batch_execute(&format!("CREATE SEQUENCE IF NOT EXISTS {SEQUENCE}"))
        .await?;

    let (counter, counted) = mpsc::channel(8192);
    let (to_lane, lane_queue) = mpsc::channel(8192);
    tokio::spawn(count(counted));
    tokio::spawn(lane(client, lane_queue));
    let mut random_lanes = Vec::new();
    for index in 0..RANDOM_LANES {
        let (to_random_lane, random_queue) = mpsc::channel(8192);
        tokio::spawn(random_lane(index, connect(&url).await?, random_queue));
        random_lanes.push(to_random_lane);
    }
    let queues = Queues {
        counter,
        lane: to_lane,
        random_lanes,
    };
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(queues.clone()))
            .route("/noop", web::get().to(noop))
            .route("/hop", web::post().to(hop))
            .route("/floor", web::post().to(floor))
            .route("/floor/random", web::post().to(floor_random))
    })
    .workers(workers)
    .backlog(4096)
    .bind(listen)?
    .run()
    .await?;
    Ok(())
}

/// A connection of its own for a lane, committing durably.
async fn connect(url: &str) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    client.batch_execute("SET synchronous_commit = on").await?;
    Ok(client)
}
