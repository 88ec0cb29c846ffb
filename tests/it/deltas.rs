//! Checkpoint deltas (`--patch-from`): a safetensors file's tensors coded against the same
//! tensors of an earlier file, decoded only with exactly that file, at any thread count and
//! kernel level; a missing or other base is refused in one line, with no output.

use crate::common::*;
use sep::{Base, Codec, Error, Options};
use std::fs;
use std::sync::Arc;

/// `file`, a safetensors file of `width`-byte floats, after an optimizer step: three values in
/// four moved by a few units in their last place, the others left as they were.
fn stepped(file: &[u8], width: usize) -> Vec<u8> {
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let mut out = file.to_vec();
    let mut x = 5u64;
    for v in out[8 + n..].chunks_exact_mut(width) {
        let r = xorshift(&mut x);
        if r.is_multiple_of(4) {
            continue;
        }
        let step = (r >> 8) % 9;
        let low = u16::from_le_bytes([v[0], v[1]]);
        let moved = match r & 16 {
            0 => low.wrapping_add(step as u16),
            _ => low.wrapping_sub(step as u16),
        };
        v[..2].copy_from_slice(&moved.to_le_bytes());
    }
    out
}

#[test]
fn a_checkpoint_codes_against_its_base_everywhere_and_only_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let base = corpus_file("tensors/magika.bf16.safetensors");
    let new = stepped(&base, 2);
    fs::write(dir.path().join("base.safetensors"), &base).unwrap();
    fs::write(dir.path().join("new.safetensors"), &new).unwrap();
    let alone = sep(dir.path(), &["-c", "-q", "new.safetensors"]);
    ok(&alone);
    let runs = [("1", "scalar"), ("2", "auto")];
    let args = [
        "-c",
        "-q",
        "--patch-from",
        "base.safetensors",
        "new.safetensors",
    ];
    let delta = compress_identically(dir.path(), &args, &runs);
    assert!(
        delta.len() * 2 < alone.stdout.len(),
        "{} against {} alone",
        delta.len(),
        alone.stdout.len()
    );
    fs::write(dir.path().join("new.sep"), &delta).unwrap();
    let decode = [
        "-d",
        "-c",
        "-q",
        "--patch-from",
        "base.safetensors",
        "new.sep",
    ];
    decodes_everywhere_with(dir.path(), &decode, &new, &runs);
    let info = sep(dir.path(), &["-l", "-v", "new.sep"]);
    ok(&info);
    assert!(info.stdout.windows(5).any(|w| w == b"delta"));
    assert!(String::from_utf8_lossy(&info.stdout).contains("base: "));

    // Without its base, or with another file: one line, exit 1, no output file.
    fs::remove_file(dir.path().join("new.safetensors")).unwrap();
    fails_cleanly(
        &sep(dir.path(), &["-d", "new.sep"]),
        "give it with --patch-from",
    );
    let other = ["-d", "--patch-from", "new.sep", "new.sep"];
    fails_cleanly(&sep(dir.path(), &other), "the file given is another");
    let missing = ["-d", "--patch-from", "nowhere", "new.sep"];
    fails_cleanly(&sep(dir.path(), &missing), "nowhere");
    assert!(!dir.path().join("new.safetensors").exists());
    assert!(!dir.path().join("new").exists());
}

#[test]
fn the_library_codes_deltas_and_names_its_base() {
    let base_file = corpus_file("tensors/magika.f32.safetensors");
    let new = stepped(&base_file, 4);
    let base = Arc::new(Base::new(Arc::new(base_file.clone())));
    let mut o = Options::default();
    o.base = Some(base.clone());
    let mut archive = Vec::new();
    sep::compress_bytes(&new, &mut archive, &o).unwrap();
    let info = sep::inspect(std::io::Cursor::new(&archive)).unwrap();
    assert!(info.blocks.iter().any(|b| b.codec == Codec::Delta));
    assert_eq!(
        info.base.as_ref().map(|b| b.0),
        Some(base_file.len() as u64)
    );

    let mut out = Vec::new();
    sep::decompress_to_vec(&archive, &mut out, &o).unwrap();
    assert!(out == new);
    let missing = sep::decompress_to_vec(&archive, &mut Vec::new(), &Options::default());
    assert!(matches!(
        missing,
        Err(Error::BaseMissing { given: false, .. })
    ));

    // A file that is not safetensors, or shares no tensor with the base, names no base.
    let text = word_text(3, 20_000);
    let mut plain = Vec::new();
    sep::compress_bytes(&text, &mut plain, &o).unwrap();
    let info = sep::inspect(std::io::Cursor::new(&plain)).unwrap();
    assert!(info.base.is_none());
    let mut out = Vec::new();
    sep::decompress_to_vec(&plain, &mut out, &Options::default()).unwrap();
    assert!(out == text);
}
