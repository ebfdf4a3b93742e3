//! The error of the simulation library's entry points ([`crate::run`], [`crate::check`]): what a
//! front end acts on is a variant of its own (the input at fault, located at its key; a run
//! stopped on request; an error every rank agreed on), anything else keeps its chain of causes.
//! `Display` with the alternate flag (`{:#}`, or any renderer that walks `source()`) gives the
//! message the command line has always printed.

use std::fmt;

use comm::CommError;
use config::ConfigError;

use crate::campaign::CampaignInterrupted;
use crate::interrupt::Interrupted;
use crate::restart::RestartError;

/// An error of a run or check.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is at fault: `file:line:column: key.path: message` (or the `--set` argument
    /// that wrote the value), with the offending line quoted.
    #[error(transparent)]
    Input(#[from] ConfigError),
    /// The run stopped on request at a safe point: its files hold every converged step, and
    /// the error names the `--restart` that continues it.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// A campaign stopped on request: its table holds the cases finished so far; `--resume`
    /// runs the others.
    #[error(transparent)]
    CampaignInterrupted(#[from] CampaignInterrupted),
    /// `--restart FILE.h5[:STEP]` names no state this input can continue from.
    #[error(transparent)]
    Restart(#[from] RestartError),
    /// An error on MPI ranks, the same on every rank (agreed: the lowest failing rank's), or of
    /// the communication itself.
    #[error(transparent)]
    Ranks(#[from] CommError),
    /// The output directory could not be created.
    #[error("creating output directory {}: {error}", dir.display())]
    OutputDirectory {
        dir: std::path::PathBuf,
        error: std::io::Error,
    },
    /// The background output writer could not take or write a state.
    #[error(transparent)]
    Writer(#[from] WriterFailure),
    /// A failure while building, solving or writing (a file that cannot be written, a load
    /// step that does not converge, ...), with its chain of causes.
    #[error(transparent)]
    Run(Failure),
}

/// Why the output writer (a thread of the process, of each rank on ranks, that writes or
/// gathers the converged states while Newton goes on, [`crate::writer`]) could not take or
/// write a state.
#[derive(Debug, thiserror::Error)]
pub enum WriterFailure {
    /// Its thread has ended: a state handed to it cannot be written.
    #[error("the output writer has stopped")]
    Stopped,
    /// A write panicked (the file keeps its committed steps).
    #[error("the output writer failed unexpectedly")]
    Panicked,
    /// Its thread could not be started.
    #[error("starting the output writer's thread: {error}")]
    Thread { error: std::io::Error },
}

/// A failure and its chain of causes: `Display` gives the failure, with the alternate flag
/// (`{:#}`) the whole chain (`failure: cause: ...`); `source` the next cause.
#[derive(Debug)]
pub struct Failure(Box<dyn std::error::Error + Send + Sync + 'static>);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        if f.alternate() {
            let mut cause = self.0.source();
            while let Some(e) = cause {
                write!(f, ": {e}")?;
                cause = e.source();
            }
        }
        Ok(())
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// A failure's message without a cause.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Message(String);

/// A failure's message with the error that caused it (its `source`).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct Caused {
    message: String,
    #[source]
    cause: Box<dyn std::error::Error + Send + Sync + 'static>,
}

/// A result of the simulation library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// True for an error that every rank holds (see [`crate::distributed::agreed`]), also as
    /// the cause of a failure (rank 0 adds where its files are): a front end need not agree on
    /// it again (every rank skips that collective).
    pub fn is_agreed(&self) -> bool {
        // an agreed error, also as the cause of a failure
        let agreed = |e: &(dyn std::error::Error + 'static)| {
            matches!(
                e.downcast_ref::<CommError>(),
                Some(CommError::Failed { .. })
            ) || e.downcast_ref::<Error>().is_some_and(Error::is_agreed)
        };
        match self {
            Error::Ranks(e) => agreed(e),
            _ => self.causes().into_iter().any(agreed),
        }
    }

    /// The error and its causes in one line, `error: cause: ...` (as the alternate rendering
    /// of a failure, and of the error as an `anyhow::Error`): the text the ranks agree on and
    /// the summary records.
    pub fn chain_text(&self) -> String {
        let texts: Vec<String> = self.causes().iter().map(ToString::to_string).collect();
        texts.join(": ")
    }

    /// True where this error or one of its causes is an `E` (as `anyhow::Error::is` looks
    /// through the context added to an error).
    pub fn is<E: std::error::Error + 'static>(&self) -> bool {
        self.causes().iter().any(|e| e.is::<E>())
    }
}

impl Error {
    /// A failure with `message` and no cause ([`Error::Run`]).
    pub(crate) fn failure(message: String) -> Self {
        Error::Run(Failure(Box::new(Message(message))))
    }

    /// A failure of `message` caused by this error ([`Error::Run`]; the alternate rendering
    /// is `message: this error's`).
    pub(crate) fn context(self, message: String) -> Self {
        Error::Run(Failure(Box::new(Caused {
            message,
            cause: self.into_cause(),
        })))
    }

    /// The error as the cause of a failure, each cause its own type (where a typed variant
    /// was a failure's cause, it stays recognisable: [`Error::causes`]).
    fn into_cause(self) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        match self {
            Error::Input(e) => Box::new(e),
            Error::Interrupted(e) => Box::new(e),
            Error::CampaignInterrupted(e) => Box::new(e),
            Error::Restart(e) => Box::new(e),
            Error::Ranks(e) => Box::new(e),
            e @ Error::OutputDirectory { .. } => Box::new(e),
            Error::Writer(e) => Box::new(e),
            Error::Run(Failure(e)) => e,
        }
    }

    /// The error and its causes, outermost first, each its own type (a lower crate's error
    /// can be recognised with `downcast_ref`).
    pub(crate) fn causes(&self) -> Vec<&(dyn std::error::Error + 'static)> {
        let first: &(dyn std::error::Error + 'static) = match self {
            Error::Input(e) => e,
            Error::Interrupted(e) => e,
            Error::CampaignInterrupted(e) => e,
            Error::Restart(e) => e,
            Error::Ranks(e) => e,
            Error::OutputDirectory { .. } => self,
            Error::Writer(e) => e,
            Error::Run(Failure(e)) => &**e,
        };
        std::iter::successors(Some(first), |e| e.source()).collect()
    }
}

/// Adds a message to an error, the error becoming its cause (anyhow's `Context` for the
/// library's error): the alternate rendering is `message: cause`.
pub(crate) trait Context<T> {
    fn context(self, message: &str) -> Result<T>;
    fn with_context(self, message: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, message: &str) -> Result<T> {
        self.map_err(|e| e.into().context(message.to_owned()))
    }
    fn with_context(self, message: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| e.into().context(message()))
    }
}

impl<T> Context<T> for Option<T> {
    /// `None` is a failure of `message` alone.
    fn context(self, message: &str) -> Result<T> {
        self.ok_or_else(|| Error::failure(message.to_owned()))
    }
    fn with_context(self, message: impl FnOnce() -> String) -> Result<T> {
        self.ok_or_else(|| Error::failure(message()))
    }
}

/// The lower crates' errors met in the library's own code: a failure whose chain of causes is
/// that error's (as `?` into `anyhow` gives).
macro_rules! failure_from {
    ($($error:ty),*) => {$(
        impl From<$error> for Error {
            fn from(error: $error) -> Self {
                Error::Run(Failure(Box::new(error)))
            }
        }
    )*};
}
failure_from!(
    mesh::MeshError,
    fem::FemError,
    linalg::LinalgError,
    assembly::AssemblyError,
    amg::AmgError,
    io::OutputError,
    std::io::Error,
    serde_json::Error,
    std::string::FromUtf8Error,
    std::num::ParseIntError,
    rayon::ThreadPoolBuildError
);

/// Returns a [`crate::Error::Run`] failure with a formatted message (anyhow's `bail!` for the
/// library's typed error).
macro_rules! fail {
    ($($arg:tt)*) => {
        return Err($crate::Error::failure(format!($($arg)*)))
    };
}
pub(crate) use fail;

impl From<solve::Error> for Error {
    /// An error on MPI ranks as [`Error::Ranks`]; any other as a failure whose chain of causes
    /// is the error's, a lower crate's error keeping its type ([`solve::Error::into_boxed`]).
    fn from(error: solve::Error) -> Self {
        match error {
            solve::Error::Comm(e) => Error::Ranks(e),
            e => Error::Run(Failure(e.into_boxed())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A solve error keeps its message and its types: an error on the ranks becomes
    /// [`Error::Ranks`], any other a failure whose causes are the solve error's (a lower crate's
    /// error recognisable by its type); the alternate rendering, the chain text and the command
    /// line's (anyhow's alternate rendering) are the solve error's chain.
    #[test]
    fn conversion_keeps_the_message_and_the_type() {
        let agreed = CommError::Failed {
            rank: 1,
            size: 2,
            message: "boom".into(),
        };
        let chained = solve::Error::ReadMesh {
            file: "a.msh".into(),
            error: mesh::MeshError::Invalid("node 3 twice".into()),
        };
        let cases = vec![
            solve::Error::Comm(agreed),
            chained,
            solve::Error::Mesh(mesh::MeshError::Invalid("no cells".into())),
            solve::Error::NoConstraint,
            solve::Error::Interrupted(solve::newton::Interrupted),
        ];
        let expected: Vec<String> = cases.iter().map(|e| e.chain().to_string()).collect();
        assert_eq!(expected[0], "rank 1 of 2: boom");
        assert_eq!(
            expected[1],
            "reading mesh a.msh: invalid mesh: node 3 twice"
        );
        let converted: Vec<Error> = cases.into_iter().map(Error::from).collect();
        assert!(matches!(converted[0], Error::Ranks(_)) && converted[0].is_agreed());
        assert!(matches!(converted[1], Error::Run(_)) && !converted[1].is_agreed());
        assert!(converted[1].is::<mesh::MeshError>() && converted[2].is::<mesh::MeshError>());
        assert!(converted[4].is::<solve::newton::Interrupted>());
        for (e, expected) in converted.into_iter().zip(expected) {
            assert_eq!(format!("{e:#}"), expected);
            assert_eq!(e.chain_text(), expected);
            assert_eq!(format!("{:#}", anyhow::Error::new(e)), expected);
        }
    }

    /// A failure's context keeps its cause's type and text (`is`, `chain_text`, the alternate
    /// rendering, the command line's).
    #[test]
    fn context_keeps_the_causes_and_their_types() {
        let agreed = Error::Ranks(CommError::Failed {
            rank: 1,
            size: 3,
            message: "step 2: element failure in cell 4".into(),
        });
        let e = agreed.context("0 converged steps are in a.h5".into());
        assert!(e.is_agreed() && e.is::<CommError>());
        let text = "0 converged steps are in a.h5: rank 1 of 3: step 2: element failure in cell 4";
        assert_eq!(e.chain_text(), text);
        assert_eq!(format!("{e:#}"), text);
        assert_eq!(e.to_string(), "0 converged steps are in a.h5");
        assert_eq!(format!("{:#}", anyhow::Error::new(e)), text);
        let alone = Error::from(std::io::Error::other("full"));
        assert!(alone.is::<std::io::Error>());
        let in_context = Error::from(std::io::Error::other("full")).context("x".into());
        assert!(in_context.is::<std::io::Error>());
        assert_eq!(in_context.chain_text(), "x: full");
        let writer = Error::from(WriterFailure::Stopped).context("step 3".into());
        assert!(writer.is::<WriterFailure>() && !writer.is::<CommError>());
        assert_eq!(writer.chain_text(), "step 3: the output writer has stopped");
        let dir = Error::OutputDirectory {
            dir: "out/x".into(),
            error: std::io::Error::other("read-only file system"),
        };
        assert_eq!(
            format!("{:#}", anyhow::Error::new(dir)),
            "creating output directory out/x: read-only file system"
        );
    }
}
