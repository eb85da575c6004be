"""The one file/value digest: stable, order- and name-sensitive, blind to where a tree lives."""

from __future__ import annotations

import hashlib
from pathlib import Path

from autorl.digest import file_digest, installed_digest, json_digest, short


def test_json_digest_is_canonical_json() -> None:
    value = {"b": [1, "é"], "a": {"y": 2, "x": None}}
    canonical = '{"a":{"x":null,"y":2},"b":[1,"é"]}'
    assert json_digest(value) == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert json_digest({"a": {"x": None, "y": 2}, "b": [1, "é"]}) == json_digest(value)
    assert json_digest({"p": Path("/x")}) == json_digest({"p": "/x"})  # others by str()


def test_file_digest_covers_names_bytes_and_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"one")
    b.write_bytes(b"two")
    digest = file_digest([a, b])
    pairs = [[p.name, hashlib.sha256(p.read_bytes()).hexdigest()] for p in (a, b)]
    assert digest == json_digest(pairs) and digest.startswith("sha256:") and len(digest) == 71
    assert file_digest([b, a]) != digest  # the order counts
    b.write_bytes(b"one")
    assert file_digest([b]) != file_digest([a])  # the name counts
    # no file's bytes can run into the next one's name
    c, d = tmp_path / "c", tmp_path / "d"
    c.write_bytes(b"x")
    d.write_bytes(b"")
    e = tmp_path / "e"
    e.write_bytes(b"x\0d\0")
    assert file_digest([c, d]) != file_digest([e])


def test_file_digest_relative_to_a_base_ignores_where_the_tree_is(tmp_path: Path) -> None:
    for root in ("one", "two"):
        (tmp_path / root / "sub").mkdir(parents=True)
        (tmp_path / root / "sub" / "w.bin").write_bytes(b"\1" * (3 << 20))  # streamed in blocks
    one = file_digest([tmp_path / "one" / "sub" / "w.bin"], base=tmp_path / "one")
    two = file_digest([tmp_path / "two" / "sub" / "w.bin"], base=tmp_path / "two")
    assert one == two != file_digest([tmp_path / "one" / "sub" / "w.bin"])


def test_short_names() -> None:
    digest = json_digest([])
    assert short(digest) == digest[7:23] and len(short(digest, 12)) == 12


def test_installed_digest_changes_with_any_version_and_ignores_autorl() -> None:
    pins = [("numpy", "2.3.1"), ("Torch", "2.13.0+cpu"), ("autorl-hf", "0.1.0")]
    digest = installed_digest(pins)
    assert digest == {
        "sha256": json_digest(["numpy==2.3.1", "torch==2.13.0+cpu"]),
        "distributions": 2,
    }
    assert installed_digest(reversed(pins)) == digest  # the order found is not a difference
    assert installed_digest([("numpy", "2.3.2"), *pins[1:]])["sha256"] != digest["sha256"]
    assert installed_digest([*pins, ("scipy", "1.16.0")])["sha256"] != digest["sha256"]
    # the harness's own versions are the manifest's ``versions``; torch's build label counts
    assert installed_digest([*pins[:2], ("autorl-hf", "0.2.0")]) == digest
    assert installed_digest([pins[0], ("torch", "2.13.0+cu128")]) != digest
    live = installed_digest()
    assert live["distributions"] > 10 and live["sha256"].startswith("sha256:")
