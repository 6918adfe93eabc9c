//! The `dirq` command of `cargo install dirq --features cli`: finds or installs the dirq CLI
//! of this crate's version and becomes it, with the same arguments, standard streams,
//! signals and exit code.

use std::env;
use std::path::Path;
use std::process::{self, Command};

fn announce(package: &str, prefix: &Path) {
    eprintln!(
        "dirq: first run: installing the dirq CLI (npm package {}) into {} with npm; later \
         runs use it",
        package,
        prefix.display()
    );
}

fn main() {
    let mut command = match dirq::Launcher::new().on_install(announce).command() {
        Ok(command) => command,
        Err(error) => {
            eprintln!("dirq: {}", error);
            process::exit(1);
        }
    };
    command.args(env::args_os().skip(1));
    let error = run(command);
    eprintln!("dirq: cannot run {}: {}", error.0, error.1);
    process::exit(1);
}

/// Replaces this process with the CLI; returns only when that fails.
#[cfg(unix)]
fn run(mut command: Command) -> (String, std::io::Error) {
    use std::os::unix::process::CommandExt;
    let program = Path::new(command.get_program()).display().to_string();
    let error = command.exec();
    (program, error)
}

/// Runs the CLI and exits with its exit code (Windows has no exec).
#[cfg(not(unix))]
fn run(mut command: Command) -> (String, std::io::Error) {
    let program = Path::new(command.get_program()).display().to_string();
    match command.status() {
        Ok(status) => process::exit(status.code().unwrap_or(1)),
        Err(error) => (program, error),
    }
}
