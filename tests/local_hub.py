"""A local stand-in for the Hugging Face Hub's file-resolve endpoint, to test real downloads offline.

``huggingface_hub`` talks to the Hub through ``{HF_ENDPOINT}/{repo_id}/resolve/{revision}/{file}``:
a HEAD request for the metadata (commit, ETag, size), then a GET for the bytes. This server answers
those two from folders on disk, and answers like the Hub when a repository or a file does not exist
(401 with ``X-Error-Code: RepoNotFound``, 404 with ``X-Error-Code: EntryNotFound``). Processes
started with ``HF_ENDPOINT`` set to :attr:`LocalHub.url` then run the unmodified download code,
progress bars and cache layout included. It also answers the API's list of a repository's branches
(``/api/models/{repo_id}/refs``: main and every revision added). It serves loopback only and stops
with its ``with`` block.
:attr:`LocalHub.delays` slows chosen files down, to watch what happens while they download.
"""

from __future__ import annotations

import hashlib
import http.server
import shutil
import socketserver
import threading
import time
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # the commit of every repository's main revision
#: Other revisions of a repository live in this folder of it, one folder per revision (``add(..., revision=)``).
REVISIONS_DIR = ".revisions"


def commit_of(revision: str) -> str:
    """The commit hash the stand-in gives a revision: COMMIT for main, a hash of the name otherwise."""
    return COMMIT if revision == "main" else hashlib.sha1(revision.encode()).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def _file(self) -> tuple[Path | None, int, str | None, str]:
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return None, 404, "EntryNotFound", ""
        repo = self.server.root / parts[0] / parts[1]
        if not repo.is_dir():
            return None, 401, "RepoNotFound", ""
        revision = parts[3]
        if revision not in ("main", COMMIT):
            repo = repo / REVISIONS_DIR / revision
            if not repo.is_dir():
                return None, 404, "RevisionNotFound", ""
        path = repo.joinpath(*parts[4:])
        commit = COMMIT if revision == COMMIT else commit_of(revision)
        return (path, 200, None, commit) if path.is_file() else (None, 404, "EntryNotFound", "")

    def _answer(self, with_body: bool) -> None:
        path, status, error, commit = self._file()
        self.send_response(status)
        if path is None:
            self.send_header("X-Error-Code", str(error))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = path.read_bytes()
        if with_body:
            time.sleep(self.server.delays.get(path.name, 0.0))  # a slow link, for the file's bytes only
        self.send_header("X-Repo-Commit", commit)
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if with_body:
            self.wfile.write(data)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def do_GET(self) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) == 5 and parts[:2] == ["api", "models"] and parts[4] == "refs":
            self._refs(self.server.root / parts[2] / parts[3])
            return
        self._answer(with_body=True)

    def _refs(self, repo: Path) -> None:
        """The Hub's answer to ``GET /api/models/{repo_id}/refs``: its branches, no tags."""
        import json

        if not repo.is_dir():
            self.send_response(401)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        names = ["main", *sorted(p.name for p in (repo / REVISIONS_DIR).glob("*") if p.is_dir())]
        branches = [{"name": n, "ref": f"refs/heads/{n}", "targetCommit": commit_of(n)} for n in names]
        body = json.dumps({"branches": branches, "tags": [], "converts": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    root: Path
    delays: dict[str, float]


class LocalHub:
    """``with LocalHub(folder) as hub: hub.add(repo_id, checkpoint_dir)``; then use ``hub.url``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.root = root
        #: file name -> seconds each GET of it waits before answering (a slow download)
        self.delays: dict[str, float] = {}
        self._server.delays = self.delays
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(
        self, repo_id: str, directory: Path, extra_files: dict[str, bytes] | None = None, revision: str = "main"
    ) -> Path:
        """Publish a checkpoint directory's files as ``repo_id`` at ``revision`` (plus any ``extra_files``)."""
        repo = self.root / repo_id
        if revision != "main":
            repo = repo / REVISIONS_DIR / revision
        shutil.copytree(directory, repo)
        for name, content in (extra_files or {}).items():
            (repo / name).write_bytes(content)
        return repo

    def __enter__(self) -> LocalHub:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
