//! The front end: C source files to one [`Program`].
//!
//! Per translation unit: [`preprocess`] (the C preprocessor: in-process, [`cpp`], or the
//! system one; line markers kept),
//! [`compat`] rewriting of GNU extensions lang-c cannot parse, [`parse`] with lang-c,
//! [`source_map`] from byte offsets back to original file/line/column, and [`lower`] to the IR
//! with types and layouts ([`layout`]) for the chosen data model. Units are linked into one
//! program by name as they are lowered.
//!
//! Errors are [`FrontendError`]s: one line `file:line[:col]: error: message`, exit code 2.

pub mod compat;
pub mod compdb;
pub mod cpp;
pub mod driver;
pub mod error;
pub mod layout;
pub mod link;
pub mod lower;
pub mod parse;
pub mod ppcache;
pub mod preprocess;
mod prune;
pub mod source_map;

pub use error::{ErrorKind, FrontendError};
pub use preprocess::PreprocessOptions;

use crate::ir::{DataModel, Program};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Input options shared by every command.
#[derive(Clone, Debug, Default)]
pub struct FrontendOptions {
    /// How to run the preprocessor.
    pub preprocess: PreprocessOptions,
    /// Sizes of `int`, `long` and pointers.
    pub data_model: DataModel,
}

/// Time spent in each front-end phase, summed over translation units.
#[derive(Clone, Copy, Debug, Default)]
pub struct FrontendStats {
    /// Running the preprocessor (or reading `.i` files).
    pub preprocess: Duration,
    /// Compatibility rewriting and parsing.
    pub parse: Duration,
    /// Lowering to the IR (including freeing the AST).
    pub lower: Duration,
    /// Bytes of preprocessed text.
    pub preprocessed_bytes: usize,
    /// Number of translation units.
    pub units: usize,
}

/// Preprocesses, parses and lowers `paths` (each a translation unit) into one program.
///
/// Errors: the first [`FrontendError`] of any unit (unreadable file, binary input,
/// preprocessor failure, syntax error, invalid C).
pub fn load(
    paths: &[PathBuf],
    opts: &FrontendOptions,
) -> Result<(Program, FrontendStats), FrontendError> {
    load_cached(paths, opts, None)
}

/// [`load`], reusing preprocessed `.c` files from the cache directory `cache` while the source
/// and every file it includes are unchanged, and storing them there (see [`ppcache`]; the
/// caller waits for the stores with [`ppcache::finish_stores`] before the process ends).
///
/// Errors: as [`load`].
pub fn load_cached(
    paths: &[PathBuf],
    opts: &FrontendOptions,
    cache: Option<&std::path::Path>,
) -> Result<(Program, FrontendStats), FrontendError> {
    let mut pb = lower::ProgramBuilder::new(opts.data_model);
    let mut stats = FrontendStats::default();
    for path in paths {
        let t0 = Instant::now();
        let unit = compdb::Unit {
            path: path.clone(),
            name: path.display().to_string(),
            preprocess: opts.preprocess.clone(),
        };
        // `.i` files are only read: nothing to cache.
        let cache = cache.filter(|_| !preprocess::is_preprocessed(path));
        let pp = preprocess_unit(&unit, cache, true)?;
        stats.preprocess += t0.elapsed();
        lower_preprocessed(&mut pb, pp, &mut stats)?;
    }
    Ok((pb.finish(), stats))
}

/// One program of a compilation database ([`link`]).
#[derive(Debug)]
pub struct LoadedProgram {
    /// The name of the unit defining `main` as reports name files (`None`: the database's
    /// only program when it has at most one `main`, or its library part when it has several).
    pub main_unit: Option<String>,
    /// Whether this is the library part of a database with several programs.
    pub library: bool,
    /// The lowered program.
    pub program: Program,
    /// Front-end statistics (preprocessing counts once, in the first program).
    pub stats: FrontendStats,
}

/// Loads the translation units of a compilation database as one program: each unit is
/// preprocessed with its own options and directory, in parallel, then parsed and lowered in
/// order (externals linked by name, `static` objects per unit).
///
/// With `cache`, preprocessed units are reused from that directory while the source and every
/// file it includes are unchanged (see [`ppcache`]).
///
/// Errors: as [`load`], for the first failing unit in database order.
pub fn load_units(
    units: &[compdb::Unit],
    data_model: DataModel,
    cache: Option<&std::path::Path>,
) -> Result<(Program, FrontendStats), FrontendError> {
    let (parsed, mut stats, files) = parse_units(units, cache)?;
    let all: Vec<usize> = (0..parsed.len()).collect();
    let program = lower_program(&parsed, &all, &files, data_model, &mut stats)?;
    Ok((program, stats))
}

/// Loads a compilation database as its programs ([`link::programs`]): with at most one unit
/// defining `main`, one program of every unit (as [`load_units`]); otherwise one program per
/// `main` unit with the units it links, and the library part when some unit is in no program.
/// Definitions that conflict between programs (each test program's own helper) are no error.
///
/// Errors: as [`load_units`] (preprocessing or parsing any unit; lowering a program).
pub fn load_programs(
    units: &[compdb::Unit],
    data_model: DataModel,
    cache: Option<&std::path::Path>,
) -> Result<Vec<LoadedProgram>, FrontendError> {
    let (parsed, mut stats, files) = parse_units(units, cache)?;
    let symbols: Vec<link::UnitSymbols> =
        parsed.iter().map(|(p, _)| link::symbols(&p.unit)).collect();
    let groups = link::programs(&symbols);
    let several = groups.len() > 1;
    let mut out = Vec::with_capacity(groups.len());
    for g in groups {
        let mut st = std::mem::take(&mut stats);
        let program = lower_program(&parsed, &g.units, &files, data_model, &mut st)?;
        out.push(LoadedProgram {
            main_unit: g.main.filter(|_| several).map(|m| units[m].name.clone()),
            library: g.main.is_none() && several,
            program,
            stats: st,
        });
    }
    Ok(out)
}

/// A parsed unit and the id of its main file.
type ParsedWithMain = (parse::ParsedUnit, crate::ir::FileId);

/// Preprocesses (in parallel, through the cache) and parses every unit; returns the parsed
/// units with their main file's id, the statistics and the file table their ids refer to.
///
/// Errors: the first failing unit in database order.
fn parse_units(
    units: &[compdb::Unit],
    cache: Option<&std::path::Path>,
) -> Result<(Vec<ParsedWithMain>, FrontendStats, source_map::FileTable), FrontendError> {
    use rayon::prelude::*;
    use std::io::IsTerminal as _;
    let t0 = Instant::now();
    // A progress bar only for people: a terminal, several units, not under CI.
    let bar =
        (units.len() > 4 && std::io::stderr().is_terminal() && std::env::var_os("CI").is_none())
            .then(|| {
                let b = indicatif::ProgressBar::new(units.len() as u64);
                b.set_message("preprocessing");
                b
            });
    let pre: Vec<Result<preprocess::Preprocessed, FrontendError>> = units
        .par_iter()
        .map(|u| {
            let mut pp = preprocess_unit(u, cache, false)?;
            pp.text = compdb::rename_markers(&pp.text, u.preprocess.cwd.as_deref());
            if let Some(b) = &bar {
                b.inc(1);
            }
            Ok(pp)
        })
        .collect();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut stats = FrontendStats {
        preprocess: t0.elapsed(),
        ..FrontendStats::default()
    };
    let mut files = source_map::FileTable::default();
    let mut parsed = Vec::with_capacity(pre.len());
    for pp in pre {
        let pp = pp?;
        let t1 = Instant::now();
        stats.preprocessed_bytes += pp.text.len();
        let main = files.intern(&pp.path);
        let p = parse::parse(&pp.path, pp.text, &mut files)?;
        stats.parse += t1.elapsed();
        parsed.push((p, main));
    }
    Ok((parsed, stats, files))
}

/// Lowers the parsed units `which` into one program.
///
/// Errors: the lowering's first [`FrontendError`] (invalid C, a redefinition).
fn lower_program(
    parsed: &[ParsedWithMain],
    which: &[usize],
    files: &source_map::FileTable,
    data_model: DataModel,
    stats: &mut FrontendStats,
) -> Result<Program, FrontendError> {
    let mut pb = lower::ProgramBuilder::new(data_model);
    pb.files = files.clone();
    for &i in which {
        let Some((p, main)) = parsed.get(i) else {
            continue;
        };
        let t = Instant::now();
        pb.lower_unit(p, *main)?;
        stats.lower += t.elapsed();
        stats.units += 1;
    }
    Ok(pb.finish())
}

/// Preprocesses `u`, or takes it from the cache in `cache` (see [`ppcache`]) and stores it
/// there after a miss: on a background thread when `background` (the caller then waits with
/// [`ppcache::finish_stores`]), else before returning.
///
/// Errors: as [`preprocess::preprocess_named`].
fn preprocess_unit(
    u: &compdb::Unit,
    cache: Option<&std::path::Path>,
    background: bool,
) -> Result<preprocess::Preprocessed, FrontendError> {
    if let Some(pp) = cache.and_then(|d| ppcache::lookup(d, u)) {
        return Ok(pp);
    }
    let pp = preprocess::preprocess_named(&u.path, &u.name, &u.preprocess)?;
    match cache {
        Some(d) if background => ppcache::store_in_background(d, u, &pp),
        Some(d) => ppcache::store(d, u, &pp),
        None => {}
    }
    Ok(pp)
}

/// Parses and lowers one preprocessed unit into the program, counting its size and times.
fn lower_preprocessed(
    pb: &mut lower::ProgramBuilder,
    pp: preprocess::Preprocessed,
    stats: &mut FrontendStats,
) -> Result<(), FrontendError> {
    let t1 = Instant::now();
    stats.preprocessed_bytes += pp.text.len();
    let main = pb.files.intern(&pp.path);
    let parsed = parse::parse(&pp.path, pp.text, &mut pb.files)?;
    let t2 = Instant::now();
    pb.lower_unit(&parsed, main)?;
    stats.parse += t2 - t1;
    stats.lower += t2.elapsed();
    stats.units += 1;
    Ok(())
}

/// Parses and lowers already preprocessed C text named `name` (no preprocessor runs). Used by
/// tests and fuzzing.
///
/// Errors: as [`load`], minus the preprocessing ones.
pub fn load_preprocessed(
    name: &str,
    text: String,
    data_model: DataModel,
) -> Result<Program, FrontendError> {
    let mut pb = lower::ProgramBuilder::new(data_model);
    let main = pb.files.intern(name);
    let parsed = parse::parse(name, text, &mut pb.files)?;
    pb.lower_unit(&parsed, main)?;
    Ok(pb.finish())
}
