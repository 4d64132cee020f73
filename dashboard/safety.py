"""What a page visitor may make the server do, and the one boundary around everything a visit runs.

Whoever opens a link is a visitor, not the operator (SPEC §9). This module holds the three rules the
dashboard enforces for visitors, each in one place:

* **Names, not paths.** :func:`model_ref` is the dashboard's only way from a typed or linked model
  name to a :class:`~specbound.io.models.ModelRef`. The rules of a name are :mod:`specbound.io.models`'; this
  module holds the operator's policy. Unless the operator sets ``SPECBOUND_ALLOW_SERVER_PATHS=1``
  (read by :func:`server_paths_allowed`, nowhere else), it accepts what
  :func:`specbound.io.models.parse_name` decides from the text alone (the bundled model, the miniature
  aliases, Hub ids) and atlases uploaded to this server: a name that is anything else is refused with
  one message (:data:`PATHS_OFF`) before the disk is looked at, so the answer never tells whether a
  path exists.
* **No server paths on screen.** :func:`public_message` turns an exception into the text a visitor
  sees; with server paths off, every absolute path in it is cut to its last component.
* **One boundary.** :func:`guarded` runs a step (opening a model, drawing a page); an error meant for
  people (:class:`~specbound.core.errors.SpecboundError`) becomes its message, anything else a plain
  sentence, with the traceback in the server log only (Python ``logging``). Streamlit's own control
  flow (``st.rerun``, ``st.stop``) is not an error and passes through.

Sizes a visitor can ask for are capped too: uploads by Streamlit's ``server.maxUploadSize``
(:func:`max_upload_bytes`, checked again before an upload is read).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from dashboard.state.upload_store import upload_dir
from dashboard.wording.text import plain
from specbound.core.errors import SpecboundError
from specbound.core.limits import format_megabytes
from specbound.io.models import ATLAS_MEMBER_SEP, ATLAS_PREFIX, ModelRef, parse_name, resolve

#: The operator's switch: "1" lets page visitors open local checkpoint directories and atlas files.
SERVER_PATHS_ENV = "SPECBOUND_ALLOW_SERVER_PATHS"
#: What a visitor is told for any name that is, or might be, a path on the server.
PATHS_OFF = (
    "this dashboard does not open files or directories on its server: choose a catalog model, "
    "a Hub id (owner/name) or upload an atlas file"
)
#: What a visitor is told when something unexpected happened (the details are in the server log).
UNEXPECTED = "an unexpected error (the details are in the server log)"

#: An uploaded atlas in the upload store: its file is named by its content digest.
_UPLOAD_FILE = re.compile(r"^[0-9a-f]{16}\.npz$")
#: An absolute path inside a message: a '/' (or '~/') that starts a word, up to a space or a quote.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~…-])~?/[^\s'\"`,;()\[\]<>]*")

log = logging.getLogger("specbound.dashboard")


def server_paths_allowed() -> bool:
    """Whether the operator lets visitors name paths on the server (``SPECBOUND_ALLOW_SERVER_PATHS=1``)."""
    return os.environ.get(SERVER_PATHS_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


class ServerPathRefused(SpecboundError):
    """A visitor named something that is not a catalog model, a Hub id or an uploaded atlas."""

    def __init__(self) -> None:
        super().__init__(PATHS_OFF)


def _is_upload(name: str) -> bool:
    """Whether ``name`` is ``atlas:<upload store>/<digest>.npz[#MODEL]``, decided from the text alone."""
    body = name[len(ATLAS_PREFIX) :]
    store = str(upload_dir().resolve()) + "/"
    if not body.startswith(store):
        return False
    file_name = body[len(store) :].partition(ATLAS_MEMBER_SEP)[0]  # a member may hold '#' too
    return _UPLOAD_FILE.match(file_name) is not None and "/" not in file_name


def model_ref(name: str) -> ModelRef:
    """The model a visitor's name denotes; ServerPathRefused for paths unless the operator allows them.

    Raises ModelNotFoundError (from :mod:`specbound.io.models`) for names that denote nothing.
    """
    name = name.strip()
    if server_paths_allowed():
        return resolve(name)
    if name.startswith(ATLAS_PREFIX):
        if _is_upload(name):
            return resolve(name)
        raise ServerPathRefused()
    ref = parse_name(name)  # from the text alone: resolve() would first look for a directory of this name
    if ref is None:
        raise ServerPathRefused()
    return ref


def _short_path(match: re.Match[str]) -> str:
    text = match.group(0).rstrip(".")
    tail = text.rstrip("/").rpartition("/")[2]
    return f"…/{tail}" if tail else "…"


def server_directories() -> list[str]:
    """The server's own directories that messages can name, longest first, as written and resolved.

    The profile cache (with the upload and lab stores inside), the Hugging Face cache, the bundled
    model's package, the temporary directory, the working directory and the home directory. Their
    names may hold spaces or any other character, so they are cut by name, not by a pattern.
    """
    from huggingface_hub import constants

    from specbound.io.cache import default_cache_dir

    candidates: list[str] = []
    for get in (
        default_cache_dir,
        lambda: constants.HF_HUB_CACHE,
        lambda: constants.HF_HOME,
        lambda: Path(__file__).resolve().parent.parent,
        tempfile.gettempdir,
        Path.cwd,
        Path.home,
    ):
        with contextlib.suppress(Exception):  # a directory that cannot be named cannot be in a message
            path = Path(get())
            candidates += [str(path), str(path.resolve())]
    return sorted({c.rstrip("/") for c in candidates if c.strip("/")}, key=len, reverse=True)


#: What may follow a server directory in a message: a path below it (up to a space or a quote), or
#: nothing; never more letters of a longer name ("/srv/data" is not inside "/srv/dat").
_BELOW = r"(/[^\s'\"`,;()\[\]<>]*)?(?![^\s/'\"`,;()\[\]<>.:])"


def _cut_below(match: re.Match[str]) -> str:
    tail = (match.group(1) or "").rstrip(".").rstrip("/").rpartition("/")[2]
    return f"…/{tail}" if tail else "…"


def redact_paths(text: str) -> str:
    """``text`` with every absolute path cut to its last component, unless server paths are allowed.

    First the server's own directories (:func:`server_directories`), whatever characters their names
    hold (a space, accents): each occurrence and the path below it become ``…/<last component>``; then
    any other absolute path, up to a space or a quote.
    """
    if server_paths_allowed():
        return text
    for directory in server_directories():
        text = re.sub(re.escape(directory) + _BELOW, _cut_below, text)
    return _ABSOLUTE_PATH.sub(_short_path, text)


def public_message(exc: BaseException) -> str:
    """An exception as a visitor may read it: a SpecboundError's message, else :data:`UNEXPECTED`.

    No server path (see :func:`redact_paths`); not yet escaped for markdown (see :func:`dashboard.wording.text.plain`).
    """
    if isinstance(exc, SpecboundError):
        return redact_paths(" ".join(str(exc).split()))
    if isinstance(exc, OSError):  # a file problem of the server: its kind, never its path
        return redact_paths(exc.strerror or UNEXPECTED)
    return UNEXPECTED


def max_upload_bytes() -> int:
    """The upload cap: Streamlit's ``server.maxUploadSize`` (its megabytes are 2^20 bytes, .streamlit/config.toml)."""
    return int(st.get_option("server.maxUploadSize")) * 1024 * 1024


def upload_refusal(name: str, size: int) -> str | None:
    """Why an upload of ``size`` bytes is refused before its bytes are read (markdown-safe), or None when
    it is within :func:`max_upload_bytes`; every uploader of the dashboard asks here. Sizes are written
    in the package's one megabyte (:func:`~specbound.core.limits.format_megabytes`, 10^6 bytes)."""
    cap = max_upload_bytes()
    if size <= cap:
        return None
    return f"{plain(name)} is {format_megabytes(size)}, more than the {format_megabytes(cap, 0)} an upload may have."


@contextmanager
def guarded(what: str, on_error: Callable[[str], object]) -> Iterator[None]:
    """Run the block; an exception becomes one message passed to ``on_error`` (markdown-safe text).

    ``what`` names the step for the server log. Anything that is not a SpecboundError is logged with
    its traceback; only :func:`public_message` of it reaches the page.
    """
    try:
        yield
    except SpecboundError as exc:
        on_error(plain(public_message(exc)))
    except Exception as exc:  # the boundary: nothing unexpected reaches a visitor raw
        log.exception("unexpected error while %s", what)
        on_error(plain(public_message(exc)))


def run_page(page: StreamlitPage, model: str) -> bool:
    """Run the chosen page inside the boundary; False (after one error box) if it failed on ``model``."""
    failures: list[str] = []
    with guarded(f"drawing the page {page.title!r} for {model!r}", failures.append):
        page.run()
    for message in failures:
        st.error(
            f"This page could not be drawn for {plain(model)}: {message}. The sidebar, the other pages "
            f"and other models still work."
        )
    return not failures
