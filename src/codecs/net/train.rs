//! What the online network trains with: seeded initial weights, bias gradients, and the
//! online Adam schedule (dense parameters every step, embedding rows only where they got
//! gradient).

use crate::engine::kernels::{adam, AdamStep};

/// Fewest lane-bytes per optimiser step (few lanes accumulate gradient over several steps).
const MIN_BATCH: usize = 16;

/// Deterministic generator for the initial weights (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    /// A value uniform in `[-scale, scale)`.
    pub fn uniform(&mut self, scale: f32) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40;
        (r as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
    }
}

/// Adds every row of `rows` (row length `acc.len()`) to `acc`, rows in order: a bias gradient.
pub fn add_rows(rows: &[f32], acc: &mut [f32]) {
    for row in rows.chunks_exact(acc.len()) {
        for (a, &d) in acc.iter_mut().zip(row) {
            *a += d;
        }
    }
}

/// Gradient, Adam moments and schedule of one network's flat parameter vector, laid out as
/// embedding tables (rows of `row` values) before `dense`, dense parameters from it.
pub struct Trainer {
    /// Gradient accumulated since the last step.
    pub g: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    lr: f32,
    t: i32,
    dense: usize,
    row: usize,
    /// Embedding rows (start offsets) that received gradient since the last step.
    touched: Vec<usize>,
    /// Lane-bytes whose gradient is accumulated since the last step.
    pending: usize,
}

impl Trainer {
    /// A trainer for `n` parameters, dense from `dense`, embedding rows of `row` values before.
    pub fn new(n: usize, lr: f32, dense: usize, row: usize) -> Self {
        Trainer {
            g: vec![0.0; n],
            m: vec![0.0; n],
            v: vec![0.0; n],
            lr,
            t: 0,
            dense,
            row,
            touched: Vec::new(),
            pending: 0,
        }
    }

    /// Records that the embedding row starting at `at` got gradient.
    pub fn touch(&mut self, at: usize) {
        self.touched.push(at);
    }

    /// Counts `lanes` more lane-bytes of gradient and, once enough have accumulated, takes one
    /// Adam step on `p`; returns whether it did (the caller refreshes what depends on `p`).
    pub fn after(&mut self, p: &mut [f32], lanes: usize) -> bool {
        // One Adam step per MIN_BATCH lane-bytes, and every second step once a step alone
        // fills a batch (an Adam step over every dense parameter costs as much as the step's
        // forward pass): every dense parameter, and the embedding rows touched since the last.
        self.pending += lanes;
        let batch = if lanes >= MIN_BATCH {
            2 * lanes
        } else {
            MIN_BATCH
        };
        if self.pending < batch {
            return false;
        }
        self.pending = 0;
        self.t += 1;
        let (b1, b2) = (0.9f32, 0.999f32);
        let corr = (1.0 - b2.powi(self.t)).sqrt() / (1.0 - b1.powi(self.t));
        let step = AdamStep {
            lr: self.lr * corr,
            b1,
            b2,
            eps: 1e-6,
        };
        let d = self.dense;
        adam(
            &mut p[d..],
            &mut self.g[d..],
            &mut self.m[d..],
            &mut self.v[d..],
            step,
        );
        self.touched.sort_unstable();
        self.touched.dedup();
        for &e in &self.touched {
            let r = e..e + self.row;
            adam(
                &mut p[r.clone()],
                &mut self.g[r.clone()],
                &mut self.m[r.clone()],
                &mut self.v[r],
                step,
            );
        }
        self.touched.clear();
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    /// Checks a network's `analytic` gradient against central finite differences of `loss`,
    /// tensor by tensor (name, start, end in the flat parameters `param` gives), on up to 6 of
    /// each tensor's 24 parameters of largest gradient. `loss` returns the loss at the current
    /// parameters and whether the network's discrete choices (which patches or tokens its gate
    /// keeps) are those of the analytic pass; a step that changes them is skipped, as the
    /// choice is piecewise constant. At least 3 parameters of each tensor of 6 or more must
    /// be checked.
    pub(crate) fn check_tensors<N>(
        net: &mut N,
        tensors: &[(&str, usize, usize)],
        analytic: &[f32],
        param: impl Fn(&mut N) -> &mut [f32],
        mut loss: impl FnMut(&mut N) -> (f64, bool),
    ) {
        let h = 2e-3f32;
        for &(name, from, to) in tensors {
            let mut idx: Vec<usize> = (from..to).collect();
            idx.sort_by(|&a, &b| analytic[b].abs().total_cmp(&analytic[a].abs()));
            assert!(analytic[idx[0]] != 0.0, "{name}: no gradient at all");
            let mut checked = 0;
            for &i in idx.iter().take(24) {
                if checked == 6 {
                    break;
                }
                let keep = param(net)[i];
                param(net)[i] = keep + h;
                let (up, same_up) = loss(net);
                param(net)[i] = keep - h;
                let (down, same_down) = loss(net);
                param(net)[i] = keep;
                if !(same_up && same_down) {
                    continue;
                }
                checked += 1;
                let fd = (up - down) / (2.0 * h as f64);
                let a = analytic[i] as f64;
                assert!(
                    (fd - a).abs() <= 2e-2 * a.abs().max(fd.abs()) + 2e-3,
                    "{name}[{}]: analytic {a}, finite difference {fd}",
                    i - from
                );
            }
            assert!(
                checked >= 3 || to - from < 6,
                "{name}: only {checked} parameters checked"
            );
        }
    }
}
