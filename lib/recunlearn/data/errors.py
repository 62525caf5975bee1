"""Errors raised by the data layer; each message says what was expected and how to fix it."""

from __future__ import annotations


class DatasetError(RuntimeError):
    """Base class for dataset problems."""


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """A dataset file is in none of the looked-up places and could not be downloaded."""


class ChecksumMismatchError(DatasetError):
    """A dataset file's SHA-256 differs from the registry's."""

    def __init__(self, path, expected: str, actual: str, hint: str = ""):
        self.path, self.expected, self.actual = path, expected, actual
        super().__init__(
            f"checksum mismatch for {path}: expected sha256 {expected}, got {actual}. {hint}".strip()
        )
