//! ISO 3166-1 alpha-2 codes, officially assigned (249): an S10 number must end in one.
//! The full ISO list rather than jkeen's 191 UPU members, so that a post's own territory
//! (e.g. `AX`, `GG`) is accepted; user-assigned codes such as `XX` are not in it.

const CODES: &str = "\
AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ \
BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ \
CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ \
DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR \
GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY \
HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP \
KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY \
MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ \
NA NC NE NF NG NI NL NO NP NR NU NZ OM \
PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW \
SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ \
TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ \
VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW";

pub fn is_country(code: &[u8]) -> bool {
    code.len() == 2 && CODES.as_bytes().chunks(3).any(|c| &c[..2] == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_249_assigned_codes_and_nothing_else() {
        let codes: Vec<&str> = CODES.split(' ').collect();
        assert_eq!(codes.len(), 249);
        assert!(codes.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
        assert!(is_country(b"US") && is_country(b"CF") && is_country(b"CV"));
        assert!(!is_country(b"XX") && !is_country(b"UT") && !is_country(b"U"));
    }
}
