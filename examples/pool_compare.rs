//! Per-request `SELECT nextval` behind an actix-web route, through deadpool-postgres and
//! through a sqlx pool, beside a no-op route, all measured by wrk in one run (rounds
//! alternate between the three; medians are reported). It decides which pool serves the
//! vend hot path. Run it with `loadtest/pool-compare.sh`.

// A comparison of pools, not seqvend's registry: it names sqlx's pool itself.
#![allow(clippy::disallowed_types)]

use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};
use seqvend::local_pg::{self, LocalCluster};

const POOL_SIZE: usize = 16;

async fn noop() -> HttpResponse {
    HttpResponse::Ok().body("0")
}

async fn via_deadpool(pool: web::Data<deadpool_postgres::Pool>) -> HttpResponse {
    let client = pool.get().await.expect("connection");
    let statement = client
        .prepare_cached("SELECT nextval('bench')")
        .await
        .expect("prepared");
    let value: i64 = client
        .query_one(&statement, &[])
        .await
        .expect("nextval")
        .get(0);
    HttpResponse::Ok().body(value.to_string())
}

async fn via_sqlx(pool: web::Data<sqlx::PgPool>) -> HttpResponse {
    let value: i64 = sqlx::query_scalar("SELECT nextval('bench')")
        .fetch_one(pool.get_ref())
        .await
        .expect("nextval");
    HttpResponse::Ok().body(value.to_string())
}

/// Requests per second wrk measured against `url`.
fn wrk(url: &str, seconds: u32, script: &std::path::Path) -> f64 {
    let out = Command::new("wrk")
        .args(["-t1", "-c64", &format!("-d{seconds}s"), "-s"])
        .arg(script)
        .arg(url)
        .output()
        .expect("wrk runs (apt-get install wrk)");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("Requests/sec:"))
        .unwrap_or_else(|| panic!("wrk said: {text}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let seconds: u32 = std::env::args().nth(1).map_or(Ok(10), |s| s.parse())?;
    let rounds: usize = std::env::args().nth(2).map_or(Ok(3), |s| s.parse())?;
    let dir = std::env::temp_dir().join(format!("seqvend-pool-compare-{}", std::process::id()));
    let cluster = LocalCluster::open(&dir, &["max_connections=100"])?;
    cluster.start()?;
    local_pg::ensure_database(&cluster, "bench").await?;
    let url = cluster.url("bench");
    let sqlx_pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(POOL_SIZE as u32)
        .connect(&url)
        .await?;
    sqlx::query("CREATE SEQUENCE IF NOT EXISTS bench")
        .execute(&sqlx_pool)
        .await?;
    let manager = deadpool_postgres::Manager::new(
        tokio_postgres::Config::from_str(&url)?,
        tokio_postgres::NoTls,
    );
    let deadpool = deadpool_postgres::Pool::builder(manager)
        .max_size(POOL_SIZE)
        .build()?;

    let (sqlx_data, deadpool_data) = (web::Data::new(sqlx_pool), web::Data::new(deadpool));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(sqlx_data.clone())
            .app_data(deadpool_data.clone())
            .route("/noop", web::post().to(noop))
            .route("/deadpool", web::post().to(via_deadpool))
            .route("/sqlx", web::post().to(via_sqlx))
    })
    .workers(2)
    .bind("127.0.0.1:0")?;
    let port = server.addrs()[0].port();
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    tokio::time::sleep(Duration::from_millis(200)).await;

    let script = dir.join("post.lua");
    std::fs::write(&script, "wrk.method = \"POST\"\n")?;
    let routes = ["noop", "deadpool", "sqlx"];
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); routes.len()];
    for round in 0..rounds {
        for (i, route) in routes.iter().enumerate() {
            let url = format!("http://127.0.0.1:{port}/{route}");
            let rate = tokio::task::spawn_blocking({
                let script = script.clone();
                move || wrk(&url, seconds, &script)
            })
            .await?;
            eprintln!("round {round}: {route} {rate:.0} req/s");
            results[i].push(rate);
        }
    }
    let medians: Vec<f64> = results.into_iter().map(median).collect();
    println!("| path (wrk -t1 -c64, {seconds} s x {rounds}, median) | req/s | vs no-op |");
    println!("|---|---|---|");
    for (route, rate) in routes.iter().zip(&medians) {
        println!("| {route} | {rate:.0} | {:.2} |", rate / medians[0]);
    }
    println!(
        "\ndeadpool-postgres / sqlx: {:.2}x",
        medians[1] / medians[2]
    );
    handle.stop(true).await;
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
