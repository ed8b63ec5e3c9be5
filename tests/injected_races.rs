//! Races injected into a real program by removing a lock (issue "Soundness and recall on real
//! code", item 5 and its acceptance): C-Thread-Pool (`realworld/C-Thread-Pool.c` of the corpus)
//! with the lock of one critical section removed. Each injected race must be reported as a
//! must-race that lists the unlocked statement, and every race a concrete execution witnesses
//! must be one the static analysis found (a witness nothing explains is a false witness or a
//! static miss). Skipped, with a message, when the corpus is not there.

mod common;

use common::corpus;
use racedar::frontend::{self, FrontendOptions};
use racedar::pipeline::{self, AnalysisOptions};
use racedar::races::Confidence;

/// `src` with the lock and unlock around the first line containing `statement` (the nearest
/// lines above and below naming `lock`) replaced by empty statements, so that lines keep their
/// numbers; with the 1-based line of the statement.
fn without_lock(src: &str, statement: &str, lock: &str) -> Option<(String, u32)> {
    let mut lines: Vec<String> = src.lines().map(str::to_string).collect();
    let at = lines.iter().position(|l| l.contains(statement))?;
    let above = (0..at)
        .rev()
        .find(|&i| lines[i].contains("pthread_mutex_lock(") && lines[i].contains(lock))?;
    let below = (at + 1..lines.len())
        .find(|&i| lines[i].contains("pthread_mutex_unlock(") && lines[i].contains(lock))?;
    lines[above] = ";".to_string();
    lines[below] = ";".to_string();
    Some((lines.join("\n") + "\n", at as u32 + 1))
}

#[test]
fn lock_removed_races_are_must_races() {
    let root = corpus::root();
    let path = root.join("realworld/C-Thread-Pool.c");
    let Ok(src) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: no corpus at {}", root.display());
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        // A worker counts itself working without the pool's lock.
        ("thpool_p->num_threads_working += ", "thcount_lock"),
        // A job is queued without the queue's lock.
        ("(jobqueue_p->len) ++", "rwmutex"),
    ];
    for (statement, lock) in cases {
        let (text, line) = without_lock(&src, statement, lock)
            .unwrap_or_else(|| panic!("no lock around '{statement}' in {}", path.display()));
        let file = dir.path().join("C-Thread-Pool.c");
        std::fs::write(&file, text).expect("write the variant");
        let (mut program, _) =
            frontend::load(&[file], &FrontendOptions::default()).expect("the variant loads");
        let opts = AnalysisOptions {
            concrete: true,
            ..Default::default()
        };
        let mut roles = opts.model.classify(&program);
        pipeline::prepare(&mut program, &mut roles, &opts);
        let analysis = pipeline::analyse(&program, &roles, &opts);
        assert!(
            analysis.unexplained.is_empty(),
            "'{statement}' unlocked: {} witnessed race(s) no static race explains",
            analysis.unexplained.len()
        );
        let must_lines: Vec<u32> = analysis
            .races
            .races
            .iter()
            .filter(|r| r.confidence == Confidence::Must)
            .flat_map(|r| {
                r.accesses
                    .iter()
                    .map(|&i| analysis.races.accesses[i].loc.line)
            })
            .collect();
        assert!(
            must_lines.contains(&line),
            "'{statement}' unlocked (line {line}): not in a must-race (must lines {must_lines:?})"
        );
    }
}
