//! The library specification: what a library function without a body does to the memory its
//! pointer arguments reach, what pointer it returns, and how it runs the callbacks it is given
//! (DESIGN.md, "model"; issue "Real programs", item 2).
//!
//! A `[[function]]` entry with `role = "library"` (the older spelling `role = "access"` still
//! parses) describes one or more functions. Argument positions count from 0:
//!
//! ```toml
//! [[function]]
//! names = ["getaddrinfo"]
//! role = "library"
//! reads = [0, 1, 2]                 # the objects these arguments point to are read
//! writes = [3]                      # ... written
//! bytes = { 0 = "string", 1 = "string", 2 = "pointee" }
//! stores = { 3 = "fresh" }          # *arg3 receives the address of a new object
//! ```
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `reads`, `writes` | argument list | the objects those pointer arguments point to are read / written |
//! | `reads-from`, `writes-from` | argument | the same for that argument and every later one (variadic) |
//! | `bytes` | table argument → size | how many bytes of the object: `"rest"` (default: from the pointer to the end of its object), `"string"` (a NUL-terminated string, as many bytes as `rest`), `"pointee"` (one object of the argument's pointed-to type), `"argN"` (argument N bytes), `"argN*argM"` (their product) |
//! | `copies` | table destination → source | the destination object receives the contents (pointers included) of the source object (`memcpy`) |
//! | `stores` | table argument → pointer | the pointers the function stores into the object `argK` points to: every pointer field of it (`*argK` itself for a pointer to a pointer) receives a pointer of that kind (see `returns`; `"unknown"` for pointers the library hands back from an earlier call, as `epoll_wait`'s `data.ptr`) |
//! | `returns` | pointer | what a returned pointer points to: `"fresh"` (a new object, one abstract object per call site, like `malloc`), `"thread-static"` (a buffer of the calling thread, treated as fresh), `"static"` (one hidden object all threads share), `"argN"` (into the object argument N points to), `"unknown"` (default: any object other code may reach) |
//! | `keeps` | argument list | the function keeps these pointers after it returns (the objects become reachable by code the analysis does not see, from any thread) |
//! | `frees` | argument list | the objects these arguments point to are freed (a write of the whole object) |
//! | `format` | argument | a `printf`-style format string: the later arguments are dereferenced only for `%s` (read) and `%n` (written); a format that is not a literal reads every later pointer |
//! | `callbacks` | list of tables | functions the call receives and runs (below) |
//! | `drives` | list of registry names | the call runs the `later` callbacks registered with those registries (`exit` drives the registry `exit` of `atexit`) |
//! | `spawns` | list of registry names | the call runs those registries' `later` callbacks in new threads, any number of them at once, and returns only after all of them have ended (FUSE's multithreaded loop joins its workers) |
//! | `fill` | `"zero"` or `"argN"` | every written byte holds that byte value (`memset`, `bzero`): pointer fields of a zero fill are null, not pointers the library made up |
//! | `noreturn` | bool | the function never returns (`exit`) |
//! | `fork` | bool | the function creates a process and returns 0 in the child, whose only thread is the caller (`fork`): what the child does races with nothing of the parent |
//! | `environment` | bool | the result and the written bytes come from the environment (the system, the user, files, the network), so any value is one some environment gives: the concrete interpreter runs the call with zero bytes and a zero or null result (`getuid`, `gethostname`, `socket`); never for a function its arguments determine (`strtol`, `sqrt`) |
//! | `hidden` | `"read"`, `"write"`, `"read-write"` | the call reads / writes the function's hidden state, the object `returns = "static"` points to (`localtime` writes it, `getenv` reads it; `role = "thread-unsafe"` is `"read-write"`) |
//!
//! A callback is `{ arg = K, runs = "...", params = [...], registry = "...", deep = bool,
//! first = [...] }`: argument K is the function (with `deep = true`: a function pointer stored
//! in the object argument K points to, as `sigaction`'s `struct sigaction`), and `runs` says
//! when it runs (`first`: members of that object whose functions run once, before the
//! registry's other callbacks, in the thread of the driving or spawning call, as FUSE's
//! `init`):
//!
//! | `runs` | the callback runs |
//! |---|---|
//! | `sync` | during the call, in the calling thread (`qsort`, `bsearch`, `pcap_dispatch`) |
//! | `thread` | in a new thread (a spawn, as `pthread_create`) |
//! | `signal` | asynchronously as a signal handler, in any thread, after the registration |
//! | `exit` | at exit: in the thread that calls `exit` or returns from `main` (`atexit`) |
//! | `later` | from a later call that `drives` its `registry`, in that call's thread (GLUT, curl, pulseaudio); with no such call in the program, at the registration |
//!
//! `params` gives, per parameter of the callback, the value it receives: `"argN"` (argument
//! N's value; a pointer argument passes a pointer into the same object at any offset, as
//! `qsort` passes its comparator pointers into the array), `"fresh"` (a new object, like a
//! packet buffer the library allocated) or `"unknown"` (the default).
//!
//! A function the specification does not describe (and no role covers) is *unknown*: it reads
//! the objects its `const` pointer parameters point to and writes the others, may keep every
//! pointer it receives, returns an unknown pointer, and runs the callbacks it receives during
//! the call; each of these adds an imprecision that blocks a `no-race` verdict.
//!
//! Sources: Goblint's library function specification (`src/util/library/libraryFunctions.ml`,
//! which argument each function reads, writes, frees, keeps or spawns), written in our own
//! format; POSIX.1-2017 and the libraries' documentation for the facts.

use serde::Deserialize;
use std::collections::BTreeMap;

/// How many bytes of the object a pointer argument points to a library function accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Bytes {
    /// From the pointed-to byte to the end of its object (also a NUL-terminated string).
    #[default]
    Rest,
    /// One object of the argument's pointed-to type.
    Pointee,
    /// As many bytes as the value of this argument.
    Arg(usize),
    /// As many bytes as the product of these two arguments' values (`fread`).
    Product(usize, usize),
}

impl TryFrom<String> for Bytes {
    type Error = String;

    fn try_from(s: String) -> Result<Bytes, String> {
        let arg = |t: &str| {
            t.trim()
                .strip_prefix("arg")
                .and_then(|n| n.parse::<usize>().ok())
        };
        match s.trim() {
            "rest" | "string" => Ok(Bytes::Rest),
            "pointee" => Ok(Bytes::Pointee),
            t => {
                if let Some((a, b)) = t.split_once('*')
                    && let (Some(a), Some(b)) = (arg(a), arg(b))
                {
                    return Ok(Bytes::Product(a, b));
                }
                arg(t).map(Bytes::Arg).ok_or_else(|| {
                    format!(
                        "invalid byte count '{s}' (expected rest, string, pointee, argN or \
                         argN*argM)"
                    )
                })
            }
        }
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Bytes::try_from(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// What a pointer a library function returns (or stores) points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Pointer {
    /// Any object other code may reach.
    #[default]
    Unknown,
    /// A new object (one abstract object per call site, like `malloc`'s).
    Fresh,
    /// A buffer of the calling thread (glibc's `inet_ntoa`, `strerror`): analysed as fresh.
    ThreadStatic,
    /// One hidden object all threads share (`localtime`, `getpwnam`).
    Static,
    /// A pointer into the object this argument points to (`strchr`, `fgets`).
    Arg(usize),
}

impl TryFrom<String> for Pointer {
    type Error = String;

    fn try_from(s: String) -> Result<Pointer, String> {
        match s.trim() {
            "unknown" => Ok(Pointer::Unknown),
            "fresh" => Ok(Pointer::Fresh),
            "thread-static" => Ok(Pointer::ThreadStatic),
            "static" => Ok(Pointer::Static),
            t => t
                .strip_prefix("arg")
                .and_then(|n| n.parse::<usize>().ok())
                .map(Pointer::Arg)
                .ok_or_else(|| {
                    format!(
                        "invalid pointer kind '{s}' (expected unknown, fresh, thread-static, \
                         static or argN)"
                    )
                }),
        }
    }
}

/// The byte value a library function writes into every byte it writes (`fill`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fill {
    /// Zero bytes (`bzero`).
    Zero,
    /// The low byte of argument N (`memset`'s `c`).
    Arg(usize),
}

impl TryFrom<String> for Fill {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if s == "zero" {
            return Ok(Fill::Zero);
        }
        s.strip_prefix("arg")
            .and_then(|n| n.parse::<usize>().ok())
            .map(Fill::Arg)
            .ok_or_else(|| format!("invalid fill '{s}' (expected zero or argN)"))
    }
}

impl<'de> Deserialize<'de> for Fill {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Fill::try_from(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Pointer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Pointer::try_from(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// When a callback a library function receives runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runs {
    /// During the call, in the calling thread.
    Sync,
    /// In a new thread.
    Thread,
    /// Asynchronously, as a signal handler, in any thread, after the registration.
    Signal,
    /// At exit, in the thread that calls `exit` or returns from `main`.
    Exit,
    /// From a later call that drives its registry, in that call's thread.
    Later,
}

/// The value a callback parameter receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Param {
    /// Unknown.
    #[default]
    Unknown,
    /// The value of this argument of the registering call (a pointer: into the same object,
    /// at any offset).
    Arg(usize),
    /// A new object.
    Fresh,
}

impl TryFrom<String> for Param {
    type Error = String;

    fn try_from(s: String) -> Result<Param, String> {
        match s.trim() {
            "unknown" => Ok(Param::Unknown),
            "fresh" => Ok(Param::Fresh),
            t => t
                .strip_prefix("arg")
                .and_then(|n| n.parse::<usize>().ok())
                .map(Param::Arg)
                .ok_or_else(|| {
                    format!("invalid callback parameter '{s}' (expected unknown, fresh or argN)")
                }),
        }
    }
}

impl<'de> Deserialize<'de> for Param {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Param::try_from(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A callback a library function receives.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Callback {
    /// The argument holding the function (or, with `deep`, pointing to an object holding it).
    pub arg: usize,
    /// When it runs.
    pub runs: Runs,
    /// The function pointer is stored in the object the argument points to.
    #[serde(default)]
    pub deep: bool,
    /// What each of its parameters receives (missing ones: unknown).
    #[serde(default)]
    pub params: Vec<Param>,
    /// For [`Runs::Later`]: the registry whose driving calls run it.
    #[serde(default)]
    pub registry: Option<String>,
    /// For a `deep` [`Runs::Later`] callback: members of the pointed struct whose functions
    /// run once, before the registry's other callbacks, in the thread of the call that drives
    /// or spawns the registry (FUSE's `init`, answered before any other request).
    #[serde(default)]
    pub first: Vec<String>,
    /// For a `deep` [`Runs::Later`] callback: members of the pointed struct whose functions
    /// run once, after the registry's other callbacks, in the thread of the call that drives
    /// or spawns the registry, before that call returns (FUSE's `destroy`, called when the
    /// session ends).
    #[serde(default)]
    pub last: Vec<String>,
}

/// Argument-keyed tables of the TOML format (`{ 0 = "arg2" }`): keys are argument positions.
type ArgTable<T> = BTreeMap<String, T>;

/// What a library function does (the `library` role). See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LibSpec {
    /// Arguments whose pointed objects are read.
    #[serde(default)]
    pub reads: Vec<usize>,
    /// Arguments whose pointed objects are written.
    #[serde(default)]
    pub writes: Vec<usize>,
    /// This argument and every later one point to objects that are read.
    #[serde(default)]
    pub reads_from: Option<usize>,
    /// This argument and every later one point to objects that are written.
    #[serde(default)]
    pub writes_from: Option<usize>,
    /// How many bytes of each argument's object are accessed (default [`Bytes::Rest`]).
    #[serde(default)]
    bytes: ArgTable<Bytes>,
    /// Destination argument → source argument of a copy of contents.
    #[serde(default)]
    copies: ArgTable<usize>,
    /// The pointer stored into `*argK`.
    #[serde(default)]
    stores: ArgTable<Pointer>,
    /// What a returned pointer points to.
    #[serde(default)]
    pub returns: Pointer,
    /// Arguments whose pointer the function keeps after it returns.
    #[serde(default)]
    pub keeps: Vec<usize>,
    /// Arguments whose objects are freed.
    #[serde(default)]
    pub frees: Vec<usize>,
    /// The argument holding a `printf`-style format string.
    #[serde(default)]
    pub format: Option<usize>,
    /// Callbacks it runs.
    #[serde(default)]
    pub callbacks: Vec<Callback>,
    /// Registries whose `later` callbacks it runs.
    #[serde(default)]
    pub drives: Vec<String>,
    /// Registries whose `later` callbacks it runs in new threads, any number of them at once,
    /// all of which have ended when the call returns (FUSE's multithreaded loop joins its
    /// workers; threads the callbacks create may outlive it).
    #[serde(default)]
    pub spawns: Vec<String>,
    /// The byte value every written byte holds (`memset`, `bzero`).
    #[serde(default)]
    pub fill: Option<Fill>,
    /// It never returns (`exit`).
    #[serde(default)]
    pub noreturn: bool,
    /// How the call touches the function's own hidden state (one object all threads share,
    /// the one `returns = "static"` points to): read, written, or both (`thread-unsafe`).
    #[serde(default)]
    pub hidden: Option<Hidden>,
    /// It creates a process (`fork`): it returns 0 in a child process whose only thread is
    /// the caller (what the child does races with nothing of the parent).
    #[serde(default)]
    pub fork: bool,
    /// Its result and the bytes it writes come from the environment (the system, the user,
    /// files, the network), not from its arguments alone: any value of their types is one
    /// some environment gives (0 from `getuid`, an empty name from `gethostname`). The
    /// concrete interpreter then runs the call with zero bytes and a zero or null result
    /// (issue "Soundness and recall on real code", item 5). Never set for a function whose
    /// result its arguments determine (`strtol`, `__builtin_bswap32`, `sqrt`).
    #[serde(default)]
    pub environment: bool,
}

/// How a call touches its function's hidden state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hidden {
    /// Read (`getenv`).
    Read,
    /// Written (`localtime` fills its static `struct tm`).
    Write,
    /// Read and written (the `thread-unsafe` role).
    ReadWrite,
}

/// An argument-keyed table entry's position, if the key is a number.
fn arg_key(k: &str) -> Option<usize> {
    k.trim().parse().ok()
}

impl LibSpec {
    /// Checks what serde cannot: table keys are argument positions, `later` callbacks name a
    /// registry.
    ///
    /// Errors: a message naming the offending key.
    pub fn validate(&self) -> Result<(), String> {
        let keys = self
            .bytes
            .keys()
            .chain(self.copies.keys())
            .chain(self.stores.keys());
        for k in keys {
            if arg_key(k).is_none() {
                return Err(format!("'{k}' is not an argument position"));
            }
        }
        for c in &self.callbacks {
            if c.runs == Runs::Later && c.registry.is_none() {
                return Err(format!(
                    "the callback at argument {} runs later but names no registry",
                    c.arg
                ));
            }
        }
        Ok(())
    }

    /// How many bytes of argument `i`'s object are accessed.
    pub fn bytes(&self, i: usize) -> Bytes {
        self.bytes
            .iter()
            .find(|(k, _)| arg_key(k) == Some(i))
            .map(|(_, b)| *b)
            .unwrap_or_default()
    }

    /// The (destination, source) argument pairs of copied contents.
    pub fn copies(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.copies
            .iter()
            .filter_map(|(k, s)| Some((arg_key(k)?, *s)))
    }

    /// The (argument, pointer) pairs of pointers stored through arguments.
    pub fn stores(&self) -> impl Iterator<Item = (usize, Pointer)> + '_ {
        self.stores
            .iter()
            .filter_map(|(k, p)| Some((arg_key(k)?, *p)))
    }

    /// The arguments (among `n`) whose objects are read, and those written (frees included).
    pub fn read_written(&self, n: usize) -> (Vec<usize>, Vec<usize>) {
        let mut r = self.reads.clone();
        let mut w = self.writes.clone();
        w.extend(self.frees.iter().copied());
        if let Some(f) = self.reads_from {
            r.extend(f..n);
        }
        if let Some(f) = self.writes_from {
            w.extend(f..n);
        }
        r.sort_unstable();
        r.dedup();
        w.sort_unstable();
        w.dedup();
        (r, w)
    }

    /// Whether the function keeps argument `i`'s pointer.
    pub fn keeps(&self, i: usize) -> bool {
        self.keeps.contains(&i)
    }
}

/// The pointer arguments a `printf`-style format string dereferences: for each argument after
/// the format, in order, `Some(true)` for `%n` (written), `Some(false)` for `%s` (read) and
/// `None` for a conversion that takes the value itself. `*` widths and precisions take an
/// argument of their own. ISO C11 §7.21.6.1.
pub fn format_derefs(format: &[u8]) -> Vec<Option<bool>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < format.len() {
        if format[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if format.get(i) == Some(&b'%') {
            i += 1;
            continue;
        }
        // Flags, width, precision, length modifiers, then the conversion.
        while let Some(&c) = format.get(i) {
            match c {
                b'*' => {
                    out.push(None);
                    i += 1;
                }
                b'-'
                | b'+'
                | b' '
                | b'#'
                | b'0'..=b'9'
                | b'.'
                | b'\''
                | b'$'
                | b'h'
                | b'l'
                | b'L'
                | b'q'
                | b'j'
                | b'z'
                | b'Z'
                | b't'
                | b'I' => i += 1,
                b's' | b'S' => {
                    out.push(Some(false));
                    i += 1;
                    break;
                }
                b'n' => {
                    out.push(Some(true));
                    i += 1;
                    break;
                }
                _ => {
                    out.push(None);
                    i += 1;
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_pointers_and_params_parse() {
        assert_eq!(Bytes::try_from("arg2".to_string()), Ok(Bytes::Arg(2)));
        assert_eq!(
            Bytes::try_from("arg1*arg2".to_string()),
            Ok(Bytes::Product(1, 2))
        );
        assert_eq!(Bytes::try_from("string".to_string()), Ok(Bytes::Rest));
        assert!(Bytes::try_from("lots".to_string()).is_err());
        assert_eq!(Pointer::try_from("arg0".to_string()), Ok(Pointer::Arg(0)));
        assert_eq!(
            Pointer::try_from("thread-static".to_string()),
            Ok(Pointer::ThreadStatic)
        );
        assert!(Pointer::try_from("heap".to_string()).is_err());
        assert_eq!(Param::try_from("arg3".to_string()), Ok(Param::Arg(3)));
    }

    #[test]
    fn format_strings_say_which_arguments_are_dereferenced() {
        assert_eq!(
            format_derefs(b"%ld %s %5.2f %n %% %*d %p"),
            vec![None, Some(false), None, Some(true), None, None, None]
        );
        assert_eq!(format_derefs(b"plain"), Vec::<Option<bool>>::new());
    }
}
