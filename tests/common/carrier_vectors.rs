//! The public carrier test numbers of `tests/data/carrier-vectors.json` (a copy of the shared
//! carrier reference's vectors; sources and licences in `tests/data/CARRIER-VECTORS.md`), read
//! by the carriers module's unit tests and by the API tests alike.

/// One public carrier test number.
#[derive(serde::Deserialize)]
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

    /// The kind seqvend reports for the format the number was published under.
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
    serde_json::from_str(include_str!("../data/carrier-vectors.json")).expect("the vectors parse")
}
