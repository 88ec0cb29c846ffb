//! The x86 call transform: in machine code, the 32-bit displacement after a CALL (`E8`) or JMP
//! (`E9`) opcode is relative to the instruction, so calls to one function all differ; made
//! absolute (the displacement plus the position after it), they repeat, and the models learn
//! them. Only displacements whose top byte is `00` or `FF` (short jumps either way, as in code)
//! are changed, and only their low 24 bits, so the top byte is the same before and after: the
//! decoder finds exactly the places the encoder changed by the same scan.

/// Displacements change by this many bits.
const LOW: u32 = 24;

/// Whether the 5 bytes at `b[i..]` are a call or jump the transform changes (`b[i]` being an
/// opcode).
#[inline]
fn site(b: &[u8], i: usize) -> bool {
    b[i + 4] == 0 || b[i + 4] == 0xFF
}

/// Whether `b` is a CALL or JMP opcode.
#[inline]
fn opcode(b: u8) -> bool {
    b & 0xFE == 0xE8
}

/// Applies (`forward`) or undoes the transform in place. Every opcode takes the 4 bytes after
/// it out of the scan, changed or not, so no decision reads a byte an earlier change touched.
fn apply(b: &mut [u8], forward: bool) {
    let mask = (1u32 << LOW) - 1;
    let mut i = 0;
    while i + 5 <= b.len() {
        if !opcode(b[i]) {
            i += 1;
            continue;
        }
        if site(b, i) {
            let low = u32::from_le_bytes([b[i + 1], b[i + 2], b[i + 3], 0]);
            let at = (i + 5) as u32;
            let v = match forward {
                true => low.wrapping_add(at),
                false => low.wrapping_sub(at),
            } & mask;
            b[i + 1..i + 4].copy_from_slice(&v.to_le_bytes()[..3]);
        }
        i += 5;
    }
}

/// Makes the calls of `b` absolute.
pub fn encode(b: &mut [u8]) {
    apply(b, true);
}

/// Undoes `encode`.
pub fn decode(b: &mut [u8]) {
    apply(b, false);
}

/// Whether `b` looks like x86 machine code: many call or jump sites, as a share of its bytes.
pub fn detect(b: &[u8]) -> bool {
    let mut sites = 0usize;
    let mut i = 0;
    while i + 5 <= b.len() {
        if opcode(b[i]) {
            sites += site(b, i) as usize;
            i += 5;
        } else {
            i += 1;
        }
    }
    // Code has a call every few dozen bytes; text and most data hardly any.
    sites * 200 >= b.len() && b.len() >= 4096
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transform_is_undone_exactly() {
        let mut data = Vec::new();
        let mut x = 12345u32;
        for _ in 0..50_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let b = (x >> 16) as u8;
            // Many opcodes and top bytes of either kind, next to each other too.
            data.push(match b % 5 {
                0 => 0xE8,
                1 => 0xE9,
                2 => 0xFF,
                3 => 0,
                _ => b,
            });
        }
        let mut t = data.clone();
        encode(&mut t);
        assert_ne!(t, data);
        decode(&mut t);
        assert_eq!(t, data);
    }

    #[test]
    fn calls_to_one_place_become_equal() {
        let mut code = vec![0x90u8; 64];
        // Two calls at 10 and 40 to position 1000.
        for at in [10usize, 40] {
            code[at] = 0xE8;
            let rel = 1000i32 - (at as i32 + 5);
            code[at + 1..at + 5].copy_from_slice(&rel.to_le_bytes());
        }
        encode(&mut code);
        assert_eq!(code[11..15], code[41..45]);
    }
}
