"""Files written whole or not at all, JSON read within limits, and output directories made with care.

Every file the package writes goes through :func:`atomic_write` (a temporary file beside the target,
renamed over it on success), so a crash, a full disk or a concurrent reader never sees half of one. A
SIGKILL can still leave the temporary file behind; :func:`remove_stale_temps` clears those when a
writer opens its directory again.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .errors import SpecboundError
from .limits import LIMITS

#: Name pattern of the temporary files of atomic_write: ``.{target name}.{random}.tmp``.
_TEMP_PREFIX, _TEMP_SUFFIX = ".", ".tmp"


@contextmanager
def atomic_write(path: Path) -> Iterator[BinaryIO]:
    """Yield a binary file beside ``path``; on success it is renamed over ``path``, else removed.

    Missing parents are created, for the package's own stores (the profile cache, an upload store);
    where a user names the target, callers check it first with :func:`require_parent` or
    :func:`output_dir`, which never create more than the last directory.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{_TEMP_PREFIX}{path.name}.", suffix=_TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_write(path) as f:
        f.write(text.encode("utf-8"))


def remove_stale_temps(directory: Path, max_age: float = LIMITS.stale_temp_seconds) -> int:
    """Delete temporary files of interrupted atomic writes older than ``max_age`` seconds; how many.

    Young ones are left alone: they may belong to a write in progress in another process.
    """
    removed, now = 0, time.time()
    try:
        candidates = list(directory.glob(f"{_TEMP_PREFIX}*{_TEMP_SUFFIX}"))
    except OSError:
        return 0
    for path in candidates:
        try:
            if path.is_file() and not path.is_symlink() and now - path.stat().st_mtime > max_age:
                path.unlink()
                removed += 1
        except OSError:
            continue  # gone already, or not ours to delete
    return removed


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


def describe_os_error(exc: OSError) -> str:
    """One line for an OSError without the path it carries (paths are for the operator's logs)."""
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.ENAMETOOLONG:
        return "a file name is too long"
    return exc.strerror or type(exc).__name__


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
    """:func:`parse_json` of a file, reading at most ``max_bytes + 1`` bytes of it."""
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    return parse_json(data, what, max_bytes)


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
    expand beyond what was checked here. Raises ValueError (or zipfile.BadZipFile, OSError) for
    anything malformed or too large.
    """

    def __init__(
        self, path: Path, *, max_file_bytes: int, max_total_bytes: int, max_member_bytes: int, max_members: int
    ) -> None:
        size = path.stat().st_size
        if size > max_file_bytes:
            raise ValueError(f"the file is {size} bytes, above the limit of {max_file_bytes}")
        self._zip = zipfile.ZipFile(path)
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
            self._zip.close()
            raise

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()

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


def array_sha256(array: np.ndarray) -> str:
    """SHA-256 of an array's bytes in C order, read through a memoryview (no copy when contiguous)."""
    return hashlib.sha256(np.ascontiguousarray(array).data).hexdigest()
