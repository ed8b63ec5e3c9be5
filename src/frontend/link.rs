//! Programs of a compilation database (issue 21 item 1): a repository's database usually
//! holds several programs (a tool and its tests, each with its own `main`) and the library
//! units they share. Units that define `main` are programs; each program is its `main` unit
//! plus the units that define what it uses, found by external symbol as a linker resolves an
//! archive: repeatedly, every name a chosen unit uses and does not define pulls in the first
//! other non-`main` unit that defines it. Units no program pulls in form the *library part*.
//!
//! Symbols are read from the parsed AST: a unit *defines* the functions with a body and the
//! objects declared without `extern` (tentative definitions included), neither `static`; it
//! *uses* every identifier that occurs as an expression (calls, address-of, reads, in bodies
//! and initialisers). Member names and declarators are not uses; a local that shadows a
//! global counts as a use, which at worst links one unit too many (never one too few).

use lang_c::ast;
use lang_c::span::Span;
use lang_c::visit::{self, Visit};
use std::collections::BTreeSet;

/// The external symbols of one translation unit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnitSymbols {
    /// Names of functions and objects with external linkage defined here.
    pub defines: BTreeSet<String>,
    /// Identifiers used in expressions here.
    pub uses: BTreeSet<String>,
}

impl UnitSymbols {
    /// Whether the unit defines `main`: it is a program of its own.
    pub fn has_main(&self) -> bool {
        self.defines.contains("main")
    }
}

/// One program of a database: indices into the unit list, in database order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramUnits {
    /// The index of the unit defining `main` (`None`: the library part).
    pub main: Option<usize>,
    /// The units linked into the program, the `main` unit included, in database order.
    pub units: Vec<usize>,
}

/// The symbols of a parsed translation unit.
pub fn symbols(unit: &ast::TranslationUnit) -> UnitSymbols {
    let mut s = UnitSymbols::default();
    for ext in &unit.0 {
        match &ext.node {
            ast::ExternalDeclaration::FunctionDefinition(f) => {
                let f = &f.node;
                if !has_storage(&f.specifiers, |c| {
                    matches!(c, ast::StorageClassSpecifier::Static)
                }) && let Some(name) = declarator_name(&f.declarator.node)
                {
                    s.defines.insert(name);
                }
            }
            ast::ExternalDeclaration::Declaration(d) => {
                let d = &d.node;
                let internal_or_typedef = has_storage(&d.specifiers, |c| {
                    matches!(
                        c,
                        ast::StorageClassSpecifier::Static | ast::StorageClassSpecifier::Typedef
                    )
                });
                let is_extern = has_storage(&d.specifiers, |c| {
                    matches!(c, ast::StorageClassSpecifier::Extern)
                });
                if internal_or_typedef {
                    continue;
                }
                for init in &d.declarators {
                    let decl = &init.node.declarator.node;
                    // A prototype declares a function, it does not define one; an `extern`
                    // object is defined only when initialised.
                    if is_function_declarator(decl)
                        || (is_extern && init.node.initializer.is_none())
                    {
                        continue;
                    }
                    if let Some(name) = declarator_name(decl) {
                        s.defines.insert(name);
                    }
                }
            }
            ast::ExternalDeclaration::StaticAssert(_) => {}
        }
    }
    let mut uses = Uses(BTreeSet::new());
    uses.visit_translation_unit(unit);
    s.uses = uses.0;
    s
}

/// Groups units into programs. With at most one unit defining `main`, every unit forms one
/// program (the whole database, as before several programs were told apart). Otherwise each
/// `main` unit is a program with the units its symbols pull in, and the units no program
/// pulls in form one more program without `main` (the library part) when there are any.
pub fn programs(units: &[UnitSymbols]) -> Vec<ProgramUnits> {
    let mains: Vec<usize> = (0..units.len()).filter(|&i| units[i].has_main()).collect();
    if mains.len() <= 1 {
        return vec![ProgramUnits {
            main: mains.first().copied(),
            units: (0..units.len()).collect(),
        }];
    }
    let mut linked_anywhere = BTreeSet::new();
    let mut out = Vec::new();
    for &m in &mains {
        let mut chosen = BTreeSet::from([m]);
        let mut defined: BTreeSet<&str> = units[m].defines.iter().map(String::as_str).collect();
        let mut work = vec![m];
        while let Some(u) = work.pop() {
            for name in &units[u].uses {
                if defined.contains(name.as_str()) {
                    continue;
                }
                let Some(d) = (0..units.len())
                    .find(|&i| !units[i].has_main() && units[i].defines.contains(name))
                else {
                    continue; // the C library or an undefined symbol
                };
                if chosen.insert(d) {
                    defined.extend(units[d].defines.iter().map(String::as_str));
                    work.push(d);
                }
            }
        }
        linked_anywhere.extend(chosen.iter().copied());
        out.push(ProgramUnits {
            main: Some(m),
            units: chosen.into_iter().collect(),
        });
    }
    let library: Vec<usize> = (0..units.len())
        .filter(|i| !linked_anywhere.contains(i))
        .collect();
    if !library.is_empty() {
        out.push(ProgramUnits {
            main: None,
            units: library,
        });
    }
    out
}

/// Identifiers occurring as expressions.
struct Uses(BTreeSet<String>);

impl<'ast> Visit<'ast> for Uses {
    fn visit_expression(&mut self, e: &'ast ast::Expression, span: &'ast Span) {
        if let ast::Expression::Identifier(id) = e {
            self.0.insert(id.node.name.clone());
        }
        visit::visit_expression(self, e, span);
    }
}

fn has_storage(
    specs: &[lang_c::span::Node<ast::DeclarationSpecifier>],
    pred: impl Fn(&ast::StorageClassSpecifier) -> bool,
) -> bool {
    specs.iter().any(|s| match &s.node {
        ast::DeclarationSpecifier::StorageClass(c) => pred(&c.node),
        _ => false,
    })
}

/// The name a declarator declares (through parentheses).
fn declarator_name(d: &ast::Declarator) -> Option<String> {
    match &d.kind.node {
        ast::DeclaratorKind::Identifier(id) => Some(id.node.name.clone()),
        ast::DeclaratorKind::Declarator(inner) => declarator_name(&inner.node),
        ast::DeclaratorKind::Abstract => None,
    }
}

/// Whether the declarator declares a function (its innermost derivation is a parameter
/// list): `int f(void)`, `int *f(int)`, but not `int (*fp)(void)`.
fn is_function_declarator(d: &ast::Declarator) -> bool {
    match &d.kind.node {
        ast::DeclaratorKind::Declarator(inner) => is_function_declarator(&inner.node),
        _ => d.derived.first().is_some_and(|x| {
            matches!(
                x.node,
                ast::DerivedDeclarator::Function(_) | ast::DerivedDeclarator::KRFunction(_)
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syms(src: &str) -> UnitSymbols {
        let mut files = crate::frontend::source_map::FileTable::default();
        let p = crate::frontend::parse::parse("t.c", src.to_string(), &mut files).expect("parses");
        symbols(&p.unit)
    }

    #[test]
    fn definitions_and_uses() {
        let s = syms(
            "extern int shared; int counter; static int hidden; int init = 1;\n\
             int api(int); typedef int T; int (*hook)(void);\n\
             static void local(void) {}\n\
             int api(int x) { struct { int counter; } s; s.counter = helper(x); return shared + s.counter; }\n",
        );
        let d: Vec<&str> = s.defines.iter().map(String::as_str).collect();
        assert_eq!(d, ["api", "counter", "hook", "init"]);
        assert!(s.uses.contains("helper") && s.uses.contains("shared"));
        assert!(!s.uses.contains("counter"), "a member name is not a use");
    }

    fn unit(defines: &[&str], uses: &[&str]) -> UnitSymbols {
        UnitSymbols {
            defines: defines.iter().map(|s| s.to_string()).collect(),
            uses: uses.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn each_main_links_what_it_uses() {
        let units = [
            unit(&["main", "helper"], &["lib_run", "helper"]),
            unit(&["main", "helper"], &["lib_get"]),
            unit(&["lib_run", "lib_get"], &["util"]),
            unit(&["util"], &[]),
            unit(&["unused_api"], &[]),
        ];
        let p = programs(&units);
        assert_eq!(
            p,
            [
                ProgramUnits {
                    main: Some(0),
                    units: vec![0, 2, 3]
                },
                ProgramUnits {
                    main: Some(1),
                    units: vec![1, 2, 3]
                },
                ProgramUnits {
                    main: None,
                    units: vec![4]
                },
            ]
        );
    }

    #[test]
    fn one_main_keeps_every_unit() {
        let units = [unit(&["main"], &[]), unit(&["other"], &[])];
        assert_eq!(
            programs(&units),
            [ProgramUnits {
                main: Some(0),
                units: vec![0, 1]
            }]
        );
    }
}
