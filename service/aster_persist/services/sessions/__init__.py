"""The sessions service (``Sessions``) and what it announces (``Appended``).

::

    service.py   Sessions: create, append, rename, delete, restore, revert, read, export,
                 listings and search, with listeners told of every durable append
    parts.py     Parts, what the service and the importer share, and Appended, the
                 notice listeners get
    creation.py  what a create checks first: a retry, and a caller's alias
    imports.py   sessions from files other tools wrote, written whole
    outside.py   transcripts other programs appended to or added, and sessions found
                 at start with no journal entry
    prune.py     trashing old sessions and purging old trash
    tails.py     what session tails read from a transcript (worker threads)
    activity.py  Activity: which sessions are being written now
"""

from .activity import Activity
from .parts import Appended, Listener, Parts
from .service import Page, Sessions

__all__ = ["Activity", "Appended", "Listener", "Page", "Parts", "Sessions"]
