"""``Index``: an index proven current for one ledger, and the validation index it backs in SQL (``known``)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from docket_git.ledger import db, model, store
from docket_git.ledger.index.schema import _count
from docket_git.ledger.validate import Index as Known
from docket_git.repo import files


class Index:
    """An index proven current for one ledger: a connection, and where it lives (None: in memory)."""

    __slots__ = ("_fd", "conn", "data", "how", "ledger", "note", "path")

    def __init__(
        self, conn: sqlite3.Connection, ledger: Path, path: Path | None, how: str = "current", data: bytes | None = None
    ) -> None:
        self.conn = conn
        self.ledger = ledger
        self.path = path
        #: What proving it current took: "current", "updated" or "rebuilt".
        self.how = how
        #: The ledger's bytes as indexed, when this process read them anyway (else read on demand).
        self.data = data
        #: The ledger opened for reading single lines (``records_of``), once per index.
        self._fd: int | None = None
        #: Why this index is not of the ledger asked for (a stand-in for a broken one), "" when it is.
        self.note = ""

    def close(self) -> None:
        self.conn.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def line_reader(self) -> int:
        """A descriptor of the ledger for reading lines by offset (opened safely once; closed with the index)."""
        if self._fd is None:
            self._fd = files.open_fd(self.ledger, os.O_RDONLY, store.root_of(self.ledger))
        return self._fd

    def reader(self) -> sqlite3.Connection:
        """A read-only connection (mode=ro, query_only) to the same data."""
        if self.path is None:
            self.conn.execute("PRAGMA query_only = ON")
            return self.conn
        return db.reader(self.path)

    def count(self) -> int:
        """How many records the index holds."""
        return _count(self.conn)

    def known(self) -> Known:
        """The validation index of every indexed record: what a new record is checked against."""
        return known(self.conn, self.count())


# -- the validation index, backed by SQL ------------------------------------------------------------


class _Ids(dict):
    """ID -> line of the records validated in this process, and the first ``limit`` indexed records."""

    def __init__(self, conn: sqlite3.Connection, limit: int) -> None:
        super().__init__()
        self.conn, self.limit = conn, limit

    def __contains__(self, rid: object) -> bool:
        if dict.__contains__(self, rid):
            return True
        if not self.limit or not isinstance(rid, str):
            return False
        row = self.conn.execute("SELECT 1 FROM records WHERE id = ? AND seq < ?", (rid, self.limit)).fetchone()
        return row is not None

    def copy(self) -> _Ids:  # type: ignore[override]
        out = _Ids(self.conn, self.limit)
        out.update(self)
        return out


class _Retired(set):
    """IDs superseded by a record validated in this process or by one of the first ``limit`` indexed records."""

    def __init__(self, conn: sqlite3.Connection, limit: int) -> None:
        super().__init__()
        self.conn, self.limit = conn, limit

    def __contains__(self, rid: object) -> bool:
        if set.__contains__(self, rid):
            return True
        if not self.limit:
            return False
        row = self.conn.execute(
            "SELECT 1 FROM relations r JOIN records s ON s.id = r.source "
            "WHERE r.target = ? AND r.type = 'supersedes' AND s.seq < ? LIMIT 1",
            (rid, self.limit),
        ).fetchone()
        return row is not None

    def copy(self) -> _Retired:  # type: ignore[override]
        out = _Retired(self.conn, self.limit)
        out.update(self)
        return out


def known(conn: sqlite3.Connection, limit: int) -> Known:
    """The validation index of the first ``limit`` indexed records, looked up in SQL as rules ask."""
    row = conn.execute("SELECT id FROM records WHERE seq = ?", (limit - 1,)).fetchone() if limit else None
    top = model.seq(row[0]) if row else 0
    return Known(max_seq=top, lines=_Ids(conn, limit), retired=_Retired(conn, limit), count=limit)
