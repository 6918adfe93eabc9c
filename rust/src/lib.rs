//! Run [dirq](https://github.com/dirq/dirq), which queries a directory tree as a read-only
//! SQLite database, from Rust.
//!
//! dirq's CLI is the npm package `dirq`, running on Node.js 20.11 or later. This crate finds
//! it, or installs the npm release of this crate's own version, and gives a
//! [`std::process::Command`] that runs it. With the feature `cli` it is also the `dirq`
//! command: `cargo install dirq --features cli`.
//!
//! The CLI is, in order:
//!
//! 1. `DIRQ_BIN`, when set (a JavaScript file runs on Node.js; anything else runs as is);
//! 2. the npm package `dirq` of this crate's version that an earlier run installed into the
//!    cache folder (`DIRQ_CACHE_DIR`, else `$XDG_CACHE_HOME/dirq`, else `~/.cache/dirq`;
//!    `%LOCALAPPDATA%\dirq` on Windows), the same folder the Python launcher uses;
//! 3. else that npm release, installed there now with the user's npm (`DIRQ_NPM`, else the
//!    npm beside Node.js, else npm on `PATH`). What npm downloads is checked against the
//!    sha512 integrity of the release this crate was built with ([`NPM_INTEGRITY`]) before
//!    anything of it is installed.
//!
//! Node.js is `DIRQ_NODE`, else `node` on `PATH`. A missing or too old Node.js or npm is an
//! [`Error`] that says what to install.
//!
//! ```no_run
//! use std::process::Stdio;
//!
//! fn largest_files(root: &std::path::Path) -> Result<String, Box<dyn std::error::Error>> {
//!     let output = dirq::command()?
//!         .arg("SELECT path, size FROM './' ORDER BY size DESC LIMIT 5")
//!         .current_dir(root)
//!         .stderr(Stdio::inherit())
//!         .output()?;
//!     if !output.status.success() {
//!         return Err(format!("dirq exited with {}", output.status).into());
//!     }
//!     Ok(String::from_utf8(output.stdout)?) // JSON: [{"path":"…","size":…},…]
//! }
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

mod error;
mod install;
mod locate;
mod node;

pub use error::{Error, ErrorKind};
pub use locate::cache_dir;
pub use node::{find_node, find_npm, MIN_NODE, MIN_NPM};

/// This crate's version, which is the version of the npm package `dirq` it runs.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The sha512 integrity (`sha512-<base64>`) of the npm tarball of `dirq@`[`VERSION`] this crate
/// was built for; `None` in a build that was not made for release.
pub const NPM_INTEGRITY: Option<&str> = match env!("DIRQ_PINNED_NPM_INTEGRITY").as_bytes() {
    [] => None,
    _ => Some(env!("DIRQ_PINNED_NPM_INTEGRITY")),
};

/// Called before an install starts, with the npm package and the folder it goes to.
pub type InstallNotice = fn(package: &str, prefix: &Path);

/// Finds or installs the dirq CLI of this crate's version; see the [crate] documentation.
#[derive(Clone, Default)]
pub struct Launcher {
    notice: Option<InstallNotice>,
}

impl std::fmt::Debug for Launcher {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Launcher")
            .field("version", &VERSION)
            .field("on_install", &self.notice.is_some())
            .finish()
    }
}

impl Launcher {
    /// The launcher of this crate's release.
    pub fn new() -> Launcher {
        Launcher::default()
    }

    /// Calls `notice` before the CLI is installed (a first run takes seconds: say so).
    pub fn on_install(mut self, notice: InstallNotice) -> Launcher {
        self.notice = Some(notice);
        self
    }

    /// The npm prefix this version's CLI is installed into: `<cache folder>/npm/<version>`.
    pub fn npm_prefix(&self) -> Result<PathBuf, Error> {
        Ok(cache_dir()?.join("npm").join(VERSION))
    }

    /// The CLI to run without installing anything: `DIRQ_BIN`, else the one installed in the
    /// cache folder; `None` when there is none yet.
    pub fn find_cli(&self) -> Result<Option<PathBuf>, Error> {
        if let Some(configured) = locate::setting("DIRQ_BIN") {
            let path = PathBuf::from(configured);
            if !path.is_file() {
                return Err(Error::new(
                    ErrorKind::DirqBinMissing,
                    format!(
                        "DIRQ_BIN is set to {}, which is not a file: point it at the dirq CLI \
                         (bin/dirq.cjs of the npm package), or unset it",
                        path.display()
                    ),
                ));
            }
            return Ok(Some(path));
        }
        let installed = install::cli_in(&self.npm_prefix()?);
        Ok(if installed.is_file() {
            Some(installed)
        } else {
            None
        })
    }

    /// Installs the npm release `dirq@`[`VERSION`] into the cache folder with `npm` on `node`,
    /// checked against [`NPM_INTEGRITY`], and returns its CLI.
    pub fn install(&self, node: &Path, npm: &Path) -> Result<PathBuf, Error> {
        let package = format!("dirq@{}", VERSION);
        let integrity = NPM_INTEGRITY.ok_or_else(|| {
            Error::new(
                ErrorKind::NotPinned,
                format!(
                    "this dirq launcher was built without the record of the npm release it \
                     installs (npm-package.json), so it installs nothing: set DIRQ_BIN to a dirq \
                     CLI (bin/dirq.cjs of the npm package {}), or install the crate from its \
                     registry (cargo install dirq --features cli)",
                    package
                ),
            )
        })?;
        let prefix = self.npm_prefix()?;
        if let Some(notice) = self.notice {
            notice(&package, &prefix);
        }
        install::Install {
            version: VERSION,
            integrity,
            prefix: &prefix,
            node,
            npm,
        }
        .run()
    }

    /// A command that runs the CLI (installing it first when there is none), with no
    /// arguments yet: add them, and the working directory, then run it.
    pub fn command(&self) -> Result<Command, Error> {
        match self.find_cli()? {
            Some(cli) if locate::runs_on_node(&cli) => Ok(on_node(&find_node()?, &cli)),
            Some(cli) => Ok(Command::new(cli)),
            None => {
                let node = find_node()?;
                let npm = find_npm(&node, &format!("dirq@{}", VERSION))?;
                Ok(on_node(&node, &self.install(&node, &npm)?))
            }
        }
    }
}

fn on_node(node: &Path, cli: &Path) -> Command {
    let mut command = Command::new(node);
    command.arg(cli);
    command
}

/// [`Launcher::command`] of a [`Launcher::new`]: a command that runs the dirq CLI.
pub fn command() -> Result<Command, Error> {
    Launcher::new().command()
}
