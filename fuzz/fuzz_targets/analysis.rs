//! Fuzz target: the whole analysis on programs that parse. Bytes → preprocessed C text →
//! program; when it lowers: concurrency model, loop peeling, race and deadlock analysis
//! (value backend, or the syntactic one when the first byte says so), concrete witnesses,
//! and the JSON, text and SARIF reports. Any panic, stack overflow or hang is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use racedar::frontend;
use racedar::ir::DataModel;
use racedar::pipeline::{self, AnalysisOptions, BackendKind};
use racedar::report::{Report, sarif, text};
use racedar::stats::RunStats;

fuzz_target!(|data: &[u8]| {
    let flags = data.first().copied().unwrap_or(0);
    let src = String::from_utf8_lossy(data).into_owned();
    let out = racedar::stack::run(move || {
        let model = if flags & 1 == 1 {
            DataModel::Ilp32
        } else {
            DataModel::Lp64
        };
        let Ok(mut program) = frontend::load_preprocessed("fuzz.i", src, model) else {
            return 0;
        };
        let opts = AnalysisOptions {
            backend: if flags & 2 == 2 {
                BackendKind::Syntactic
            } else {
                BackendKind::Value
            },
            ..AnalysisOptions::default()
        };
        let roles = opts.model.classify(&program);
        pipeline::prepare(&mut program, &roles, &opts);
        let analysis = pipeline::analyse(&program, &roles, &opts);
        let report = Report::build(&analysis, RunStats::default());
        report.to_json().len()
            + text::render(&report).len()
            + sarif::render(&report, std::path::Path::new(".")).len()
    });
    let _ = std::hint::black_box(out);
});
