"""Files written whole or not at all, JSON read within limits, and output directories made with care.

Every file the package writes goes through :func:`atomic_write` (a temporary file beside the target,
renamed over it on success), so a crash, a full disk or a concurrent reader never sees half of one. A
SIGKILL can still leave the temporary file behind; :func:`remove_stale_temps` clears those when a
writer opens its directory again, and only those: their names carry the package's own prefix, so a
user's ``.notes.tmp`` is never touched.

Every file the package reads from a user, a checkpoint, an atlas or a lab directory is opened with
:func:`open_regular`: it must be a regular file (a FIFO would block the reader forever, a device such
as ``/dev/zero`` never ends) of at most the size the caller allows, decided from ``fstat`` of the
opened descriptor, so a file swapped for a FIFO between a check and the open cannot slip through.
Directories written by long jobs are claimed with :class:`DirectoryLock` (an advisory ``flock``).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import lzma
import math
import os
import stat
import struct
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..core.errors import SpecboundError
from ..core.limits import LIMITS

#: Name pattern of the temporary files of atomic_write: ``.specbound-tmp.{target name}.{random}.tmp``.
#: remove_stale_temps deletes nothing else, so other programs' ``.*.tmp`` files are safe.
_TEMP_PREFIX, _TEMP_SUFFIX = ".specbound-tmp.", ".tmp"
#: Characters of the target's name kept in a temporary file's name (file names have at most 255 bytes).
_TEMP_NAME_CHARS = 120


@contextmanager
def atomic_write(path: Path) -> Iterator[BinaryIO]:
    """Yield a binary file beside ``path``; on success it is renamed over ``path``, else removed.

    Missing parents are created, for the package's own stores (the profile cache, an upload store);
    where a user names the target, callers check it first with :func:`require_parent` or
    :func:`output_dir`, which never create more than the last directory.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f"{_TEMP_PREFIX}{path.name[:_TEMP_NAME_CHARS]}."
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=_TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename not in (None, tmp):  # another file's error, raised inside the block
            raise
        # the temporary file is an implementation detail: the error is the target's (a directory in its
        # place, a full disk), so that a message names the file the caller asked for
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_write(path) as f:
        f.write(text.encode("utf-8"))


def remove_stale_temps(
    directory: Path, max_age: float = LIMITS.stale_temp_seconds, *, earlier: Callable[[str], bool] | None = None
) -> int:
    """Delete temporary files of interrupted atomic writes older than ``max_age`` seconds; how many.

    Candidates are the files named by :func:`atomic_write` (the package's own prefix) and, where
    ``earlier(target)`` says the writer owns ``target``, the ``.{target}.{random}.tmp`` files that
    versions before the prefix left (the profile cache owns every name in its folder; a ``grid``
    output directory only its own tables). Nothing else is touched: another program's ``.x.tmp``
    in a user's directory stays. Young files are left alone, as they may belong to a write in
    progress in another process; links are never followed or removed.
    """
    removed, now = 0, time.time()
    try:
        candidates = [p for p in directory.glob(f".*{_TEMP_SUFFIX}") if _is_own_temp(p.name, earlier)]
    except OSError:
        return 0
    for path in candidates:
        try:
            info = path.lstat()
            if stat.S_ISREG(info.st_mode) and now - info.st_mtime > max_age:
                path.unlink()
                removed += 1
        except OSError:
            continue  # gone already, or not ours to delete
    return removed


def _is_own_temp(name: str, earlier: Callable[[str], bool] | None) -> bool:
    if name.startswith(_TEMP_PREFIX):
        return True
    target, dot, random_part = name[1 : -len(_TEMP_SUFFIX)].rpartition(".")
    return earlier is not None and bool(dot and target and random_part) and earlier(target)


def output_dir(path: Path, what: str) -> Path:
    """Make sure ``path`` is a directory, creating at most the last component (its parent must exist).

    A typo should not create a tree of directories somewhere unexpected, so parents are never made.
    """
    if path.is_dir():
        return path
    require_parent(path, what)
    try:
        path.mkdir()
    except FileExistsError:
        if not path.is_dir():
            raise SpecboundError(f"cannot use {path.name} as the {what}: a file of that name exists") from None
    except OSError as exc:
        raise SpecboundError(f"cannot create the {what} {path.name}: {describe_os_error(exc)}") from None
    return path


def require_parent(path: Path, what: str) -> None:
    """``path`` is about to be created: its parent must already be a directory (never made here)."""
    if not path.parent.is_dir():
        raise SpecboundError(
            f"cannot create the {what} {path.name}: its parent is not an existing directory "
            f"(specbound creates at most the last component of a path)"
        )


def describe_os_error(exc: OSError, *, name_file: bool = False) -> str:
    """One line for an OSError without the path it carries (paths are for the operator's logs); with
    ``name_file``, led by the last component of the file it names (``grokking.csv: Is a directory``),
    for a message that does not name the file already."""
    if exc.errno == errno.ENOSPC:
        reason = "no space left on the device"
    elif exc.errno == errno.ENAMETOOLONG:
        reason = "a file name is too long"
    else:
        reason = exc.strerror or type(exc).__name__
    filename = exc.filename2 if exc.filename2 is not None else exc.filename
    if not name_file or filename is None:
        return reason
    name = Path(os.fsdecode(filename)).name or os.fsdecode(filename)
    return f"{name}: {reason}"


def parse_json(data: bytes | str, what: str, max_bytes: int) -> Any:
    """Parse a small JSON document, refusing one that is too large or too deeply nested (ValueError).

    Python's parser recurses once per level: a few hundred kilobytes of brackets raise RecursionError,
    which is turned into the same ValueError as any other malformed document.
    """
    if len(data) > max_bytes:
        raise ValueError(f"{what} is larger than {max_bytes} bytes")
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError(f"{what} is nested too deeply") from None


def read_json(path: Path, what: str, max_bytes: int) -> Any:
    """:func:`parse_json` of a regular file (:func:`open_regular`), reading at most ``max_bytes + 1`` bytes.

    Raises OSError when the file cannot be read (NotRegularFileError included) and ValueError when it
    is not a small, shallow JSON document.
    """
    with open_regular(path, what) as f:  # a FIFO or a device is refused; the size is parse_json's to say
        data = f.read(max_bytes + 1)
    return parse_json(data, what, max_bytes)


class NotRegularFileError(OSError):
    """A path the package was to read is a FIFO, a device, a socket or a directory, not a regular file."""


class FileTooLargeError(OSError):
    """A file is larger than the reader allows (checked from ``fstat`` before any byte is read)."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def open_regular(path: Path, what: str, max_bytes: int | None = None) -> BinaryIO:
    """Open ``path`` for reading only if it is a regular file (links followed) of at most ``max_bytes``.

    The file is opened non-blocking (opening a FIFO for reading would otherwise wait for a writer
    forever) and its kind and size are taken from ``fstat`` of that descriptor, so what is checked
    is what is read. Raises NotRegularFileError or FileTooLargeError (both OSError, with a one-line
    ``strerror`` that names ``what``, never the path), or the OSError of the open itself.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(errno.EINVAL, f"{what} is {_kind(info.st_mode)}, not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise FileTooLargeError(
                errno.EFBIG, f"{what} is {info.st_size} bytes, more than the {max_bytes} it may have"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def regular_size(path: Path, what: str) -> int:
    """Size in bytes of a regular file (NotRegularFileError for anything else), without opening it."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFileError(errno.EINVAL, f"{what} is {_kind(info.st_mode)}, not a regular file")
    return info.st_size


def expand_user(text: str, what: str) -> Path:
    """``Path(text).expanduser()``, with ``~user`` of an unknown user as one SpecboundError line."""
    try:
        return Path(text).expanduser()
    except RuntimeError:  # no home directory for '~' or for '~user'
        user = text[1:].partition("/")[0] or "the current user"
        raise SpecboundError(
            f"{what} starts with '~{text[1:].partition('/')[0][:40]}', but {user[:40]} has no home "
            f"directory on this machine"
        ) from None


class DirectoryLocked(SpecboundError):
    """Another process (or thread) is writing the directory this one was to write."""


class DirectoryLock:
    """An exclusive advisory lock (``flock``) on a lock file inside a directory, for one writer at a time.

    The lock file is created (never truncated or deleted: deleting it would let a third writer lock
    a new file while the second still holds the old one) and holds the owner's process id for the
    message of a writer that finds it taken. A lock dies with its process, so a killed writer never
    leaves a directory locked. Two opens in one process conflict as well (flock locks belong to the
    open file), so threads are kept apart too.
    """

    def __init__(self, lock_file: Path, what: str) -> None:
        self.lock_file, self.what = lock_file, what
        self._fd: int | None = None

    def acquire(self, *, wait: bool) -> DirectoryLock:
        """Take the lock; if another writer holds it, wait for it (``wait``) or raise DirectoryLocked."""
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                owner = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                holder = f"process {owner}" if owner.isdigit() else "another process"
                raise DirectoryLocked(
                    f"{self.what} is being written by {holder}; wait until it has finished, or choose another directory"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor releases the flock

    def __enter__(self) -> DirectoryLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


#: The lock file of an output directory that a grid or a trajectory writes: one writer at a time.
OUTPUT_LOCK_FILE = ".specbound.lock"


def lock_output(out: Path) -> DirectoryLock:
    """Take the output directory ``out`` for this writer (DirectoryLocked, naming the holder's process,
    when another grid or trajectory is writing it): one lock for every batch that writes a directory.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp, lock_output(Path(tmp)) as lock:
        ...     lock.lock_file.name
        '.specbound.lock'
    """
    return DirectoryLock(out / OUTPUT_LOCK_FILE, f"the output directory {out.name}").acquire(wait=False)


#: What reading a damaged or hostile archive can raise from zipfile, zlib, lzma, bz2 and numpy's .npy
#: reader (an encrypted member raises RuntimeError, a corrupt deflate stream zlib.error, a corrupt
#: bz2 stream OSError): a reader's boundary turns each of them into its own one-line error.
ARCHIVE_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    OSError,
    EOFError,
    KeyError,
    IndexError,
    TypeError,
    OverflowError,
    RuntimeError,
    NotImplementedError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    lzma.LZMAError,
    struct.error,
)

_NPY_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


@dataclass(frozen=True)
class NpyHeader:
    """What one ``.npy`` member of an archive declares about its array, read before its data."""

    dtype: np.dtype
    shape: tuple[int, ...]
    data_bytes: int  # what the header implies: prod(shape) * itemsize


class NpzArchive:
    """An ``.npz`` file read within limits: member sizes from the zip directory and each ``.npy``
    header are checked before any array is allocated (``np.load`` would trust both).

    The zip reader decompresses a member only up to its declared size, so a deflate bomb cannot
    expand beyond what was checked here. Raises ValueError for anything too large, and any of
    :data:`ARCHIVE_ERRORS` for a file that is malformed (the caller translates them).
    """

    def __init__(
        self, path: Path, *, max_file_bytes: int, max_total_bytes: int, max_member_bytes: int, max_members: int
    ) -> None:
        try:
            self._file = open_regular(path, "the file", max_file_bytes)
        except FileTooLargeError as exc:
            raise ValueError(exc.strerror) from None
        try:
            self._zip = zipfile.ZipFile(self._file)
        except BaseException:
            self._file.close()
            raise
        try:
            infos = self._zip.infolist()
            if len(infos) > max_members:
                raise ValueError(f"it has {len(infos)} members, above the limit of {max_members}")
            self._infos: dict[str, zipfile.ZipInfo] = {}
            for info in infos:
                if not info.filename.endswith(".npy") or info.filename[:-4] in self._infos:
                    raise ValueError(f"member '{info.filename[:60]}' is not a uniquely named .npy array")
                if info.file_size > max_member_bytes:
                    raise ValueError(
                        f"member '{info.filename[:60]}' expands to {info.file_size} bytes, above "
                        f"the limit of {max_member_bytes}"
                    )
                self._infos[info.filename[:-4]] = info
            total = sum(i.file_size for i in infos)
            if total > max_total_bytes:
                raise ValueError(f"its members expand to {total} bytes, above the limit of {max_total_bytes}")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._zip.close()
        self._file.close()

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self._infos)

    def header(self, key: str) -> NpyHeader:
        """The member's dtype and shape from its ``.npy`` header (a few hundred bytes decompressed)."""
        info = self._infos[key]
        with self._zip.open(info) as f:
            version = np.lib.format.read_magic(f)
            if version not in _NPY_HEADER_READERS:
                raise ValueError(f"member '{key}' has an unknown .npy version {version}")
            shape, fortran, dtype = _NPY_HEADER_READERS[version](f)  # the header's own size is capped
            header_bytes = f.tell()
        if dtype.hasobject or fortran:
            raise ValueError(f"member '{key}' is not a plain C-ordered numeric array")
        data_bytes = dtype.itemsize * math.prod(shape)
        if header_bytes + data_bytes != info.file_size:
            raise ValueError(
                f"member '{key}' declares {data_bytes} bytes of data, but holds {info.file_size - header_bytes}"
            )
        return NpyHeader(dtype, tuple(shape), data_bytes)

    def read(self, key: str, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        """The member's array, after checking that its header declares exactly ``dtype`` and ``shape``."""
        if key not in self._infos:
            raise KeyError(key)
        header = self.header(key)
        if header.dtype != dtype or header.shape != shape:
            raise ValueError(f"member '{key}' declares {header.dtype} {header.shape}, expected {dtype} {shape}")
        with self._zip.open(self._infos[key]) as f:
            return np.lib.format.read_array(f, allow_pickle=False)

    def read_text(self, key: str, max_chars: int) -> str:
        """A 0-d unicode member (a JSON manifest or meta record), at most ``max_chars`` long."""
        header = self.header(key)
        if header.dtype.kind != "U" or header.shape != () or header.dtype.itemsize > 4 * max_chars:
            raise ValueError(f"member '{key}' is not a text of at most {max_chars} characters")
        return str(self.read(key, header.dtype, ())[()])


def file_sha256(path: Path, what: str, max_bytes: int) -> str:
    """SHA-256 of a regular file of at most ``max_bytes``, read in blocks."""
    digest = hashlib.sha256()
    with open_regular(path, what, max_bytes) as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def array_sha256(array: np.ndarray) -> str:
    """SHA-256 of an array's bytes in C order, read through a memoryview (no copy when contiguous)."""
    return hashlib.sha256(np.ascontiguousarray(array).data).hexdigest()
