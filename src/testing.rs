//! Test data generators shared by the unit tests and (through `tests/common.rs`) the
//! end-to-end tests.

/// Next value of a xorshift64 generator (deterministic test data; `x` must not be 0).
pub fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// A Hann-windowed cosine and sine basis of `n` points as f32 (rows `0..=n/2` cosines, the
/// rest sines), as audio models store their STFT.
pub fn stft_basis(n: usize) -> Vec<u8> {
    let mut data = Vec::new();
    for row in 0..n + 2 {
        let (k, sine) = (row % (n / 2 + 1), row > n / 2);
        for i in 0..n {
            let t = std::f64::consts::TAU * i as f64 / n as f64;
            let w = 0.5 - 0.5 * t.cos();
            let v = match sine {
                true => (t * k as f64).sin(),
                false => (t * k as f64).cos(),
            };
            data.extend_from_slice(&((v * w) as f32).to_le_bytes());
        }
    }
    data
}

/// A smooth 2-D field of `rows` by `cols` f32 values (a temperature map with a little noise),
/// big- or little-endian, as climate model output stores its fields.
pub fn smooth_field(rows: usize, cols: usize, big_endian: bool) -> Vec<u8> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut data = Vec::with_capacity(rows * cols * 4);
    for y in 0..rows {
        for x in 0..cols {
            let (fx, fy) = (x as f64 / 17.0, y as f64 / 23.0);
            let noise = (xorshift(&mut s) % 1000) as f64 / 1e5;
            let v = (280.0 + 12.0 * fx.sin() * fy.cos() + 3.0 * (fx + fy).cos() + noise) as f32;
            data.extend_from_slice(&match big_endian {
                true => v.to_be_bytes(),
                false => v.to_le_bytes(),
            });
        }
    }
    data
}

/// A 16-bit little-endian raster of `rows` by `cols` (a scan's stripes, fine across the rows
/// and slowly bending down them, under sensor noise), as medical images and elevation models
/// store theirs.
pub fn smooth_raster(rows: usize, cols: usize) -> Vec<u8> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut data = Vec::with_capacity(rows * cols * 2);
    for y in 0..rows {
        for x in 0..cols {
            let (x, y) = (x as f64, y as f64);
            let noise = (xorshift(&mut s) % 4) as f64;
            let v = 620.0 + 500.0 * (x / 11.0 + y / 60.0).sin() + 40.0 * (x / 2.3 + y / 45.0).sin();
            let v = v + noise;
            data.extend_from_slice(&(v as u16).to_le_bytes());
        }
    }
    data
}

/// A 1-bit image of the Mandelbrot set, `width` bytes by `rows`, pixels most significant bit
/// first, as a fax or a headerless bitmap: black where the orbit escapes after an odd number
/// of steps (bands around the set), or stays bounded for 48.
pub fn mandelbrot_bitmap(width: usize, rows: usize) -> Vec<u8> {
    let px = width * 8;
    let mut out = vec![0u8; width * rows];
    for y in 0..rows {
        for x in 0..px {
            let c = (
                -2.2 + 3.0 * x as f64 / px as f64,
                -1.2 + 2.4 * y as f64 / rows as f64,
            );
            let mut z = (0.0f64, 0.0f64);
            let steps = (0..48)
                .take_while(|_| {
                    z = (z.0 * z.0 - z.1 * z.1 + c.0, 2.0 * z.0 * z.1 + c.1);
                    z.0 * z.0 + z.1 * z.1 < 4.0
                })
                .count();
            let black = steps == 48 || steps % 2 == 1;
            out[y * width + x / 8] |= (black as u8) << (7 - x % 8);
        }
    }
    out
}
