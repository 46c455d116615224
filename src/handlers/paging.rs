//! The paging every list shares: `limit` 1–1000 (100 by default) and, for lists in name
//! order, `after` a name.

use super::error::ApiError;
use crate::domain::SequenceName;

const DEFAULT_PAGE: u32 = 100;
const MAX_PAGE: u32 = 1000;

/// The page size asked for, checked.
pub fn page_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::InvalidRequest(format!(
            "`limit` must be between 1 and {MAX_PAGE}"
        )));
    }
    Ok(limit)
}

/// Where a list in name order resumes: after the name of a `what` (a sequence, a family).
pub fn after_name(after: Option<&str>, what: &str) -> Result<Option<SequenceName>, ApiError> {
    after
        .map(SequenceName::parse)
        .transpose()
        .map_err(|err| ApiError::InvalidRequest(format!("`after` must be a {what} name: {err}")))
}
