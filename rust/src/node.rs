//! Node.js and npm: found as the Python launcher finds them, and checked for their versions.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind};
use crate::locate::{program_in, program_on_path, setting};

/// The oldest Node.js the dirq CLI runs on.
pub const MIN_NODE: (u64, u64) = (20, 11);

/// The oldest npm the launcher installs with: the npm of Node.js 18, whose `npm pack <spec>
/// --pack-destination` and `npm install --prefix <folder> <tarball>` it uses (checked down
/// to npm 8.19; npm 7 mis-reads `--pack-destination`).
pub const MIN_NPM: (u64, u64) = (8, 0);

pub(crate) const NODE_NEEDED: &str = "dirq's CLI needs Node.js 20.11 or later, with npm: install \
     Node.js 20.11 or later (the LTS from https://nodejs.org/en/download, or your system's \
     nodejs and npm packages when they are 20.11 or later)";

const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// `major.minor.patch` at the start of `text`, after an optional `v`.
pub(crate) fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let text = text.trim();
    let text = text.strip_prefix('v').unwrap_or(text);
    let mut parts = text.splitn(3, '.');
    let mut number = |last: bool| -> Option<u64> {
        let part = parts.next()?;
        let digits: String = if last {
            part.chars().take_while(char::is_ascii_digit).collect()
        } else {
            part.to_string()
        };
        digits.parse().ok()
    };
    Some((number(false)?, number(false)?, number(true)?))
}

/// What `program --version` prints, or `None` when it does not run or runs too long.
fn version_of(program: &Path, node: Option<&Path>) -> Option<(u64, u64, u64)> {
    let mut command = Command::new(program);
    command
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(node) = node {
        command.env("PATH", path_with_node_first(node));
    }
    let mut child = command.spawn().ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < VERSION_TIMEOUT => {
                thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let output = child.wait_with_output().ok()?;
    parse_version(&String::from_utf8_lossy(&output.stdout))
}

/// `PATH` with Node.js's folder first: npm (`#!/usr/bin/env node`) and the install scripts of
/// what it installs run on the Node.js that will run the CLI.
pub(crate) fn path_with_node_first(node: &Path) -> std::ffi::OsString {
    let mut folders: Vec<PathBuf> = node.parent().map(Path::to_path_buf).into_iter().collect();
    if let Some(path) = std::env::var_os("PATH") {
        folders.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(folders).unwrap_or_else(|_| std::env::var_os("PATH").unwrap_or_default())
}

fn shown((major, minor, patch): (u64, u64, u64)) -> String {
    format!("{}.{}.{}", major, minor, patch)
}

/// Node.js, 20.11 or later: `DIRQ_NODE`, else `node` on `PATH`.
pub fn find_node() -> Result<PathBuf, Error> {
    let configured = setting("DIRQ_NODE").map(PathBuf::from);
    let node = match &configured {
        Some(path) if path.is_file() => path.clone(),
        Some(path) => {
            return Err(not_found(&format!(
                "DIRQ_NODE ({}) does not exist",
                path.display()
            )))
        }
        None => program_on_path("node").ok_or_else(|| not_found("no node on PATH"))?,
    };
    let version = version_of(&node, None).ok_or_else(|| {
        Error::new(
            ErrorKind::NodeMissing,
            format!(
                "{} does not run as Node.js (node --version failed): dirq's CLI needs Node.js \
                 20.11 or later; set DIRQ_NODE to a working node",
                node.display()
            ),
        )
    })?;
    if (version.0, version.1) < MIN_NODE {
        return Err(Error::new(
            ErrorKind::NodeTooOld,
            format!(
                "Node.js {} at {} is too old: dirq's CLI needs 20.11 or later; upgrade it, or \
                 set DIRQ_NODE to a newer node",
                shown(version),
                node.display()
            ),
        ));
    }
    Ok(node)
}

fn not_found(where_: &str) -> Error {
    Error::new(
        ErrorKind::NodeMissing,
        format!(
            "Node.js not found ({}): {}; or set DIRQ_NODE to its path",
            where_, NODE_NEEDED
        ),
    )
}

/// npm, for installing `package`: `DIRQ_NPM`, else the npm beside `node`, else npm on `PATH`;
/// 8.0 or later.
pub fn find_npm(node: &Path, package: &str) -> Result<PathBuf, Error> {
    let beside = || node.parent().and_then(|folder| program_in(folder, "npm"));
    let npm = setting("DIRQ_NPM")
        .map(PathBuf::from)
        .or_else(beside)
        .or_else(|| program_on_path("npm"))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::NpmMissing,
                format!(
                    "npm not found: on its first run dirq installs its CLI (the npm package {}) \
                     with npm, which comes with Node.js; {}. Or install the CLI yourself (npm \
                     install -g {}) and set DIRQ_BIN to its bin/dirq.cjs",
                    package, NODE_NEEDED, package
                ),
            )
        })?;
    let version = version_of(&npm, Some(node)).ok_or_else(|| {
        Error::new(
            ErrorKind::NpmMissing,
            format!(
                "{} does not run as npm (npm --version failed): dirq installs its CLI (the npm \
                 package {}) with npm; set DIRQ_NPM to a working npm, or reinstall Node.js 20.11 \
                 or later with its npm",
                npm.display(),
                package
            ),
        )
    })?;
    if (version.0, version.1) < MIN_NPM {
        return Err(Error::new(
            ErrorKind::NpmTooOld,
            format!(
                "npm {} at {} is too old: dirq installs its CLI with npm 8 or later; use the npm \
                 that comes with Node.js 20.11 or later (npm install -g npm), or set DIRQ_NPM to \
                 a newer npm",
                shown(version),
                npm.display()
            ),
        ));
    }
    Ok(npm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_node_and_npm_versions() {
        assert_eq!(parse_version("v20.11.0\n"), Some((20, 11, 0)));
        assert_eq!(parse_version("10.2.4"), Some((10, 2, 4)));
        assert_eq!(parse_version("v22.0.0-nightly2024"), Some((22, 0, 0)));
        assert_eq!(parse_version("11.5.1-pre"), Some((11, 5, 1)));
        assert_eq!(parse_version("node"), None);
        assert_eq!(parse_version(""), None);
        assert!((parse_version("v20.10.9").unwrap().0, 10) < MIN_NODE);
    }
}
