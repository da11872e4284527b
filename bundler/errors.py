"""Errors a user can act on: a message naming the file and the problem, and a hint."""

from __future__ import annotations

# Exit codes of the command line (docs/architecture.md, "Exit codes").
EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3   # a bug in bundler: an unexpected exception, reported without a traceback


class BundlerError(Exception):
    """Bad input or a refused operation: shown as one line plus a hint, exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class SpecError(BundlerError):
    """The spec file is malformed or names something that does not exist."""


class RecipeError(BundlerError):
    """A recipe file is malformed, or no recipe has the requested name."""


class SourceError(BundlerError):
    """A source (archive, toolkit, wheel, folder) is missing, damaged or incomplete."""


class CheckError(BundlerError):
    """A runtime file failed a pack-time check (architecture, version, imports)."""


class BuildError(BundlerError):
    """The app's own build (PyInstaller) cannot run, failed, or made an app that
    bundler cannot ship as it is."""


class LockError(BundlerError):
    """The inputs differ from what the lock file pins."""


class RefusedError(BundlerError):
    """An operation that would lose data or cannot be done safely."""
