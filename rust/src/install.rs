//! Installing the pinned npm release of the CLI into the cache folder.
//!
//! The tarball is fetched with the user's npm (`npm pack dirq@<version>`, so the user's
//! registry, proxy and certificates apply), its sha512 integrity is compared with the one this
//! crate was built with, and only then is it installed (`npm install --prefix <staging>
//! <tarball>`). The install happens in a staging folder beside its final place and is renamed
//! into place when complete: a run that is interrupted leaves nothing a later run would take
//! for a CLI, and of two first runs at once the first rename wins and the other uses it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{self, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, ErrorKind};
use crate::locate::json_string_field;
use crate::node::path_with_node_first;

const STAGING_PREFIX: &str = ".installing-";
/// A staging folder this old belongs to a run that was killed: it is removed.
const STALE_STAGING: Duration = Duration::from_secs(24 * 60 * 60);

/// The CLI inside an npm prefix.
pub(crate) fn cli_in(prefix: &Path) -> PathBuf {
    prefix
        .join("node_modules")
        .join("dirq")
        .join("bin")
        .join("dirq.cjs")
}

/// What to install, and with what.
pub(crate) struct Install<'a> {
    pub version: &'a str,
    pub integrity: &'a str,
    pub prefix: &'a Path,
    pub node: &'a Path,
    pub npm: &'a Path,
}

impl Install<'_> {
    fn package(&self) -> String {
        format!("dirq@{}", self.version)
    }

    /// Installs, and returns the CLI in the prefix.
    pub(crate) fn run(&self) -> Result<PathBuf, Error> {
        let parent = self.prefix.parent().unwrap_or_else(|| Path::new("."));
        fs::create_dir_all(parent).map_err(|error| {
            Error::new(
                ErrorKind::CacheFolder,
                format!(
                    "cannot make the folder {} for the dirq CLI: {}: set DIRQ_CACHE_DIR to a \
                     folder dirq may write",
                    parent.display(),
                    error
                ),
            )
        })?;
        remove_stale_staging(parent);
        let staging = new_staging_folder(parent)?;
        let result = self.install_into(&staging);
        let outcome = result.and_then(|()| self.move_into_place(&staging));
        let _ = fs::remove_dir_all(&staging);
        outcome
    }

    fn install_into(&self, staging: &Path) -> Result<(), Error> {
        let download = staging.join(".tarball");
        fs::create_dir(&download).map_err(|error| self.failed(format!("{}", error)))?;
        let tarball = self.fetch_tarball(staging, &download)?;
        let found = self.integrity_of(&tarball)?;
        if found != self.integrity {
            return Err(Error::new(
                ErrorKind::IntegrityMismatch,
                format!(
                    "the npm registry served a {} tarball whose integrity is {}, not {}, the \
                     release this launcher was built for; nothing was installed. Check the \
                     registry npm uses (npm config get registry), or set DIRQ_BIN to a dirq CLI \
                     you trust",
                    self.package(),
                    found,
                    self.integrity
                ),
            ));
        }
        let mut install = self.npm_command(staging);
        install
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(staging)
            .arg(&tarball);
        self.run_npm(install, "npm install")?;
        let _ = fs::remove_dir_all(&download);
        let manifest = staging
            .join("node_modules")
            .join("dirq")
            .join("package.json");
        let installed = fs::read_to_string(&manifest)
            .ok()
            .and_then(|text| json_string_field(&text, "version"));
        if installed.as_deref() != Some(self.version) || !cli_in(staging).is_file() {
            return Err(self.failed(format!(
                "npm finished, but {} holds no dirq {} CLI",
                staging.display(),
                self.version
            )));
        }
        Ok(())
    }

    /// `npm pack <package>`: the registry's tarball, as the user's npm fetches it.
    fn fetch_tarball(&self, staging: &Path, download: &Path) -> Result<PathBuf, Error> {
        let mut pack = self.npm_command(staging);
        // Without --loglevel=warn, npm lists every file of the tarball it fetched.
        pack.arg("pack")
            .arg(self.package())
            .arg("--loglevel=warn")
            .arg("--pack-destination")
            .arg(download)
            .arg("--prefix")
            .arg(staging);
        self.run_npm(pack, "npm pack")?;
        let mut tarballs: Vec<PathBuf> = fs::read_dir(download)
            .map_err(|error| self.failed(format!("{}", error)))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().map_or(false, |suffix| suffix == "tgz"))
            .collect();
        match (tarballs.pop(), tarballs.is_empty()) {
            (Some(tarball), true) => Ok(tarball),
            _ => Err(self.failed(format!(
                "npm pack {} left no single tarball in {}",
                self.package(),
                download.display()
            ))),
        }
    }

    /// The tarball's sha512 integrity (`sha512-<base64>`), computed by Node.js's crypto.
    fn integrity_of(&self, tarball: &Path) -> Result<String, Error> {
        const SCRIPT: &str = "const data = require('fs').readFileSync(process.argv[1]);\
             process.stdout.write('sha512-' + require('crypto').createHash('sha512')\
             .update(data).digest('base64'))";
        let output = Command::new(self.node)
            .args(["-e", SCRIPT])
            .arg(tarball)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|error| {
                self.failed(format!("cannot run {}: {}", self.node.display(), error))
            })?;
        let digest = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if !output.status.success() || !digest.starts_with("sha512-") {
            return Err(self.failed(format!(
                "{} could not hash {}",
                self.node.display(),
                tarball.display()
            )));
        }
        Ok(digest)
    }

    fn npm_command(&self, staging: &Path) -> Command {
        let mut command = Command::new(self.npm);
        command
            .current_dir(staging)
            .env("PATH", path_with_node_first(self.node))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        command
    }

    /// Runs npm; what it prints on stdout goes to stderr, after it, so stdout stays the CLI's.
    fn run_npm(&self, mut command: Command, what: &str) -> Result<(), Error> {
        let output = command.output().map_err(|error| {
            Error::new(
                ErrorKind::NpmMissing,
                format!("cannot run {}: {}", self.npm.display(), error),
            )
        })?;
        eprint!("{}", String::from_utf8_lossy(&output.stdout));
        if output.status.success() {
            return Ok(());
        }
        let code = output
            .status
            .code()
            .map_or_else(|| "no exit code".to_string(), |code| code.to_string());
        Err(self.failed(format!(
            "{} exited with {} (its messages are above)",
            what, code
        )))
    }

    fn failed(&self, detail: String) -> Error {
        Error::new(
            ErrorKind::InstallFailed,
            format!(
                "installing the npm package {} failed: {}. Fix what npm says and run dirq again, \
                 or install the CLI yourself (npm install -g {}) and set DIRQ_BIN to its \
                 bin/dirq.cjs",
                self.package(),
                detail,
                self.package()
            ),
        )
    }

    /// Renames the complete staging folder to the prefix. When another run got there first, its
    /// install is used; an install there without its CLI is set aside and replaced.
    fn move_into_place(&self, staging: &Path) -> Result<PathBuf, Error> {
        let cli = cli_in(self.prefix);
        if fs::rename(staging, self.prefix).is_err() && !cli.is_file() && self.prefix.exists() {
            if let Ok(aside) = new_staging_folder(self.prefix.parent().unwrap_or(staging)) {
                let _ = fs::remove_dir(&aside);
                if fs::rename(self.prefix, &aside).is_ok() {
                    let _ = fs::rename(staging, self.prefix);
                    let _ = fs::remove_dir_all(&aside);
                }
            }
        }
        if cli.is_file() {
            Ok(cli)
        } else {
            Err(self.failed(format!(
                "the CLI is missing from {} after installing it; remove that folder and run dirq \
                 again",
                self.prefix.display()
            )))
        }
    }
}

/// A new, empty staging folder in `parent`, named for this process.
fn new_staging_folder(parent: &Path) -> Result<PathBuf, Error> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let mut attempt = 0u32;
    loop {
        let name = format!("{}{}-{}-{}", STAGING_PREFIX, process::id(), nanos, attempt);
        let folder = parent.join(name);
        match fs::create_dir(&folder) {
            Ok(()) => return Ok(folder),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1
            }
            Err(error) => {
                return Err(Error::new(
                    ErrorKind::CacheFolder,
                    format!(
                        "cannot make a folder in {}: {}: set DIRQ_CACHE_DIR to a folder dirq may \
                         write",
                        parent.display(),
                        error
                    ),
                ))
            }
        }
    }
}

/// Removes staging folders that runs killed long ago left behind.
fn remove_stale_staging(parent: &Path) {
    let entries = match fs::read_dir(parent) {
        Ok(entries) => entries,
        Err(_) => return,
    };
    for entry in entries.filter_map(Result::ok) {
        let stale = entry
            .file_name()
            .to_string_lossy()
            .starts_with(STAGING_PREFIX)
            && entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .map_or(false, |age| age > STALE_STAGING);
        if stale {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}
