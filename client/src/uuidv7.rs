//! UUIDv7s (RFC 9562) made in this process, with the `uuid` crate's process-wide `ContextV7`.

use uuid::Uuid;

/// A UUIDv7 above every one made before in this process by this function (or
/// `Uuid::now_v7`), even when the wall clock steps back: the `uuid` crate's shared
/// `ContextV7` keeps a counter in the random bits (RFC 9562 §6.2, method 1) and never lets
/// the timestamp go back. Across processes they are unique by their random bits, and ordered
/// only roughly by time. Takes a lock shared by the process (uncontended: one atomic).
pub fn uuidv7() -> Uuid {
    Uuid::now_v7()
}

/// `count` UUIDv7s, ascending.
pub fn uuidv7_n(count: usize) -> Vec<Uuid> {
    (0..count).map(|_| Uuid::now_v7()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_made_in_turn_from_threads_each_increase_and_never_repeat() {
        let threads: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(|| uuidv7_n(20_000)))
            .collect();
        let mut all = Vec::new();
        for thread in threads {
            let uuids = thread.join().unwrap();
            assert!(uuids.windows(2).all(|w| w[0] < w[1]));
            assert!(uuids.iter().all(|u| u.get_version_num() == 7));
            all.extend(uuids);
        }
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count);
    }
}
