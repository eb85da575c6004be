"""The container image: an empty skeleton, built locally and cached under a content tag.

No registry is needed (or reachable): the image is imported from a tar made here, holding only
mount points (``/etc``, ``/tmp``, ``/proc``, ``/dev``, ``/sys``, ``/usr``...), the host's
``/bin``-style symlinks, the symlinks of the curated ``/etc`` entries and a placeholder
passwd/group. Everything a program runs comes from read-only bind mounts of the host at the
host's paths, exactly what the ``isolated`` sandbox shows. The tag is a digest of the tar, so
a changed layout (or a new skeleton version) builds a new image and an old one is never reused.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from autorl_sandbox_isolated.sandbox import ETC_ENTRIES, SYSTEM_DIRS

REPOSITORY = "autorl-sandbox"
SKELETON_VERSION = "1"
MOUNT_POINTS = ("etc", "proc", "dev", "sys", "usr")
PASSWD = (
    "root:x:0:0:root:/:/usr/sbin/nologin\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
GROUP = "root:x:0:\nnogroup:x:65534:\n"


def _add(tar: tarfile.TarFile, name: str, kind: bytes, mode: int, **extra: Any) -> None:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    data = extra.pop("data", None)
    for key, value in extra.items():
        setattr(info, key, value)
    if data is not None:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    else:
        tar.addfile(info)


def skeleton_entries() -> list[tuple[str, str, str]]:
    """``(kind, path, symlink target)`` of the skeleton, from this host's layout."""
    entries = [("dir", name, "") for name in MOUNT_POINTS]
    entries.append(("dir", "tmp", ""))
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            entries.append(("link", name.lstrip("/"), os.readlink(path)))
        elif path.is_dir() and name != "/usr":
            entries.append(("dir", name.lstrip("/"), ""))
    for entry in ETC_ENTRIES:
        path = Path("/etc") / entry
        if path.is_symlink():  # /etc/localtime, /etc/mtab: links inside the image, never binds
            entries.append(("link", f"etc/{entry}", os.readlink(path)))
    return entries


@lru_cache(maxsize=1)
def skeleton_tar() -> bytes:
    """The image's whole root file system, byte-for-byte reproducible on one host layout."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for kind, name, target in skeleton_entries():
            if kind == "dir":
                _add(tar, name, tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755)
            else:
                _add(tar, name, tarfile.SYMTYPE, 0o777, linkname=target)
        _add(tar, "etc/passwd", tarfile.REGTYPE, 0o644, data=PASSWD.encode())
        _add(tar, "etc/group", tarfile.REGTYPE, 0o644, data=GROUP.encode())
        _add(tar, "etc/autorl-sandbox", tarfile.REGTYPE, 0o644, data=SKELETON_VERSION.encode())
    return buf.getvalue()


def image_tag() -> str:
    """``autorl-sandbox:<digest>``: the same skeleton always gets the same tag."""
    return f"{REPOSITORY}:{hashlib.sha256(skeleton_tar()).hexdigest()[:16]}"


def ensure_image(client: Any, tag: str | None = None) -> str:
    """The skeleton image's tag, imported into the daemon first when it is not there yet."""
    import docker.errors

    tag = tag or image_tag()
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    repository, _, version = tag.rpartition(":")
    client.api.import_image_from_data(
        skeleton_tar(),
        repository=repository,
        tag=version,
        changes=[f"LABEL autorl.skeleton={SKELETON_VERSION}"],
    )
    client.images.get(tag)  # raises if the import did not produce it
    return tag
