"""Results archives: a round trip into a fresh database, importing twice adds nothing, a damaged or
foreign file is refused with a message that names the problem and the database is unchanged."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from core.errors import ArchiveError, OutputError
from core.storage.store import Store


def _fill(store: Store) -> None:
    for name, acc in (("baseline", 0.91), ("wide", 0.95)):
        rid = store.start_run("trained", name, device="cpu", sampling={"columns": ["cpu_percent", "rss"]})
        store.add_samples(rid, [(i / 10, [10.0 + i, None if i == 3 else 2e9 + i * 4096]) for i in range(25)])
        store.add_samples(rid, [(2.5 + i / 10, [50.0, 3e9]) for i in range(5)])
        store.finish_run(rid, "finished", metrics={"accuracy": acc, "macro_f1": acc - 0.05}, measured={})
    store.save_sizing("seed MLP", {"name": "seed MLP", "model": {"preset": "seed-mlp"}}, ["4090"], {"candidates": []})
    store.save_inventory({"fingerprint": "f00d", "host": "lab-box", "cpu": {"model": "Xeon"}})
    store.save_calibration("f00d", {"cpu": {"fp32_flops": 2e11}})
    run_id = store.results(text="wide")[0]["id"]
    store.set_tags("run", run_id, ["keep", "paper"])
    store.annotate("run", run_id, "figure 3")
    store.rename("inventory", store.results(kind="inventory")[0]["id"], "The lab's box")


def _content(store: Store) -> list[tuple]:
    """What a user sees of a database: every row of the results table and every run's series."""
    rows = []
    for r in sorted(store.results(), key=lambda r: (r["kind"], r["name"])):
        series = store.run_series(r["id"]) if r["kind"] == "run" else ([], np.empty(0), np.empty((0, 0)))
        rows.append(
            (
                r["kind"],
                r["name"],
                r["created"],
                r["machine"],
                r["devices"],
                r["accuracy"],
                tuple(r["tags"]),
                r["notes"],
                tuple(series[0]),
                series[1].tobytes(),
                series[2].tobytes(),
            )
        )
    return rows


@pytest.fixture
def source(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "a.db")
    _fill(s)
    yield s
    s.close()


def test_round_trip_into_a_fresh_database_keeps_everything(source: Store, tmp_path: Path) -> None:
    archive = tmp_path / "results.trainrig.zip"
    assert source.export_archive(archive) == 5
    target = Store.open(tmp_path / "b.db")
    assert target.import_archive(archive) == {"added": 5, "skipped": 0}
    assert _content(target) == _content(source)
    wide = target.results(text="wide")[0]
    assert wide["tags"] == ["keep", "paper"] and wide["notes"] == "figure 3"
    detail = target.result_detail("sizing", target.results(kind="sizing")[0]["id"])
    assert detail["workload"] == {"name": "seed MLP", "model": {"preset": "seed-mlp"}}
    target.close()


def test_importing_twice_or_back_again_adds_nothing(source: Store, tmp_path: Path) -> None:
    archive = tmp_path / "a.zip"
    source.export_archive(archive)
    target = Store.open(tmp_path / "b.db")
    target.import_archive(archive)
    assert target.import_archive(archive) == {"added": 0, "skipped": 5}
    assert target.results_count() == 5 and target.db.execute("select count(*) from runs").fetchone()[0] == 2
    # B adds a run of its own and sends everything back: A gets only that run
    rid = target.start_run("monitored", "only on B")
    target.finish_run(rid, "finished")
    back = tmp_path / "back.zip"
    assert target.export_archive(back) == 6
    assert source.import_archive(back) == {"added": 1, "skipped": 5}
    assert source.results_count() == 6
    target.close()


def test_exporting_chosen_items_only(source: Store, tmp_path: Path) -> None:
    run = source.results(text="baseline")[0]
    archive = tmp_path / "one.zip"
    assert source.export_archive(archive, keys=[("run", run["id"])]) == 1
    target = Store.open(None)
    assert target.import_archive(archive) == {"added": 1, "skipped": 0}
    assert [r["name"] for r in target.results()] == ["baseline"]
    assert target.sample_count(target.results()[0]["id"]) == 30


def test_nothing_to_export_writes_no_file_and_a_missing_folder_is_named(tmp_path: Path, source: Store) -> None:
    empty = Store.open(None)
    assert empty.export_archive(tmp_path / "empty.zip") == 0
    assert not (tmp_path / "empty.zip").exists()
    with pytest.raises(OutputError, match="does not exist"):
        source.export_archive(tmp_path / "no-such-folder" / "a.zip")


def _rewrite(src: Path, dest: Path, change) -> None:
    """A copy of the archive ``src`` with its members passed through ``change(name, data)``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for name in zin.namelist():
            out = change(name, zin.read(name))
            if out is not None:
                zout.writestr(name, out)


def _damaged_archives(good: Path, tmp: Path) -> dict[str, tuple[Path, str]]:
    data = good.read_bytes()
    cases: dict[str, tuple[Path, str]] = {}

    def case(name: str, content: bytes | None, pattern: str, build=None) -> None:
        p = tmp / f"{name}.zip"
        if build is not None:
            build(p)
        else:
            p.write_bytes(content or b"")
        cases[name] = (p, pattern)

    case("truncated", data[: len(data) // 2], "not a zip file, or cut short")
    case("empty", b"", "not a zip file")
    case("text", b"name,value\nx,1\n", "not a zip file")
    with zipfile.ZipFile(good) as z:
        info = z.getinfo("items.jsonl")
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + info.compress_size // 2
    flipped = bytearray(data)
    flipped[start] ^= 0xFF
    case("flipped-byte", bytes(flipped), "is damaged")
    case("foreign-zip", None, "not a TrainRig results archive", lambda p: _zip(p, {"readme.txt": b"hello"}))

    def drop_line(name: str, b: bytes) -> bytes:
        return b"".join(b.splitlines(keepends=True)[:-1]) if name == "items.jsonl" else b

    case("item-missing", None, "is incomplete: 4 items of the 5", lambda p: _rewrite(good, p, drop_line))

    def edit_item(name: str, b: bytes) -> bytes:
        return b.replace(b'"wide"', b'"WIDE"') if name == "items.jsonl" else b

    case("edited", None, "do not match the checksum", lambda p: _rewrite(good, p, edit_item))

    def newer(name: str, b: bytes) -> bytes:
        if name != "manifest.json":
            return b
        m = json.loads(b)
        m["version"] = 99
        return json.dumps(m).encode()

    case("newer", None, "newer TrainRig", lambda p: _rewrite(good, p, newer))

    def bad_chunk(name: str, b: bytes) -> bytes:
        if name != "items.jsonl":
            return b
        lines = [json.loads(x) for x in b.splitlines()]
        for item in lines:
            for c in item.get("chunks", []):
                c["n"] += 1
        return b"".join((json.dumps(x, sort_keys=True) + "\n").encode() for x in lines)

    def bad_chunk_consistent(p: Path) -> None:
        # the checksum is recomputed, so only the item's own check can find the bad chunk
        _rewrite(good, p, bad_chunk)
        with zipfile.ZipFile(p) as z:
            items, manifest = z.read("items.jsonl"), json.loads(z.read("manifest.json"))
        import hashlib

        manifest["items_sha256"] = hashlib.sha256(items).hexdigest()
        _zip(p, {"items.jsonl": items, "manifest.json": json.dumps(manifest).encode()})

    case("chunk-size", None, "chunk of samples of the wrong size", bad_chunk_consistent)

    def consistent(edit):
        """An archive whose items pass through ``edit`` and whose checksum is written anew for them: only the
        items' own checks can find what is wrong."""

        def build(p: Path) -> None:
            import hashlib

            with zipfile.ZipFile(good) as z:
                items = [json.loads(x) for x in z.read("items.jsonl").splitlines()]
                manifest = json.loads(z.read("manifest.json"))
            for item in items:
                edit(item)
            data = b"".join((json.dumps(x, sort_keys=True) + "\n").encode() for x in items)
            manifest["items_sha256"] = hashlib.sha256(data).hexdigest()
            _zip(p, {"items.jsonl": data, "manifest.json": json.dumps(manifest).encode()})

        return build

    def damage_document(item: dict) -> None:  # opening it in the wizard raised JSONDecodeError
        if item["kind"] == "sizing":
            item["workload"]["document"] = "{not json"

    def damage_result(item: dict) -> None:
        if item["kind"] == "sizing":
            item["row"]["result"] = "[1, 2"

    case(
        "sizing-document",
        None,
        "damaged workload: its document is not a readable workload",
        consistent(damage_document),
    )
    case("sizing-result", None, "has a damaged result: it is not readable JSON", consistent(damage_result))
    return cases


def _zip(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def test_a_damaged_or_foreign_archive_is_refused_and_changes_nothing(source: Store, tmp_path: Path) -> None:
    good = tmp_path / "good.zip"
    source.export_archive(good)
    target = Store.open(tmp_path / "b.db")
    rid = target.start_run("monitored", "already here")
    target.finish_run(rid, "finished")
    before = _content(target)
    for name, (path, pattern) in _damaged_archives(good, tmp_path).items():
        with pytest.raises(ArchiveError, match=pattern) as caught:
            target.import_archive(path)
        assert str(path) in str(caught.value) and "nothing was imported" in str(caught.value), name
        assert _content(target) == before, name
    with pytest.raises(ArchiveError, match="does not exist"):
        target.import_archive(tmp_path / "missing.zip")
    assert target.import_archive(good)["added"] == 5  # the good one still imports
    target.close()


def test_a_broken_deflate_stream_is_refused_not_a_traceback(source: Store, tmp_path: Path) -> None:
    """A byte flipped inside the compressed items can break the deflate stream itself (zlib.error,
    which is neither an OSError nor a ValueError): the archive is refused by name all the same."""
    import zipfile

    good = tmp_path / "good.zip"
    source.export_archive(good)
    data = bytearray(good.read_bytes())
    with zipfile.ZipFile(good) as zf:
        info = zf.getinfo("items.jsonl")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start : start + 8] = b"\xff" * 8  # deflate block type 3 does not exist: "invalid block type"
    bad = tmp_path / "bad-deflate.zip"
    bad.write_bytes(bytes(data))
    target = Store.open(tmp_path / "t.db")
    with pytest.raises(ArchiveError, match="is damaged") as caught:
        target.import_archive(bad)
    assert str(bad) in str(caught.value) and "nothing was imported" in str(caught.value)
    assert target.results_count() == 0
