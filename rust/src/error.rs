use std::fmt;

/// What kept the launcher from giving a command to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `DIRQ_BIN` is set but names no file.
    DirqBinMissing,
    /// No Node.js: `DIRQ_NODE` names no file, there is no `node` on `PATH`, or it does not run.
    NodeMissing,
    /// Node.js is older than 20.11.
    NodeTooOld,
    /// No npm to install the CLI with.
    NpmMissing,
    /// npm is older than the launcher needs.
    NpmTooOld,
    /// This build records no npm release to install (it was not built for release).
    NotPinned,
    /// The registry served a tarball other than the release this crate was built for.
    IntegrityMismatch,
    /// npm failed, or what it installed is not the CLI.
    InstallFailed,
    /// No cache folder can be found or made.
    CacheFolder,
}

/// An error whose message says what is wrong and what to do, fit to print after `dirq: `.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// What kind of problem this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
