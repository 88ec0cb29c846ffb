//! Streams an input through independent blocks: the calling thread reads blocks and writes
//! results in order, a pool of workers codes blocks concurrently (each through the backend),
//! and the number of blocks in flight is bounded so memory does not grow with the input.

mod buffers;
mod options;
mod source;

pub use options::{Options, Stats, DEFAULT_BLOCK_SIZE};

use crate::choice::code_block;
use crate::choice::detect::{Kind, Segment};
use crate::codecs::float::DType;
use crate::codecs::neural::{CpuBackend, NeuralConfig};
use crate::codecs::{self, Decoder, ProgressFn};
use crate::engine::ENGINE_VERSION;
use crate::error::{Error, Result};
use crate::format::checksum::xxh3_64;
use crate::format::{BlockRecord, Codec, DataHash, Header, Next, TableEntry, Trailer};
use buffers::Buffers;
use crossbeam_channel::{bounded, unbounded};
use source::{read_full, Bytes, Source};
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;

pub(crate) use source::{InMemory, Streamed};
use std::sync::atomic::{AtomicBool, Ordering};

/// Writer wrapper counting the bytes written.
struct Counting<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

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
struct Plan {
    segments: VecDeque<Segment>,
    max: u64,
    /// No block is longer (the block size recorded in the header).
    cap: u64,
    /// Block length of the segment at the front, once it has started.
    current: Option<u64>,
}

/// Largest room given to a new block buffer before any block asks for it.
const ROOM_MAX: u64 = 64 << 20;

/// Length meaning "until the input ends".
const UNTIL_END: u64 = u64::MAX;

/// What is known of an input before it is read: its length, and its structure (segments of
/// one kind each, from `choice::detect`).
#[derive(Default)]
pub struct Known {
    /// Length of the input; blocks are then cut evenly.
    pub len: Option<u64>,
    /// Structure of the input.
    pub layout: Option<Vec<Segment>>,
}

impl Known {
    /// What is known of `input`, whole in memory, holding `dtype` values if given.
    pub fn whole(input: &[u8], dtype: Option<DType>) -> Self {
        Known {
            len: Some(input.len() as u64),
            layout: Some(crate::choice::detect::layout(input, dtype)),
        }
    }
}

impl Plan {
    fn new(opts: &Options, known: Known) -> Self {
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
        let bs = block_size_for(self.max, len).min(self.cap);
        match (seg.kind, len) {
            (Kind::Tensor(d), _) if bs >= d.width() as u64 => bs - bs % d.width() as u64,
            (Kind::General, Some(n)) => whole_lines(bs, n, self.max.min(self.cap)),
            _ => bs,
        }
    }

    /// Reads the next block, its kind and its checksum, or `None` at the end of the input.
    fn next_block<'a>(
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

/// Runs `jobs` through `threads` workers applying `work`, handing results to `sink` in job
/// order. `source` yields jobs until `None`; at most `threads + 1` jobs are in flight. With
/// one worker, a job that `small` accepts and that finds nothing in flight is coded on the
/// calling thread: handing a small block to a thread and back costs more than coding it,
/// while a large one gains from its output being written as the next is coded.
fn run_ordered<J: Send, R: Send>(
    threads: usize,
    mut source: impl FnMut() -> Result<Option<J>>,
    work: impl Fn(J) -> R + Sync,
    mut sink: impl FnMut(R) -> Result<()>,
    small: impl Fn(&J) -> bool,
) -> Result<()> {
    let in_flight = threads + 1;
    let (job_tx, job_rx) = bounded::<(usize, J)>(in_flight);
    let (done_tx, done_rx) = unbounded::<(usize, R)>();
    let cancel = AtomicBool::new(false);
    std::thread::scope(|s| {
        // The workers start with the first job handed over (later calls find them started).
        let mut done_tx = Some(done_tx);
        let mut spawn = || {
            for _ in 0..threads {
                let Some(done_tx) = done_tx.clone() else {
                    return;
                };
                let (job_rx, work, cancel) = (job_rx.clone(), &work, &cancel);
                s.spawn(move || {
                    for (i, job) in job_rx {
                        if cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        if done_tx.send((i, work(job))).is_err() {
                            break;
                        }
                    }
                });
            }
            // The workers hold the only senders: `recv` fails once they all stopped.
            done_tx = None;
        };
        let result = (|| {
            let (mut sent, mut written, mut eof) = (0usize, 0usize, false);
            let mut ready = BTreeMap::new();
            loop {
                while !eof && sent - written < in_flight {
                    match source()? {
                        Some(job) if threads == 1 && sent == written && small(&job) => {
                            sink(work(job))?;
                            (sent, written) = (sent + 1, written + 1);
                        }
                        Some(job) => {
                            spawn();
                            // Cannot fail: the workers hold the receiver until the sender drops.
                            let _ = job_tx.send((sent, job));
                            sent += 1;
                        }
                        None => eof = true,
                    }
                }
                if eof && written == sent {
                    return Ok(());
                }
                let (i, r) = done_rx
                    .recv()
                    .map_err(|_| Error::Io(std::io::Error::other("a worker stopped")))?;
                ready.insert(i, r);
                while let Some(r) = ready.remove(&written) {
                    sink(r)?;
                    written += 1;
                }
            }
        })();
        cancel.store(result.is_err(), Ordering::Relaxed);
        drop(job_tx);
        result
    })
}

/// Blocks up to this size (raw bytes) are coded on the calling thread with one worker, when
/// none is in flight (`run_ordered`): through the command line at one thread, 256 KiB gained
/// 1-9% on files of small tensors, 1 MiB 3-18%; larger blocks keep their hand-off, which lets
/// one be written while the next is coded (coding all on the calling thread lost 10-22% on a
/// 54 MB file, benches/RESULTS.md (x)).
const INLINE_MAX: usize = 1 << 20;

fn noop(_: u64) {}

/// Compresses `input`, of which `known` is known, into `output` as a complete archive, its
/// neural blocks with `neural`.
pub(crate) fn compress<'a>(
    input: &mut impl Source<'a>,
    output: &mut impl Write,
    opts: &Options,
    neural: &NeuralConfig,
    known: Known,
) -> Result<Stats> {
    opts.validate()?;
    let backend = CpuBackend::default();
    let mut plan = Plan::new(opts, known);
    let tensor_file = plan
        .segments
        .iter()
        .any(|s| matches!(s.kind, Kind::Tensor(_)));
    let header = Header {
        version: crate::format::VERSION,
        flags: 0,
        engine_version: ENGINE_VERSION,
        block_size: plan.cap,
        neural_config: neural.to_bytes(),
    };
    let mut out = Counting {
        inner: output,
        count: 0,
    };
    out.write_all(&header.to_bytes())?;
    let mut hasher = DataHash::default();
    let mut table = Vec::new();
    let mut total = 0u64;
    let progress: ProgressFn = match &opts.progress {
        Some(p) => p.as_ref(),
        None => &noop,
    };
    let (blocks, payloads) = (Buffers::new(), Buffers::new());
    let returns = input.returns();
    run_ordered(
        opts.threads,
        || plan.next_block(input, &blocks),
        |(data, kind, raw_hash): (Bytes<'a>, Kind, u64)| {
            let spare = payloads.empty(0);
            let (codec, payload) =
                code_block(&data, kind, tensor_file, &backend, neural, progress, spare);
            let payload_hash = match codec {
                Codec::Stored => raw_hash,
                _ => xxh3_64(&payload),
            };
            // Lent bytes are a mapped file another process may write: had they changed since
            // they were hashed, the block would not decode to what its checksum says.
            let changed = matches!(data, Bytes::Lent(_)) && xxh3_64(&data) != raw_hash;
            (data, raw_hash, codec, payload, payload_hash, changed)
        },
        |(data, raw_hash, codec, coded, payload_hash, changed)| {
            if changed {
                return Err(Error::InputChanged);
            }
            let payload = if codec == Codec::Stored {
                &data[..]
            } else {
                &coded[..]
            };
            hasher.block(raw_hash);
            total += data.len() as u64;
            let rec = BlockRecord {
                codec,
                raw_len: data.len() as u64,
                payload_len: payload.len() as u64,
                raw_hash,
                payload_hash,
            };
            table.push(TableEntry {
                offset: out.count,
                raw_len: rec.raw_len,
                payload_len: rec.payload_len,
                codec,
            });
            rec.write(&mut out)?;
            out.write_all(payload)?;
            if let Some(b) = &opts.on_block {
                b(rec.raw_len, BlockRecord::LEN + rec.payload_len);
            }
            returns.give(data, &blocks);
            payloads.give(coded);
            Ok(())
        },
        |(data, _, _)| data.len() <= INLINE_MAX,
    )?;
    let trailer = Trailer {
        total_len: total,
        data_hash: hasher.digest(),
        table,
    };
    trailer.write(&mut out)?;
    out.flush()?;
    Ok(Stats {
        original_bytes: total,
        archive_bytes: out.count,
        blocks: trailer.table.len() as u64,
    })
}

/// Where decompressed blocks go.
enum Out<'o, W> {
    /// A writer, given each block's bytes.
    Writer(&'o mut W),
    /// A vector the blocks are appended to (with one thread, tensor blocks decoded into it).
    Vec(&'o mut Vec<u8>),
}

/// Decompresses a complete archive from `input` into `output`, verifying every checksum.
pub(crate) fn decompress<'a>(
    input: &mut impl Source<'a>,
    output: &mut impl Write,
    opts: &Options,
) -> Result<Stats> {
    let stats = decode_archive(input, &mut Out::Writer(output), opts)?;
    output.flush()?;
    Ok(stats)
}

/// `decompress` onto the end of `out`, which is left as it was if the archive is refused.
pub(crate) fn decompress_to_vec<'a>(
    input: &mut impl Source<'a>,
    out: &mut Vec<u8>,
    opts: &Options,
) -> Result<Stats> {
    let start = out.len();
    let result = decode_archive(input, &mut Out::<std::io::Sink>::Vec(out), opts);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Appends block `index` (record `rec`, checked payload `payload`) to `data` through its
/// codec, checked against the record; returns its checksum.
fn decode_block(
    decoder: &Decoder,
    index: usize,
    rec: &BlockRecord,
    payload: &[u8],
    data: &mut Vec<u8>,
) -> Result<u64> {
    let hashes = (rec.raw_hash, rec.payload_hash);
    decoder
        .decode(rec.codec, payload, rec.raw_len as usize, hashes, data)
        .map_err(|e| match e {
            Error::Checksum(_) => Error::Checksum(format!("block {index}")),
            Error::Corrupt(what) => Error::Corrupt(format!("block {index}: {what}")),
            e => e,
        })?;
    Ok(rec.raw_hash)
}

/// Decodes a complete archive from `input` into `out`, verifying every checksum.
fn decode_archive<'a, W: Write>(
    input: &mut impl Source<'a>,
    out: &mut Out<'_, W>,
    opts: &Options,
) -> Result<Stats> {
    opts.validate()?;
    let (header, header_len) = Header::read(input)?;
    if header.engine_version != ENGINE_VERSION {
        return Err(Error::EngineVersion {
            found: header.engine_version,
            supported: ENGINE_VERSION,
        });
    }
    let neural = NeuralConfig::from_bytes(&header.neural_config)?;
    let progress: ProgressFn = match &opts.progress {
        Some(p) => p.as_ref(),
        None => &noop,
    };
    let mut offset = header_len;
    let mut seen: Vec<TableEntry> = Vec::new();
    let mut hasher = DataHash::default();
    let mut total = 0u64;
    let mut at_end = false;
    // Block buffers get room for the largest block the header allows (up to a bound: the
    // header is not trusted yet), so that one serves every block.
    let room = header.block_size.min(ROOM_MAX) as usize;
    let (payloads, blocks) = (Buffers::new(), Buffers::with_room(room));
    let returns = input.returns();
    let backend = CpuBackend::default();
    let decoder = Decoder {
        neural: &neural,
        backend: &backend,
        progress,
    };
    let mut source = || {
        if at_end {
            return Ok(None);
        }
        match BlockRecord::read_next(input, header.block_size)? {
            Next::End => {
                at_end = true;
                Ok(None)
            }
            Next::Block(rec) => {
                let want = rec.payload_len as usize;
                let (payload, hash) = input.next_bytes(want, &payloads)?;
                if payload.len() < want {
                    return Err(Error::Truncated("inside a block"));
                }
                if hash != rec.payload_hash {
                    return Err(Error::Checksum(format!("block {}", seen.len())));
                }
                seen.push(TableEntry {
                    offset,
                    raw_len: rec.raw_len,
                    payload_len: rec.payload_len,
                    codec: rec.codec,
                });
                offset += BlockRecord::LEN + rec.payload_len;
                Ok(Some((seen.len() - 1, rec, payload)))
            }
        }
    };
    match out {
        // One thread into memory: each block decoded where it belongs (there is no write to
        // overlap with the next block's decoding).
        Out::Vec(v) if opts.threads == 1 => {
            while let Some((index, rec, payload)) = source()? {
                let raw_hash = decode_block(&decoder, index, &rec, &payload, v)?;
                returns.give(payload, &payloads);
                hasher.block(raw_hash);
                total += rec.raw_len;
            }
        }
        _ => run_ordered(
            opts.threads,
            source,
            |(index, rec, payload): (usize, BlockRecord, Bytes<'a>)| -> Result<(Bytes<'a>, u64)> {
                if rec.codec == Codec::Stored {
                    // The bytes are the payload's, passed on as they are.
                    progress(rec.raw_len);
                    let raw_len = rec.raw_len as usize;
                    codecs::stored::check(&payload, raw_len, rec.raw_hash, rec.payload_hash)
                        .map_err(|_| Error::Checksum(format!("block {index}")))?;
                    return Ok((payload, rec.raw_hash));
                }
                let mut data = blocks.empty(rec.raw_len as usize);
                let hash = decode_block(&decoder, index, &rec, &payload, &mut data)?;
                returns.give(payload, &payloads);
                Ok((Bytes::Pooled(data), hash))
            },
            |done| {
                let (data, raw_hash) = done?;
                hasher.block(raw_hash);
                total += data.len() as u64;
                match out {
                    Out::Writer(w) => w.write_all(&data)?,
                    Out::Vec(v) => v.extend_from_slice(&data),
                }
                returns.give(data, &blocks);
                Ok(())
            },
            |(_, rec, _)| rec.raw_len <= INLINE_MAX as u64,
        )?,
    }
    if !at_end {
        return Err(Error::Truncated("missing end of archive"));
    }
    let trailer = Trailer::read_after_tag(input)?;
    if trailer.table != seen || trailer.total_len != total {
        return Err(Error::Corrupt(
            "block table does not match the blocks".into(),
        ));
    }
    if trailer.data_hash != hasher.digest() {
        return Err(Error::Checksum("the whole file".into()));
    }
    let mut probe = [0u8; 1];
    if read_full(input, &mut probe)? != 0 {
        return Err(Error::Corrupt(
            "trailing data after the end of the archive".into(),
        ));
    }
    Ok(Stats {
        original_bytes: total,
        archive_bytes: offset + trailer.encoded_len(),
        blocks: seen.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn ordered_results_and_bounded_in_flight() {
        // Jobs all small, none small, and a third small (with one worker, those coded on the
        // calling thread where nothing is in flight, the others handed over).
        let kinds: [fn(&u32) -> bool; 3] = [|_| true, |_| false, |j| j % 3 == 0];
        for threads in [1, 2, 5] {
            for (k, small) in kinds.into_iter().enumerate() {
                let live = AtomicUsize::new(0);
                let peak = AtomicUsize::new(0);
                let mut next = 0u32;
                let mut got = Vec::new();
                run_ordered(
                    threads,
                    || {
                        // A job is "live" from being read until its result is written.
                        let n = live.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(n, Ordering::SeqCst);
                        next += 1;
                        if next > 300 {
                            live.fetch_sub(1, Ordering::SeqCst);
                            return Ok(None);
                        }
                        Ok(Some(next))
                    },
                    |j: u32| {
                        // Uneven work so results complete out of order.
                        std::thread::sleep(std::time::Duration::from_micros((j % 7) as u64 * 50));
                        j * 2
                    },
                    |r| {
                        live.fetch_sub(1, Ordering::SeqCst);
                        got.push(r);
                        Ok(())
                    },
                    small,
                )
                .unwrap();
                assert_eq!(got, (1..=300).map(|j| j * 2).collect::<Vec<_>>(), "{k}");
                // threads + 1 jobs in flight, plus the one being read when the window is
                // full; with one worker and only small jobs, one at a time.
                let bound = match (threads, k) {
                    (1, 0) => 1,
                    _ => threads + 2,
                };
                let peak = peak.load(Ordering::SeqCst);
                assert!(peak <= bound, "{threads} threads, kind {k}: peak {peak}");
            }
        }
    }

    #[test]
    fn errors_stop_the_pipeline() {
        for (threads, small) in [(1, true), (1, false), (2, false)] {
            let mut n = 0;
            let r = run_ordered(
                threads,
                || {
                    n += 1;
                    Ok((n <= 1000).then_some(n))
                },
                |j: i32| j,
                |j| {
                    if j == 10 {
                        Err(Error::Corrupt("stop".into()))
                    } else {
                        Ok(())
                    }
                },
                |_| small,
            );
            assert!(matches!(r, Err(Error::Corrupt(_))));
            assert!(n < 20, "read {n} jobs after the error");
        }
    }

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
