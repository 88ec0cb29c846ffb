//! How a block is cut into lanes: contiguous segments predicted side by side, one byte each per
//! step; and where they lie in a model's history, which may hold a prefix (a pack's last
//! training bytes) before the block.

/// Lane geometry of one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lanes {
    /// Bytes in the block.
    pub len: usize,
    /// Number of lanes.
    pub count: usize,
    /// Bytes per lane (the last lane may be shorter).
    pub lane_len: usize,
    /// Bytes of history before the block: lane 0 continues them, every lane's matches reach
    /// them.
    pub prefix: usize,
}

impl Lanes {
    /// Splits `len` bytes into at most `max_lanes` lanes of at least `min_lane` bytes each.
    pub fn new(len: usize, max_lanes: usize, min_lane: usize) -> Self {
        let count = (len / min_lane.max(1)).clamp(1, max_lanes.max(1));
        let lane_len = len.div_ceil(count).max(1);
        // Recount so that no lane is empty.
        let count = len.div_ceil(lane_len).max(1);
        Lanes {
            len,
            count,
            lane_len,
            prefix: 0,
        }
    }

    /// The same lanes after `prefix` bytes of history.
    pub fn after(self, prefix: usize) -> Self {
        Lanes { prefix, ..self }
    }

    /// First position of lane `l` in the block.
    pub fn start(&self, l: usize) -> usize {
        l * self.lane_len
    }

    /// Where lane `l`'s history starts: lane 0's at the prefix's first byte, the others' at
    /// their own first byte.
    pub fn history_start(&self, l: usize) -> usize {
        match l {
            0 => 0,
            _ => self.prefix + self.start(l),
        }
    }

    /// Position in the history of lane `l`'s byte at `step`.
    pub fn history_pos(&self, l: usize, step: usize) -> usize {
        self.prefix + self.start(l) + step
    }

    /// Length of lane `l`.
    pub fn lane_size(&self, l: usize) -> usize {
        self.lane_len.min(self.len - self.start(l).min(self.len))
    }

    /// Steps needed to code every lane.
    pub fn steps(&self) -> usize {
        if self.len == 0 {
            0
        } else {
            self.lane_len
        }
    }

    /// Lanes still coding at `step` (always a prefix 0..n of the lanes).
    pub fn active(&self, step: usize) -> usize {
        (0..self.count)
            .take_while(|&l| step < self.lane_size(l))
            .count()
    }

    /// Whether history position `q` is known once `done` steps are complete: in the prefix,
    /// or coded.
    pub fn known(&self, q: usize, done: usize) -> bool {
        match q.checked_sub(self.prefix) {
            None => true,
            Some(q) => q < self.len && q % self.lane_len < done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_cover_the_block_exactly() {
        for len in [1usize, 2, 7, 100, 4096, 100_003] {
            for max in [1, 3, 16] {
                let l = Lanes::new(len, max, 1000);
                assert!(l.count >= 1 && l.count <= max);
                let total: usize = (0..l.count).map(|i| l.lane_size(i)).sum();
                assert_eq!(total, len);
                let coded: usize = (0..l.steps()).map(|s| l.active(s)).sum();
                assert_eq!(coded, len);
            }
        }
    }
}
