//! Interim predictor: a blend of adaptive order-0, order-1 and order-2 byte counts.

use super::Predictor;

const LIMIT0: u32 = 60_000;
const LIMIT1: u32 = 4_000;
const LIMIT2: u32 = 250;

/// Order-0/1/2 count model; each order's weight grows with how often its context was seen.
pub struct ContextModel {
    c0: [u32; 256],
    t0: u32,
    c1: Vec<u16>,
    t1: Vec<u32>,
    c2: Vec<u16>,
    t2: Vec<u32>,
    hist: u16,
    k1: f32,
    k2: f32,
}

impl ContextModel {
    /// A model with no statistics yet.
    pub fn new(k1: u8, k2: u8) -> Self {
        ContextModel {
            c0: [0; 256],
            t0: 0,
            c1: vec![0; 256 * 256],
            t1: vec![0; 256],
            c2: vec![0; 65536 * 256],
            t2: vec![0; 65536],
            hist: 0,
            k1: k1 as f32,
            k2: k2 as f32,
        }
    }
}

fn halve(counts: &mut [u16]) -> u32 {
    let mut t = 0;
    for c in counts {
        *c = (*c + 1) >> 1;
        t += *c as u32;
    }
    t
}

impl Predictor for ContextModel {
    fn predict(&mut self, probs: &mut [f32; 256]) {
        let x1 = (self.hist & 0xff) as usize;
        let x2 = self.hist as usize;
        let n1 = self.t1[x1] as f32;
        let n2 = self.t2[x2] as f32;
        let l1 = n1 / (n1 + self.k1);
        let l2 = n2 / (n2 + self.k2);
        let a2 = if n2 > 0.0 { l2 / n2 } else { 0.0 };
        let a1 = if n1 > 0.0 { (1.0 - l2) * l1 / n1 } else { 0.0 };
        let a0 = (1.0 - l2) * (1.0 - l1) / (self.t0 as f32 + 256.0);
        let r1 = &self.c1[x1 * 256..x1 * 256 + 256];
        let r2 = &self.c2[x2 * 256..x2 * 256 + 256];
        for s in 0..256 {
            probs[s] = a2 * r2[s] as f32 + a1 * r1[s] as f32 + a0 * (self.c0[s] + 1) as f32;
        }
    }

    fn update(&mut self, byte: u8) {
        let b = byte as usize;
        let x1 = (self.hist & 0xff) as usize;
        let x2 = self.hist as usize;
        self.c0[b] += 1;
        self.t0 += 1;
        if self.t0 > LIMIT0 {
            self.t0 = 0;
            for c in self.c0.iter_mut() {
                *c = (*c + 1) >> 1;
                self.t0 += *c;
            }
        }
        let r1 = &mut self.c1[x1 * 256..x1 * 256 + 256];
        r1[b] += 1;
        self.t1[x1] += 1;
        if self.t1[x1] > LIMIT1 {
            self.t1[x1] = halve(r1);
        }
        let r2 = &mut self.c2[x2 * 256..x2 * 256 + 256];
        r2[b] += 1;
        self.t2[x2] += 1;
        if self.t2[x2] > LIMIT2 {
            self.t2[x2] = halve(r2);
        }
        self.hist = (self.hist << 8) | byte as u16;
    }
}
