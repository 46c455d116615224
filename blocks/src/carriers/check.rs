//! The check-digit algorithms of carrier numbers (the letters follow the shared carrier
//! reference, §3): each takes the check input as ASCII characters the caller has already
//! matched against its layout, and returns the check digit's value, 0–9.

/// A: GS1 MOD 10 (USPS, FedEx Ground, SSCC-18, Canada Post). Weights 3, 1, 3, … from the
/// right, so the same function serves every input length.
pub fn gs1_mod10(digits: &[u8]) -> u8 {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| u32::from(d - b'0') * if i % 2 == 0 { 3 } else { 1 })
        .sum();
    ((10 - sum % 10) % 10) as u8
}

/// The value UPS gives a character: a digit is itself, a letter `(ASCII − 3) mod 10`.
pub fn ups_value(c: u8) -> u8 {
    if c.is_ascii_digit() {
        c - b'0'
    } else {
        (c - 3) % 10
    }
}

/// B: UPS MOD 10 (1Z, waybill, OnTrac). Weights 1, 2, 1, … from the *left*, with no digit
/// folding; the input length therefore matters.
pub fn ups_mod10(chars: &[u8]) -> u8 {
    let sum: u32 = chars
        .iter()
        .enumerate()
        .map(|(i, &c)| u32::from(ups_value(c)) * if i % 2 == 0 { 1 } else { 2 })
        .sum();
    ((10 - sum % 10) % 10) as u8
}

/// C: FedEx MOD 11. Weights 1, 3, 7, … from the right; a remainder of 10 gives 0.
pub fn fedex_mod11(digits: &[u8]) -> u8 {
    const WEIGHTS: [u32; 3] = [1, 3, 7];
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| u32::from(d - b'0') * WEIGHTS[i % 3])
        .sum();
    (sum % 11 % 10) as u8
}

/// D: DHL Express. The serial read as a decimal integer, mod 7 — digit by digit, so any
/// length works.
pub fn dhl_mod7(digits: &[u8]) -> u8 {
    digits.iter().fold(0u8, |r, &d| {
        ((u16::from(r) * 10 + u16::from(d - b'0')) % 7) as u8
    })
}

/// E: UPU S10 MOD 11 over the 8 serial digits: r = 1 gives 0 and r = 0 gives 5.
pub fn s10_mod11(digits: &[u8]) -> u8 {
    const WEIGHTS: [u32; 8] = [8, 6, 4, 2, 3, 5, 9, 7];
    let sum: u32 = digits
        .iter()
        .zip(WEIGHTS)
        .map(|(&d, w)| u32::from(d - b'0') * w)
        .sum();
    match sum % 11 {
        0 => 5,
        1 => 0,
        r => (11 - r) as u8,
    }
}

#[cfg(test)]
mod tests {
    //! The worked examples of the reference, the single-character changes each algorithm
    //! cannot catch (§3, "What a check digit cannot catch"), and properties over random
    //! inputs: a change is missed exactly when the arithmetic says it must be.

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn worked_examples() {
        assert_eq!(gs1_mod10(b"921239123456781234567"), 0);
        assert_eq!(gs1_mod10(b"00012345000000002"), 7);
        assert_eq!(ups_mod10(b"5R8939035756712"), 7);
        assert_eq!(ups_mod10(b"41123552392984"), 0);
        assert_eq!(fedex_mod11(b"01234567898"), 3);
        assert_eq!(fedex_mod11(b"47717908123"), 0); // r = 0
        assert_eq!(fedex_mod11(b"0078545823361"), 0); // r = 10
        assert_eq!(dhl_mod7(b"165674025"), 6);
        assert_eq!(dhl_mod7(b"7389105114"), 6);
        assert_eq!(s10_mod11(b"12345678"), 5);
        assert_eq!(s10_mod11(b"12345602"), 5); // r = 0
        assert_eq!(s10_mod11(b"12345614"), 0); // r = 1
    }

    #[test]
    fn letters_take_their_ups_values() {
        let values: Vec<u8> = (b'A'..=b'Z').map(ups_value).collect();
        assert_eq!(
            values,
            [2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7]
        );
    }

    /// The reference's examples of changes the check digit cannot see.
    #[test]
    fn the_blind_spots_of_each_algorithm() {
        // B: a digit ±5 at a weight-2 position (the 2nd of `5R8939…`: R=9 → 4).
        assert_eq!(ups_mod10(b"5R8439035756712"), ups_mod10(b"5R8939035756712"));
        // B: a letter for a digit of equal value (R, H and 9 are all 9).
        assert_eq!(ups_mod10(b"5H8939035756712"), ups_mod10(b"5R8939035756712"));
        // C: check 0 and r moving between 0 and 10.
        assert_eq!(fedex_mod11(b"47717908122"), fedex_mod11(b"47717908123"));
        // D: a digit changed by 7.
        assert_eq!(dhl_mod7(b"865674025"), dhl_mod7(b"165674025"));
        // E: check 5 and r moving between 0 and 6.
        assert_eq!(s10_mod11(b"32345678"), s10_mod11(b"12345678"));
    }

    fn digits(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(b'0'..=b'9', len)
    }

    fn alnum(len: usize) -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(prop_oneof![b'0'..=b'9', b'A'..=b'Z'], len..=len)
    }

    /// One character of `input` changed to another of `alphabet`.
    fn changed(input: &[u8], at: usize, to: u8) -> Option<Vec<u8>> {
        let at = at % input.len();
        (input[at] != to).then(|| {
            let mut copy = input.to_vec();
            copy[at] = to;
            copy
        })
    }

    fn fedex_remainder(digits: &[u8]) -> u32 {
        const WEIGHTS: [u32; 3] = [1, 3, 7];
        digits
            .iter()
            .rev()
            .enumerate()
            .map(|(i, &d)| u32::from(d - b'0') * WEIGHTS[i % 3])
            .sum::<u32>()
            % 11
    }

    fn s10_remainder(digits: &[u8]) -> u32 {
        const WEIGHTS: [u32; 8] = [8, 6, 4, 2, 3, 5, 9, 7];
        digits
            .iter()
            .zip(WEIGHTS)
            .map(|(&d, w)| u32::from(d - b'0') * w)
            .sum::<u32>()
            % 11
    }

    proptest! {
        /// A: every single-digit change is caught.
        #[test]
        fn gs1_catches_every_single_digit_change(
            input in digits(7..=33), at in 0usize..64, to in b'0'..=b'9'
        ) {
            if let Some(other) = changed(&input, at, to) {
                prop_assert_ne!(gs1_mod10(&other), gs1_mod10(&input));
            }
        }

        /// B misses a change exactly when the value is equal, or, at a weight-2 position,
        /// differs by 5.
        #[test]
        fn ups_misses_only_equal_values_and_fives_at_weight_two(
            input in alnum(15), at in 0usize..15, to in prop_oneof![b'0'..=b'9', b'A'..=b'Z']
        ) {
            if let Some(other) = changed(&input, at, to) {
                let (old, new) = (ups_value(input[at]), ups_value(to));
                let blind = old == new || (at % 2 == 1 && old.abs_diff(new) == 5);
                prop_assert_eq!(ups_mod10(&other) == ups_mod10(&input), blind);
            }
        }

        /// C misses a change exactly when r moves between 0 and 10 (both give check 0).
        #[test]
        fn fedex_misses_only_r_between_0_and_10(
            input in digits(11..=13), at in 0usize..13, to in b'0'..=b'9'
        ) {
            if let Some(other) = changed(&input, at, to) {
                let (r, s) = (fedex_remainder(&input), fedex_remainder(&other));
                let blind = r != s && matches!((r, s), (0, 10) | (10, 0));
                prop_assert_eq!(fedex_mod11(&other) == fedex_mod11(&input), blind);
            }
        }

        /// D misses a change exactly when a digit moves by 7.
        #[test]
        fn mod7_misses_only_changes_by_seven(
            input in digits(9..=10), at in 0usize..10, to in b'0'..=b'9'
        ) {
            if let Some(other) = changed(&input, at, to) {
                let blind = input[at % input.len()].abs_diff(to) == 7;
                prop_assert_eq!(dhl_mod7(&other) == dhl_mod7(&input), blind);
            }
        }

        /// E misses a change exactly when r moves between 0 and 6 (both give check 5).
        #[test]
        fn s10_misses_only_r_between_0_and_6(
            input in digits(8..=8), at in 0usize..8, to in b'0'..=b'9'
        ) {
            if let Some(other) = changed(&input, at, to) {
                let (r, s) = (s10_remainder(&input), s10_remainder(&other));
                let blind = matches!((r, s), (0, 6) | (6, 0));
                prop_assert_eq!(s10_mod11(&other) == s10_mod11(&input), blind);
            }
        }
    }
}
