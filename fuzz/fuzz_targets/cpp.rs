//! Fuzz target: bytes → racedar's in-process C preprocessor (with the system's header
//! directories, so `#include <...>` reaches real headers). Any panic, stack overflow or hang is
//! a bug: input it does not handle must come back as a `Bail`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use racedar::frontend::cpp::{Config, preprocess_source};
use std::sync::OnceLock;

fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| Config {
        macros: "#define __GNUC__ 12\n#define __GNUC_MINOR__ 2\n#define __x86_64__ 1\n\
                 #define __STDC__ 1\n#define __STDC_VERSION__ 201710L\n#define __CHAR_BIT__ 8\n\
                 #define __SIZEOF_LONG__ 8\n#define __INT_MAX__ 0x7fffffff\n"
            .to_string(),
        bracket_dirs: ["/usr/lib/gcc/x86_64-linux-gnu/12/include", "/usr/include/x86_64-linux-gnu", "/usr/include"]
            .iter()
            .map(|d| (d.to_string(), true))
            .collect(),
        ..Config::default()
    })
}

fuzz_target!(|data: &[u8]| {
    let out = racedar::stack::run(move || preprocess_source(config(), data, "fuzz.c", None).map(|t| t.len()));
    let _ = std::hint::black_box(out);
});
