//! The `racedar` command line: argument parsing (clap) and calls into the library.

use clap::{Args, Parser, Subcommand, ValueEnum};
use racedar::changes;
use racedar::frontend::{self, FrontendError, FrontendOptions, PreprocessOptions};
use racedar::ir::pretty::{self, PrintOptions};
use racedar::ir::{DataModel, Program};
use racedar::model::Model;
use racedar::pipeline::{self, AnalysisOptions, BackendKind};
use racedar::races::evidence::Evidence;
use racedar::report::{self, Report, Stopped, Verdict, sarif, suppress, svcomp, text};
use racedar::stats::{self, RunStats};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// The allocator: the analyses clone and drop many small facts, and mimalloc serves such
/// workloads markedly faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Static data-race and deadlock detector for C programs using POSIX threads.
#[derive(Parser, Debug)]
#[command(name = "racedar", version, about, max_term_width = 100)]
struct Cli {
    /// More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check C files (one program) for data races and deadlocks.
    Check(Box<CheckArgs>),
    /// Print the intermediate representation of a C file.
    DumpIr(DumpArgs),
}

/// Options that say how to read C input (shared by every command).
#[derive(Args, Debug, Clone)]
struct InputArgs {
    /// Add DIR to the include search path.
    #[arg(short = 'I', value_name = "DIR")]
    include_dirs: Vec<PathBuf>,
    /// Define a macro (NAME or NAME=VALUE).
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    defines: Vec<String>,
    /// Undefine a macro.
    #[arg(short = 'U', value_name = "NAME")]
    undefines: Vec<String>,
    /// Include FILE before the source (also accepted as -include FILE).
    #[arg(long = "include", value_name = "FILE")]
    includes: Vec<PathBuf>,
    /// C standard passed to the preprocessor as -std=STD (also accepted as -std=STD).
    #[arg(long = "std", value_name = "STD")]
    std: Option<String>,
    /// Preprocessor command (default: $CC -E, else cc -E).
    #[arg(long = "cpp", value_name = "COMMAND")]
    cpp: Option<String>,
    /// Data model: sizes of int, long and pointers.
    #[arg(long = "data-model", value_enum, default_value_t = DataModelArg::Lp64, ignore_case = true)]
    data_model: DataModelArg,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum DataModelArg {
    /// int, long and pointers are 32 bits (gcc -m32).
    #[value(name = "ILP32")]
    Ilp32,
    /// long and pointers are 64 bits (gcc -m64).
    #[value(name = "LP64")]
    Lp64,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// Human-readable diagnostics.
    Text,
    /// One JSON object (see README, "Output formats").
    Json,
    /// A SARIF 2.1.0 log (code scanning, IDE problem panes).
    Sarif,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum BackendArg {
    /// The thread-modular interval/points-to abstract interpreter (precise).
    Value,
    /// Addresses read off the expressions (fast, imprecise through pointers).
    Syntactic,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ModeArg {
    /// `race` only on a certain race, `no-race` only when no race is possible.
    Combined,
    /// Only certain races: `race` or `unknown`, never `no-race`.
    Under,
    /// Every possible race counts: `race` on any race, `no-race` otherwise.
    Over,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FailOn {
    /// Exit 1 when a must-race (evidence `certain`) or must-deadlock is reported.
    Must,
    /// Exit 1 when a `certain` or `likely` race, or a must-deadlock, is reported.
    Likely,
    /// Exit 1 when any race or deadlock (must or may) is reported.
    May,
}

/// The weakest evidence tier the text report shows.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ShowArg {
    /// Must-races only.
    Certain,
    /// Certain and likely races (inconsistent locking, unique writers).
    Likely,
    /// Every race, including those through unresolved pointers or imprecise offsets.
    Possible,
}

impl ShowArg {
    fn tier(self) -> Evidence {
        match self {
            ShowArg::Certain => Evidence::Certain,
            ShowArg::Likely => Evidence::Likely,
            ShowArg::Possible => Evidence::Possible,
        }
    }
}

#[derive(Args, Debug)]
struct CheckArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The backend answering pointer and value queries.
    #[arg(long, value_enum, default_value_t = BackendArg::Value)]
    backend: BackendArg,
    /// Length of the call strings that distinguish contexts.
    #[arg(long, default_value_t = 1, value_name = "N")]
    context_depth: usize,
    /// Iterations of thread-creating loops analysed separately (threads created in them are
    /// unique, so their races can be certain).
    #[arg(long, default_value_t = 2, value_name = "N")]
    unroll: u8,
    /// Extra concurrency model (TOML, as config/*.toml); may be repeated.
    #[arg(long = "config", value_name = "FILE")]
    configs: Vec<PathBuf>,
    /// Which verdicts the races support (seed 001 §5.3 strategies).
    #[arg(long, value_enum, default_value_t = ModeArg::Combined)]
    mode: ModeArg,
    /// Do not search concrete executions for witnesses of races (they turn possible races
    /// into certain ones).
    #[arg(long)]
    no_concrete: bool,
    /// Which races and deadlocks make the exit code 1 [default: likely; with --diff-base: may,
    /// every new race].
    #[arg(long, value_enum)]
    fail_on: Option<FailOn>,
    /// The weakest evidence tier the text report prints (the others are counted in its
    /// summary; JSON and SARIF always hold every race) [default: likely; with --diff-base:
    /// possible, every new race].
    #[arg(long, value_enum, value_name = "TIER")]
    show: Option<ShowArg>,
    /// Accesses the text report lists per race besides the racing pair (JSON keeps all).
    #[arg(long, default_value_t = 4, value_name = "N")]
    max_notes: usize,
    /// Do not look for deadlocks (lock-order cycles, double locks); the JSON report then has
    /// no `deadlocks` key.
    #[arg(long)]
    no_deadlocks: bool,
    /// Analyse the code as a library whose entry functions any number of threads may call
    /// concurrently, with FUNC as an entry (repeatable; `main` is then not run). Code without
    /// `main` is analysed this way with every externally visible function as an entry.
    #[arg(long = "entry", value_name = "FUNC")]
    entries: Vec<String>,
    /// Print per-phase time and peak memory on stderr.
    #[arg(long)]
    stats: bool,
    /// Stop after SECONDS of wall time (the whole run, front end included): verdict unknown
    /// with the reason, exit code 3.
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    timeout: Option<f64>,
    /// Stop when the peak resident memory reaches MB mebibytes: verdict unknown with the
    /// reason, exit code 3.
    #[arg(long = "max-memory", value_name = "MB", value_parser = clap::value_parser!(u64).range(1..))]
    max_memory: Option<u64>,
    /// Report only races whose fingerprint is not in this baseline (the others are marked
    /// suppressed).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write the fingerprints of every race found to FILE (a baseline for `--baseline`).
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// The directory SARIF URIs are relative to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    project_root: Option<PathBuf>,
    /// SV-COMP run: ends with `SV-COMP result: true|false(no-data-race)|unknown` (on stderr
    /// with `--format json`), ignores suppressions and exits 0.
    #[arg(long)]
    svcomp: bool,
    /// The SV-COMP property file (`--svcomp`); only no-data-race is checked.
    #[arg(long, value_name = "FILE", requires = "svcomp")]
    property: Option<PathBuf>,
    /// Where to write the violation witness of a `false` verdict (`--svcomp`; YAML 2.0).
    #[arg(long, value_name = "FILE", requires = "svcomp")]
    witness: Option<PathBuf>,
    /// The program is the compilation database FILE (or DIR/compile_commands.json): every C
    /// unit with its own flags, linked into one program.
    #[arg(short = 'p', long = "compile-commands", value_name = "FILE")]
    compile_commands: Option<PathBuf>,
    /// Do not reuse or store preprocessed units (`.c` files and `-p` projects; cache: `pp/`
    /// in `$RACEDAR_CACHE_DIR`, else in `~/.cache/racedar`).
    #[arg(long)]
    no_cache: bool,
    /// Report only races with an access in one of the FILE arguments (the program is the
    /// compilation database of `-p` when given; pre-commit passes the changed files).
    #[arg(long)]
    changed: bool,
    /// Report only the races and deadlocks that are new since the git revision REV: the
    /// program is also analysed as it is at REV (same options and database; files taken from
    /// git) and what it already had is not reported (same fingerprint, no access it did not
    /// have: a race that gains an access is new).
    #[arg(long, value_name = "REV")]
    diff_base: Option<String>,
    /// Analyse only the program NAME of a compilation database with several programs: the
    /// path of the unit defining its `main` (as reports name files), that file's name without
    /// `.c`, or `library` for the units no program uses; may be repeated.
    #[arg(long = "program", value_name = "NAME")]
    programs: Vec<String>,
    /// Explain the race ID (its position in the report, or a fingerprint prefix of at least 4
    /// hex digits): call chains, create sites, locks, and why it is only possible.
    #[arg(long, value_name = "ID")]
    explain: Option<String>,
    /// C source (.c) or preprocessed (.i) files, analysed as one program (with `-p` and
    /// `--changed`: the files whose races are reported).
    #[arg(required_unless_present = "compile_commands", value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Args, Debug)]
struct DumpArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Also print declarations from included headers.
    #[arg(long)]
    all: bool,
    /// Print the program as `check` analyses it, with N iterations of thread-creating loops
    /// peeled.
    #[arg(long, default_value_t = 0, value_name = "N")]
    unroll: u8,
    /// C source (.c) or preprocessed (.i) file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

impl InputArgs {
    fn frontend_options(&self) -> FrontendOptions {
        FrontendOptions {
            preprocess: PreprocessOptions {
                cpp: self.cpp.clone(),
                include_dirs: self.include_dirs.clone(),
                defines: self.defines.clone(),
                undefines: self.undefines.clone(),
                includes: self.includes.clone(),
                std: self.std.clone(),
                extra: Vec::new(),
                cwd: None,
            },
            data_model: match self.data_model {
                DataModelArg::Ilp32 => DataModel::Ilp32,
                DataModelArg::Lp64 => DataModel::Lp64,
            },
        }
    }
}

/// Accepts the compiler spellings `-include FILE` and `-std=STD` by rewriting them to the long
/// options clap understands.
fn gcc_style_args(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.map(|a| match a.to_str() {
        Some("-include") => "--include".into(),
        Some(s) if s.starts_with("-std=") => format!("-{s}").into(),
        _ => a,
    })
    .collect()
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Parses a positive, finite number of seconds (`--timeout`).
fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

/// Exit code of a run a resource limit stopped (README, "Exit codes").
const EXIT_STOPPED: u8 = 3;

/// Set by whoever writes the run's result first: the analysis thread once the analysis is
/// over (or the front end failed), or the resource watchdog ([`watch`]) once a limit is
/// reached. The other one then writes nothing.
static OUTPUT_CLAIMED: AtomicBool = AtomicBool::new(false);

/// Claims the right to write the run's result; false when the watchdog already has it.
fn claim_output() -> bool {
    !OUTPUT_CLAIMED.swap(true, Ordering::SeqCst)
}

/// Called by the analysis thread when the watchdog has claimed the output: the watchdog
/// writes the result and ends the process, so this thread only waits.
fn yield_output() -> ! {
    loop {
        std::thread::park();
    }
}

/// How often the watchdog checks the limits.
const POLL: Duration = Duration::from_millis(10);

/// Watches the resource limits of `check` (`--timeout`, `--max-memory`) while the analysis
/// thread runs; returns when it has finished (signalled on `done`). When a limit is reached
/// first, writes the `unknown` report of a stopped run ([`write_stopped`]) and ends the
/// process with its exit code.
fn watch(done: &mpsc::Receiver<()>, start: Instant, args: &CheckArgs) {
    loop {
        match done.recv_timeout(POLL) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let over_time = args
            .timeout
            .filter(|t| start.elapsed().as_secs_f64() >= *t)
            .map(|t| ("timeout", t));
        let over_memory = || {
            let limit = args.max_memory?;
            let peak = stats::peak_rss_bytes()?;
            (peak >= limit.saturating_mul(1024 * 1024)).then_some(("max-memory", limit as f64))
        };
        let Some((limit, value)) = over_time.or_else(over_memory) else {
            continue;
        };
        if !claim_output() {
            // The analysis is over and its result is being written.
            return;
        }
        let code = write_stopped(args, limit, value);
        std::process::exit(i32::from(code));
    }
}

/// Writes the report of a run stopped by `limit` (`timeout` / `max-memory`, `value` in
/// seconds / MiB) in the requested format, and returns the exit code: 0 for `--svcomp`
/// (which ends with `SV-COMP result: unknown`), else [`EXIT_STOPPED`].
fn write_stopped(args: &CheckArgs, limit: &'static str, value: f64) -> u8 {
    let phases = stats::ended_phases();
    let stopped = Stopped::new(limit, value, phases.last().map(|p| p.name));
    let run = RunStats {
        phases,
        peak_rss_mib: stats::peak_rss_bytes().map(|b| b as f64 / (1024.0 * 1024.0)),
        ..RunStats::default()
    };
    if args.stats {
        eprint!("{}", run.render());
    }
    if args.format != Format::Text {
        eprintln!("racedar: {}", stopped.reason);
    }
    let report = Report::stopped(stopped, run);
    let mut out = std::io::stdout().lock();
    let _ = match args.format {
        Format::Json => writeln!(out, "{}", report.to_json()),
        Format::Text => write!(out, "{}", text::render(&report, &text_options(args))),
        Format::Sarif => {
            let root = args
                .project_root
                .clone()
                .unwrap_or_else(|| PathBuf::from("."));
            writeln!(out, "{}", sarif::render(&report, &root))
        }
    };
    let code = if args.svcomp {
        let line = svcomp::result_line(Verdict::Unknown);
        if args.format == Format::Text {
            let _ = writeln!(out, "{line}");
        } else {
            eprintln!("{line}");
        }
        0
    } else {
        EXIT_STOPPED
    };
    let _ = out.flush();
    code
}

/// Prints a front-end error (and the preprocessor's output, if any) and returns exit code 2.
fn report_error(e: &FrontendError) -> ExitCode {
    if !claim_output() {
        yield_output();
    }
    let mut err = std::io::stderr().lock();
    if let Some(detail) = &e.detail {
        let _ = writeln!(err, "{detail}");
    }
    let _ = writeln!(err, "{e}");
    ExitCode::from(2)
}

fn load(
    input: &InputArgs,
    files: &[PathBuf],
    cache: Option<&Path>,
) -> Result<(Program, RunStats), FrontendError> {
    let (program, fs) = frontend::load_cached(files, &input.frontend_options(), cache)?;
    let run = RunStats::from_frontend(&fs, &program);
    Ok((program, run))
}

fn check(args: &CheckArgs) -> ExitCode {
    if !args.svcomp {
        return check_files(args);
    }
    // SV-COMP: the property first, then the analysis; always exit 0.
    if let Some(path) = &args.property {
        let text = std::fs::read_to_string(path);
        if !matches!(&text, Ok(t) if svcomp::is_no_data_race(t)) && !claim_output() {
            yield_output();
        }
        match text {
            Ok(text) if svcomp::is_no_data_race(&text) => {}
            Ok(_) => {
                eprintln!(
                    "racedar: {}: only the no-data-race property is checked",
                    path.display()
                );
                println!("{}", svcomp::result_line(Verdict::Unknown));
                return ExitCode::SUCCESS;
            }
            Err(e) => {
                eprintln!("racedar: {}: cannot read property: {e}", path.display());
                println!("{}", svcomp::result_line(Verdict::Unknown));
                return ExitCode::SUCCESS;
            }
        }
    }
    let code = check_files(args);
    if code == ExitCode::from(2) {
        // The error is on stderr; the verdict line still ends the run.
        println!("{}", svcomp::result_line(Verdict::Unknown));
    }
    ExitCode::SUCCESS
}

fn check_files(args: &CheckArgs) -> ExitCode {
    // The shipped concurrency model is parsed while the front end runs: it is needed only
    // after it, and parsing it costs as much as analysing a small program.
    let shipped = std::thread::Builder::new()
        .name("model".into())
        .spawn(Model::shipped);
    // The user's models, checked now so that a bad one is reported before any analysis.
    let mut user = Model::default();
    for path in &args.configs {
        let name = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                if !claim_output() {
                    yield_output();
                }
                eprintln!("{name}:1: error: cannot read concurrency model: {e}");
                return ExitCode::from(2);
            }
        };
        if let Err(e) = user.add_toml(&name, &text) {
            if !claim_output() {
                yield_output();
            }
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    let programs = match load_programs(args, None) {
        Ok(p) => p,
        Err(e) => return report_error(&e),
    };
    let programs = match select_programs(args, programs) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if args.changed {
        // Every file named must be part of the program: a unit of the database, an input, or
        // a header one of them includes; a typo or a file outside the project would
        // otherwise select nothing and pass silently.
        let known: std::collections::BTreeSet<String> = programs
            .iter()
            .flat_map(|p| p.program.files.iter())
            .map(|f| frontend::compdb::display_name(Path::new(f)))
            .collect();
        if let Some(f) = args
            .files
            .iter()
            .find(|f| !known.contains(&frontend::compdb::display_name(f)))
        {
            eprintln!(
                "racedar: error: {}: --changed names a file that is not part of the analysed \
                 program (no unit of the compilation database, input or included header)",
                f.display()
            );
            return ExitCode::from(2);
        }
    }
    let mut model = match shipped.map(std::thread::JoinHandle::join) {
        Ok(Ok(m)) => m,
        _ => Model::shipped(),
    };
    model.extend(user);
    let opts = AnalysisOptions {
        backend: match args.backend {
            BackendArg::Syntactic => BackendKind::Syntactic,
            BackendArg::Value => BackendKind::Value,
        },
        context_depth: args.context_depth,
        unroll: args.unroll,
        model,
        mode: match args.mode {
            ModeArg::Combined => pipeline::Mode::Combined,
            ModeArg::Under => pipeline::Mode::Under,
            ModeArg::Over => pipeline::Mode::Over,
        },
        concrete: !args.no_concrete,
        deadlocks: !args.no_deadlocks,
        entries: args.entries.clone(),
    };
    // An entry must be a function with a body in some program.
    if let Some(e) = programs
        .iter()
        .map(|p| pipeline::check_entries(&p.program, &opts.entries))
        .find_map(Result::err)
        .filter(|_| {
            programs
                .iter()
                .all(|p| pipeline::check_entries(&p.program, &opts.entries).is_err())
        })
    {
        eprintln!("racedar: error: {e}");
        return ExitCode::from(2);
    }
    let reports = analyse_programs(programs, &opts, args.stats);
    if !claim_output() {
        yield_output();
    }
    let mut report = Report::of_programs(reports);
    let baseline = match args.baseline.as_deref().map(suppress::Baseline::read) {
        Some(Err(e)) => {
            eprintln!("racedar: error: {e}");
            return ExitCode::from(2);
        }
        Some(Ok(b)) => Some(b),
        None => None,
    };
    if !args.svcomp {
        suppress::apply(&mut report, baseline.as_ref());
    }
    if args.changed {
        let files: Vec<String> = args
            .files
            .iter()
            .map(|f| frontend::compdb::display_name(f))
            .collect();
        let changed = |file: &str| files.contains(&frontend::compdb::display_name(Path::new(file)));
        report
            .races
            .retain(|r| r.accesses.iter().any(|a| changed(&a.file)));
        if let Some(ds) = &mut report.deadlocks {
            ds.retain(|d| {
                d.cycle
                    .iter()
                    .any(|s| changed(&s.acquire.file) || changed(&s.while_holding.file))
            });
        }
    }
    if let Some(rev) = &args.diff_base {
        match baseline_at(args, &opts, rev) {
            Ok(base) => report.only_new(rev, &base),
            Err(e) => {
                eprintln!("racedar: error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(path) = &args.write_baseline
        && let Err(e) = std::fs::write(path, suppress::Baseline::of(&report).to_json())
    {
        eprintln!(
            "racedar: error: {}: cannot write baseline: {e}",
            path.display()
        );
        return ExitCode::from(2);
    }
    report.merge_objects();
    let mut out = std::io::stdout().lock();
    if let Some(id) = &args.explain {
        let found = text::find_races(&report, id);
        if found.is_empty() {
            eprintln!("racedar: error: no race '{id}' in this report");
            return ExitCode::from(2);
        }
        for r in &found {
            let _ = writeln!(out, "{}", text::explain(r));
        }
        return ExitCode::from(1);
    }
    let written = match args.format {
        Format::Json => writeln!(out, "{}", report.to_json()),
        Format::Text => write!(out, "{}", text::render(&report, &text_options(args))),
        Format::Sarif => {
            let root = args
                .project_root
                .clone()
                .unwrap_or_else(|| PathBuf::from("."));
            writeln!(out, "{}", sarif::render(&report, &root))
        }
    };
    if written.is_err() {
        return ExitCode::SUCCESS;
    }
    if args.svcomp {
        let line = svcomp::result_line(report.verdict);
        if args.format == Format::Text {
            let _ = writeln!(out, "{line}");
        } else {
            eprintln!("{line}");
        }
        if let Some(path) = &args.witness {
            let inputs: Vec<&std::path::Path> = args.files.iter().map(PathBuf::as_path).collect();
            let model = match args.input.data_model {
                DataModelArg::Ilp32 => "ILP32",
                DataModelArg::Lp64 => "LP64",
            };
            if let Some(w) = svcomp::witness(&report, &inputs, model)
                && let Err(e) = std::fs::write(path, w)
            {
                eprintln!(
                    "racedar: error: {}: cannot write witness: {e}",
                    path.display()
                );
            }
        }
        return ExitCode::SUCCESS;
    }
    let fail_on = args.fail_on.unwrap_or(if args.diff_base.is_some() {
        FailOn::May
    } else {
        FailOn::Likely
    });
    let race_counts = |r: &report::RaceReport| match fail_on {
        FailOn::Must => r.confidence == "must",
        FailOn::Likely => report::tier(r.evidence) <= Evidence::Likely,
        FailOn::May => true,
    };
    // Deadlocks have no likely tier: only must-deadlocks are more than possible.
    let deadlock_counts = |confidence: &str| match fail_on {
        FailOn::Must | FailOn::Likely => confidence == "must",
        FailOn::May => true,
    };
    let failing = report
        .races
        .iter()
        .filter(|r| r.suppressed.is_none())
        .any(race_counts)
        || report
            .deadlocks
            .iter()
            .flatten()
            .any(|d| deadlock_counts(d.confidence));
    if failing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Loads the program(s) of the command line: the compilation database's programs, or the
/// input files as one program; with `snapshot`, as they are in it (`--diff-base`): paths in
/// the repository moved there, units missing there left out.
///
/// Errors: the front end's (the first failing unit).
fn load_programs(
    args: &CheckArgs,
    snapshot: Option<&changes::Snapshot>,
) -> Result<Vec<frontend::LoadedProgram>, FrontendError> {
    let cache = (!args.no_cache)
        .then(frontend::ppcache::default_dir)
        .flatten();
    let mut fo = args.input.frontend_options();
    if let Some(snap) = snapshot {
        let pp = &mut fo.preprocess;
        pp.include_dirs = pp.include_dirs.iter().map(|d| snap.map(d)).collect();
        pp.includes = pp.includes.iter().map(|d| snap.map(d)).collect();
    }
    match &args.compile_commands {
        Some(db) => {
            let mut units = frontend::compdb::read(db, &fo.preprocess)?;
            if let Some(snap) = snapshot {
                for u in &mut units {
                    u.path = snap.map(&u.path);
                    let pp = &mut u.preprocess;
                    pp.cwd = pp.cwd.as_deref().map(|c| snap.map(c));
                    pp.include_dirs = pp.include_dirs.iter().map(|d| snap.map(d)).collect();
                    pp.includes = pp.includes.iter().map(|d| snap.map(d)).collect();
                    pp.extra = pp.extra.iter().map(|w| snap.map_word(w)).collect();
                }
                units.retain(|u| u.path.exists());
                if units.is_empty() {
                    return Ok(Vec::new());
                }
            }
            frontend::load_programs(&units, fo.data_model, cache.as_deref())
        }
        None => {
            let files: Vec<PathBuf> = match snapshot {
                Some(snap) => args
                    .files
                    .iter()
                    .map(|f| snap.map(f))
                    .filter(|f| f.exists())
                    .collect(),
                None => args.files.clone(),
            };
            if files.is_empty() {
                return Ok(Vec::new());
            }
            frontend::load_cached(&files, &fo, cache.as_deref()).map(|(program, stats)| {
                vec![frontend::LoadedProgram {
                    main_unit: None,
                    library: false,
                    program,
                    stats,
                }]
            })
        }
    }
}

/// The programs `--program` selects (all without it).
///
/// Errors: a name that is no program's (exit code 2, the message printed).
fn select_programs(
    args: &CheckArgs,
    mut programs: Vec<frontend::LoadedProgram>,
) -> Result<Vec<frontend::LoadedProgram>, ExitCode> {
    if args.programs.is_empty() {
        return Ok(programs);
    }
    if let Some(unknown) = args
        .programs
        .iter()
        .find(|want| !programs.iter().any(|p| program_names(p).contains(want)))
    {
        let known: Vec<String> = programs
            .iter()
            .filter_map(|p| program_names(p).into_iter().next())
            .collect();
        eprintln!(
            "racedar: error: --program {unknown}: no such program (the database has: {})",
            if known.is_empty() {
                "one program without a name".to_string()
            } else {
                known.join(", ")
            }
        );
        return Err(ExitCode::from(2));
    }
    programs.retain(|p| program_names(p).iter().any(|n| args.programs.contains(n)));
    Ok(programs)
}

/// Analyses each program; their reports, named by program when there are several
/// ([`Report::of_programs`] merges them). `print_stats`: `--stats` per program on stderr.
fn analyse_programs(
    programs: Vec<frontend::LoadedProgram>,
    opts: &AnalysisOptions,
    print_stats: bool,
) -> Vec<(Option<String>, Report)> {
    let several = programs.len() > 1;
    let mut reports = Vec::with_capacity(programs.len());
    for loaded in programs {
        let frontend::LoadedProgram {
            main_unit,
            library,
            mut program,
            stats,
        } = loaded;
        let mut run = RunStats::from_frontend(&stats, &program);
        let mut roles = opts.model.classify(&program);
        pipeline::prepare(&mut program, &mut roles, opts);
        let analysis = pipeline::analyse(&program, &roles, opts);
        run.phases.extend(analysis.phases.iter().cloned());
        run.peak_rss_mib = stats::peak_rss_bytes().map(|b| b as f64 / (1024.0 * 1024.0));
        if print_stats {
            eprint!("{}", run.render());
        }
        let name = if library {
            Some("library".to_string())
        } else {
            main_unit
        };
        reports.push((name.filter(|_| several), Report::build(&analysis, run)));
    }
    reports
}

/// The races and deadlocks of the program as it is at `rev` (`--diff-base`), as a baseline
/// ([`suppress::Baseline`]: fingerprints, and per race the keys of its accesses, so that a
/// race that gains an access, a write whose lock a change removed, say, is new although its
/// racing pair is the old one): analysed from a [`changes::Snapshot`] with the same options,
/// or read from the snapshot's cache of an earlier run with the same tree, options, inputs
/// and racedar. A program that does not load at `rev` (a syntax error then, say) has an
/// empty baseline: every race is new, and a warning says why.
///
/// Errors: git's (not a repository, an unknown revision), as one line.
fn baseline_at(
    args: &CheckArgs,
    opts: &AnalysisOptions,
    rev: &str,
) -> Result<suppress::Baseline, String> {
    use sha2::Digest as _;
    let cache = (!args.no_cache)
        .then(frontend::ppcache::cache_root)
        .flatten();
    let snap = changes::Snapshot::take(rev, cache.as_deref())?;
    // What the analysis of the snapshot depends on besides the tree.
    let mut h = sha2::Sha256::new();
    h.update(format!("{args:?}").as_bytes());
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    if let Ok(exe) = std::env::current_exe()
        && let Ok(m) = std::fs::metadata(exe)
    {
        h.update(format!("{}:{:?}", m.len(), m.modified().ok()).as_bytes());
    }
    for f in args.configs.iter().chain(args.compile_commands.iter()) {
        let f = if f.is_dir() {
            f.join("compile_commands.json")
        } else {
            f.clone()
        };
        h.update(std::fs::read(&f).unwrap_or_default());
    }
    let key = frontend::ppcache::hex(&h.finalize()[..12]);
    let stored = snap.dir.join(format!(".racedar-fingerprints-{key}.json"));
    if let Ok(text) = std::fs::read_to_string(&stored)
        && let Ok(base) = serde_json::from_str::<suppress::Baseline>(&text)
    {
        return Ok(base);
    }
    let programs = match load_programs(args, Some(&snap)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "racedar: warning: the program at {rev} does not load, every race is new: {e}"
            );
            return Ok(suppress::Baseline::default());
        }
    };
    let programs = select_programs(args, programs).unwrap_or_default();
    let report = Report::of_programs(analyse_programs(programs, opts, false));
    let mut base = suppress::Baseline::of(&report);
    base.fingerprints.extend(
        report
            .deadlocks
            .iter()
            .flatten()
            .map(|d| d.fingerprint.clone()),
    );
    if cache.is_some() {
        let _ = std::fs::write(&stored, base.to_json());
    }
    Ok(base)
}

/// The names `--program` accepts for a loaded program: its `main` unit's report name and that
/// file's stem, or `library` for the library part.
fn program_names(p: &frontend::LoadedProgram) -> Vec<String> {
    if p.library {
        return vec!["library".to_string()];
    }
    let Some(unit) = &p.main_unit else {
        return Vec::new();
    };
    let mut names = vec![unit.clone()];
    if let Some(stem) = Path::new(unit).file_stem().and_then(|s| s.to_str()) {
        names.push(stem.to_string());
    }
    names
}

/// The text report's options from the command line.
fn text_options(args: &CheckArgs) -> text::TextOptions {
    text::TextOptions {
        // A differential run shows every new race: there are few, and each is news.
        show: args
            .show
            .unwrap_or(if args.diff_base.is_some() {
                ShowArg::Possible
            } else {
                ShowArg::Likely
            })
            .tier(),
        max_notes: args.max_notes,
    }
}

fn dump_ir(args: &DumpArgs) -> ExitCode {
    let (mut program, _) = match load(&args.input, std::slice::from_ref(&args.file), None) {
        Ok(x) => x,
        Err(e) => return report_error(&e),
    };
    if args.unroll > 0 {
        let opts = AnalysisOptions {
            unroll: args.unroll,
            ..AnalysisOptions::default()
        };
        let mut roles = opts.model.classify(&program);
        pipeline::prepare(&mut program, &mut roles, &opts);
    }
    let text = pretty::print_program(
        &program,
        PrintOptions {
            all_files: args.all,
        },
    );
    let mut out = std::io::stdout().lock();
    if out.write_all(text.as_bytes()).is_err() {
        // Closed pipe (`racedar dump-ir f.c | head`): nothing more to say.
        return ExitCode::SUCCESS;
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let start = Instant::now();
    let cli = Arc::new(Cli::parse_from(gcc_style_args(std::env::args_os())));
    init_logging(cli.verbose);
    let (done, finished) = mpsc::channel();
    let worker_cli = Arc::clone(&cli);
    let worker = std::thread::Builder::new()
        .name("racedar".into())
        .stack_size(racedar::stack::STACK_BYTES)
        .spawn(move || {
            let code = match &worker_cli.command {
                Command::Check(a) => check(a),
                Command::DumpIr(a) => dump_ir(a),
            };
            let _ = done.send(());
            code
        });
    let worker = match worker {
        Ok(h) => h,
        Err(e) => {
            eprintln!("racedar: error: cannot start the analysis thread: {e}");
            return ExitCode::from(2);
        }
    };
    if let Command::Check(args) = &cli.command
        && (args.timeout.is_some() || args.max_memory.is_some())
    {
        watch(&finished, start, args);
    }
    let joined = worker.join();
    frontend::ppcache::finish_stores();
    match joined {
        Ok(code) => code,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
