//! Recognising any carrier number: every layout of the shared carrier reference is tried
//! against the whole normalised number, and the reference's tie-breaks (§5) pick one.

use super::check::{dhl_mod7, fedex_mod11, gs1_mod10, s10_mod11, ups_mod10, ups_value};
use super::countries::is_country;
use super::format::Format;
use super::reading::{digits, letters, printed, text, Layout, Origin, Reading};
use super::usps;

/// The longest number accepted, after normalising.
pub const MAX_LEN: usize = 64;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NumberError {
    #[error("a tracking number must hold at least one letter or digit")]
    Empty,
    #[error("a tracking number holds at most {MAX_LEN} letters and digits (spaces aside)")]
    TooLong,
    #[error("a tracking number holds only letters, digits and spaces; found {0:?}")]
    BadCharacter(char),
}

/// Whitespace removed, letters upper-cased; anything but ASCII letters and digits refused.
pub fn normalise(raw: &str) -> Result<String, NumberError> {
    let mut number = String::with_capacity(raw.len().min(MAX_LEN));
    for c in raw.chars().filter(|c| !c.is_whitespace()) {
        if !c.is_ascii_alphanumeric() {
            return Err(NumberError::BadCharacter(c));
        }
        if number.len() == MAX_LEN {
            return Err(NumberError::TooLong);
        }
        number.push(c.to_ascii_uppercase());
    }
    if number.is_empty() {
        return Err(NumberError::Empty);
    }
    Ok(number)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recognition {
    /// A known layout matches and its check digit is right.
    pub valid: bool,
    /// The layout chosen; `None` when no layout matches.
    pub layout: Option<Layout>,
    pub serial: Option<String>,
    /// Where seqvend would have vended it from (only for a valid number).
    pub origins: Vec<Origin>,
}

/// Recognises a normalised number (see `normalise`). Of the layouts that match, the first
/// whose check holds wins; if none holds, the first that matched is reported, invalid.
pub fn recognise(number: &str) -> Recognition {
    let n = number.as_bytes();
    let mut readings = Vec::new();
    if n.is_empty() {
        return Recognition {
            valid: false,
            layout: None,
            serial: None,
            origins: Vec::new(),
        };
    }
    ups(n, &mut readings);
    fedex(n, &mut readings);
    usps::readings(n, &mut readings);
    fedex_barcodes(n, &mut readings);
    others(n, &mut readings);
    // A number shaped like S10 is judged as S10 only, even when its letters are a DHL
    // eCommerce prefix (§5).
    if readings.iter().any(|r| r.layout.kind == "s10") {
        readings.retain(|r| r.layout.kind != "dhl_ecommerce");
    }
    let chosen = readings
        .iter()
        .position(|r| r.check_ok)
        .or((!readings.is_empty()).then_some(0));
    match chosen.map(|i| readings.swap_remove(i)) {
        Some(reading) => Recognition {
            valid: reading.check_ok,
            layout: Some(reading.layout),
            serial: reading.serial,
            origins: if reading.check_ok {
                reading.origins
            } else {
                Vec::new()
            },
        },
        None => Recognition {
            valid: false,
            layout: None,
            serial: None,
            origins: Vec::new(),
        },
    }
}

fn ups(n: &[u8], out: &mut Vec<Reading>) {
    let alnum = |b: &[u8]| b.iter().all(u8::is_ascii_alphanumeric);
    if n.len() == 18 && n.starts_with(b"1Z") && alnum(&n[2..17]) && n[17].is_ascii_digit() {
        let ok = printed(n[17], ups_mod10(&n[2..17]));
        let format = Format::Ups1z {
            account: text(&n[2..8]),
            service: text(&n[8..10]),
        };
        out.push(
            Reading::new("UPS", "ups_1z", ok)
                .serial(&n[10..17])
                .origin(format, &n[10..17]),
        );
    }
    // `A` + 10 digits is a waybill if its check holds, else Amazon International (below).
    if n.len() == 11 && b"AHJKTV".contains(&n[0]) && digits(&n[1..]) {
        let ok = printed(n[10], ups_mod10(&n[1..10]));
        out.push(Reading::new("UPS", "ups_waybill", ok).serial(&n[1..10]));
    }
}

fn fedex(n: &[u8], out: &mut Vec<Reading>) {
    if !digits(n) {
        return;
    }
    match n.len() {
        // `000000000000` passes the arithmetic but is no tracking number.
        12 => {
            let ok = printed(n[11], fedex_mod11(&n[..11])) && n.iter().any(|&d| d != b'0');
            out.push(
                Reading::new("FedEx", "fedex_express", ok)
                    .serial(&n[..11])
                    .origin(Format::FedexExpress, &n[..11]),
            );
        }
        // No prefix: a random 15-digit string passes 1 time in 10 (§6, trap 7).
        15 => {
            let ok = printed(n[14], gs1_mod10(&n[..14]));
            let format = Format::FedexGround {
                shipper_id: text(&n[..7]),
            };
            out.push(
                Reading::new("FedEx", "fedex_ground", ok)
                    .serial(&n[7..14])
                    .origin(format, &n[7..14]),
            );
        }
        // The check covers the shipper ID and package only: [7:22] is a Ground 15 number.
        22 if n.starts_with(b"96") => {
            let ok = printed(n[21], gs1_mod10(&n[7..21]));
            let format = Format::FedexGround96 {
                scnc: text(&n[2..4]),
                service: text(&n[4..7]),
                shipper_id: text(&n[7..14]),
            };
            out.push(
                Reading::new("FedEx", "fedex_ground_96", ok)
                    .serial(&n[14..21])
                    .origin(format, &n[14..21]),
            );
        }
        // GS1 over all 17 data digits (not jkeen's 15, §6 trap 1). Where the company
        // prefix ends is not printed, so every split is a possible origin.
        18 => {
            let ok = printed(n[17], gs1_mod10(&n[..17]));
            let mut reading = Reading::new("GS1", "sscc18", ok);
            for prefix in 7..=10 {
                let format = Format::Sscc18 {
                    extension: text(&n[..1]),
                    company_prefix: text(&n[1..1 + prefix]),
                };
                reading = reading.origin(format, &n[1 + prefix..17]);
            }
            out.push(reading);
        }
        _ => {}
    }
}

/// The 32- and 34-digit FedEx barcodes: MOD 11 over an inner 13 (or 11) digits.
fn fedex_barcodes(n: &[u8], out: &mut Vec<Reading>) {
    if !digits(n) {
        return;
    }
    let inner_ok = |n: &[u8]| printed(n[33], fedex_mod11(&n[20..33]));
    match n.len() {
        34 if n.starts_with(b"96") => {
            let reading = Reading::new("FedEx", "fedex_ground_gsn", inner_ok(n));
            out.push(reading.serial(&n[22..33]));
        }
        // The 12-digit Express number [22:34] is inside; with [20:22] = 00 its own check
        // is the barcode's.
        34 if n[0] <= b'8' => {
            let mut reading = Reading::new("FedEx", "fedex_express_34", inner_ok(n));
            reading = reading.serial(&n[22..33]);
            if &n[20..22] == b"00" && n[22..33].iter().any(|&d| d != b'0') {
                reading = reading.origin(Format::FedexExpress, &n[22..33]);
            }
            out.push(reading);
        }
        32 if n[0] == b'3' => {
            let ok = printed(n[27], fedex_mod11(&n[16..27]));
            out.push(Reading::new("FedEx", "fedex_astra_32", ok).serial(&n[16..27]));
        }
        _ => {}
    }
}

const DHL_ECOMMERCE_PREFIXES: [&[u8]; 10] = [
    b"GM", b"LX", b"RX", b"UV", b"CN", b"SG", b"TH", b"IN", b"HK", b"MY",
];

/// Every other layout, in the order they are listed when several fit.
fn others(n: &[u8], out: &mut Vec<Reading>) {
    canada_post(n, out);
    dhl_express(n, out);
    if n.len() == 14 && digits(n) {
        out.push(Reading::new("DHL", "dhl_ecommerce_14", true));
    }
    s10(n, out);
    ontrac(n, out);
    without_check_digit(n, out);
}

fn canada_post(n: &[u8], out: &mut Vec<Reading>) {
    if n.len() == 16 && digits(n) {
        let ok = printed(n[15], gs1_mod10(&n[..15]));
        let format = Format::CanadaPost {
            origin_id: text(&n[..7]),
        };
        out.push(
            Reading::new("Canada Post", "canada_post", ok)
                .serial(&n[7..15])
                .origin(format, &n[7..15]),
        );
    }
}

fn dhl_express(n: &[u8], out: &mut Vec<Reading>) {
    let len = n.len();
    if (len == 10 || len == 11) && digits(n) {
        let ok = printed(n[len - 1], dhl_mod7(&n[..len - 1]));
        let mut reading = Reading::new("DHL", "dhl_express", ok).serial(&n[..len - 1]);
        if len == 10 {
            reading = reading.origin(Format::DhlExpress, &n[..9]);
        }
        out.push(reading);
    }
}

fn s10(n: &[u8], out: &mut Vec<Reading>) {
    if n.len() == 13 && letters(&n[..2]) && digits(&n[2..11]) && letters(&n[11..]) {
        let ok = printed(n[10], s10_mod11(&n[2..10])) && is_country(&n[11..]);
        let format = Format::S10 {
            service: text(&n[..2]),
            country: text(&n[11..]),
        };
        out.push(
            Reading::new("UPU", "s10", ok)
                .serial(&n[2..10])
                .origin(format, &n[2..10]),
        );
    }
}

fn ontrac(n: &[u8], out: &mut Vec<Reading>) {
    if n.len() == 15 && (n[0] == b'C' || n[0] == b'D') && digits(&n[1..]) {
        // Always the letter's value + 13 digits (§6, trap 6).
        let mut input = vec![b'0' + ups_value(n[0])];
        input.extend_from_slice(&n[1..14]);
        let ok = printed(n[14], ups_mod10(&input));
        let format = Format::Ontrac {
            prefix: text(&n[..1]),
        };
        out.push(
            Reading::new("OnTrac", "ontrac", ok)
                .serial(&n[1..14])
                .origin(format, &n[1..14]),
        );
    }
}

/// Layouts with no check digit: recognised by their shape alone.
fn without_check_digit(n: &[u8], out: &mut Vec<Reading>) {
    let len = n.len();
    if len == 15 && n.starts_with(b"TB") && b"ACM".contains(&n[2]) && digits(&n[3..]) {
        out.push(Reading::new("Amazon", "amazon_logistics", true));
    }
    if len == 11 && b"AFC".contains(&n[0]) && digits(&n[1..]) {
        out.push(Reading::new("Amazon", "amazon_international", true));
    }
    if (12..=41).contains(&len)
        && DHL_ECOMMERCE_PREFIXES.contains(&&n[..2])
        && n[2..].iter().any(u8::is_ascii_digit)
    {
        out.push(Reading::new("DHL", "dhl_ecommerce", true));
    }
    if n[0] == b'J' {
        let letters_end = 1 + n[1..].iter().take_while(|b| b.is_ascii_uppercase()).count();
        let tail = &n[letters_end..];
        if (3..=4).contains(&letters_end) && digits(tail) && (9..=10).contains(&tail.len()) {
            out.push(Reading::new("DHL", "dhl_express_piece_id", true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seen(number: &str) -> (bool, Option<&'static str>, Option<String>) {
        let r = recognise(&normalise(number).unwrap());
        (r.valid, r.layout.map(|l| l.kind), r.serial)
    }

    #[test]
    fn normalising_removes_spaces_upper_cases_and_refuses_the_rest() {
        assert_eq!(normalise(" 1z5r 8939 ").unwrap(), "1Z5R8939");
        assert_eq!(normalise("  "), Err(NumberError::Empty));
        assert_eq!(normalise("1Z-5"), Err(NumberError::BadCharacter('-')));
        assert_eq!(normalise("9é"), Err(NumberError::BadCharacter('é')));
        assert!(normalise(&"1".repeat(64)).is_ok());
        assert_eq!(normalise(&"1".repeat(65)), Err(NumberError::TooLong));
        assert!(normalise(&format!("{} ", "1 ".repeat(64))).is_ok());
    }

    /// §4.3: both readings are valid; ZIP+4 + 22 digits wins.
    #[test]
    fn a_34_digit_usps_number_valid_both_ways_reads_as_zip_plus_4() {
        let r = recognise("4201234593009212391234567812345670");
        assert!(r.valid);
        assert_eq!(r.serial.as_deref(), Some("1234567"));
        assert_eq!(
            r.origins[0].format.render(r.origins[0].serial).unwrap(),
            "9212391234567812345670"
        );
    }

    /// §5: the USPS reading comes before FedEx Express 34, which also passes.
    #[test]
    fn a_34_digit_number_passing_usps_and_fedex_is_usps() {
        assert_eq!(
            seen("4201028200009261290113185417468510").1,
            Some("usps_impb")
        );
        assert_eq!(
            seen("1195266473930007521100871079919940").1,
            Some("fedex_express_34")
        );
    }

    #[test]
    fn the_documented_tie_breaks_and_traps() {
        // Trap 7: an OnTrac number keyed with 8 for C passes as FedEx Ground.
        assert!(seen("810999911320231").0);
        assert_eq!(seen("810999911320231").1, Some("fedex_ground"));
        // `A` + 10 digits: a waybill when its check holds, else Amazon International.
        let waybill_check = ups_mod10(b"150623562");
        let good = format!("A150623562{waybill_check}");
        let bad = format!("A150623562{}", (waybill_check + 1) % 10);
        assert_eq!(seen(&good).1, Some("ups_waybill"));
        assert_eq!(
            (seen(&bad).0, seen(&bad).1),
            (true, Some("amazon_international"))
        );
        // S10-shaped with a DHL eCommerce prefix: S10 only, no fallback.
        assert_eq!(seen("LX123456785DE").1, Some("s10"));
        assert_eq!(
            (seen("LX123456786DE").0, seen("LX123456786DE").1),
            (false, Some("s10"))
        );
        // The all-zero Express number is no tracking number.
        assert!(!seen("000000000000").0);
        // Trap 6: the OnTrac letter is always weighed.
        assert!(seen("C40000000000016").0 && !seen("C40000000000015").0);
        // Nothing matches: no layout.
        assert_eq!(seen("HELLO"), (false, None, None));
    }

    /// A wrong check digit still names the layout that matched.
    #[test]
    fn an_invalid_number_names_the_layout_it_matched() {
        assert_eq!(seen("1Z5R89390357567128").1, Some("ups_1z"));
        assert_eq!(seen("RB123456785XX").1, Some("s10"));
    }

    fn any_format() -> impl Strategy<Value = Format> {
        let digits = |n: usize| proptest::string::string_regex(&format!("[0-9]{{{n}}}")).unwrap();
        let alnum = |n: usize| proptest::string::string_regex(&format!("[0-9A-Z]{{{n}}}")).unwrap();
        let letters = proptest::string::string_regex("[A-Z]{2}").unwrap();
        prop_oneof![
            (alnum(6), alnum(2)).prop_map(|(account, service)| Format::Ups1z { account, service }),
            Just(Format::FedexExpress),
            digits(7).prop_map(|shipper_id| Format::FedexGround { shipper_id }),
            (digits(2), digits(3), digits(7)).prop_map(|(scnc, service, shipper_id)| {
                Format::FedexGround96 {
                    scnc,
                    service,
                    shipper_id,
                }
            }),
            (digits(1), 7usize..=10, digits(10)).prop_map(|(extension, len, prefix)| {
                Format::Sscc18 {
                    extension,
                    company_prefix: prefix[..len].to_string(),
                }
            }),
            (
                digits(3),
                digits(6),
                any::<bool>(),
                prop_oneof![Just(22u8), Just(26u8)]
            )
                .prop_map(|(service_type, mid, nine, length)| {
                    let mailer_id = if nine {
                        format!("9{}", &mid[..5]) + &mid[..3]
                    } else {
                        format!("{}{}", (mid.as_bytes()[0] - b'0') % 9, &mid[1..])
                    };
                    Format::UspsImpb {
                        service_type,
                        mailer_id,
                        length,
                    }
                }),
            (
                letters,
                prop_oneof![Just("US"), Just("CA"), Just("GB"), Just("AX")]
            )
                .prop_map(|(service, country)| Format::S10 {
                    service,
                    country: country.into()
                }),
            Just(Format::DhlExpress),
            prop_oneof![Just("C"), Just("D")].prop_map(|p| Format::Ontrac { prefix: p.into() }),
            digits(7).prop_map(|origin_id| Format::CanadaPost { origin_id }),
        ]
    }

    proptest! {
        /// Every number seqvend prints is valid, of its own kind, and leads back to the
        /// format and serial that printed it.
        #[test]
        fn a_generated_number_always_validates(format in any_format(), fraction in 0f64..1.0) {
            let (lowest, highest) = format.serial_span();
            let serial = lowest + ((highest - lowest) as f64 * fraction) as i64;
            let number = format.render(serial).unwrap();
            let seen = recognise(&number);
            prop_assert!(seen.valid, "{} from {:?}", number, format);
            prop_assert_eq!(seen.layout.unwrap().kind, format.kind());
            let origin = Origin { format: format.clone(), serial };
            prop_assert!(seen.origins.contains(&origin), "{} lost its origin", number);
        }
    }
}
