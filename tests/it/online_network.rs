//! The online network (level 9's MLP on data no pack starts): the same archive at any thread
//! count, decoded bit-exactly with the scalar kernels; the archive records it.

use crate::common::*;
use sep::Kernels;
use sep::{Options, PackChoice};

#[test]
fn the_online_network_is_deterministic_and_recorded() {
    let book = corpus_file("text/developers-reference.txt");
    let data = &book[..40 << 10];
    let archive = |threads: usize| {
        let mut o = Options::default();
        o.level = 9;
        o.threads = threads;
        o.block_size = 16 << 10;
        o.pack = PackChoice::Off;
        let mut out = Vec::new();
        sep::compress_bytes(data, &mut out, &o).unwrap();
        out
    };
    let one = archive(1);
    assert!(one == archive(2), "thread count changed the archive");
    let info = sep::inspect(std::io::Cursor::new(&one)).unwrap();
    assert!(
        info.cm.contains("pac"),
        "the archive does not say so: {}",
        info.cm
    );
    sep::set_kernels(Kernels::Scalar);
    let mut o = Options::default();
    o.threads = 3;
    let mut out = Vec::new();
    sep::decompress_to_vec(&one, &mut out, &o).unwrap();
    sep::set_kernels(Kernels::detect());
    assert!(out == data, "round trip");
}
