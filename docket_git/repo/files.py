"""Opening files inside a repository someone else wrote: never through a link, never unbounded.

A cloned repository is untrusted input. Every file docket reads or writes in
it (the ledger and its lock, ``.docket/config.toml``, ``.docket/.gitignore``,
``.gitattributes``, typed ledgers, session logs) goes through here:

- **no symbolic links**: the file itself and every directory between the
  repository root and it must not be a link (``O_NOFOLLOW`` for the file, an
  ``lstat`` per directory). A committed link could otherwise point a write at
  ``~/.bashrc`` or a read at ``/dev/zero``. Git refuses to follow such links
  too; docket refuses them even when they point inside the repository, since
  a link's target can change under a checkout;
- **regular files only**: a directory, FIFO or device named like a docket
  file is refused;
- **bounded reads**: a committed file is read up to a cap (the ledger's is
  large, a config's small), so ``/dev/zero`` or a 10 GB blob cannot exhaust
  memory;
- **writes replace**: a file other than the ledger is written to a fresh
  temp file (``O_EXCL``) beside it, fsynced and renamed over it, so an
  existing link is replaced, never written through.

Refusals are ``UnsafePath`` errors naming the path and what to do.

``read_bytes`` is also the one reader for files outside a repository (an
``@FILE`` argument, a session file, a git hook, a user-level agent settings
file, hook state): with ``follow=True`` a link is followed, but the open
never blocks and only a regular file is read, up to its cap.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from docket_git.errors import LedgerError

#: Read caps. The ledger's is generous (100k records are about 50 MB).
LEDGER_CAP = 1 << 30
SMALL_CAP = 1 << 20

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafePath(LedgerError):
    """A repository path docket will not open: a link, not a regular file, or too large."""


def _refuse(path: Path, why: str, fix: str) -> UnsafePath:
    return UnsafePath(f"{path} {why}; docket never follows links or reads special files in a repository. {fix}")


def check_dirs(path: Path, root: Path | None) -> None:
    """Refuse when a directory between root (exclusive) and path (exclusive) is a symbolic link."""
    if root is None:
        return
    try:
        rel = path.relative_to(root)
    except ValueError:
        return
    here = root
    for part in rel.parts[:-1]:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return  # created later, as a real directory
        except OSError:
            return
        if stat.S_ISLNK(mode):
            raise _refuse(here, "is a symbolic link", f"Replace it with a real directory: rm {here} && mkdir {here}")
        if not stat.S_ISDIR(mode):
            raise _refuse(here, "is not a directory", f"Move it aside: mv {here} {here}.bak")


def make_dirs(directory: Path, root: Path | None) -> None:
    """Create directory and its missing parents below root, refusing a link or a file on the way.

    ``mkdir -p`` would follow a committed link (``.github -> ~``) and create
    directories outside the repository; here each part is created or checked
    with ``lstat`` in turn. Outside root (or without one) it is a plain ``mkdir -p``.
    """
    try:
        rel = directory.relative_to(root) if root is not None else None
    except ValueError:
        rel = None
    if rel is None or root is None:
        directory.mkdir(parents=True, exist_ok=True)
        return
    here = root
    for part in rel.parts:
        here = here / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(here)
        mode = os.lstat(here).st_mode
        if stat.S_ISLNK(mode):
            raise _refuse(here, "is a symbolic link", f"Replace it with a real directory: rm {here} && mkdir {here}")
        if not stat.S_ISDIR(mode):
            raise _refuse(here, "is not a directory", f"Move it aside: mv {here} {here}.bak")


def open_fd(path: Path, flags: int, root: Path | None = None, mode: int = 0o644, *, follow: bool = False) -> int:
    """os.open without following a link at path (or in its directories below root); a regular file only.

    ``follow``: a file the user named outside any repository (an ``@FILE``
    argument, a user-level settings file, a git hook) may be a link; it must
    still lead to a regular file.
    """
    check_dirs(path, root)
    try:
        fd = os.open(path, flags | (0 if follow else _NOFOLLOW) | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EEXIST and os.path.islink(path)):
            raise _refuse(path, "is a symbolic link", f"Replace it with a regular file: rm {path}") from None
        if exc.errno == errno.EISDIR:
            raise _refuse(path, "is a directory", f"Move it aside: mv {path} {path}.bak") from None
        raise
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _refuse(path, "is a directory", f"Move it aside: mv {path} {path}.bak")
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
        raise UnsafePath(
            f"{path} is not a regular file ({kind}); docket reads regular files only, so a pipe or a device "
            f"can neither hang it nor feed it without end. Use a regular file (or '-' for stdin where an option "
            f"takes it), or move it aside: mv {path} {path}.bak"
        )
    return fd


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of data to fd (os.write may write less than asked), then fsync it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def read_bytes(path: Path, root: Path | None = None, cap: int = SMALL_CAP, *, follow: bool = False) -> bytes:
    """A regular file's bytes, read without following links and refused past cap bytes.

    The one way docket reads a file, in a repository or not: the open never
    blocks (``O_NONBLOCK``: a FIFO with no writer would hang a plain open),
    a FIFO, device or directory is refused before a byte is read, and no
    more than cap bytes are read, so ``/dev/zero`` or an endless file ends.
    FileNotFoundError when it does not exist; ``UnsafePath`` for a link (unless
    ``follow``), a special file or an oversized one; other OSErrors as they are.
    """
    fd = open_fd(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0), root, follow=follow)
    try:
        size = os.fstat(fd).st_size
        if size > cap:
            raise UnsafePath(
                f"{path} is {size} bytes, more than docket reads ({cap}); it cannot be a file docket wrote. "
                f"Move it aside: mv {path} {path}.bak"
            )
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise UnsafePath(
                    f"{path} is larger than docket reads ({cap} bytes). Move it aside: mv {path} {path}.bak"
                )
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path, root: Path | None = None, cap: int = SMALL_CAP, *, follow: bool = False) -> str:
    """``read_bytes`` decoded as UTF-8 (undecodable bytes replaced: these are text files docket edits)."""
    return read_bytes(path, root, cap, follow=follow).decode("utf-8", errors="replace")


def write_replace(path: Path, data: bytes, root: Path | None = None, *, mode: int | None = None) -> None:
    """Replace path with data: a fresh temp file beside it (never an existing one), fsync, rename.

    An existing link at path is replaced by the rename, never written
    through; a directory at path is refused. The file keeps its mode when it
    exists (else ``mode``, default 0644).
    """
    check_dirs(path, root)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise _refuse(path, "is a symbolic link", f"Replace it with a regular file: rm {path}")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise _refuse(path, "is not a regular file", f"Move it aside: mv {path} {path}.bak")
    keep = stat.S_IMODE(info.st_mode) if info is not None else (0o644 if mode is None else mode)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, keep)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
