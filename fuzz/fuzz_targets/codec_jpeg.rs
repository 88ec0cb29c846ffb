//! Fuzz target `codec-jpeg`: see `sep::internals::fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sep::internals::fuzz("codec-jpeg", data));
