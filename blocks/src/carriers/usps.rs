//! USPS: IMpb (AI 92–95), legacy Confirmation numbers (AI 91, 20 digits with or without it),
//! and either behind the `420` + ZIP routing prefix of the barcode.

use super::check::gs1_mod10;
use super::format::Format;
use super::reading::{digits, printed, text, Reading};

const CARRIER: &str = "USPS";

/// Every USPS reading of `n`, in the order the tie-breaks prefer them.
pub fn readings(n: &[u8], out: &mut Vec<Reading>) {
    if !digits(n) {
        return;
    }
    if n.len() == 20 {
        twenty_digits(n, out);
    }
    out.extend(pic(n));
    if n.starts_with(b"420") {
        // ZIP+4 before ZIP5: when both readings are valid, the ZIP+4 one wins (jkeen's regex
        // tries its optional ZIP+4 group first). A reading whose PIC breaks the AI/MID rule
        // never appears, which settles most 34-digit numbers.
        if n.len() == 12 + 22 {
            out.extend(pic(&n[12..]));
        }
        if [8 + 22, 8 + 26].contains(&n.len()) {
            out.extend(pic(&n[8..]));
        }
    }
}

/// A whole PIC: IMpb (AI 92–95) or legacy (AI 91, 22 digits).
fn pic(p: &[u8]) -> Option<Reading> {
    let check_ok = printed(*p.last()?, gs1_mod10(&p[..p.len() - 1]));
    if p.len() == 22 && p.starts_with(b"91") {
        return Some(Reading::new(CARRIER, "usps_legacy", check_ok).serial(&p[13..21]));
    }
    if ![22, 26, 30].contains(&p.len()) || p.len() < 6 {
        return None;
    }
    let nine = p[5] == b'9';
    let mid = match (&p[..2], nine) {
        (b"92", true) | (b"94", true) | (b"95", true) => 9,
        (b"93", false) | (b"94", false) | (b"95", false) => 6,
        _ => return None,
    };
    let serial_len = p.len() - 2 - 3 - mid - 1;
    let widths: &[usize] = match (mid, &p[..2]) {
        (9, b"94") => &[7, 11, 15],
        (9, _) => &[7, 11],
        _ => &[10, 14],
    };
    if !widths.contains(&serial_len) {
        return None;
    }
    let serial = &p[5 + mid..p.len() - 1];
    let reading = Reading::new(CARRIER, "usps_impb", check_ok).serial(serial);
    // seqvend prints AI 92 (9-digit MID) and 93 (6-digit MID); 94 and 95 are others'.
    Some(match &p[..2] {
        b"92" | b"93" => reading.origin(
            Format::UspsImpb {
                service_type: text(&p[2..5]),
                mailer_id: text(&p[5..5 + mid]),
                length: p.len() as u8,
            },
            serial,
        ),
        _ => reading,
    })
}

/// 20 digits: USS Code 128 (the 19 data digits) or the AI 91 convention (91 prepended to
/// them). The two never both pass; a body beginning with 91 is never prepended (jkeen).
fn twenty_digits(n: &[u8], out: &mut Vec<Reading>) {
    let check = n[19];
    let package = &n[11..19];
    out.push(Reading::new(CARRIER, "usps_20", printed(check, gs1_mod10(&n[..19]))).serial(package));
    if !n.starts_with(b"91") {
        let mut with_ai = b"91".to_vec();
        with_ai.extend_from_slice(&n[..19]);
        let ok = printed(check, gs1_mod10(&with_ai));
        out.push(Reading::new(CARRIER, "usps_legacy", ok).serial(package));
    }
}
