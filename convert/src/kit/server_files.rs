//! The files an MCP server runs from by their path: a script the user keeps in the harness's
//! own folder (`~/.copilot/mcp/issues.py`, `~/.config/opencode/mcp/issues.py`) is part of that
//! harness's configuration as much as the entry that runs it, and a backup that kept the
//! server without its script gave back a server that fails to start on the new machine, with
//! nothing said (found by a new user's trial).
//!
//! A server names its files in its arguments (`--config=PATH` too), by an absolute path or one
//! under the home (`~/`, `$HOME/`, `${HOME}/`, which a shell or the harness's own expansion
//! turns into one); its command is such a file too. Only what leads to a regular file under the
//! home counts: an interpreter (`/usr/bin/python3`) is not the person's to back up.
//!
//! - [`ServerFiles::kept`]: inside one of the harness's folders, the path's links resolved (a
//!   linked folder on the way that leads elsewhere does not count), and none of these: a
//!   file the harness keeps only in part ([`server_file_may_be_kept`]: `.claude.json` holds the
//!   account), a database, larger than [`MAX_SERVER_FILE`], or one that may hold keys (by its
//!   name, its folder, or being readable by its owner alone). The configuration then screens it
//!   as every file it keeps.
//! - [`ServerFiles::withheld`]: inside the folders but one of those, with why (said).
//! - [`ServerFiles::elsewhere`]: an argument's file elsewhere under the home, which a backup
//!   of the harness does not keep (said; a command there is an interpreter, not said).
//! - [`ServerFiles::beside`]: the folder of a kept file, when it holds more than the files
//!   kept: a server made of several files comes back with only those its entry names (said).

use std::fs;
use std::path::{Component, Path, PathBuf};

use asp_format::state::McpServer;

use crate::kit::fsops::{lexical, resolved};

/// The largest file a server names that a backup keeps as configuration: a script or its
/// settings, not its data.
pub const MAX_SERVER_FILE: u64 = 1 << 20;

/// The files `servers` name, sorted and each once.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ServerFiles {
    /// Files inside one of the harness's folders, kept as configuration.
    pub kept: Vec<PathBuf>,
    /// Files inside the folders that are not kept, with why and the server that names them.
    pub withheld: Vec<(PathBuf, &'static str, String)>,
    /// Files an argument names elsewhere under the home, with the server that names them.
    pub elsewhere: Vec<(PathBuf, String)>,
    /// Folders of kept files that hold other entries too, with how many.
    pub beside: Vec<(PathBuf, usize)>,
}

/// Whether the file at `rel` (relative to the home) may be kept because a server names it,
/// by its path alone: not a file `whole_never` names (files the harness keeps only in part,
/// [`crate::Harness::config_part_names`] before their `#`), not a database. What a pull
/// checks of a record's files, which are not there to look at; a backup checks this and more.
pub fn server_file_may_be_kept(rel: &str, whole_never: &[&str]) -> bool {
    !database_by_name(rel) && !whole_never.contains(&rel)
}

/// Whether the file at `rel` is a database, or one of its journals, by its name.
fn database_by_name(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    [".db", ".sqlite", ".sqlite3", "-wal", "-shm", "-journal"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// The flag and its value of a server argument `--flag=value` (or `-f=value`); `None` for any
/// other argument (`key=value` is not a flag's).
pub fn flag_value(arg: &str) -> Option<(&str, &str)> {
    arg.split_once('=')
        .filter(|(flag, _)| flag.starts_with('-'))
}

/// The files the stdio servers among `servers` name, under `home`, split as the module says.
/// `folders` are the harness's folders ([`crate::Harness::config_folders`]); `whole_never` as
/// for [`server_file_may_be_kept`]. Paths are spelled under `home` as it is given (a relative
/// home gives relative paths), as the harness's other configuration files are.
pub fn server_files(
    home: &Path,
    folders: &[PathBuf],
    whole_never: &[&str],
    servers: &[McpServer],
) -> ServerFiles {
    let home_abs = lexical(home);
    // Where each folder really is: a file counts as inside one only where it really is.
    let real_folders: Vec<PathBuf> = folders
        .iter()
        .filter_map(|f| fs::canonicalize(f).ok())
        .collect();
    // The files kept in part, where they really are: a link to one is one.
    let whole_never_real: Vec<PathBuf> = whole_never
        .iter()
        .filter_map(|rel| fs::canonicalize(home.join(rel)).ok())
        .collect();
    let mut out = ServerFiles::default();
    for server in servers {
        let McpServer::Stdio(s) = server else {
            continue;
        };
        // Each word with whether it is the command, and the flag it is the value of
        // (`--token=PATH`, or `--token PATH`).
        let mut words = vec![(true, s.command.as_str(), "")];
        let mut previous = "";
        for a in &s.args {
            let flag = match flag_value(a) {
                Some((flag, _)) => flag,
                None if previous.starts_with('-') && !previous.contains('=') => previous,
                None => "",
            };
            words.push((false, a.as_str(), flag));
            previous = a;
        }
        for (command, word, flag) in words {
            let Some(named) = named_path(&home_abs, word) else {
                continue;
            };
            let Some(rel) = named
                .strip_prefix(&home_abs)
                .ok()
                .map(Path::to_path_buf)
                .or_else(|| rerooted(&named, &home_abs, folders))
            else {
                continue;
            };
            if rel.as_os_str().is_empty() {
                continue;
            }
            let path = home.join(&rel);
            let (Ok(meta), Ok(real)) = (fs::metadata(&path), fs::canonicalize(&path)) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            // Inside where its folder really is (a linked folder on the way that leads out does
            // not count); the file itself may be a link (a dotfiles manager's), which the
            // configuration follows and screens as it does every link.
            let real_parent = path.parent().and_then(|p| fs::canonicalize(p).ok());
            if !real_parent.is_some_and(|p| real_folders.iter().any(|f| p.starts_with(f))) {
                if !command && !out.elsewhere.iter().any(|(p, _)| *p == path) {
                    out.elsewhere.push((path, s.name.clone()));
                }
                continue;
            }
            let rel = rel.to_string_lossy().replace('\\', "/");
            if whole_never.contains(&rel.as_str()) || whole_never_real.contains(&real) {
                // The harness's own file, which its configuration keeps in part.
                continue;
            }
            let lower = flag.to_ascii_lowercase();
            let key_flag = ["token", "key", "secret", "credential", "password", "auth"]
                .iter()
                .any(|k| lower.contains(k));
            let why = if database_by_name(&rel) || is_sqlite(&real) {
                Some("a database, the server's data: not kept as configuration")
            } else if meta.len() > MAX_SERVER_FILE {
                Some(
                    "larger than 1 MiB, which a script or its settings are not: not kept as \
                     configuration",
                )
            } else if key_flag || crate::kit::config::link_withheld(&real, &meta).is_some() {
                Some(
                    "may hold keys (its name, its folder or the flag that names it says so, or \
                     only its owner may read it): not kept",
                )
            } else {
                None
            };
            match why {
                Some(why) => {
                    if !out.withheld.iter().any(|(p, _, _)| *p == path) {
                        out.withheld.push((path, why, s.name.clone()));
                    }
                }
                None => out.kept.push(path),
            }
        }
    }
    out.kept.sort();
    out.kept.dedup();
    out.withheld.sort();
    out.elsewhere.sort();
    // A kept file's folder that holds more than the files kept (not a harness folder itself,
    // whose other files are its own configuration).
    let mut dirs: Vec<&Path> = out.kept.iter().filter_map(|p| p.parent()).collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        let real = fs::canonicalize(dir).ok();
        if real.as_ref().is_none_or(|r| real_folders.contains(r)) {
            continue;
        }
        // (A folder on the way to a kept file is not left behind; a file withheld is said
        // apart.)
        let others = fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| {
                        let p = e.path();
                        !out.kept.iter().any(|k| k.starts_with(&p))
                            && !out.withheld.iter().any(|(w, _, _)| *w == p)
                    })
                    .count()
            })
            .unwrap_or(0);
        if others > 0 {
            out.beside.push((dir.to_path_buf(), others));
        }
    }
    out
}

/// The path under the home (relative to `home`, absolute) of a file that `named`, a path
/// outside it, names inside one of the harness's `folders` as another home has it: a home
/// backed up from where it is mounted (`--home /mnt/old/home/me`) names its files by the paths
/// of the machine it was on (`/home/me/.copilot/mcp/issues.py`). The folder's own path under
/// the home (`.copilot`, `.config/opencode`) must appear whole in `named`; what follows it is
/// looked for under this home's folder.
fn rerooted(named: &Path, home: &Path, folders: &[PathBuf]) -> Option<PathBuf> {
    let parts: Vec<Component> = named.components().collect();
    folders.iter().find_map(|folder| {
        let folder = lexical(folder);
        let under: Vec<Component> = folder.strip_prefix(home).ok()?.components().collect();
        if under.is_empty() {
            return None;
        }
        let at = parts
            .windows(under.len())
            .rposition(|w| w == under.as_slice())?;
        let rel: PathBuf = parts[at..].iter().collect();
        home.join(&rel).is_file().then_some(rel)
    })
}

/// Whether the file at `path` is an SQLite database (by its header).
fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

/// Whether a stdio server of `servers` names a file whose path ends with `rel` (a path relative
/// to some home), by an absolute path or one under the home: how a pulled snapshot record's
/// configuration file that the harness's own rule does not name is told to be one
/// [`server_files`] kept, whatever home it was kept in.
pub fn named_by(servers: &[McpServer], rel: &str) -> bool {
    let rel = Path::new(rel);
    // (Any absolute folder stands for the home: only the path's end is compared.)
    let home = Path::new("/");
    servers.iter().any(|server| match server {
        McpServer::Stdio(s) => std::iter::once(s.command.as_str())
            .chain(s.args.iter().map(String::as_str))
            .any(|word| named_path(home, word).is_some_and(|p| p.ends_with(rel))),
        _ => false,
    })
}

/// The path `word` (a command, an argument, or the value of a `--flag=value` argument) names,
/// `..` resolved without following links, with `home` (absolute) for `~/` and the like; `None`
/// when it names none (a relative path is relative to a folder the harness starts the server
/// in, which the configuration does not say).
fn named_path(home: &Path, word: &str) -> Option<PathBuf> {
    let word = flag_value(word).map_or(word, |(_, value)| value);
    let path = ["~/", "$HOME/", "${HOME}/"]
        .iter()
        .find_map(|prefix| word.strip_prefix(prefix))
        .map(|rest| home.join(rest))
        .or_else(|| Path::new(word).is_absolute().then(|| PathBuf::from(word)))?;
    Some(resolved(&path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::state::McpStdio;

    fn stdio(name: &str, command: &str, args: &[&str]) -> McpServer {
        McpServer::Stdio(McpStdio {
            name: name.to_owned(),
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Vec::new(),
            meta: None,
        })
    }

    fn write(path: &Path, bytes: &[u8], mode: u32) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
        }
        #[cfg(not(unix))]
        let _ = mode;
    }

    #[test]
    fn a_script_in_the_harness_folder_is_kept_and_what_is_not_is_said() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let folder = home.join(".copilot");
        write(&folder.join("mcp/issues.py"), b"print()\n", 0o755);
        write(&folder.join("mcp/issues.toml"), b"x = 1\n", 0o644);
        write(&folder.join("mcp/util.py"), b"", 0o644);
        write(&folder.join("run.sh"), b"#!/bin/sh\n", 0o755);
        write(&folder.join("data/issues.db"), b"", 0o644);
        write(&folder.join("data/cache"), b"SQLite format 3\0....", 0o644);
        write(
            &folder.join("data/big.json"),
            &vec![b' '; MAX_SERVER_FILE as usize + 1],
            0o644,
        );
        write(&folder.join("data/token.txt"), b"s3cret", 0o600);
        write(&folder.join("mcp/sa.json"), b"{}", 0o644);
        write(&folder.join("own.json"), b"{}", 0o644);
        write(&home.join("bin/db.sqlite"), b"", 0o644);
        write(&home.join("bin/node"), b"", 0o755);
        let h = home.to_str().unwrap();
        let servers = [
            stdio(
                "issues",
                "python3",
                &[
                    &format!("{h}/.copilot/mcp/../mcp/issues.py"),
                    &format!("--config={h}/.copilot/mcp/issues.toml"),
                    &format!("{h}/bin/db.sqlite"),
                    // Not files: a folder, one that is not there, a relative path, a flag.
                    &format!("{h}/.copilot/mcp"),
                    &format!("{h}/.copilot/mcp/gone.py"),
                    "mcp/issues.py",
                    "--verbose",
                ],
            ),
            // An interpreter under the home is not said to be left out.
            stdio("runner", &format!("{h}/bin/node"), &["~/.copilot/run.sh"]),
            stdio(
                "data",
                "/bin/sh",
                &[
                    "$HOME/.copilot/data/issues.db",
                    "${HOME}/.copilot/data/cache",
                    "~/.copilot/data/big.json",
                    "--token=~/.copilot/data/token.txt",
                    // A key by the flag that names it, whatever its own name.
                    "--credentials",
                    "~/.copilot/mcp/sa.json",
                    // The harness's own file, kept in part: passed over without a word.
                    "~/.copilot/own.json",
                ],
            ),
        ];
        let found = server_files(
            &home,
            std::slice::from_ref(&folder),
            &[".copilot/own.json"],
            &servers,
        );
        let c = |rel: &str| folder.join(rel);
        assert_eq!(
            found.kept,
            [c("mcp/issues.py"), c("mcp/issues.toml"), c("run.sh")]
        );
        let withheld: Vec<(PathBuf, &str)> = found
            .withheld
            .iter()
            .map(|(p, why, server)| {
                assert_eq!(server, "data");
                (p.clone(), why.split(':').next().unwrap())
            })
            .collect();
        let mut expected = vec![
            (c("data/issues.db"), "a database, the server's data"),
            (c("data/cache"), "a database, the server's data"),
            (
                c("data/big.json"),
                "larger than 1 MiB, which a script or its settings are not",
            ),
        ];
        expected.push((
            c("data/token.txt"),
            "may hold keys (its name, its folder or the flag that names it says so, or only its \
             owner may read it)",
        ));
        expected.push((
            c("mcp/sa.json"),
            "may hold keys (its name, its folder or the flag that names it says so, or only its \
             owner may read it)",
        ));
        expected.sort();
        assert_eq!(withheld, expected);
        assert_eq!(
            found.elsewhere,
            [(home.join("bin/db.sqlite"), "issues".to_owned())]
        );
        // `mcp/util.py` is beside the scripts kept; the harness folder's own files are not.
        assert_eq!(found.beside, [(c("mcp"), 1)]);
    }

    /// A folder linked into the harness's folder that leads elsewhere (`~/.ssh`) does not make
    /// what is in it the harness's.
    #[cfg(unix)]
    #[test]
    fn a_linked_folder_that_leads_outside_does_not_count_as_inside() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let folder = home.join(".claude");
        write(&home.join("keys/deploy.sh"), b"#!/bin/sh\n", 0o755);
        fs::create_dir_all(&folder).unwrap();
        std::os::unix::fs::symlink(home.join("keys"), folder.join("keys")).unwrap();
        // A file that is itself a link (a dotfiles manager's) counts where the link is; a link
        // to a file the harness keeps in part is that file.
        write(&home.join("dotfiles/run.sh"), b"#!/bin/sh\n", 0o755);
        std::os::unix::fs::symlink(home.join("dotfiles/run.sh"), folder.join("run.sh")).unwrap();
        write(&home.join(".claude.json"), b"{}", 0o644);
        std::os::unix::fs::symlink(home.join(".claude.json"), folder.join("acct.json")).unwrap();
        let servers = [stdio(
            "deploy",
            "sh",
            &[
                "~/.claude/keys/deploy.sh",
                "~/.claude/run.sh",
                "~/.claude/acct.json",
            ],
        )];
        let folders = [folder.clone(), home.join(".claude.json")];
        let found = server_files(&home, &folders, &[".claude.json"], &servers);
        assert_eq!(found.kept, [folder.join("run.sh")], "{found:?}");
        assert_eq!(found.elsewhere.len(), 1, "{found:?}");
        assert!(found.withheld.is_empty(), "{found:?}");
    }

    /// A home backed up from where it is mounted names its files by the paths of the machine
    /// it was on: those inside the harness's folder are found under this home.
    #[test]
    fn a_mounted_homes_script_is_found_by_the_harness_folders_path() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("mnt/old/home/me");
        let folder = home.join(".config/opencode");
        write(&folder.join("mcp/issues.py"), b"print()\n", 0o755);
        write(&home.join("opencode/mcp/other.py"), b"", 0o644);
        let servers = [stdio(
            "issues",
            "python3",
            &[
                "/home/me/.config/opencode/mcp/issues.py",
                // Not the folder's whole path, and a file this home has not got.
                "/home/me/opencode/mcp/other.py",
                "/home/me/.config/opencode/mcp/gone.py",
            ],
        )];
        let found = server_files(&home, std::slice::from_ref(&folder), &[], &servers);
        assert_eq!(found.kept, [folder.join("mcp/issues.py")]);
        assert!(found.elsewhere.is_empty() && found.withheld.is_empty());
    }

    #[test]
    fn a_pulled_file_is_told_by_how_a_server_names_it() {
        let servers = [stdio(
            "issues",
            "~/.copilot/run.sh",
            &[
                "/home/dev/.copilot/mcp/issues.py",
                "--config=$HOME/.copilot/mcp/issues.toml",
                "key=/home/dev/.copilot/mcp/other.py",
            ],
        )];
        for rel in [
            ".copilot/mcp/issues.py",
            "mcp/issues.toml",
            ".copilot/run.sh",
        ] {
            assert!(named_by(&servers, rel), "{rel}");
        }
        for rel in [".copilot/mcp/other.py", "copilot/run.sh", "mcp"] {
            assert!(!named_by(&servers, rel), "{rel}");
        }
        assert!(server_file_may_be_kept(".copilot/mcp/issues.py", &[]));
        assert!(!server_file_may_be_kept(".claude.json", &[".claude.json"]));
        assert!(!server_file_may_be_kept(".copilot/mcp/issues.db-wal", &[]));
    }
}
