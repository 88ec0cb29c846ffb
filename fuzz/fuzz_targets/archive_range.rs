//! Fuzz target `archive-range`: see `sep::internals::fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sep::internals::fuzz("archive-range", data));
