//! Fuzz target: bytes → preprocessed C text → parse (with the GNU-extension rewriting) →
//! lowering to the IR → IR pretty-printer. Any panic, stack overflow or hang is a bug: bad input
//! must come back as a `FrontendError`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use racedar::frontend;
use racedar::ir::DataModel;
use racedar::ir::pretty::{PrintOptions, print_program};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let model = if data.first().is_some_and(|b| b & 1 == 1) {
        DataModel::Ilp32
    } else {
        DataModel::Lp64
    };
    let printed = racedar::stack::run(move || {
        frontend::load_preprocessed("fuzz.i", text, model)
            .map(|p| print_program(&p, PrintOptions { all_files: true }).len())
    });
    let _ = std::hint::black_box(printed);
});
