//! What this instance last read of each live sequence, so that a round reads again only the
//! sequences that can have changed: those whose registry row, ranges or marks moved (every
//! draw through seqvend moves a mark), and a slice of the rest in turn, so that each is read
//! in full at least once per sweep (draws made with `nextval` by other applications move no
//! mark: they are seen within a sweep).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use crate::registry::{LiveSequence, SequenceRecord};

struct Known {
    fingerprint: u64,
    record: SequenceRecord,
    /// The record's count was offered as a usage sample since it was read.
    offered: bool,
}

pub struct KnownSequences {
    known: HashMap<i32, Known>,
    /// Rounds per sweep: a sequence is read in full when its id falls in this round's slice.
    slices: u64,
    round: u64,
}

impl KnownSequences {
    /// `slices` rounds make a sweep (at least one: every round reads everything).
    pub fn new(slices: u64) -> Self {
        Self {
            known: HashMap::new(),
            slices: slices.max(1),
            round: 0,
        }
    }

    /// Starts a round over `live` (every sequence not retired): forgets the others and
    /// returns those to read in full this round.
    pub fn start_round(&mut self, live: &[LiveSequence]) -> Vec<LiveSequence> {
        self.round += 1;
        let live_ids: HashSet<i32> = live.iter().map(|s| s.id).collect();
        self.known.retain(|id, _| live_ids.contains(id));
        live.iter().filter(|s| self.stale(s)).copied().collect()
    }

    fn stale(&self, sequence: &LiveSequence) -> bool {
        let in_slice = (sequence.id as u64) % self.slices == self.round % self.slices;
        match self.known.get(&sequence.id) {
            Some(known) => in_slice || known.fingerprint != sequence.fingerprint,
            None => true,
        }
    }

    /// Keeps a record read in full this round, with the fingerprint `live` gave it (read
    /// before it, so a change in between makes the next round read it again). Its count is
    /// offered as a sample again: the registry stores it only if it differs from the latest
    /// stored, and this way a sample lost meanwhile (samples restored or cleared by hand) is
    /// taken again within a sweep.
    pub fn keep(&mut self, record: SequenceRecord, fingerprint: u64) {
        let known = Known {
            fingerprint,
            record,
            offered: false,
        };
        self.known.insert(known.record.id, known);
    }

    /// Forgets a sequence that was live when the round started but gone when it was read.
    pub fn forget(&mut self, id: i32) {
        self.known.remove(&id);
    }

    /// `(id, count)` of the records whose count was not offered as a sample since they were
    /// read.
    pub fn unsampled(&self) -> Vec<(i32, u128)> {
        self.known
            .iter()
            .filter(|(_, known)| !known.offered)
            .map(|(&id, known)| (id, known.record.used()))
            .collect()
    }

    /// Notes that `samples` were offered.
    pub fn sampled(&mut self, samples: &[(i32, u128)]) {
        for (id, _) in samples {
            if let Some(known) = self.known.get_mut(id) {
                known.offered = true;
            }
        }
    }

    /// Brings every record's usage to `now` (see `SequenceRecord::age_to`).
    pub fn age_to(&mut self, now: DateTime<Utc>) {
        for known in self.known.values_mut() {
            known.record.age_to(now);
        }
    }

    pub fn records(&self) -> impl Iterator<Item = &SequenceRecord> {
        self.known.values().map(|known| &known.record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(fingerprints: &[(i32, u64)]) -> Vec<LiveSequence> {
        fingerprints
            .iter()
            .map(|&(id, fingerprint)| LiveSequence { id, fingerprint })
            .collect()
    }

    /// Runs a round over `sequences`, keeping a record (drawn up to `id`) for each one read.
    fn round(known: &mut KnownSequences, sequences: &[(i32, u64)]) -> Vec<i32> {
        let mut read = known.start_round(&live(sequences));
        read.sort_by_key(|s| s.id);
        for s in &read {
            let record = SequenceRecord::for_tests(s.id, Some(i64::from(s.id)));
            known.keep(record, s.fingerprint);
        }
        read.iter().map(|s| s.id).collect()
    }

    #[test]
    fn the_first_round_reads_every_sequence_then_only_what_moved_and_a_slice() {
        let mut known = KnownSequences::new(4);
        let ids: Vec<(i32, u64)> = (1..=12).map(|id| (id, 0)).collect();
        assert_eq!(round(&mut known, &ids), (1..=12).collect::<Vec<_>>());
        let mut moved = ids.clone();
        // Sequence 7's mark moved; round 2 reads ids ≡ 2 (mod 4), and 7.
        moved[6].1 = 1;
        assert_eq!(round(&mut known, &moved), vec![2, 6, 7, 10]);
    }

    #[test]
    fn every_unchanged_sequence_is_read_once_per_sweep() {
        let mut known = KnownSequences::new(6);
        let ids: Vec<(i32, u64)> = (1..=100).map(|id| (id, 7)).collect();
        round(&mut known, &ids);
        let mut reads: HashMap<i32, u32> = HashMap::new();
        for _ in 0..6 {
            for id in round(&mut known, &ids) {
                *reads.entry(id).or_default() += 1;
            }
        }
        assert_eq!(reads.len(), 100, "some sequence was never read again");
        assert!(reads.values().all(|&n| n == 1), "{reads:?}");
    }

    #[test]
    fn one_slice_reads_everything_every_round() {
        let mut known = KnownSequences::new(0);
        let ids = [(1, 0), (2, 0), (3, 0)];
        round(&mut known, &ids);
        assert_eq!(round(&mut known, &ids), vec![1, 2, 3]);
    }

    #[test]
    fn a_sequence_no_longer_live_is_forgotten() {
        let mut known = KnownSequences::new(3);
        round(&mut known, &[(1, 0), (2, 0)]);
        round(&mut known, &[(1, 0)]);
        let ids: Vec<i32> = known.records().map(|r| r.id).collect();
        assert_eq!(ids, vec![1]);
        // Back again (say, a restored registry): read at once, whatever the slice.
        assert!(round(&mut known, &[(1, 0), (2, 0)]).contains(&2));
    }

    #[test]
    fn a_count_is_offered_as_a_sample_once_per_read() {
        let mut known = KnownSequences::new(3);
        round(&mut known, &[(1, 0), (2, 0)]);
        let mut offered = known.unsampled();
        offered.sort();
        assert_eq!(offered, vec![(1, 1), (2, 2)]);
        known.sampled(&offered);
        assert!(known.unsampled().is_empty());
        // Only what was read again is offered again (the registry skips a count it has).
        known.keep(SequenceRecord::for_tests(2, Some(9)), 0);
        assert_eq!(known.unsampled(), vec![(2, 9)]);
    }
}
