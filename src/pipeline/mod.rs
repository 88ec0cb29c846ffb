//! Streams an input through blocks: reads, codes blocks concurrently, writes them in order.

mod block;

pub use block::{decode_block, encode_block, ProgressFn};

use crate::engine::{set_level, ENGINE_VERSION};
use crate::error::{Error, Result};
use crate::format::{BlockRecord, Header, Next, TableEntry, Trailer};
use crate::model::ModelConfig;
use crate::{Options, Stats};
use std::io::{Read, Write};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// Reads until `buf` is full or the input ends; returns the number of bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Runs `f` on every item, one thread per item, and returns the results in order.
fn run_parallel<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 {
        return items.into_iter().map(&f).collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|it| {
                let f = &f;
                s.spawn(move || f(it))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

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

/// Compresses `input` into `output` as a complete archive.
pub fn compress(input: &mut impl Read, output: &mut impl Write, opts: &Options) -> Result<Stats> {
    opts.validate()?;
    set_level(opts.kernels);
    let header = Header {
        flags: 0,
        engine_version: ENGINE_VERSION,
        block_size: opts.block_size,
        model_config: opts.model.to_bytes(),
    };
    let mut out = Counting {
        inner: output,
        count: 0,
    };
    out.write_all(&header.to_bytes())?;
    let mut hasher = Xxh3::new();
    let mut table = Vec::new();
    let mut total = 0u64;
    let noop = |_: u64| {};
    let progress: ProgressFn = match &opts.progress {
        Some(p) => p.as_ref(),
        None => &noop,
    };
    loop {
        let mut batch = Vec::with_capacity(opts.threads);
        let mut at_end = false;
        while batch.len() < opts.threads {
            let mut buf = vec![0u8; opts.block_size as usize];
            let n = read_full(input, &mut buf)?;
            buf.truncate(n);
            if n > 0 {
                batch.push(buf);
            }
            if n < opts.block_size as usize {
                at_end = true;
                break;
            }
        }
        let coded = run_parallel(batch, |data| {
            let hash = xxh3_64(&data);
            let (codec, payload) = encode_block(&data, &opts.model, progress);
            (data, hash, codec, payload)
        });
        for (data, raw_hash, codec, payload) in coded {
            hasher.update(&data);
            total += data.len() as u64;
            let rec = BlockRecord {
                codec,
                raw_len: data.len() as u64,
                payload_len: payload.len() as u64,
                raw_hash,
                payload_hash: xxh3_64(&payload),
            };
            table.push(TableEntry {
                offset: out.count,
                raw_len: rec.raw_len,
                payload_len: rec.payload_len,
                codec,
            });
            rec.write(&mut out)?;
            out.write_all(&payload)?;
        }
        if at_end {
            break;
        }
    }
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

/// Decompresses a complete archive from `input` into `output`, verifying every checksum.
pub fn decompress(input: &mut impl Read, output: &mut impl Write, opts: &Options) -> Result<Stats> {
    opts.validate()?;
    set_level(opts.kernels);
    let (header, header_len) = Header::read(input)?;
    if header.engine_version != ENGINE_VERSION {
        return Err(Error::EngineVersion {
            found: header.engine_version,
            supported: ENGINE_VERSION,
        });
    }
    let model = ModelConfig::from_bytes(&header.model_config)?;
    let noop = |_: u64| {};
    let progress: ProgressFn = match &opts.progress {
        Some(p) => p.as_ref(),
        None => &noop,
    };
    let mut offset = header_len;
    let mut seen: Vec<TableEntry> = Vec::new();
    let mut hasher = Xxh3::new();
    let mut total = 0u64;
    let trailer = loop {
        let mut batch = Vec::with_capacity(opts.threads);
        let mut end = false;
        while batch.len() < opts.threads {
            match BlockRecord::read_next(input, header.block_size)? {
                Next::End => {
                    end = true;
                    break;
                }
                Next::Block(rec) => {
                    let mut payload = vec![0u8; rec.payload_len as usize];
                    input
                        .read_exact(&mut payload)
                        .map_err(|e| Error::eof_as_truncated(e, "inside a block"))?;
                    if xxh3_64(&payload) != rec.payload_hash {
                        return Err(Error::Checksum(format!("block {}", seen.len())));
                    }
                    seen.push(TableEntry {
                        offset,
                        raw_len: rec.raw_len,
                        payload_len: rec.payload_len,
                        codec: rec.codec,
                    });
                    offset += BlockRecord::LEN + rec.payload_len;
                    batch.push((seen.len(), rec, payload));
                }
            }
        }
        let decoded = run_parallel(batch, |(index, rec, payload)| {
            let data = decode_block(rec.codec, payload, rec.raw_len as usize, &model, progress)?;
            if xxh3_64(&data) != rec.raw_hash {
                return Err(Error::Checksum(format!("block {index}")));
            }
            Ok(data)
        });
        for data in decoded {
            let data = data?;
            hasher.update(&data);
            total += data.len() as u64;
            output.write_all(&data)?;
        }
        if end {
            break Trailer::read_after_tag(input)?;
        }
    };
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
    output.flush()?;
    Ok(Stats {
        original_bytes: total,
        archive_bytes: offset + trailer.encoded_len(),
        blocks: seen.len() as u64,
    })
}
