//! A sequence's number format: the layout its vended values are printed in. Parsed once,
//! when the sequence is created (every parameter checked, the error naming it), then stored
//! as JSON and trusted.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::check::{dhl_mod7, fedex_mod11, gs1_mod10, s10_mod11, ups_mod10, ups_value};
use super::countries::is_country;

/// The kinds seqvend generates, as `format.kind` names them.
pub const KINDS: &str = "ups_1z, fedex_express, fedex_ground, fedex_ground_96, sscc18, \
                         usps_impb, s10, dhl_express, ontrac, canada_post";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum Format {
    #[serde(rename = "ups_1z")]
    Ups1z { account: String, service: String },
    #[serde(rename = "fedex_express")]
    FedexExpress,
    #[serde(rename = "fedex_ground")]
    FedexGround { shipper_id: String },
    #[serde(rename = "fedex_ground_96")]
    FedexGround96 {
        scnc: String,
        service: String,
        shipper_id: String,
    },
    #[serde(rename = "sscc18")]
    Sscc18 {
        extension: String,
        company_prefix: String,
    },
    #[serde(rename = "usps_impb")]
    UspsImpb {
        service_type: String,
        mailer_id: String,
        length: u8,
    },
    #[serde(rename = "s10")]
    S10 { service: String, country: String },
    #[serde(rename = "dhl_express")]
    DhlExpress,
    #[serde(rename = "ontrac")]
    Ontrac { prefix: String },
    #[serde(rename = "canada_post")]
    CanadaPost { origin_id: String },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("`format` must be an object with a `kind`, one of: {KINDS}")]
    NotAnObject,
    #[error("`format.kind` must be one of: {KINDS}")]
    UnknownKind,
    #[error("`format.{param}` is required for kind {kind}: {rule}")]
    Missing {
        kind: &'static str,
        param: &'static str,
        rule: &'static str,
    },
    #[error("`format.{param}` must be {rule}")]
    Invalid {
        param: &'static str,
        rule: &'static str,
    },
    #[error("`format.{param}` is not a parameter of kind {kind}; it takes: {takes}")]
    Unknown {
        kind: &'static str,
        param: String,
        takes: &'static str,
    },
    #[error(
        "`{bound}` ({value}) does not fit the {kind} serial: every value of a range must lie \
         within [{lowest}, {highest}] ({width} digits)"
    )]
    DoesNotFit {
        bound: &'static str,
        value: i64,
        kind: &'static str,
        lowest: i64,
        highest: i64,
        width: u32,
    },
    #[error(
        "a formatted sequence's ranges live in its number space, {space:?}, so that no two \
         sequences can print one number: leave `namespace` out, or give exactly that"
    )]
    NamespaceNotNumberSpace { space: String },
}

const DIGITS: &[u8] = b"0123456789";
const ALNUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// Reads a format's parameters, each checked against its rule, refusing any it does not take.
struct Params<'a> {
    kind: &'static str,
    takes: &'static str,
    raw: &'a Map<String, Value>,
}

impl Params<'_> {
    fn text(
        &self,
        param: &'static str,
        rule: &'static str,
        ok: impl Fn(&str) -> bool,
    ) -> Result<String, FormatError> {
        let missing = FormatError::Missing {
            kind: self.kind,
            param,
            rule,
        };
        match self.raw.get(param) {
            None | Some(Value::Null) => Err(missing),
            Some(Value::String(s)) if ok(s) => Ok(s.clone()),
            Some(_) => Err(FormatError::Invalid { param, rule }),
        }
    }

    fn only(self) -> Result<(), FormatError> {
        let allowed: Vec<&str> = self.takes.split(", ").collect();
        match self
            .raw
            .keys()
            .find(|k| *k != "kind" && !allowed.contains(&k.as_str()))
        {
            Some(param) => Err(FormatError::Unknown {
                kind: self.kind,
                param: param.clone(),
                takes: self.takes,
            }),
            None => Ok(()),
        }
    }
}

fn made_of(alphabet: &'static [u8], lengths: &'static [usize]) -> impl Fn(&str) -> bool {
    move |s| lengths.contains(&s.len()) && s.bytes().all(|b| alphabet.contains(&b))
}

/// A format kind and the parameters it takes (as `Params::only` reads them).
fn kind_and_params(kind: Option<&str>) -> Result<(&'static str, &'static str), FormatError> {
    Ok(match kind {
        Some("ups_1z") => ("ups_1z", "account, service"),
        Some("fedex_express") => ("fedex_express", "none"),
        Some("fedex_ground") => ("fedex_ground", "shipper_id"),
        Some("fedex_ground_96") => ("fedex_ground_96", "scnc, service, shipper_id"),
        Some("sscc18") => ("sscc18", "extension, company_prefix"),
        Some("usps_impb") => ("usps_impb", "service_type, mailer_id, length"),
        Some("s10") => ("s10", "service, country"),
        Some("dhl_express") => ("dhl_express", "none"),
        Some("ontrac") => ("ontrac", "prefix"),
        Some("canada_post") => ("canada_post", "origin_id"),
        _ => return Err(FormatError::UnknownKind),
    })
}

impl Format {
    pub fn parse(raw: &Value) -> Result<Self, FormatError> {
        let raw = raw.as_object().ok_or(FormatError::NotAnObject)?;
        let (kind, takes) = kind_and_params(raw.get("kind").and_then(Value::as_str))?;
        let p = Params { kind, takes, raw };
        let format = Self::of_params(&p)?;
        p.only()?;
        Ok(format)
    }

    /// The format of `p.kind`, each of its parameters read and checked.
    fn of_params(p: &Params<'_>) -> Result<Self, FormatError> {
        Ok(match p.kind {
            "ups_1z" => Self::Ups1z {
                account: p.text(
                    "account",
                    "6 digits or upper-case letters",
                    made_of(ALNUM, &[6]),
                )?,
                service: p.text(
                    "service",
                    "2 digits or upper-case letters",
                    made_of(ALNUM, &[2]),
                )?,
            },
            "fedex_express" => Self::FedexExpress,
            "fedex_ground" => Self::FedexGround {
                shipper_id: p.text("shipper_id", "7 digits", made_of(DIGITS, &[7]))?,
            },
            "fedex_ground_96" => Self::FedexGround96 {
                scnc: p.text("scnc", "2 digits", made_of(DIGITS, &[2]))?,
                service: p.text("service", "3 digits", made_of(DIGITS, &[3]))?,
                shipper_id: p.text("shipper_id", "7 digits", made_of(DIGITS, &[7]))?,
            },
            "sscc18" => Self::Sscc18 {
                extension: p.text("extension", "1 digit", made_of(DIGITS, &[1]))?,
                company_prefix: p.text(
                    "company_prefix",
                    "7 to 10 digits (a GS1 company prefix)",
                    made_of(DIGITS, &[7, 8, 9, 10]),
                )?,
            },
            "usps_impb" => Self::usps_impb(p)?,
            "s10" => Self::S10 {
                service: p.text("service", "2 upper-case letters", made_of(LETTERS, &[2]))?,
                country: p.text(
                    "country",
                    "an ISO 3166-1 alpha-2 country code in upper case, e.g. US",
                    |s| is_country(s.as_bytes()),
                )?,
            },
            "dhl_express" => Self::DhlExpress,
            "ontrac" => Self::Ontrac {
                prefix: p.text("prefix", "\"C\" or \"D\"", |s| s == "C" || s == "D")?,
            },
            "canada_post" => Self::CanadaPost {
                origin_id: p.text("origin_id", "7 digits", made_of(DIGITS, &[7]))?,
            },
            _ => unreachable!("every kind is matched in `kind_and_params`"),
        })
    }

    fn usps_impb(p: &Params<'_>) -> Result<Self, FormatError> {
        Ok(Self::UspsImpb {
            service_type: p.text("service_type", "3 digits", made_of(DIGITS, &[3]))?,
            // The first digit tells a 6-digit MID from a 9-digit one (Pub 199).
            mailer_id: p.text(
                "mailer_id",
                "6 digits beginning with 0-8, or 9 digits beginning with 9",
                |s| made_of(DIGITS, &[6, 9])(s) && (s.len() == 9) == s.starts_with('9'),
            )?,
            length: match p.raw.get("length") {
                None | Some(Value::Null) => 22,
                Some(n) if n.as_u64() == Some(22) => 22,
                Some(n) if n.as_u64() == Some(26) => 26,
                Some(_) => {
                    return Err(FormatError::Invalid {
                        param: "length",
                        rule: "the number 22 or 26",
                    })
                }
            },
        })
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Ups1z { .. } => "ups_1z",
            Self::FedexExpress => "fedex_express",
            Self::FedexGround { .. } => "fedex_ground",
            Self::FedexGround96 { .. } => "fedex_ground_96",
            Self::Sscc18 { .. } => "sscc18",
            Self::UspsImpb { .. } => "usps_impb",
            Self::S10 { .. } => "s10",
            Self::DhlExpress => "dhl_express",
            Self::Ontrac { .. } => "ontrac",
            Self::CanadaPost { .. } => "canada_post",
        }
    }

    /// The space in which a serial names one number (and one parcel): the sequence's
    /// namespace, so that ranges printing the same numbers can never overlap. FedEx Ground's
    /// 15-digit number is the tail of its 96 barcode, so both kinds share the shipper's space;
    /// USPS requires a serial to be unique per mailer id whatever the service type or length.
    pub fn number_space(&self) -> String {
        match self {
            Self::Ups1z { account, service } => format!("ups_1z.{account}.{service}"),
            Self::FedexExpress => "fedex_express".into(),
            Self::FedexGround { shipper_id } | Self::FedexGround96 { shipper_id, .. } => {
                format!("fedex_ground.{shipper_id}")
            }
            Self::Sscc18 {
                extension,
                company_prefix,
            } => format!("sscc18.{extension}.{company_prefix}"),
            Self::UspsImpb { mailer_id, .. } => format!("usps_impb.{mailer_id}"),
            Self::S10 { service, country } => format!("s10.{service}.{country}"),
            Self::DhlExpress => "dhl_express".into(),
            Self::Ontrac { prefix } => format!("ontrac.{prefix}"),
            Self::CanadaPost { origin_id } => format!("canada_post.{origin_id}"),
        }
    }

    /// Whether `namespace` is spelt as a carrier's number space (as `number_space` makes
    /// them): its first dot-separated part is one of theirs. Claiming such a space takes a
    /// `namespace:` scope; a sequence name spelt alike is not enough.
    pub fn is_number_space(namespace: &str) -> bool {
        const ROOTS: [&str; 9] = [
            "ups_1z",
            "fedex_express",
            "fedex_ground",
            "sscc18",
            "usps_impb",
            "s10",
            "dhl_express",
            "ontrac",
            "canada_post",
        ];
        let root = namespace.split('.').next().unwrap_or(namespace);
        ROOTS.contains(&root)
    }

    /// Digits of the serial, the part a range fills.
    pub fn serial_width(&self) -> u32 {
        match self {
            Self::Ups1z { .. } | Self::FedexGround { .. } | Self::FedexGround96 { .. } => 7,
            Self::FedexExpress => 11,
            Self::Sscc18 { company_prefix, .. } => 16 - company_prefix.len() as u32,
            Self::UspsImpb {
                mailer_id, length, ..
            } => u32::from(*length) - 6 - mailer_id.len() as u32,
            Self::S10 { .. } => 8,
            Self::DhlExpress => 9,
            Self::Ontrac { .. } => 13,
            Self::CanadaPost { .. } => 8,
        }
    }

    /// The smallest and largest serial the layout can print. FedEx Express starts at 1:
    /// `000000000000` passes its check, yet is no tracking number (the reference lists it as
    /// invalid), and the validator refuses it.
    pub fn serial_span(&self) -> (i64, i64) {
        let lowest = i64::from(matches!(self, Self::FedexExpress));
        (lowest, 10i64.pow(self.serial_width()) - 1)
    }

    /// Refuses a range any of whose values would not print.
    pub fn check_range(&self, min: i64, max: i64) -> Result<(), FormatError> {
        let (lowest, highest) = self.serial_span();
        let outside = [("min", min), ("max", max)]
            .into_iter()
            .find(|(_, v)| !(lowest..=highest).contains(v));
        match outside {
            Some((bound, value)) => Err(FormatError::DoesNotFit {
                bound,
                value,
                kind: self.kind(),
                lowest,
                highest,
                width: self.serial_width(),
            }),
            None => Ok(()),
        }
    }

    /// The whole number for `serial`, check digit included; `None` if it does not fit.
    pub fn render(&self, serial: i64) -> Option<String> {
        let (lowest, highest) = self.serial_span();
        if !(lowest..=highest).contains(&serial) {
            return None;
        }
        let serial = format!("{serial:0width$}", width = self.serial_width() as usize);
        let check = |d: u8| char::from(b'0' + d);
        Some(match self {
            Self::Ups1z { account, service } => {
                let input = format!("{account}{service}{serial}");
                format!("1Z{input}{}", check(ups_mod10(input.as_bytes())))
            }
            Self::FedexExpress => format!("{serial}{}", check(fedex_mod11(serial.as_bytes()))),
            Self::FedexGround { shipper_id } => gs1_appended(format!("{shipper_id}{serial}")),
            Self::FedexGround96 {
                scnc,
                service,
                shipper_id,
            } => format!(
                "96{scnc}{service}{}",
                gs1_appended(format!("{shipper_id}{serial}"))
            ),
            Self::Sscc18 {
                extension,
                company_prefix,
            } => gs1_appended(format!("{extension}{company_prefix}{serial}")),
            Self::UspsImpb {
                service_type,
                mailer_id,
                ..
            } => {
                let ai = if mailer_id.len() == 9 { "92" } else { "93" };
                gs1_appended(format!("{ai}{service_type}{mailer_id}{serial}"))
            }
            Self::S10 { service, country } => {
                let c = check(s10_mod11(serial.as_bytes()));
                format!("{service}{serial}{c}{country}")
            }
            Self::DhlExpress => format!("{serial}{}", check(dhl_mod7(serial.as_bytes()))),
            Self::Ontrac { prefix } => {
                // Always the letter's value + 13 digits, even for a serial beginning with 4
                // or 5 (where jkeen's prepend rule would shift the weights).
                let mut input = vec![b'0' + ups_value(prefix.as_bytes()[0])];
                input.extend_from_slice(serial.as_bytes());
                format!("{prefix}{serial}{}", check(ups_mod10(&input)))
            }
            Self::CanadaPost { origin_id } => gs1_appended(format!("{origin_id}{serial}")),
        })
    }
}

fn gs1_appended(mut data: String) -> String {
    let check = gs1_mod10(data.as_bytes());
    data.push(char::from(b'0' + check));
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn format(value: Value) -> Format {
        Format::parse(&value).unwrap()
    }

    /// The rebuilt vectors of the reference's generation table (§7).
    #[test]
    fn renders_the_reference_numbers() {
        let cases = [
            (
                json!({"kind": "ups_1z", "account": "5R8939", "service": "03"}),
                5756712,
                "1Z5R89390357567127",
            ),
            (
                json!({"kind": "ups_1z", "account": "879E93", "service": "03"}),
                4683444,
                "1Z879E930346834440",
            ),
            (
                json!({"kind": "fedex_express"}),
                47717908123,
                "477179081230",
            ),
            (json!({"kind": "fedex_express"}), 1234567898, "012345678983"),
            (
                json!({"kind": "fedex_ground", "shipper_id": "0414417"}),
                6022896,
                "041441760228964",
            ),
            (
                json!({"kind": "fedex_ground_96", "scnc": "11", "service": "020", "shipper_id": "9876543"}),
                1234567,
                "9611020987654312345672",
            ),
            (
                json!({"kind": "fedex_ground_96", "scnc": "12", "service": "804", "shipper_id": "8822273"}),
                7854537,
                "9612804882227378545377",
            ),
            (
                json!({"kind": "sscc18", "extension": "0", "company_prefix": "0012345"}),
                2,
                "000123450000000027",
            ),
            (
                json!({"kind": "usps_impb", "service_type": "123", "mailer_id": "912345678"}),
                1234567,
                "9212391234567812345670",
            ),
            (
                json!({"kind": "usps_impb", "service_type": "748", "mailer_id": "931507708", "length": 26}),
                51301805006,
                "92748931507708513018050063",
            ),
            (
                json!({"kind": "usps_impb", "service_type": "055", "mailer_id": "927677560", "length": 22}),
                1584255,
                "9205592767756015842558",
            ),
            (
                json!({"kind": "s10", "service": "RB", "country": "US"}),
                12345678,
                "RB123456785US",
            ),
            (
                json!({"kind": "s10", "service": "EF", "country": "US"}),
                12345678,
                "EF123456785US",
            ),
            (json!({"kind": "dhl_express"}), 165674025, "1656740256"),
            (json!({"kind": "dhl_express"}), 109925599, "1099255990"),
            (
                json!({"kind": "ontrac", "prefix": "C"}),
                1123552392984,
                "C11235523929840",
            ),
            (
                json!({"kind": "ontrac", "prefix": "D"}),
                1001135445370,
                "D10011354453707",
            ),
            (
                json!({"kind": "canada_post", "origin_id": "0073938"}),
                54929,
                "0073938000549297",
            ),
        ];
        for (spec, serial, number) in cases {
            assert_eq!(
                format(spec.clone()).render(serial).as_deref(),
                Some(number),
                "{spec}"
            );
        }
    }

    #[test]
    fn every_kinds_number_space_is_known_as_one_and_a_tenants_namespace_is_not() {
        // One of each kind the parser names: a kind added without a sample here fails below,
        // so `is_number_space` cannot fall behind `number_space`.
        let samples = [
            json!({"kind": "ups_1z", "account": "5R8939", "service": "03"}),
            json!({"kind": "fedex_express"}),
            json!({"kind": "fedex_ground", "shipper_id": "0414417"}),
            json!({"kind": "fedex_ground_96", "scnc": "11", "service": "020", "shipper_id": "9876543"}),
            json!({"kind": "sscc18", "extension": "0", "company_prefix": "0012345"}),
            json!({"kind": "usps_impb", "service_type": "123", "mailer_id": "912345678"}),
            json!({"kind": "s10", "service": "RB", "country": "US"}),
            json!({"kind": "dhl_express"}),
            json!({"kind": "ontrac", "prefix": "C"}),
            json!({"kind": "canada_post", "origin_id": "0073938"}),
        ];
        let sampled: Vec<&str> = samples
            .iter()
            .map(|s| s["kind"].as_str().unwrap())
            .collect();
        assert_eq!(sampled, KINDS.split(", ").collect::<Vec<_>>());
        for spec in samples {
            let space = format(spec.clone()).number_space();
            assert!(Format::is_number_space(&space), "{spec}: {space}");
        }
        for namespace in ["tenanta-ns", "ups-east", "ups_1z-labels", "fedex", "s100.a"] {
            assert!(!Format::is_number_space(namespace), "{namespace}");
        }
    }

    #[test]
    fn an_ontrac_serial_beginning_with_its_letter_value_still_weighs_the_letter() {
        let c = format(json!({"kind": "ontrac", "prefix": "C"}));
        assert_eq!(c.render(4000000000001).as_deref(), Some("C40000000000016"));
    }

    #[test]
    fn widths_follow_the_layouts() {
        let width = |v: Value| format(v).serial_width();
        assert_eq!(
            width(json!({"kind": "sscc18", "extension": "0", "company_prefix": "0012345678"})),
            6
        );
        assert_eq!(
            width(json!({"kind": "usps_impb", "service_type": "001", "mailer_id": "012345"})),
            10
        );
        assert_eq!(
            width(
                json!({"kind": "usps_impb", "service_type": "001", "mailer_id": "012345", "length": 26})
            ),
            14
        );
        assert_eq!(
            width(
                json!({"kind": "usps_impb", "service_type": "001", "mailer_id": "912345678", "length": 26})
            ),
            11
        );
    }

    #[test]
    fn refuses_values_that_do_not_fit() {
        let ups = format(json!({"kind": "ups_1z", "account": "5R8939", "service": "03"}));
        assert_eq!(ups.render(10_000_000), None);
        assert_eq!(ups.render(-1), None);
        assert!(ups.check_range(0, 9_999_999).is_ok());
        assert!(matches!(
            ups.check_range(-1, 5),
            Err(FormatError::DoesNotFit {
                bound: "min",
                value: -1,
                ..
            })
        ));
        assert!(matches!(
            ups.check_range(0, 10_000_000),
            Err(FormatError::DoesNotFit { bound: "max", .. })
        ));
        let express = format(json!({"kind": "fedex_express"}));
        assert_eq!(express.render(0), None);
        assert!(express.check_range(0, 9).is_err());
    }

    #[test]
    fn every_bad_parameter_is_named() {
        let error = |v: Value| Format::parse(&v).unwrap_err().to_string();
        assert!(error(json!("ups_1z")).contains("`format` must be an object"));
        assert!(error(json!({"kind": "ups"})).contains("`format.kind`"));
        assert!(error(json!({})).contains("`format.kind`"));
        assert!(error(json!({"kind": "ups_1z", "service": "03"}))
            .contains("`format.account` is required"));
        assert!(
            error(json!({"kind": "ups_1z", "account": "5r8939", "service": "03"}))
                .contains("`format.account` must be")
        );
        assert!(
            error(json!({"kind": "ups_1z", "account": 123456, "service": "03"}))
                .contains("`format.account` must be")
        );
        assert!(
            error(json!({"kind": "ups_1z", "account": "5R8939", "service": "03", "x": 1}))
                .contains("`format.x` is not a parameter")
        );
        assert!(
            error(json!({"kind": "fedex_express", "shipper_id": "1234567"}))
                .contains("`format.shipper_id` is not")
        );
        assert!(
            error(json!({"kind": "usps_impb", "service_type": "001", "mailer_id": "912345"}))
                .contains("`format.mailer_id`")
        );
        assert!(error(
            json!({"kind": "usps_impb", "service_type": "001", "mailer_id": "812345678"})
        )
        .contains("`format.mailer_id`"));
        assert!(error(
            json!({"kind": "usps_impb", "service_type": "001", "mailer_id": "812345", "length": 30})
        )
        .contains("`format.length`"));
        assert!(
            error(json!({"kind": "s10", "service": "RB", "country": "XX"}))
                .contains("`format.country`")
        );
        assert!(
            error(json!({"kind": "s10", "service": "R1", "country": "US"}))
                .contains("`format.service`")
        );
        assert!(error(json!({"kind": "ontrac", "prefix": "E"})).contains("`format.prefix`"));
        assert!(
            error(json!({"kind": "sscc18", "extension": "0", "company_prefix": "123456"}))
                .contains("`format.company_prefix`")
        );
        assert!(error(json!({"kind": "canada_post", "origin_id": "007393"}))
            .contains("`format.origin_id`"));
        assert!(error(json!({"kind": "fedex_ground_96", "scnc": "1", "service": "020", "shipper_id": "9876543"})).contains("`format.scnc`"));
    }

    #[test]
    fn the_stored_form_reads_back_as_the_same_format() {
        let impb =
            format(json!({"kind": "usps_impb", "service_type": "001", "mailer_id": "012345"}));
        let stored = serde_json::to_value(&impb).unwrap();
        assert_eq!(
            stored,
            json!({"kind": "usps_impb", "service_type": "001", "mailer_id": "012345", "length": 22})
        );
        assert_eq!(serde_json::from_value::<Format>(stored).unwrap(), impb);
    }
}
