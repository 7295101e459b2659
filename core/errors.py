"""Errors the core raises for bad input; each names what is wrong and where."""

from __future__ import annotations


class TrainRigError(Exception):
    """Base class: an error with a message fit to show a user as is."""


class WorkloadError(TrainRigError):
    """A workload document is invalid.

    ``path`` is the key path of the offending value, e.g. ``model.layers[3].kernel_size``.
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


class CatalogueError(TrainRigError):
    """A device name does not match exactly one catalogue entry, or the catalogue is broken."""


class StoreError(TrainRigError):
    """The database cannot be opened or migrated; nothing was changed."""


class OutputError(TrainRigError):
    """A file (a report, an export) could not be written; the file that was there is untouched."""


class ArchiveError(TrainRigError):
    """A results archive cannot be read (damaged, truncated, not an archive); nothing was imported."""
