//! Label values kept bounded: the first names seen get series of their own, the rest share
//! `_other`. A counter must keep its series once it has one, to be read as a counter.

use std::collections::HashSet;
use std::sync::RwLock;

use super::OTHER_SEQUENCES;

pub struct BoundedLabels {
    limit: usize,
    known: RwLock<HashSet<String>>,
}

impl BoundedLabels {
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            known: RwLock::new(HashSet::new()),
        }
    }

    /// `name` if it has (or may still get) a series of its own, else `_other`.
    pub fn label<'a>(&self, name: &'a str) -> &'a str {
        let known = self
            .known
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(name);
        if known {
            return name;
        }
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        if known.len() < self.limit {
            known.insert(name.to_owned());
            name
        } else {
            OTHER_SEQUENCES
        }
    }
}
