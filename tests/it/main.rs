//! The integration tests, one binary: the `sep` command end to end, the library's entry points,
//! the float codecs through real files, the corpora, and the golden archives.

mod bad_input;
mod cli;
mod common;
mod containers;
mod corpora;
mod deflate;
mod deltas;
mod fuzzed;
mod golden;
mod hostile;
mod jpeg;
mod levels;
mod online_network;
mod packs;
mod signals;
mod sources;
mod tensors;
mod xz_form;
