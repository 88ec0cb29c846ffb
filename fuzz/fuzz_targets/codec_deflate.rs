//! Fuzz target `codec-deflate`: see `sep::internals::fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sep::internals::fuzz("codec-deflate", data));
