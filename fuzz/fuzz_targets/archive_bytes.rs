//! Fuzz target `archive-bytes`: see `sep::internals::fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sep::internals::fuzz("archive-bytes", data));
