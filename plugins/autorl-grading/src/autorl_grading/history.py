"""Code history: a git repository outside the workspace that snapshots ``workspace/code``.

The repository (``code-history.git``, bare) lives in the run directory, so the agent can neither
see nor rewrite it. The harness never lets git look at ``code/``: it walks the tree itself (by
directory descriptor, never following a link), reads each file with ``O_NOFOLLOW`` and feeds the
bytes to ``git fast-import``. So the agent's ``.gitignore``, ``info/exclude`` tricks, nested
repositories (their files are stored, their ``.git`` internals are not), ``.git`` files,
``.gitattributes``, hooks and fsmonitor configs have no effect on what is recorded or on what
git runs. Git runs with no automatic gc or maintenance, nothing detached, under a timeout.

Every snapshot is bounded (:data:`MAX_FILE_BYTES`, :data:`MAX_SNAPSHOT_BYTES`,
:data:`MAX_ENTRIES`, :data:`MAX_HISTORY_BYTES`); what it left out is appended to
``code-history.omitted.jsonl`` next to the repository (see :meth:`CodeHistory.snapshot`) and is
returned by :meth:`CodeHistory.last_omissions`. The repository counts toward the workspace disk
limit (:mod:`autorl_runner.diskwatch`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import stat
import subprocess
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from autorl_runner.diskwatch import disk_usage

MAX_FILE_BYTES = 8 * 1024**2
"""A file larger than this is left out (``too_large``), judged by size before it is read."""
MAX_SNAPSHOT_BYTES = 64 * 1024**2
"""The files of one snapshot add up to at most this; the rest are left out (``snapshot_cap``)."""
MAX_HISTORY_BYTES = 512 * 1024**2
"""Once the repository holds this much, new file contents are left out (``history_full``);
files already stored are still recorded."""
MAX_ENTRIES = 100_000
"""Directory entries walked per snapshot; past this the walk stops (``entry_limit``)."""
MAX_RECORDED_OMISSIONS = 1000
"""Omitted paths written per snapshot record (the counts by reason are always complete)."""
GIT_TIMEOUT_S = 120.0
BRANCH = "refs/heads/main"
OMISSIONS_SUFFIX = ".omitted.jsonl"

SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.attributesFile=/dev/null",
    "-c", "core.untrackedCache=false",
    "-c", "safe.directory=*",
    "-c", "protocol.allow=never",
    "-c", "submodule.recurse=false",
    "-c", "gc.auto=0",
    "-c", "gc.autoDetach=false",
    "-c", "maintenance.auto=false",
    "-c", "fetch.writeCommitGraph=false",
)  # fmt: skip

REPO_CONFIG = (
    ("gc.auto", "0"),
    ("gc.autoDetach", "false"),
    ("maintenance.auto", "false"),
    ("core.hooksPath", "/dev/null"),
)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_EXECUTABLE = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


@dataclass(frozen=True)
class Omission:
    """A path under ``code/`` the snapshot did not record, and why."""

    path: str
    reason: str
    """``too_large``, ``snapshot_cap``, ``history_full``, ``unreadable``, ``not_regular``,
    ``git_metadata`` (a nested ``.git``: its work-tree files are recorded), ``entry_limit``."""
    bytes: int | None = None


@dataclass
class _Walk:
    """One snapshot's entries (path, git mode, blob id or inline bytes) and omissions."""

    entries: list[tuple[bytes, str, str, bytes | None]]
    omitted: list[Omission]
    total: int = 0
    seen: int = 0


def _blob_id(data: bytes) -> str:
    """The git (SHA-1) object id of a blob, so a known file is referenced, not re-sent."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _quote(path: bytes) -> bytes:
    """C-style quoting as fast-import reads it: any byte, including newlines, is safe."""
    out = bytearray(b'"')
    for byte in path:
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif 0x20 <= byte < 0x7F:
            out.append(byte)
        else:
            out += b"\\%03o" % byte
    return bytes(out + b'"')


def _is_git_name(name: bytes) -> bool:
    """Names git refuses in a tree (``.git`` in any case, with trailing dots or spaces,
    NTFS short names)."""
    low = name.lower().rstrip(b". ")
    return low == b".git" or low.startswith(b"git~")


class CodeHistory:
    def __init__(self, git_dir: Path, work_tree: Path) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.omissions_path = git_dir.with_name(
            git_dir.name.removesuffix(".git") + OMISSIONS_SUFFIX
        )
        self._lock = threading.Lock()
        self._env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_DIR": str(git_dir),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "HOME": str(git_dir),
        }
        self._known: dict[bytes, tuple[tuple[int, ...], str]] = {}
        """path -> (stat key, blob id) of files already stored: not read again while unchanged."""
        self._last_tree: list[tuple[bytes, str, str]] | None = None
        self._last_revision: str | None = None
        self._last_omissions: tuple[Omission, ...] = ()
        self.available = self._git(b"", "init", "-q", "--bare", "--template=") is not None
        if self.available:
            self._git(b"", "symbolic-ref", "HEAD", BRANCH)
            for key, value in REPO_CONFIG:  # also for whoever runs git on it later
                self._git(b"", "config", key, value)
            self._load_head()

    # git ----------------------------------------------------------------------------------------

    def _git(self, stdin: bytes, *args: str) -> str | None:
        """Run git in its own session under :data:`GIT_TIMEOUT_S`; on timeout the whole group
        is killed, so no git process outlives the call."""
        try:
            proc = subprocess.Popen(
                ["git", *SAFE_CONFIG, *args],
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError:
            return None
        try:
            out, _err = proc.communicate(stdin, timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # anything it left behind in its session
        if proc.returncode != 0:
            return None
        return out.decode("utf-8", errors="replace").strip()

    def _load_head(self) -> None:
        """A resumed run's history: the last tree, so an unchanged ``code/`` is not committed."""
        head = self._git(b"", "rev-parse", "--verify", "-q", BRANCH)
        if not head:
            return
        listing = self._git(b"", "ls-tree", "-r", "-z", "--full-tree", head)
        if listing is None:
            return
        tree = []
        for item in listing.split("\0"):
            if item:
                meta, _, path = item.partition("\t")
                mode, _kind, blob = meta.split()
                tree.append((os.fsencode(path), mode, blob))
        self._last_tree, self._last_revision = sorted(tree), head

    # the walk -----------------------------------------------------------------------------------

    def _walk(self, history_full: bool) -> _Walk:
        walk = _Walk(entries=[], omitted=[])
        try:
            root = os.open(self.work_tree, _DIR_FLAGS)
        except OSError:
            return walk
        try:
            self._walk_dir(root, b"", walk, history_full)
        finally:
            os.close(root)
        walk.entries.sort()
        return walk

    def _walk_dir(self, fd: int, prefix: bytes, walk: _Walk, history_full: bool) -> None:
        try:
            names = sorted(os.listdir(fd))
        except OSError:
            walk.omitted.append(Omission(os.fsdecode(prefix) or ".", "unreadable"))
            return
        for name in map(os.fsencode, names):
            path = prefix + name
            shown = os.fsdecode(path)
            walk.seen += 1
            if walk.seen > MAX_ENTRIES:
                walk.omitted.append(Omission(shown, "entry_limit"))
                return
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                walk.omitted.append(Omission(shown, "unreadable"))
                continue
            if _is_git_name(name):
                walk.omitted.append(Omission(shown, "git_metadata"))
            elif stat.S_ISDIR(info.st_mode):
                try:
                    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    walk.omitted.append(Omission(shown, "unreadable"))
                    continue
                try:
                    self._walk_dir(sub, path + b"/", walk, history_full)
                finally:
                    os.close(sub)
                if walk.seen > MAX_ENTRIES:
                    return
            elif stat.S_ISLNK(info.st_mode):
                try:
                    target = os.readlink(name, dir_fd=fd)
                except OSError:
                    walk.omitted.append(Omission(shown, "unreadable"))
                    continue
                data = os.fsencode(target)
                walk.entries.append((path, "120000", _blob_id(data), data))
            elif stat.S_ISREG(info.st_mode):
                self._add_file(fd, name, path, info, walk, history_full)
            else:
                walk.omitted.append(Omission(shown, "not_regular"))

    def _add_file(
        self, fd: int, name: bytes, path: bytes, info: os.stat_result, walk: _Walk, full: bool
    ) -> None:
        shown, size = os.fsdecode(path), info.st_size
        mode = "100755" if info.st_mode & _EXECUTABLE else "100644"
        if size > MAX_FILE_BYTES:
            walk.omitted.append(Omission(shown, "too_large", size))
            return
        if walk.total + size > MAX_SNAPSHOT_BYTES:
            walk.omitted.append(Omission(shown, "snapshot_cap", size))
            return
        key = (info.st_dev, info.st_ino, size, info.st_mtime_ns, info.st_ctime_ns)
        known = self._known.get(path)
        if known is not None and known[0] == key:
            walk.entries.append((path, mode, known[1], None))
            walk.total += size
            return
        if full:
            walk.omitted.append(Omission(shown, "history_full", size))
            return
        try:
            data = self._read(fd, name)
        except OSError:
            walk.omitted.append(Omission(shown, "unreadable", size))
            return
        if (
            data is None
            or len(data) > MAX_FILE_BYTES
            or walk.total + len(data) > MAX_SNAPSHOT_BYTES
        ):
            reason = "not_regular" if data is None else "too_large"
            walk.omitted.append(Omission(shown, reason, None if data is None else len(data)))
            return
        blob = _blob_id(data)
        walk.entries.append((path, mode, blob, data))
        walk.total += len(data)
        self._known[path] = (key, blob)

    @staticmethod
    def _read(fd: int, name: bytes) -> bytes | None:
        """The file's bytes, never through a link nor from a FIFO swapped in since the walk;
        at most one byte past the cap (a file that grew is then left out)."""
        file_fd = os.open(name, _FILE_FLAGS, dir_fd=fd)
        try:
            if not stat.S_ISREG(os.fstat(file_fd).st_mode):
                return None
            chunks, left = [], MAX_FILE_BYTES + 1
            while left > 0:
                chunk = os.read(file_fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(file_fd)

    # snapshots ----------------------------------------------------------------------------------

    def snapshot(self, message: str) -> str | None:
        """Record the current state of ``code/``; return the revision.

        An unchanged tree is not committed again (the previous revision is returned). What was
        left out goes to ``code-history.omitted.jsonl``: one JSON object per snapshot whose
        omissions differ from the previous one's, ``{"revision", "message", "time", "files",
        "bytes", "omitted": {"count", "by_reason", "paths": [{"path", "reason", "bytes"}],
        "truncated"}}``.
        """
        if not self.available:
            return None
        with self._lock:
            used, _entries = disk_usage((self.git_dir,))
            walk = self._walk(history_full=used >= MAX_HISTORY_BYTES)
            tree = [(path, mode, blob) for path, mode, blob, _data in walk.entries]
            revision = previous = self._last_revision
            if tree != self._last_tree or previous is None:
                revision = self._commit(message, walk)
                if revision is None:
                    return previous
                self._last_tree, self._last_revision = tree, revision
            omitted = tuple(walk.omitted)
            if revision != previous or omitted != self._last_omissions:
                self._record(revision, message, walk)
            self._last_omissions = omitted
            return revision

    def last_omissions(self) -> tuple[Omission, ...]:
        """What the last snapshot left out (empty when it recorded everything)."""
        return self._last_omissions

    def _commit(self, message: str, walk: _Walk) -> str | None:
        msg = message.encode("utf-8", errors="replace")
        stream = [
            f"commit {BRANCH}\n".encode(),
            f"committer autorl <autorl@localhost> {int(time.time())} +0000\n".encode(),
            b"data %d\n%s\n" % (len(msg), msg),
        ]
        if self._last_revision is not None:
            stream.append(f"from {self._last_revision}\n".encode())
        stream.append(b"deleteall\n")
        for path, mode, blob, data in walk.entries:
            if data is None:
                stream.append(b"M %s %s %s\n" % (mode.encode(), blob.encode(), _quote(path)))
            else:
                stream.append(
                    b"M %s inline %s\ndata %d\n" % (mode.encode(), _quote(path), len(data))
                )
                stream += [data, b"\n"]
        stream.append(b"done\n")
        if self._git(b"".join(stream), "fast-import", "--quiet", "--done") is None:
            self._known.clear()  # what it stored is unknown: read every file again next time
            return None
        return self._git(b"", "rev-parse", "--verify", "-q", BRANCH)

    def _record(self, revision: str, message: str, walk: _Walk) -> None:
        if not walk.omitted and not self.omissions_path.exists():
            return
        shown = walk.omitted[:MAX_RECORDED_OMISSIONS]
        line = {
            "revision": revision,
            "message": message,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "files": len(walk.entries),
            "bytes": walk.total,
            "omitted": {
                "count": len(walk.omitted),
                "by_reason": dict(Counter(o.reason for o in walk.omitted)),
                "paths": [asdict(o) for o in shown],
                "truncated": len(walk.omitted) > len(shown),
            },
        }
        with self.omissions_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
