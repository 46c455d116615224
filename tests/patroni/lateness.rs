//! seqvend's own view of its deadlines: `seqvend_http_request_lateness_seconds` scraped from
//! every instance before and after a scenario. The difference says how many answers were
//! ready after their deadline in between, and the bucket bound within which all were — so a
//! request the clients saw late can be told apart from one seqvend answered late.

use std::collections::BTreeMap;

use crate::common::ADMIN_TOKEN;

const FAMILY: &str = "seqvend_http_request_lateness_seconds";

/// Deadline-bound answers so far, summed over routes and instances: by bucket bound (in
/// seconds, as exported), how many were ready within it; and how many in all.
#[derive(Clone, Default)]
pub struct Lateness {
    within: BTreeMap<u64, u64>,
    total: u64,
}

/// What a scenario's answers were: how many, how many late, and the bound all were within.
pub struct LatenessFigures {
    pub answers: u64,
    pub late: u64,
    /// The smallest bucket bound (in milliseconds) every answer was ready within; None when
    /// some were later than the largest bound.
    pub bound_ms: Option<f64>,
}

impl Lateness {
    /// Scrapes every instance in `addresses`.
    pub async fn scrape(addresses: &[String]) -> Self {
        let mut sum = Self::default();
        for address in addresses {
            let text = reqwest::Client::new()
                .get(format!("{address}/metrics"))
                .bearer_auth(ADMIN_TOKEN)
                .send()
                .await
                .and_then(reqwest::Response::error_for_status)
                .expect("the instance serves /metrics")
                .text()
                .await
                .unwrap();
            sum.add(&text);
        }
        sum
    }

    fn add(&mut self, exposition: &str) {
        for line in exposition.lines().filter(|l| l.starts_with(FAMILY)) {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let count: u64 = value.parse().unwrap_or(0);
            if series.starts_with(&format!("{FAMILY}_count")) {
                self.total += count;
            } else if let Some(le) = label(series, "le").filter(|le| *le != "+Inf") {
                let micros = (le.parse::<f64>().unwrap() * 1e6).round() as u64;
                *self.within.entry(micros).or_default() += count;
            }
        }
    }

    /// What was answered between `earlier` and `self`.
    pub fn since(&self, earlier: &Self) -> LatenessFigures {
        let answers = self.total - earlier.total;
        if answers == 0 {
            return LatenessFigures {
                answers,
                late: 0,
                bound_ms: Some(0.0),
            };
        }
        let within = |bound: &u64| self.within[bound] - earlier.within.get(bound).unwrap_or(&0);
        let in_time = self.within.get(&0).map_or(0, |_| within(&0));
        let bound_ms = self
            .within
            .keys()
            .find(|bound| within(bound) == answers)
            .map(|&micros| micros as f64 / 1000.0);
        LatenessFigures {
            answers,
            late: answers - in_time,
            bound_ms,
        }
    }
}

/// The value of `name` in a series' labels (`family{a="x",name="y"}`).
fn label<'a>(series: &'a str, name: &str) -> Option<&'a str> {
    let start = series.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = &series[start..];
    Some(&rest[..rest.find('"')?])
}
