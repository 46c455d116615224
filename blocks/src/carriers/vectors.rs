//! Every public test number of `tests/data/carrier-vectors.json`: each is recognised with its
//! expected validity, under the layout it was published for, and each valid number of a layout
//! seqvend prints is printed back from its origin.

use super::{normalise, recognise};

#[path = "../../../tests/common/carrier_vectors.rs"]
mod data;
use data::{vectors, Vector};

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
