#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sampling_parity_fuzz::arrays(data));
