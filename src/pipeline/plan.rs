//! How an input is cut into blocks: segments of one kind each, every segment cut evenly into
//! blocks of at most the block size.

use super::buffers::Buffers;
use super::options::TENSOR_BLOCK_SIZE;
use super::source::{Bytes, Source};
use super::Options;
use crate::choice::base::Span;
use crate::containers::{Kind, Segment};
use crate::error::Result;
use std::collections::VecDeque;

/// Block size actually used: `max` for inputs of unknown length; otherwise the input is cut
/// into equal blocks of at most `max` bytes (balanced work, no tiny last block).
pub fn block_size_for(max: u64, len: Option<u64>) -> u64 {
    match len {
        Some(n) if n > max => n.div_ceil(n.div_ceil(max)),
        Some(n) if n > 0 => n,
        _ => max,
    }
}

/// The block size `bs` of a segment of `n` bytes that it cuts, rounded up to a multiple of 64
/// bytes where that stays within `max` and keeps the last block at least half as long as the
/// others: the values of an array, or of a checkpoint's tensor storages (aligned so), then
/// stay whole in every block of a general segment.
fn whole_lines(bs: u64, n: u64, max: u64) -> u64 {
    let blocks = n.div_ceil(bs.max(1));
    match bs.next_multiple_of(64) {
        whole if blocks > 1 && whole <= max && n >= (blocks - 1) * whole + whole / 2 => whole,
        _ => bs,
    }
}

/// How the input is cut into blocks: segments of one kind each (from `Known::layout`, or one
/// segment of unknown length), every segment cut evenly; tensor blocks hold whole values.
pub(super) struct Plan {
    pub(super) segments: VecDeque<Segment>,
    pub(super) max: u64,
    /// Most bytes per block of general data (the level may ask for less than `max`).
    pub(super) general_max: u64,
    /// No block is longer (the block size recorded in the header).
    pub(super) cap: u64,
    /// Block length of the segment at the front, once it has started.
    pub(super) current: Option<u64>,
}

/// Length meaning "until the input ends".
const UNTIL_END: u64 = u64::MAX;

/// What is known of an input before it is read: its length, and its structure (segments of
/// one kind each, from `choice::detect`).
#[derive(Clone, Default)]
pub struct Known {
    /// Length of the input; blocks are then cut evenly.
    pub len: Option<u64>,
    /// Structure of the input.
    pub layout: Option<Vec<Segment>>,
    /// Where its tensors sit in the base file of `Options::base`, if any matched.
    pub deltas: Vec<Span>,
}

impl Known {
    /// Whether the input is known to hold tensors.
    pub fn tensors(&self) -> bool {
        self.layout.iter().flatten().any(|s| s.kind.is_tensor())
    }

    /// What is known of `input`, whole in memory, compressed with `opts`: its structure
    /// (holding `opts.dtype` values if given), and where its tensors sit in `opts.base`.
    pub fn whole(input: &[u8], opts: &Options) -> Self {
        let layout = crate::containers::layout(input, opts.dtype);
        let deltas = match &opts.base {
            Some(base) => base.spans(input, &layout, opts.dtype),
            None => Vec::new(),
        };
        Known {
            len: Some(input.len() as u64),
            layout: Some(layout),
            deltas,
        }
    }
}

impl Plan {
    pub(super) fn new(opts: &Options, known: Known) -> Self {
        let size_hint = known.len;
        let mut segments: VecDeque<Segment> = match (known.layout, opts.dtype) {
            (Some(l), _) => l.into_iter().collect(),
            (None, Some(d)) => [Segment {
                len: size_hint.unwrap_or(UNTIL_END),
                kind: Kind::Tensor(d),
            }]
            .into(),
            (None, None) => [Segment {
                len: size_hint.unwrap_or(UNTIL_END),
                kind: Kind::General,
            }]
            .into(),
        };
        // Whatever follows the known structure (if the input is longer) is general data.
        segments.push_back(Segment {
            len: UNTIL_END,
            kind: Kind::General,
        });
        let mut plan = Plan {
            segments,
            max: opts.block_size,
            general_max: opts.general_block_size(),
            cap: u64::MAX,
            current: None,
        };
        // Known segments bound the blocks; an input of unknown length may go on past them.
        let known = plan.segments.iter().filter(|s| s.len != UNTIL_END);
        let largest = known.map(|s| plan.block_len(s)).max().unwrap_or(0);
        let tail = if size_hint.is_none() { plan.max } else { 0 };
        plan.cap = largest.max(tail).max(1);
        plan
    }

    /// Block length for a segment.
    fn block_len(&self, seg: &Segment) -> u64 {
        let len = (seg.len != UNTIL_END).then_some(seg.len);
        let max = match seg.kind {
            Kind::Tensor(_) | Kind::Quantized => self.max.min(TENSOR_BLOCK_SIZE),
            // A JPEG file or deflate stream is one block wherever the block size allows.
            Kind::Jpeg | Kind::Deflate => self.max,
            _ => self.general_max,
        };
        let bs = block_size_for(max, len).min(self.cap);
        match (seg.kind, len) {
            (Kind::Tensor(d), _) if bs >= d.width() as u64 => bs - bs % d.width() as u64,
            (Kind::General, Some(n)) => whole_lines(bs, n, self.general_max.min(self.cap)),
            _ => bs,
        }
    }

    /// Reads the next block, its kind and its checksum, or `None` at the end of the input.
    pub(super) fn next_block<'a>(
        &mut self,
        input: &mut impl Source<'a>,
        buffers: &Buffers,
    ) -> Result<Option<(Bytes<'a>, Kind, u64)>> {
        loop {
            let Some(seg) = self.segments.front() else {
                return Ok(None);
            };
            if seg.len == 0 {
                self.segments.pop_front();
                self.current = None;
                continue;
            }
            let bs = match self.current {
                Some(bs) => bs,
                None => {
                    let bs = self.block_len(seg);
                    self.current = Some(bs);
                    bs
                }
            };
            let want = bs.min(seg.len) as usize;
            let kind = seg.kind;
            let (buf, hash) = input.next_bytes(want, buffers)?;
            let n = buf.len();
            if n < want {
                // The input ended: nothing more to plan.
                self.segments.clear();
            } else if let Some(seg) = self.segments.front_mut() {
                if seg.len != UNTIL_END {
                    seg.len -= n as u64;
                }
            }
            return Ok((n > 0).then_some((buf, kind, hash)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_cut_evenly() {
        assert_eq!(block_size_for(8, None), 8);
        assert_eq!(block_size_for(8, Some(0)), 8);
        assert_eq!(block_size_for(8, Some(5)), 5);
        assert_eq!(block_size_for(8, Some(10)), 5);
        assert_eq!(block_size_for(8, Some(17)), 6);
        assert_eq!(block_size_for(8 << 20, Some(10_192_446)), 5_096_223);
        // General segments are cut at multiples of 64 bytes where that keeps the blocks even.
        assert_eq!(whole_lines(5_096_223, 10_192_446, 8 << 20), 5_096_256);
        assert_eq!(whole_lines(65, 130, 100), 65);
        assert_eq!(whole_lines(65, 130, 128), 65);
        assert_eq!(whole_lines(125, 250, 128), 128);
        assert_eq!(whole_lines(1000, 1000, 8 << 20), 1000);
    }
}
