//! Every public test number of `tests/data/carrier-vectors.json` (a copy of the shared
//! carrier reference's vectors; sources and licences in `tests/data/CARRIER-VECTORS.md`):
//! each is recognised with its expected validity, under the layout it was published for,
//! and each valid number of a layout seqvend prints is printed back from its origin.

use serde::Deserialize;

use super::{normalise, recognise};

#[derive(Deserialize)]
pub struct Vector {
    pub format: String,
    pub number: String,
    pub valid: bool,
    pub checksum_ok: Option<bool>,
}

impl Vector {
    /// The reference's rule: a number whose recomputed check fails is invalid, whatever its
    /// source asserted (§8).
    pub fn expected_valid(&self) -> bool {
        self.checksum_ok != Some(false) && self.valid
    }

    /// The kind seqvend reports for the jkeen format the vector was published under.
    pub fn kind(&self) -> &str {
        match self.format.as_str() {
            "ups" => "ups_1z",
            "UPS Waybill" => "ups_waybill",
            "fedex_12" => "fedex_express",
            "fedex_34" => "fedex_express_34",
            "fedex_ground_sscc_18" => "sscc18",
            "usps_impb_c" | "usps_impb_n" => "usps_impb",
            "ontrac_c" | "ontrac_d" => "ontrac",
            other => other,
        }
    }
}

pub fn vectors() -> Vec<Vector> {
    let text = include_str!("../../tests/data/carrier-vectors.json");
    serde_json::from_str(text).expect("the vectors parse")
}

#[test]
fn the_file_holds_the_121_vectors_81_of_them_valid() {
    let all = vectors();
    assert_eq!(all.len(), 121);
    assert_eq!(all.iter().filter(|v| v.expected_valid()).count(), 81);
}

#[test]
fn every_vector_is_recognised_with_its_expected_validity_and_layout() {
    let mut wrong = Vec::new();
    for vector in vectors() {
        let number = normalise(&vector.number).expect("every vector normalises");
        let seen = recognise(&number);
        let expected = vector.expected_valid();
        let kind = seen.layout.map(|l| l.kind);
        if seen.valid != expected || (expected && kind != Some(vector.kind())) {
            wrong.push(format!(
                "{:?} ({}): valid {} as {kind:?}, expected {expected}",
                vector.number, vector.format, seen.valid
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_valid_vector_seqvend_could_print_is_printed_back_from_its_origin() {
    let mut printed = 0;
    for vector in vectors().into_iter().filter(Vector::expected_valid) {
        let number = normalise(&vector.number).unwrap();
        for origin in recognise(&number).origins {
            let again = origin.format.render(origin.serial);
            // A routed USPS barcode prints its PIC, the tail of the number.
            assert!(
                again.as_deref().is_some_and(|a| number.ends_with(a)),
                "{number}: {:?} {} printed {again:?}",
                origin.format,
                origin.serial
            );
            printed += 1;
        }
    }
    assert!(printed >= 30, "only {printed} origins");
}
