//! Runs jobs on a pool of worker threads and hands their results on in job order, with a
//! bounded number in flight.

use crate::error::{Error, Result};
use crossbeam_channel::{bounded, unbounded};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a job source gives.
pub(super) enum Pull<J> {
    /// The next job.
    Job(J),
    /// No job until one in flight has finished (its memory is not free yet).
    Later,
    /// No more jobs.
    End,
}

impl<J> From<Option<J>> for Pull<J> {
    fn from(job: Option<J>) -> Self {
        job.map_or(Pull::End, Pull::Job)
    }
}

/// Runs `jobs` through `threads` workers applying `work`, handing results to `sink` in job
/// order. `source` yields jobs until `End`, or `Later` to be asked again once a job in flight
/// has finished; at most `threads + 1` jobs are in flight. With
/// one worker, a job that `small` accepts and that finds nothing in flight is coded on the
/// calling thread: handing a small block to a thread and back costs more than coding it,
/// while a large one gains from its output being written as the next is coded.
pub(super) fn run_ordered<J: Send, R: Send>(
    threads: usize,
    mut source: impl FnMut() -> Result<Pull<J>>,
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
                        Pull::Job(job) if threads == 1 && sent == written && small(&job) => {
                            sink(work(job))?;
                            (sent, written) = (sent + 1, written + 1);
                        }
                        Pull::Job(job) => {
                            spawn();
                            // Cannot fail: the workers hold the receiver until the sender drops.
                            let _ = job_tx.send((sent, job));
                            sent += 1;
                        }
                        Pull::Later if sent > written => break,
                        Pull::Later => {
                            return Err(Error::Io(std::io::Error::other(
                                "a job waits for none in flight",
                            )))
                        }
                        Pull::End => eof = true,
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
pub(super) const INLINE_MAX: usize = 1 << 20;

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
                            return Ok(Pull::End);
                        }
                        Ok(Pull::Job(next))
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
                    Ok((n <= 1000).then_some(n).into())
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
}
