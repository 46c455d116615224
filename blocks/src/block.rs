//! A contiguous run of values, as a lease hands it out.

/// The values `first, first + increment, …, last`. `increment` is never 0 and `last` is
/// reachable from `first`; [`Block::new`] refuses anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    first: i64,
    last: i64,
    increment: i64,
}

impl Block {
    pub fn new(first: i64, last: i64, increment: i64) -> Option<Self> {
        let span = i128::from(last) - i128::from(first);
        let step = i128::from(increment);
        let reachable = step != 0 && span % step == 0 && span / step >= 0;
        reachable.then_some(Self {
            first,
            last,
            increment,
        })
    }

    pub fn first(&self) -> i64 {
        self.first
    }

    pub fn last(&self) -> i64 {
        self.last
    }

    pub fn increment(&self) -> i64 {
        self.increment
    }

    /// How many values the block holds (at least one; the whole of i64 counts as u64::MAX).
    pub fn len(&self) -> u64 {
        let steps = (i128::from(self.last) - i128::from(self.first)) / i128::from(self.increment);
        (steps as u64).saturating_add(1)
    }

    /// Never true: a block holds at least its first value.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The `index`-th value (0 is `first`), or `None` past the end.
    pub fn value_at(&self, index: u64) -> Option<i64> {
        (index < self.len()).then(|| {
            (i128::from(self.first) + i128::from(index) * i128::from(self.increment)) as i64
        })
    }

    /// Splits off the first `count` values; the rest (if any) is the second block.
    pub fn split(&self, count: u64) -> (Block, Option<Block>) {
        if count == 0 || count >= self.len() {
            return (*self, None);
        }
        let head_last = self.value_at(count - 1).expect("inside the block");
        let tail_first = self.value_at(count).expect("inside the block");
        (
            Block {
                last: head_last,
                ..*self
            },
            Some(Block {
                first: tail_first,
                ..*self
            }),
        )
    }

    /// Groups values into blocks: each maximal run in which every value is the one before
    /// plus `increment` becomes one block. Values drawn from one sequence under one lock make
    /// one run; a range boundary (or another session's nextval) starts the next.
    pub fn runs_of(values: &[i64], increment: i64) -> Vec<Block> {
        let mut blocks: Vec<Block> = Vec::new();
        for &value in values {
            match blocks.last_mut() {
                Some(block) if block.last.checked_add(increment) == Some(value) => {
                    block.last = value
                }
                _ => blocks.push(Block {
                    first: value,
                    last: value,
                    increment,
                }),
            }
        }
        blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_counts_and_indexes_its_values_in_either_direction() {
        let up = Block::new(10, 20, 5).unwrap();
        assert_eq!(up.len(), 3);
        assert_eq!(
            (0..4).map(|i| up.value_at(i)).collect::<Vec<_>>(),
            [Some(10), Some(15), Some(20), None]
        );
        let down = Block::new(9, 1, -4).unwrap();
        assert_eq!(down.len(), 3);
        assert_eq!(down.value_at(2), Some(1));
        let whole = Block::new(i64::MIN, i64::MAX, 1).unwrap();
        assert_eq!(whole.len(), u64::MAX);
    }

    #[test]
    fn a_block_whose_last_value_is_unreachable_is_refused() {
        assert_eq!(Block::new(10, 21, 5), None);
        assert_eq!(Block::new(10, 5, 5), None);
        assert_eq!(Block::new(10, 10, 0), None);
        assert!(Block::new(10, 10, 7).is_some());
    }

    #[test]
    fn splitting_keeps_every_value_exactly_once() {
        let block = Block::new(100, 90, -1).unwrap();
        let (head, tail) = block.split(4);
        assert_eq!((head.first(), head.last()), (100, 97));
        let tail = tail.unwrap();
        assert_eq!((tail.first(), tail.last()), (96, 90));
        assert_eq!(head.len() + tail.len(), block.len());
        assert_eq!(block.split(11), (block, None));
        assert_eq!(block.split(0), (block, None));
    }

    #[test]
    fn values_become_one_block_per_contiguous_run() {
        let blocks = Block::runs_of(&[5, 6, 7, 20, 21, 9], 1);
        let spans: Vec<(i64, i64)> = blocks.iter().map(|b| (b.first(), b.last())).collect();
        assert_eq!(spans, [(5, 7), (20, 21), (9, 9)]);
        assert_eq!(Block::runs_of(&[9, 7, 5], -2).len(), 1);
        assert_eq!(Block::runs_of(&[i64::MAX - 1, i64::MAX], 1).len(), 1);
        assert!(Block::runs_of(&[], 1).is_empty());
    }
}
