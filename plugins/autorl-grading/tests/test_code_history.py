"""The code history records everything the agent wrote (whatever its .gitignore, nested
repositories or links), within caps that say what they left out, without a lingering git."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from autorl_grading import history as history_mod
from autorl_grading.history import CodeHistory
from autorl_runner.diskwatch import agent_roots, disk_usage


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=True
    ).stdout


def _tree(git_dir: Path, rev: str = "HEAD") -> dict[str, str]:
    """path -> mode of every entry the revision holds."""
    out = _git(git_dir, "ls-tree", "-r", "-z", rev)
    entries = {}
    for item in filter(None, out.split("\0")):
        meta, _, path = item.partition("\t")
        entries[path] = meta.split()[0]
    return entries


def _new(tmp_path: Path) -> tuple[CodeHistory, Path]:
    code = tmp_path / "workspace" / "code"
    code.mkdir(parents=True)
    return CodeHistory(tmp_path / "code-history.git", code), code


def test_ignored_files_and_nested_repositories_are_recorded(tmp_path: Path) -> None:
    history, code = _new(tmp_path)
    (code / ".gitignore").write_text("*\n")
    (code / "secret").mkdir()
    (code / "secret" / ".gitignore").write_text("*\n")
    (code / "secret" / "plan.txt").write_text("hidden plan\n")
    (code / "train.py").write_text("print('train')\n")
    nested = code / "lib"
    nested.mkdir()
    (nested / "helper.py").write_text("X = 1\n")
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    for args in (
        ["init", "-q"],
        ["add", "helper.py"],
        ["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *args], cwd=nested, env=env, check=True)
    (nested / ".git" / "info").mkdir(exist_ok=True)
    (nested / ".git" / "info" / "exclude").write_text("*\n")
    (nested / "untracked.py").write_text("Y = 2\n")

    rev = history.snapshot("submission 1")
    assert rev is not None
    tree = _tree(history.git_dir, rev)
    assert {"train.py", ".gitignore", "secret/plan.txt", "secret/.gitignore"} <= set(tree)
    assert tree["lib/helper.py"] == "100644" and tree["lib/untracked.py"] == "100644"
    assert "160000" not in tree.values(), "a nested repository stored as a pointer"
    assert not [p for p in tree if ".git/" in p], "a nested repository's internals were stored"
    omitted = {(o.path, o.reason) for o in history.last_omissions()}
    assert omitted == {("lib/.git", "git_metadata")}


def test_a_git_file_in_code_does_not_redirect_the_harness(tmp_path: Path) -> None:
    history, code = _new(tmp_path)
    elsewhere = tmp_path / "elsewhere.git"
    subprocess.run(["git", "init", "-q", "--bare", str(elsewhere)], check=True)
    (code / ".git").write_text(f"gitdir: {elsewhere}\n")
    (code / "a.py").write_text("A = 1\n")
    rev = history.snapshot("one")
    assert rev is not None and set(_tree(history.git_dir, rev)) == {"a.py"}
    assert not _git(elsewhere, "rev-list", "--all").strip(), "the agent's .git got the commit"


def test_oversized_files_are_left_out_by_size_and_recorded(tmp_path: Path) -> None:
    history, code = _new(tmp_path)
    (code / "train.py").write_text("print('train')\n")
    for i in range(4):  # 200 MiB each, sparse: skipped by size, never read
        with open(code / f"blob{i}.bin", "wb") as fh:
            fh.truncate(200 * 1024**2)
    started = time.monotonic()
    rev = history.snapshot("submission 1")
    assert time.monotonic() - started < 10
    assert rev is not None and set(_tree(history.git_dir, rev)) == {"train.py"}
    left = {o.path: o for o in history.last_omissions()}
    assert sorted(left) == [f"blob{i}.bin" for i in range(4)]
    assert {(o.reason, o.bytes) for o in left.values()} == {("too_large", 200 * 1024**2)}
    records = [json.loads(line) for line in history.omissions_path.read_text().splitlines()]
    assert history.omissions_path == tmp_path / "code-history.omitted.jsonl"
    assert len(records) == 1 and records[0]["revision"] == rev
    assert records[0]["omitted"]["by_reason"] == {"too_large": 4}
    assert records[0]["message"] == "submission 1" and records[0]["files"] == 1
    # the same state submitted again: no new commit, no new record
    assert history.snapshot("submission 2") == rev
    assert len(history.omissions_path.read_text().splitlines()) == 1
    assert disk_usage((history.git_dir,))[0] < 5 * 1024**2


def test_snapshot_and_total_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_mod, "MAX_SNAPSHOT_BYTES", 3500)
    history, code = _new(tmp_path)
    for name in ("a", "b", "c", "d"):
        (code / f"{name}.txt").write_bytes(os.urandom(1000))
    rev = history.snapshot("one")
    assert rev is not None and set(_tree(history.git_dir, rev)) == {"a.txt", "b.txt", "c.txt"}
    assert [(o.path, o.reason) for o in history.last_omissions()] == [("d.txt", "snapshot_cap")]
    monkeypatch.setattr(history_mod, "MAX_HISTORY_BYTES", 1)  # already full: nothing new stored
    (code / "e.txt").write_bytes(b"new\n")
    (code / "d.txt").unlink()
    rev2 = history.snapshot("two")
    assert set(_tree(history.git_dir, rev2)) == {"a.txt", "b.txt", "c.txt"}
    assert [(o.path, o.reason) for o in history.last_omissions()] == [("e.txt", "history_full")]


def test_unchanged_tree_is_not_committed_again(tmp_path: Path) -> None:
    history, code = _new(tmp_path)
    (code / "train.py").write_text("v1\n")
    first = history.snapshot("submission 1")
    assert history.snapshot("submission 2") == first
    assert history.snapshot("periodic") == first
    assert _git(history.git_dir, "rev-list", "--all").split() == [first]
    again = CodeHistory(history.git_dir, code)  # a resumed run: same tree, same revision
    assert again.snapshot("end of run") == first
    (code / "train.py").write_text("v2\n")
    second = again.snapshot("submission 3")
    assert second != first
    assert _git(history.git_dir, "rev-list", "--all").split() == [second, first]
    assert _git(history.git_dir, "show", f"{second}:train.py") == "v2\n"
    assert _git(history.git_dir, "log", "--format=%s").split("\n")[:2] == [
        "submission 3",
        "submission 1",
    ]


def test_links_fifos_and_unreadable_files(tmp_path: Path) -> None:
    history, code = _new(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "eval.jsonl").write_text("held-out answers\n")
    (code / "eval.jsonl").symlink_to(outside / "eval.jsonl")
    (code / "dir").symlink_to(outside)
    os.mkfifo(code / "pipe")
    (code / "locked.py").write_text("SECRET = 1\n")
    (code / "locked.py").chmod(0)
    (code / "run.sh").write_text("#!/bin/sh\n")
    (code / "run.sh").chmod(0o755)
    rev = history.snapshot("one")  # never blocks on the FIFO, never follows a link
    assert rev is not None
    tree = _tree(history.git_dir, rev)
    assert tree["eval.jsonl"] == "120000" and tree["dir"] == "120000"
    assert tree["run.sh"] == "100755"
    assert _git(history.git_dir, "show", f"{rev}:eval.jsonl") == str(outside / "eval.jsonl")
    assert "held-out" not in _git(history.git_dir, "log", "-p", "--all")
    reasons = {o.path: o.reason for o in history.last_omissions()}
    assert reasons["pipe"] == "not_regular"
    if os.geteuid() == 0:  # the harness (root) reads what the agent locked
        assert "locked.py" in tree
    else:
        assert reasons["locked.py"] == "unreadable"


def test_no_git_process_survives_a_snapshot(tmp_path: Path) -> None:
    history, code = _new(tmp_path)
    for i in range(50):
        (code / f"f{i}.py").write_bytes(os.urandom(2000))
    for n in range(3):
        (code / "changing.py").write_text(f"N = {n}\n")
        assert history.snapshot(f"s{n}") is not None
    assert _git(history.git_dir, "config", "--get", "gc.auto").strip() in ("", "0")
    needle = f"GIT_DIR={history.git_dir}".encode()
    survivors = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if needle in (proc / "environ").read_bytes().split(b"\0"):
                    survivors.append((proc / "cmdline").read_bytes())
            except OSError:
                continue
    assert not survivors, survivors
    assert not list(history.git_dir.glob("gc.*")), "a gc ran"


def test_disk_watch_counts_the_history(tmp_path: Path) -> None:
    run_dir = tmp_path
    (run_dir / "home").mkdir()
    history, code = _new(run_dir)
    assert history.git_dir in agent_roots(run_dir)
    for i in range(3):
        (code / "data.bin").write_bytes(os.urandom(1024**2))  # a new megabyte each time
        history.snapshot(f"s{i}")
    (code / "data.bin").unlink()
    stored, _ = disk_usage((history.git_dir,))
    assert stored >= 3 * 1024**2
    workspace_only, _ = disk_usage((run_dir / "workspace", run_dir / "home"))
    counted, _ = disk_usage(agent_roots(run_dir))
    assert counted >= workspace_only + stored


def test_odd_file_names_are_recorded_exactly(tmp_path: Path) -> None:
    history, code = _new(tmp_path)
    names = [b'new\nline "q" \\b.py', b"caf\xe9-latin1.py", b" lead.py"]
    for name in names:
        with open(os.path.join(os.fsencode(code), name), "wb") as fh:
            fh.write(b"x\n")
    (code / ".GIT").mkdir()
    (code / ".GIT" / "config").write_text("[core]\n")
    rev = history.snapshot("odd")
    assert rev is not None
    out = subprocess.run(
        ["git", "--git-dir", str(history.git_dir), "ls-tree", "-r", "-z", "--name-only", rev],
        capture_output=True,
        check=True,
    ).stdout
    assert sorted(filter(None, out.split(b"\0"))) == sorted(names)
    assert [(o.path, o.reason) for o in history.last_omissions()] == [(".GIT", "git_metadata")]


def test_code_history_never_runs_hooks_or_agent_git_config(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    history = CodeHistory(tmp_path / "history.git", code)
    marker = tmp_path / "hook-ran"
    hook = tmp_path / "history.git" / "hooks" / "post-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    # the agent's own repository in code/, with a hooks path and an fsmonitor of its own
    (code / ".git").mkdir()
    (code / ".git" / "config").write_text(
        f"[core]\n\thooksPath = {hook.parent}\n\tfsmonitor = {hook}\n"
    )
    (code / ".gitattributes").write_text("* filter=evil\n")
    (code / "train.py").write_text("print('hi')\n")
    assert history.snapshot("one") is not None
    assert history.snapshot("two") is not None
    assert not marker.exists(), "the harness's git ran a hook"
