//! A DBA's read of a sequence relation always finds its row (see `operator::dba_read`).

use super::Violations;
use crate::history::Fault;
use crate::operator::ROW_MISSING;

pub fn every_read_found_its_row(faults: &[Fault], violations: &mut Violations) {
    for fault in faults.iter().filter(|f| f.kind == ROW_MISSING) {
        violations.add("a DBA's read of a sequence found no row", || {
            format!("{} at {:?}: {}", fault.target, fault.started, fault.detail)
        });
    }
}
