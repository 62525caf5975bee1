"""Errors raised by the data layer; each message says what was expected and how to fix it."""

from __future__ import annotations


class DatasetError(RuntimeError):
    """Base class for dataset problems."""


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """A dataset file is in none of the looked-up places and could not be downloaded. ``file``
    (``<dataset>/<path>``) and ``url`` (its official source) let a page say so in a sentence;
    the message has the details (places looked in, checksum, how to obtain it)."""

    def __init__(self, message: str, *, file: str = "", url: str = ""):
        self.file, self.url = file, url
        super().__init__(message)


class ChecksumMismatchError(DatasetError):
    """A dataset file's SHA-256 differs from the registry's, or its compressed bytes cannot be read.

    ``of`` says what was hashed (e.g. "compressed file"); ``problem`` says why the content could not
    be hashed (a truncated or damaged gzip stream).
    """

    def __init__(self, path, expected: str, actual: str, hint: str = "", *, of: str = "", problem: str = ""):
        self.path, self.expected, self.actual, self.problem = path, expected, actual, problem
        subject = f" ({of})" if of else ""
        reason = f"; {problem}" if problem else ""
        super().__init__(
            f"checksum mismatch for {path}: expected sha256{subject} {expected}, got {actual}{reason}. {hint}".strip()
        )
