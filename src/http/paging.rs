//! The paging every list shares: `limit` 1–1000 (100 by default) and, for lists in name
//! order, `after` a name.

use std::future::Future;

use serde::Deserialize;
use utoipa::IntoParams;

use super::error::ApiError;
use crate::domain::SequenceName;

const DEFAULT_PAGE: u32 = 100;
const MAX_PAGE: u32 = 1000;

/// The query of a list in name order.
#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Page size, 1–1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// The `next` of the previous page.
    #[param(pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")]
    after: Option<String>,
}

/// What a list in name order asked for: its page size and the name it resumes after.
pub struct NamePage {
    pub limit: u32,
    pub after: Option<SequenceName>,
}

impl ListQuery {
    /// The page asked for, checked; `what` names what is listed (a sequence, a family).
    pub fn page(&self, what: &str) -> Result<NamePage, ApiError> {
        Ok(NamePage {
            limit: page_limit(self.limit)?,
            after: after_name(self.after.as_deref(), what)?,
        })
    }
}

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

/// Where a list in name order resumes: after the name of a `what`.
fn after_name(after: Option<&str>, what: &str) -> Result<Option<SequenceName>, ApiError> {
    after
        .map(SequenceName::parse)
        .transpose()
        .map_err(|err| ApiError::InvalidRequest(format!("`after` must be a {what} name: {err}")))
}

/// A page of only the items `visible` keeps, `limit` of them where the list has that many:
/// `read` is asked for a page of `limit` from `after` on, then for pages of `MAX_PAGE` (a
/// token that sees few of many names would otherwise cost a read per hidden page) until enough
/// are kept or the list ends. Its next cursor is the last kept item's name, never the name of
/// an item the caller may not see: a hidden name there would let a token scoped to some names
/// walk every other name, a page at a time.
pub async fn visible_page<T, E, Page>(
    after: Option<SequenceName>,
    limit: u32,
    read: impl Fn(Option<SequenceName>, u32) -> Page,
    visible: impl Fn(&T) -> bool,
    name: impl Fn(&T) -> &str,
) -> Result<(Vec<T>, Option<String>), ApiError>
where
    Page: Future<Output = Result<(Vec<T>, Option<String>), E>>,
    ApiError: From<E>,
{
    let mut size = limit;
    let limit = limit as usize;
    let mut kept = Vec::new();
    let mut after = after;
    loop {
        let (items, next) = read(after, size).await?;
        kept.extend(items.into_iter().filter(|item| visible(item)));
        match next {
            Some(next) if kept.len() < limit => {
                after = Some(SequenceName::parse(&next)?);
                size = MAX_PAGE;
            }
            next => {
                let more = next.is_some() || kept.len() > limit;
                kept.truncate(limit);
                let next = kept
                    .last()
                    .filter(|_| more)
                    .map(|item| name(item).to_owned());
                return Ok((kept, next));
            }
        }
    }
}
