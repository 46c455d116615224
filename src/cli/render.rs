//! The CLI's human output: what the server answered, as aligned tables and `key: value`
//! lines. Reads the API's JSON as it is, so a field the server adds later costs nothing here.

use serde_json::Value;

/// A JSON value as a cell: strings bare, null as `-`.
fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Columns padded to their widest cell, two spaces apart; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, (cell, width)) in cells.into_iter().zip(&widths).enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  ", w = *width));
            }
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `key: value` lines, keys aligned.
fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.len() + 1).max().unwrap_or(0);
    pairs
        .iter()
        .map(|(key, value)| format!("{:<width$} {value}\n", format!("{key}:")))
        .collect()
}

fn cache(policy: &Value) -> String {
    match policy["size"].as_u64() {
        Some(0) | None => "strict".to_owned(),
        Some(size) => format!(
            "{size} per instance, {}s buffer, min {}",
            cell(&policy["buffer_seconds"]),
            cell(&policy["min"])
        ),
    }
}

/// What the sequence would vend next: its active range's next value.
fn next_value(sequence: &Value) -> String {
    let ranges = sequence["ranges"].as_array().map(Vec::as_slice);
    ranges
        .unwrap_or_default()
        .iter()
        .find(|r| r["status"] == "active")
        .map_or_else(|| "-".to_owned(), |r| cell(&r["next"]))
}

/// Days until the sequence runs out at the last day's rate, marked `!` while under its
/// `days_left_below` alert; `-` while it is not being used.
fn days_left(sequence: &Value) -> String {
    let rate = sequence["usage"]["per_second_24h"].as_f64().unwrap_or(0.0);
    let remaining = sequence["remaining"].as_f64().unwrap_or(0.0);
    if rate <= 0.0 {
        return "-".to_owned();
    }
    let days = remaining / rate / 86_400.0;
    let alert = sequence["alerts"]["days_left_below"]
        .as_f64()
        .unwrap_or(0.0);
    if days < alert {
        format!("{days:.1} !")
    } else {
        format!("{days:.1}")
    }
}

/// The alerts raised, comma-separated, or `-`.
fn raised(sequence: &Value) -> String {
    let kinds: Vec<String> = sequence["alerts"]["raised"]
        .as_array()
        .into_iter()
        .flatten()
        .map(cell)
        .collect();
    if kinds.is_empty() {
        "-".to_owned()
    } else {
        kinds.join(",")
    }
}

/// A footer naming the `after` for the next page, when there is one.
fn more(page: &Value, command: &str) -> String {
    match &page["next"] {
        Value::Null => String::new(),
        next => format!("more: {command} --after {}\n", cell(next)),
    }
}

pub fn sequence_page(page: &Value) -> String {
    let rows: Vec<Vec<String>> = page["sequences"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|s| {
            vec![
                cell(&s["name"]),
                cell(&s["status"]),
                next_value(s),
                cell(&s["remaining"]),
                format!(
                    "{:.2}",
                    s["usage"]["per_second_24h"].as_f64().unwrap_or(0.0)
                ),
                days_left(s),
                raised(s),
                s["ranges"].as_array().map_or(0, Vec::len).to_string(),
                cache(&s["cache"]),
            ]
        })
        .collect();
    let headers = [
        "NAME",
        "STATUS",
        "NEXT",
        "REMAINING",
        "PER_SEC_24H",
        "DAYS_LEFT",
        "ALERTS",
        "RANGES",
        "CACHE",
    ];
    table(&headers, &rows) + &more(page, "seqvend sequences list")
}

pub fn ranges(ranges: &[&Value]) -> String {
    let rows: Vec<Vec<String>> = ranges
        .iter()
        .map(|r| {
            ["min", "max", "status", "next", "remaining", "pg_sequence"]
                .iter()
                .map(|key| cell(&r[*key]))
                .collect()
        })
        .collect();
    let headers = ["MIN", "MAX", "STATUS", "NEXT", "REMAINING", "PG_SEQUENCE"];
    table(&headers, &rows)
}

pub fn sequence(s: &Value) -> String {
    let mut pairs = vec![
        ("name", cell(&s["name"])),
        ("namespace", cell(&s["namespace"])),
        ("status", cell(&s["status"])),
        ("increment", cell(&s["increment"])),
        ("next", next_value(s)),
        ("remaining", cell(&s["remaining"])),
        (
            "usage",
            format!(
                "{:.3}/s over 1h, {:.3}/s over 24h",
                s["usage"]["per_second_1h"].as_f64().unwrap_or(0.0),
                s["usage"]["per_second_24h"].as_f64().unwrap_or(0.0)
            ),
        ),
        ("exhausts at", cell(&s["usage"]["exhausts_at"])),
        ("days left", days_left(s)),
        (
            "alerts",
            format!(
                "{} (remaining below {}, days left below {})",
                raised(s),
                cell(&s["alerts"]["remaining_below"]),
                // Rust prints 14.0 as "14", JSON as "14.0".
                s["alerts"]["days_left_below"].as_f64().unwrap_or(0.0)
            ),
        ),
        ("cache", cache(&s["cache"])),
    ];
    if !s["format"].is_null() {
        pairs.push(("format", s["format"].to_string()));
    }
    pairs.push(("created", cell(&s["created_at"])));
    pairs.push(("updated", cell(&s["updated_at"])));
    let all: Vec<&Value> = s["ranges"].as_array().into_iter().flatten().collect();
    fields(&pairs) + "\n" + &ranges(&all)
}

/// Vended values one per line, each with its carrier number when the sequence has a format.
pub fn vended(body: &Value) -> String {
    let values: Vec<&Value> = match body.get("values") {
        Some(values) => values.as_array().into_iter().flatten().collect(),
        None => vec![&body["value"]],
    };
    let formatted: Vec<&Value> = match &body["formatted"] {
        Value::Array(numbers) => numbers.iter().collect(),
        Value::Null => Vec::new(),
        one => vec![one],
    };
    values
        .iter()
        .enumerate()
        .map(|(i, value)| match formatted.get(i) {
            Some(number) => format!("{}  {}\n", cell(value), cell(number)),
            None => format!("{}\n", cell(value)),
        })
        .collect()
}

pub fn event_page(page: &Value, name: &str) -> String {
    let rows: Vec<Vec<String>> = page["events"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let range = match &e["range"] {
                Value::Null => "-".to_owned(),
                r => format!("[{}, {}]", cell(&r["min"]), cell(&r["max"])),
            };
            vec![
                cell(&e["id"]),
                cell(&e["at"]),
                cell(&e["kind"]),
                range,
                cell(&e["actor"]),
                cell(&e["detail"]),
            ]
        })
        .collect();
    let headers = ["ID", "AT", "KIND", "RANGE", "ACTOR", "DETAIL"];
    table(&headers, &rows) + &more(page, &format!("seqvend events {name}"))
}

pub fn tracking_number(t: &Value) -> String {
    let issued = match &t["issued"] {
        Value::Null => "not by this seqvend".to_owned(),
        i => format!(
            "by sequence {}, value {}",
            cell(&i["sequence"]),
            cell(&i["value"])
        ),
    };
    fields(&[
        ("number", cell(&t["number"])),
        ("valid", cell(&t["valid"])),
        ("carrier", cell(&t["carrier"])),
        ("kind", cell(&t["kind"])),
        ("serial", cell(&t["serial"])),
        ("issued", issued),
    ])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn columns_align_to_their_widest_cell() {
        let rows = vec![
            vec![
                "fedex-4471".to_owned(),
                "active".to_owned(),
                "12".to_owned(),
            ],
            vec!["ups".to_owned(), "-".to_owned(), "1".to_owned()],
        ];
        assert_eq!(
            table(&["NAME", "STATUS", "REMAINING"], &rows),
            "NAME        STATUS  REMAINING\n\
             fedex-4471  active  12\n\
             ups         -       1\n"
        );
    }

    #[test]
    fn a_batch_of_formatted_values_prints_each_value_beside_its_number() {
        let body = json!({"sequence": "ups", "values": [7, 8],
                          "formatted": ["1Z5R89390300000073", "1Z5R89390300000081"],
                          "exhausted": false});
        assert_eq!(
            vended(&body),
            "7  1Z5R89390300000073\n8  1Z5R89390300000081\n"
        );
        assert_eq!(vended(&json!({"sequence": "s", "value": 3})), "3\n");
    }

    #[test]
    fn days_left_are_marked_under_the_alert_and_absent_while_unused() {
        let sequence = |remaining: u64, rate: f64| {
            json!({"remaining": remaining, "usage": {"per_second_24h": rate},
                   "alerts": {"days_left_below": 14.0, "raised": []}})
        };
        assert_eq!(days_left(&sequence(86_400 * 20, 1.0)), "20.0");
        assert_eq!(days_left(&sequence(86_400 * 3, 1.0)), "3.0 !");
        assert_eq!(days_left(&sequence(10, 0.0)), "-");
    }

    #[test]
    fn a_page_with_more_says_how_to_get_it() {
        let page = json!({"events": [], "next": 41});
        assert!(event_page(&page, "s").ends_with("more: seqvend events s --after 41\n"));
        let last = json!({"sequences": [], "next": null});
        assert!(!sequence_page(&last).contains("more"));
    }
}
