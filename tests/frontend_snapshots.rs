//! Lowering round-trips: every fixture in `tests/fixtures/frontend/` is lowered and its IR
//! dump compared with the reviewed snapshot in `tests/snapshots/`. A fixture named `*.ilp32.c`
//! is lowered for the ILP32 data model, every other one for LP64.

use racedar::frontend::{self, FrontendOptions};
use racedar::ir::DataModel;
use racedar::ir::pretty::{self, PrintOptions};

#[test]
fn lowering_matches_snapshots() {
    insta::glob!("fixtures/frontend/*.c", |path| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let rel = path
            .strip_prefix(root)
            .expect("fixture under the manifest dir");
        let name = rel.to_string_lossy();
        let data_model = if name.contains(".ilp32.") {
            DataModel::Ilp32
        } else {
            DataModel::Lp64
        };
        let opts = FrontendOptions {
            data_model,
            ..Default::default()
        };
        let (program, _) = frontend::load(&[rel.to_path_buf()], &opts)
            .unwrap_or_else(|e| panic!("{name} does not lower: {e}"));
        insta::assert_snapshot!(pretty::print_program(&program, PrintOptions::default()));
    });
}
