//! Tidy checks: repository-wide conventions that no compiler enforces.
//!
//! Each check is a function from the repository root to the list of every
//! problem it found (a path, or `path:line`, and what is wrong), so one run
//! shows everything to fix. `cargo run -p xtask -- tidy` runs them all; each
//! is also a `#[test]` below, so `cargo test --workspace` runs them too.
//!
//! The checks read files only; they never change anything.

use std::fs;
use std::path::{Path, PathBuf};

/// A named tidy check.
pub struct Check {
    pub name: &'static str,
    pub run: fn(&Path) -> Vec<String>,
}

/// Every tidy check, in the order `cargo run -p xtask -- tidy` runs them.
pub const CHECKS: [Check; 4] = [
    Check {
        name: "every Rust file starts with a //! module doc",
        run: check_module_docs,
    },
    Check {
        name: "every path named in ARCHITECTURE.md exists",
        run: check_architecture_paths,
    },
    Check {
        name: "sans-IO crates do no I/O and use no randomness",
        run: check_sans_io,
    },
    Check {
        name: "no todo!() or unimplemented!() in crates/*/src",
        run: check_no_todo,
    },
];

/// Crates that must stay deterministic and free of I/O: they take the time
/// and every input as arguments, so the simulator can drive them.
pub const SANS_IO_CRATES: [&str; 9] = [
    "mysql-protocol",
    "disk",
    "schema",
    "storage",
    "config",
    "protocol",
    "cluster",
    "transaction",
    "node",
];

/// Text that betrays clocks, randomness or an I/O runtime in Rust source.
const SANS_IO_FORBIDDEN_SOURCE: [&str; 7] = [
    "Instant::now",
    "SystemTime",
    "rand::",
    "getrandom",
    "tokio",
    "mio",
    // The randomly seeded hasher of std's maps: iteration order, and so
    // anything that iterates, changes from run to run.
    "RandomState",
];

/// Modules of `std` that do I/O, start threads or read the process's
/// surroundings, however they are reached: `std::io::stdin()`,
/// `use std::{fs, io::Write}`, or a `use std::{` group over several lines.
const SANS_IO_FORBIDDEN_STD_MODULES: [&str; 7] =
    ["net", "fs", "thread", "io", "env", "process", "os"];

/// std's maps and sets, whose default hasher is `RandomState`.
const RANDOMLY_SEEDED_COLLECTIONS: [(&str, usize); 2] = [("HashMap", 2), ("HashSet", 1)];

/// Constructors that exist only for the default hasher.
const DEFAULT_HASHER_CONSTRUCTORS: [&str; 4] = ["new(", "with_capacity(", "from(", "from_iter("];

/// Packages a sans-IO crate must not depend on (tests may, through
/// dev-dependencies).
const SANS_IO_FORBIDDEN_DEPENDENCIES: [&str; 5] = ["rand", "getrandom", "tokio", "mio", "socket2"];

/// Placeholders that must not reach the main branch.
const PLACEHOLDERS: [&str; 2] = ["todo!(", "unimplemented!("];

/// The repository root: the parent of the xtask crate.
pub fn repository_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .expect("xtask lives one level below the repository root")
        .to_path_buf()
}

/// Every `.rs` file under crates/*/{src,tests,benches} and xtask/src must
/// begin, after optional blank lines, with a `//!` doc saying what it is.
pub fn check_module_docs(root: &Path) -> Vec<String> {
    let mut directories = Vec::new();
    for crate_dir in crate_directories(root) {
        for sub in ["src", "tests", "benches"] {
            directories.push(crate_dir.join(sub));
        }
    }
    directories.push(root.join("xtask").join("src"));

    let mut problems = Vec::new();
    for directory in directories {
        for file in rust_files(&directory) {
            let text = match fs::read_to_string(&file) {
                Ok(text) => text,
                Err(error) => {
                    problems.push(format!("{}: cannot read: {error}", relative(root, &file)));
                    continue;
                }
            };
            let first_line = text.lines().find(|line| !line.trim().is_empty());
            if !first_line.is_some_and(|line| line.starts_with("//!")) {
                problems.push(format!(
                    "{}: does not start with a `//!` doc comment saying what the file is for",
                    relative(root, &file)
                ));
            }
        }
    }
    problems
}

/// Every backticked path in ARCHITECTURE.md must exist, relative to the
/// repository root, so the code map never points at something gone.
pub fn check_architecture_paths(root: &Path) -> Vec<String> {
    let architecture = root.join("ARCHITECTURE.md");
    let text = match fs::read_to_string(&architecture) {
        Ok(text) => text,
        Err(error) => {
            return vec![format!(
                "ARCHITECTURE.md: cannot read it ({error}); the repository root must have one \
                 (bird's-eye view and code map, see STYLE.md)"
            )];
        }
    };
    let mut problems = Vec::new();
    for (line_number, path) in architecture_paths(&text) {
        if !path_exists(root, &path) {
            problems.push(format!(
                "ARCHITECTURE.md:{line_number}: `{path}` does not exist (paths are relative to \
                 the repository root)"
            ));
        }
    }
    problems
}

/// The backticked tokens of a Markdown text that look like paths, with their
/// line numbers. A token is a path when it contains `/` or ends in `.rs`,
/// `.md` or `.toml`, has no spaces, is not a URL, and is made only of the
/// characters paths here use. Tokens with `/` but no lowercase letter, such
/// as `COM_STMT_PREPARE/EXECUTE` or `TCP/IP`, are alternatives, not paths.
/// Fenced code blocks are skipped. A trailing `/` is removed.
fn architecture_paths(text: &str) -> Vec<(usize, String)> {
    let mut paths = Vec::new();
    let mut in_fence = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for token in code_spans(line) {
            if let Some(path) = as_path(token) {
                paths.push((index + 1, path.to_string()));
            }
        }
    }
    paths
}

/// The contents of the single-backtick code spans of one line.
fn code_spans(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2)
}

fn as_path(token: &str) -> Option<&str> {
    let token = token.trim();
    if token.is_empty() || token.contains(char::is_whitespace) || token.contains("://") {
        return None;
    }
    let path_characters = token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '*'));
    if !path_characters {
        return None;
    }
    let has_extension = [".rs", ".md", ".toml"]
        .iter()
        .any(|ext| token.ends_with(ext));
    let has_slash = token.contains('/') && token.chars().any(|c| c.is_ascii_lowercase());
    if !(has_extension || has_slash) {
        return None;
    }
    let path = token.trim_end_matches('/');
    (!path.is_empty()).then_some(path)
}

/// Whether `path` exists under `root`. A `*` matches any one path component,
/// as in `crates/*/src`: the path exists when some expansion does.
fn path_exists(root: &Path, path: &str) -> bool {
    let mut candidates = vec![root.to_path_buf()];
    for component in path.split('/') {
        let mut next = Vec::new();
        for candidate in candidates {
            if component.contains('*') {
                let Ok(entries) = fs::read_dir(&candidate) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    if glob_matches(component, &name.to_string_lossy()) {
                        next.push(entry.path());
                    }
                }
            } else {
                let joined = candidate.join(component);
                if joined.exists() {
                    next.push(joined);
                }
            }
        }
        candidates = next;
    }
    !candidates.is_empty()
}

/// Matches one path component against a pattern where `*` stands for any
/// run of characters.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (index, part) in parts.iter().enumerate() {
        let is_last = index + 1 == parts.len();
        if is_last {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The sans-IO crates must not reach for the network, files, threads, the
/// clock or randomness, neither in their code (tests included, since tests
/// must be deterministic too; proptest, which seeds itself, is allowed) nor
/// in their `[dependencies]`.
pub fn check_sans_io(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for name in SANS_IO_CRATES {
        let crate_dir = root.join("crates").join(name);
        if !crate_dir.is_dir() {
            problems.push(format!("crates/{name}: the sans-IO crate is missing"));
            continue;
        }
        for file in rust_files(&crate_dir.join("src")) {
            let Ok(text) = fs::read_to_string(&file) else {
                problems.push(format!("{}: cannot read", relative(root, &file)));
                continue;
            };
            for (line, _, what) in sans_io_violations(&text) {
                problems.push(format!(
                    "{}:{line}: `{what}` in a sans-IO crate (take time, randomness and I/O \
                     results as arguments instead, and give maps a fixed hasher)",
                    relative(root, &file),
                ));
            }
        }
        let manifest = crate_dir.join("Cargo.toml");
        match fs::read_to_string(&manifest) {
            Ok(text) => {
                for (line_number, dependency) in dependencies(&text) {
                    if SANS_IO_FORBIDDEN_DEPENDENCIES.contains(&dependency.as_str()) {
                        problems.push(format!(
                            "{}:{line_number}: [dependencies] names `{dependency}`, which a \
                             sans-IO crate must not use",
                            relative(root, &manifest)
                        ));
                    }
                }
            }
            Err(error) => problems.push(format!(
                "{}: cannot read: {error}",
                relative(root, &manifest)
            )),
        }
    }
    problems
}

/// Every use of I/O, clocks or randomness in one file's source, as (line,
/// byte offset, what), in file order. Comments are left out, and so are
/// lines that mention proptest (which seeds itself, deterministically
/// enough for tests).
fn sans_io_violations(text: &str) -> Vec<(usize, usize, String)> {
    // The code with comments and proptest lines blanked, line for line,
    // so offsets still give line numbers.
    let code: String = text
        .lines()
        .map(|line| {
            let code = strip_line_comment(line);
            if code.contains("proptest") { "" } else { code }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let line_of = |offset: usize| code[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    for forbidden in SANS_IO_FORBIDDEN_SOURCE {
        for at in word_offsets(&code, forbidden) {
            found.push((line_of(at), at, forbidden.to_string()));
        }
    }
    for (at, module) in std_modules(&code) {
        if SANS_IO_FORBIDDEN_STD_MODULES.contains(&module) {
            found.push((line_of(at), at, format!("std::{module}")));
        }
    }
    for (at, what) in default_hasher_uses(&code) {
        found.push((line_of(at), at, what));
    }
    found.sort();
    found
}

/// The offsets where `word` occurs not glued to a longer identifier.
fn word_offsets<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let is_identifier = |c: char| c.is_alphanumeric() || c == '_';
    let word_ends_in_identifier = word.chars().last().is_some_and(is_identifier);
    text.match_indices(word).filter_map(move |(at, _)| {
        let before_ok = !text[..at].chars().next_back().is_some_and(is_identifier);
        let after_ok = !word_ends_in_identifier
            || !text[at + word.len()..]
                .chars()
                .next()
                .is_some_and(is_identifier);
        (before_ok && after_ok).then_some(at)
    })
}

/// The first-level modules of `std` that `code` names, with the offset of
/// each name: `std::io::stdin` gives `io`; `use std::{fmt, io::Write}` gives
/// `fmt` and `io`, also when the group spans lines.
fn std_modules(code: &str) -> Vec<(usize, &str)> {
    let identifier_end = |text: &str| {
        text.find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(text.len())
    };
    let mut modules = Vec::new();
    for at in word_offsets(code, "std::") {
        let start = at + "std::".len();
        let rest = &code[start..];
        if !rest.starts_with('{') {
            let end = identifier_end(rest);
            modules.push((start, &rest[..end]));
            continue;
        }
        // A group: the first name of every item at depth one.
        let mut depth = 0usize;
        let mut item_start = true;
        for (offset, character) in rest.char_indices() {
            match character {
                '{' => {
                    depth += 1;
                    item_start = depth == 1;
                }
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                ',' if depth == 1 => item_start = true,
                c if item_start && (c.is_alphanumeric() || c == '_') => {
                    let end = identifier_end(&rest[offset..]);
                    modules.push((start + offset, &rest[offset..offset + end]));
                    item_start = false;
                }
                _ => {}
            }
        }
    }
    modules
}

/// Uses of std's maps and sets with their default, randomly seeded hasher:
/// a type written without a hasher (`HashMap<K, V>`, `HashSet<T>`) and the
/// constructors that only the default hasher has (`HashMap::new()`).
fn default_hasher_uses(code: &str) -> Vec<(usize, String)> {
    let mut uses = Vec::new();
    for (name, parameters_without_hasher) in RANDOMLY_SEEDED_COLLECTIONS {
        for at in word_offsets(code, name) {
            let rest = &code[at + name.len()..];
            if let Some(call) = rest.strip_prefix("::") {
                if let Some(constructor) = DEFAULT_HASHER_CONSTRUCTORS
                    .iter()
                    .find(|constructor| call.starts_with(*constructor))
                {
                    uses.push((at, format!("{name}::{}", constructor.trim_end_matches('('))));
                }
                continue;
            }
            let Some(generics) = rest.strip_prefix('<') else {
                continue;
            };
            // Count the parameters at depth one, up to the matching `>`
            // (an arrow's `>` is not a bracket).
            let mut depth = 1usize;
            let mut parameters = 1;
            let mut previous = '<';
            let mut end = None;
            for (offset, character) in generics.char_indices() {
                match character {
                    '<' => depth += 1,
                    '>' if previous != '-' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(offset);
                            break;
                        }
                    }
                    ',' if depth == 1 => parameters += 1,
                    '\n' => break,
                    _ => {}
                }
                previous = character;
            }
            if let Some(end) = end
                && parameters == parameters_without_hasher
            {
                uses.push((at, format!("{name}<{}>", &generics[..end])));
            }
        }
    }
    uses
}

/// Whether `text` contains `word` not glued to a longer identifier: the
/// character before must not be part of an identifier, nor the one after
/// when `word` ends in an identifier character (so `mio` does not match
/// `premio`, and `rand::` does not match `operand::`).
fn contains_word(text: &str, word: &str) -> bool {
    let is_identifier = |c: char| c.is_alphanumeric() || c == '_';
    let word_ends_in_identifier = word.chars().last().is_some_and(is_identifier);
    text.match_indices(word).any(|(at, _)| {
        let before_ok = !text[..at].chars().next_back().is_some_and(is_identifier);
        let after_ok = !word_ends_in_identifier
            || !text[at + word.len()..]
                .chars()
                .next()
                .is_some_and(is_identifier);
        before_ok && after_ok
    })
}

/// A line without its `//` comment, so that prose explaining why a crate is
/// sans-IO does not count as using I/O. It does not understand string
/// literals containing `//`; none of the checked patterns need that.
fn strip_line_comment(line: &str) -> &str {
    match line.find("//") {
        Some(at) => &line[..at],
        None => line,
    }
}

/// The packages named in a manifest's `[dependencies]` tables (including
/// `[target.*.dependencies]` and `[dependencies.name]`), with line numbers.
/// Dev- and build-dependencies are not included. A renamed package
/// (`alias = { package = "name" }`) is reported under its real name.
fn dependencies(manifest: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_dependencies = false;
    for (index, line) in manifest.lines().enumerate() {
        let line_number = index + 1;
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_start_matches('[').trim_end_matches(']').trim();
            in_dependencies = false;
            if header == "dependencies" || header.ends_with(".dependencies") {
                in_dependencies = true;
            } else if let Some(name) = header.strip_prefix("dependencies.") {
                found.push((line_number, unquote(name).to_string()));
            } else if let Some((_, name)) = header.split_once(".dependencies.") {
                found.push((line_number, unquote(name).to_string()));
            }
            continue;
        }
        if !in_dependencies || line.is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let name = key.split('.').next().unwrap_or("").trim();
        found.push((line_number, unquote(name).to_string()));
        if let Some(package) = package_rename(value) {
            found.push((line_number, package.to_string()));
        }
    }
    found
}

/// The `package = "name"` of an inline dependency table, if any.
fn package_rename(value: &str) -> Option<&str> {
    let after = value.split("package").nth(1)?;
    let after = after.trim_start().strip_prefix('=')?.trim_start();
    let after = after.strip_prefix('"')?;
    after.split('"').next()
}

fn unquote(name: &str) -> &str {
    name.trim().trim_matches('"').trim_matches('\'')
}

/// Placeholders panic at run time; the main branch must not carry them.
pub fn check_no_todo(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for crate_dir in crate_directories(root) {
        for file in rust_files(&crate_dir.join("src")) {
            let Ok(text) = fs::read_to_string(&file) else {
                problems.push(format!("{}: cannot read", relative(root, &file)));
                continue;
            };
            for (index, line) in text.lines().enumerate() {
                let code = strip_line_comment(line);
                for placeholder in PLACEHOLDERS {
                    if contains_word(code, placeholder) {
                        problems.push(format!(
                            "{}:{}: `{placeholder}` left in the code",
                            relative(root, &file),
                            index + 1
                        ));
                    }
                }
            }
        }
    }
    problems
}

/// The directories under `crates/`, sorted.
fn crate_directories(root: &Path) -> Vec<PathBuf> {
    let mut directories: Vec<PathBuf> = match fs::read_dir(root.join("crates")) {
        Ok(entries) => entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_dir())
            .collect(),
        Err(_) => Vec::new(),
    };
    directories.sort();
    directories
}

/// Every `.rs` file under `directory`, recursively, sorted; none when the
/// directory does not exist.
fn rust_files(directory: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `path` relative to the repository root, with `/` separators.
fn relative(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_tidy(check: fn(&Path) -> Vec<String>, what: &str) {
        let problems = check(&repository_root());
        assert!(
            problems.is_empty(),
            "{what}: {} problems\n  {}\n",
            problems.len(),
            problems.join("\n  ")
        );
    }

    #[test]
    fn every_rust_file_starts_with_a_module_doc() {
        assert_tidy(check_module_docs, CHECKS[0].name);
    }

    #[test]
    fn every_path_in_architecture_md_exists() {
        assert_tidy(check_architecture_paths, CHECKS[1].name);
    }

    #[test]
    fn sans_io_crates_do_no_io() {
        assert_tidy(check_sans_io, CHECKS[2].name);
    }

    #[test]
    fn no_placeholders_in_crates() {
        assert_tidy(check_no_todo, CHECKS[3].name);
    }

    /// A throwaway repository with one problem of every kind, so the checks
    /// are seen to catch what they are meant to catch.
    #[test]
    fn checks_report_every_problem_in_a_small_repository() {
        let root = std::env::temp_dir().join(format!("xtask-tidy-{}", std::process::id()));
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        write(
            "crates/storage/Cargo.toml",
            "[dependencies]\ntokio = \"1\"\n[dev-dependencies]\nrand = \"0.8\"\n",
        );
        write(
            "crates/storage/src/lib.rs",
            "//! Storage.\n// std::fs in a comment is fine\nuse std::fs;\n#[cfg(test)]\nmod tests {\n    use proptest::prelude::*;\n    fn f() { let _ = std::time::Instant::now(); }\n}\n",
        );
        write("crates/schema/Cargo.toml", "[dependencies]\n");
        for clean in [
            "config",
            "protocol",
            "cluster",
            "transaction",
            "node",
            "mysql-protocol",
            "disk",
        ] {
            write(&format!("crates/{clean}/Cargo.toml"), "[dependencies]\n");
            write(&format!("crates/{clean}/src/lib.rs"), "//! Clean.\n");
        }
        write(
            "crates/schema/src/lib.rs",
            "\n\n//! Schema.\nfn f() { todo!() }\n",
        );
        write(
            "crates/schema/tests/t.rs",
            "#![allow(unused)]\n//! Late doc.\n",
        );
        write("xtask/src/main.rs", "fn main() {}\n");
        write(
            "ARCHITECTURE.md",
            "`crates/storage/src/lib.rs`, `crates/*/Cargo.toml`, `crates/gone/`\n",
        );

        let module_docs = check_module_docs(&root);
        let architecture = check_architecture_paths(&root);
        let sans_io = check_sans_io(&root);
        let todo = check_no_todo(&root);
        fs::remove_dir_all(&root).unwrap();

        assert_eq!(module_docs.len(), 2, "{module_docs:?}");
        assert!(module_docs[0].starts_with("crates/schema/tests/t.rs: "));
        assert!(module_docs[1].starts_with("xtask/src/main.rs: "));
        assert_eq!(architecture.len(), 1, "{architecture:?}");
        assert!(architecture[0].starts_with("ARCHITECTURE.md:1: `crates/gone`"));
        assert_eq!(sans_io.len(), 3, "{sans_io:?}");
        assert!(sans_io[0].starts_with("crates/storage/src/lib.rs:3: `std::fs`"));
        assert!(sans_io[1].starts_with("crates/storage/src/lib.rs:7: `Instant::now`"));
        assert!(
            sans_io[2].starts_with("crates/storage/Cargo.toml:2: [dependencies] names `tokio`")
        );
        assert_eq!(todo.len(), 1, "{todo:?}");
        assert!(todo[0].starts_with("crates/schema/src/lib.rs:4: `todo!(`"));
    }

    // The checks' own helpers, on small inputs.

    /// What text search missed before: I/O modules reached through a
    /// grouped import or a path, the environment, and hash maps seeded by
    /// `RandomState` (whose iteration order changes from run to run).
    #[test]
    fn sans_io_check_finds_io_env_and_random_hashers_in_any_spelling() {
        let root = std::env::temp_dir().join(format!("xtask-tidy-io-{}", std::process::id()));
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        for name in SANS_IO_CRATES {
            write(&format!("crates/{name}/Cargo.toml"), "[dependencies]\n");
            write(&format!("crates/{name}/src/lib.rs"), "//! Clean.\n");
        }
        write(
            "crates/config/src/lib.rs",
            "//! Config.\n\
             use std::{collections::BTreeMap, fmt, io::Write};\n\
             use std::{\n    env,\n    ops::Range,\n};\n\
             fn a() { let _ = std::io::stdin(); }\n\
             fn b() -> Option<String> { std::env::var(\"HOME\").ok() }\n\
             fn c() { std::process::exit(1) }\n\
             fn d(state: std::collections::hash_map::RandomState) {}\n\
             fn e() -> HashMap<u32, u32> { HashMap::new() }\n\
             fn f() { let seen: HashSet<u32> = HashSet::with_capacity(4); }\n\
             type Fixed = HashMap<u32, Vec<u8>, BuildHasherDefault<IdHasher>>;\n\
             fn g() -> Fixed { Fixed::default() }\n\
             fn h() -> std::ops::Range<u32> { 0..1 }\n",
        );
        let problems = check_sans_io(&root);
        fs::remove_dir_all(&root).unwrap();
        let expected = [
            "crates/config/src/lib.rs:2: `std::io`",
            "crates/config/src/lib.rs:4: `std::env`",
            "crates/config/src/lib.rs:7: `std::io`",
            "crates/config/src/lib.rs:8: `std::env`",
            "crates/config/src/lib.rs:9: `std::process`",
            "crates/config/src/lib.rs:10: `RandomState`",
            "crates/config/src/lib.rs:11: `HashMap<u32, u32>`",
            "crates/config/src/lib.rs:11: `HashMap::new`",
            "crates/config/src/lib.rs:12: `HashSet<u32>`",
            "crates/config/src/lib.rs:12: `HashSet::with_capacity`",
        ];
        assert_eq!(problems.len(), expected.len(), "{problems:#?}");
        for (problem, start) in problems.iter().zip(expected) {
            assert!(
                problem.starts_with(start),
                "{problem} should start with {start}"
            );
        }
    }

    #[test]
    fn path_tokens_are_recognized() {
        let text = "\
See `crates/storage/src/lib.rs` and `crates/schema/` and `Cargo.toml`.
Not paths: `std::fs`, `COM_STMT_PREPARE/EXECUTE`, `https://example.com/a`,
`N STOP/START`, `ENGINE=NDB`, `x`.
```
`crates/inside/a/fence.rs`
```
Glob: `crates/*/src`.";
        let paths: Vec<String> = architecture_paths(text)
            .into_iter()
            .map(|(_, path)| path)
            .collect();
        assert_eq!(
            paths,
            [
                "crates/storage/src/lib.rs",
                "crates/schema",
                "Cargo.toml",
                "crates/*/src"
            ]
        );
    }

    #[test]
    fn globs_match_components() {
        assert!(glob_matches("*", "storage"));
        assert!(glob_matches("*.rs", "lib.rs"));
        assert!(glob_matches("a*b*c", "axxbyyc"));
        assert!(!glob_matches("*.rs", "lib.toml"));
        assert!(!glob_matches("a*b", "ab_"));
        assert!(path_exists(&repository_root(), "crates/*/Cargo.toml"));
        assert!(!path_exists(&repository_root(), "crates/*/no-such-file"));
    }

    #[test]
    fn words_are_not_matched_inside_identifiers() {
        assert!(contains_word("use std::fs;", "std::fs"));
        assert!(contains_word("let t = Instant::now();", "Instant::now"));
        assert!(contains_word("rand::random()", "rand::"));
        assert!(!contains_word("operand::Kind", "rand::"));
        assert!(!contains_word("premio", "mio"));
        assert!(contains_word("use mio::Poll;", "mio"));
        assert!(!contains_word("std::fsync", "std::fs"));
        assert!(contains_word("    todo!()", "todo!("));
        assert!(!contains_word("not_todo!()", "todo!("));
    }

    #[test]
    fn dependencies_are_read_from_the_right_tables() {
        let manifest = r#"
[package]
name = "x"

[dependencies]
schema.workspace = true
tokio = { version = "1" }
r = { package = "rand", version = "0.8" }

[dependencies.mio]
version = "1"

[target.'cfg(unix)'.dependencies]
socket2 = "0.5"

[dev-dependencies]
getrandom = "0.2"
"#;
        let names: Vec<String> = dependencies(manifest)
            .into_iter()
            .map(|(_, name)| name)
            .collect();
        assert_eq!(names, ["schema", "tokio", "r", "rand", "mio", "socket2"]);
    }
}
