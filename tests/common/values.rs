//! Small checks over what seqvend hands out and what its commands print.

use std::process::Output;

use seqvend::ids::Layout;

/// Whether `values` strictly increase.
pub fn increasing<T: PartialOrd>(values: &[T]) -> bool {
    values.windows(2).all(|pair| pair[0] < pair[1])
}

/// The worker id a Snowflake id (in the default layout) was issued under.
pub fn worker_of(id: i64) -> u32 {
    Layout::DEFAULT.decompose(id).unwrap().worker_id
}

/// What a finished command wrote to its standard error.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
