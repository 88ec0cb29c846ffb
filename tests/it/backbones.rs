//! Backbones: every network the predictor can run writes the same archive at any thread count
//! and decodes bit-exactly with the scalar kernels; the archive records which backbone it
//! needs.

use crate::common::*;
use sep::Kernels;
use sep::{Backbone, Options, PackChoice};

#[test]
fn every_backbone_is_deterministic_and_recorded() {
    let book = corpus_file("text/developers-reference.txt");
    let data = &book[..40 << 10];
    for (level, backbone) in [
        (9, Backbone::Pac),
        (6, Backbone::Trace),
        (9, Backbone::Trace),
    ] {
        let archive = |threads: usize| {
            let mut o = Options::default();
            o.level = level;
            o.backbone = backbone;
            o.threads = threads;
            o.block_size = 16 << 10;
            o.pack = PackChoice::Off;
            let mut out = Vec::new();
            sep::compress_bytes(data, &mut out, &o).unwrap();
            out
        };
        let one = archive(1);
        assert!(
            one == archive(2),
            "{backbone:?} level {level}: thread count changed the archive"
        );
        let info = sep::inspect(std::io::Cursor::new(&one)).unwrap();
        assert!(
            info.cm.contains(backbone.name()),
            "{backbone:?}: the archive does not say so: {}",
            info.cm
        );
        sep::set_kernels(Kernels::Scalar);
        let mut o = Options::default();
        o.threads = 3;
        let mut out = Vec::new();
        sep::decompress_to_vec(&one, &mut out, &o).unwrap();
        sep::set_kernels(Kernels::detect());
        assert!(out == data, "{backbone:?} level {level}: round trip");
    }
}
