//! `POST /sequences/{name}/next[?count=N]`: the hot path.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use crate::auth::Reader;
use crate::domain::SequenceName;
use crate::error::ApiError;
use crate::vend::{Outcome, Vender};

const MAX_COUNT: u64 = 10_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextQuery {
    count: Option<u64>,
}

#[derive(Serialize)]
struct One<'a> {
    sequence: &'a str,
    value: i64,
}

#[derive(Serialize)]
struct Many<'a> {
    sequence: &'a str,
    values: Vec<i64>,
    exhausted: bool,
}

pub async fn next(
    _: Reader,
    vender: web::Data<Vender>,
    name: web::Path<String>,
    query: web::Query<NextQuery>,
) -> Result<HttpResponse, ApiError> {
    let name = SequenceName::parse(&name)?;
    let count = match query.count {
        None => None,
        Some(n @ 1..=MAX_COUNT) => Some(n as u32),
        Some(_) => {
            return Err(ApiError::InvalidRequest(format!(
                "`count` must be between 1 and {MAX_COUNT}"
            )))
        }
    };
    let wanted = count.unwrap_or(1);
    let values = match vender.vend(name.clone(), wanted).await? {
        Outcome::Values(values) => values,
        Outcome::Exhausted => return Err(ApiError::SequenceExhausted(name.to_string())),
        Outcome::Retired => return Err(ApiError::SequenceRetired(name.to_string())),
        Outcome::NotFound => return Err(ApiError::sequence_not_found(name.as_str())),
    };
    let sequence = name.as_str();
    Ok(match count {
        None => HttpResponse::Ok().json(One {
            sequence,
            value: values[0],
        }),
        Some(_) => {
            let exhausted = values.len() < wanted as usize;
            HttpResponse::Ok().json(Many {
                sequence,
                values,
                exhausted,
            })
        }
    })
}
