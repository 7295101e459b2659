"""How fast the results store answers at scale (SPEC 7 and 9: the results table under 0.5 s, goal
0.3 s, with 10,000 runs and 10 million samples; a run's curves under 100 ms).

Builds a database of ``--runs`` runs holding ``--samples`` samples in all (one long run of
``--long`` samples, the rest shared out unevenly), plus sizings, inventories and calibrations,
written in the store's own format (float32 chunks, the results index filled by the code every save
uses). Then it opens it as the app does and times what the results tab does: the first page and
the count, a text filter typed letter by letter, a tag filter, a sort by a figure column, one run's
series (the long one and a typical one), the live path's append of one second of samples, a
delete with its undo, and the disk the samples take.

Run: python benchmarks/results_store.py [--runs 10000] [--samples 10000000] [--columns 8] [--db FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.storage import results_index
from core.storage import samples as sample_chunks
from core.storage.store import Store

PAGE = 200  # rows a table view asks for first (the GUI fetches more as it scrolls)
MODELS = ("seed MLP", "ResNet-50", "GPT-2 small", "conv net", "LSTM tagger", "ViT-B/16", "U-Net")
VARIANTS = ("baseline", "wide", "deep", "bs1024", "adamw", "leaky", "fp16", "tmpfs", "lr3e-4")
TAGS = ("paper", "ablation", "keep", "thermal", "rerun")


def timed(fn, repeat: int) -> tuple[float, float, float]:
    """(first, median, worst) seconds of ``repeat`` calls."""
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out[0], statistics.median(out), max(out)


def build(path: Path, runs: int, total: int, columns: int, long_run: int, seed: int) -> None:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    store = Store.open(path)
    cols = [f"c{j}" for j in range(columns)]
    rest = max(total - long_run, 0)
    # uneven run lengths (a few long, many short), summing to the total
    weights = nrng.pareto(1.5, size=max(runs - 1, 1)) + 0.2
    counts = np.minimum(np.floor(weights / weights.sum() * rest).astype(int), max(long_run // 2, 1))
    short = rest - int(counts.sum())  # what the cap took off, shared out evenly
    counts += short // len(counts)
    counts[: short % len(counts)] += 1
    counts = [long_run, *counts.tolist()][:runs]
    t0 = time.perf_counter()
    written = 0
    batch = 250
    for start in range(0, runs, batch):

        def write_batch(start: int = start) -> int:
            n_written = 0
            for i in range(start, min(start + batch, runs)):
                n = int(counts[i])
                created = (
                    f"2026-{1 + i * 11 // runs:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}+00:00"
                )
                step = 10 ** rng.uniform(-3, 0)
                cur = store.db.execute(
                    "insert into runs (created, kind, name, command, device, status, duration_s, prediction, "
                    "measured, metrics, sampling, machine) values (?, 'trained', ?, '[]', ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        created,
                        f"{rng.choice(MODELS)} {rng.choice(VARIANTS)} #{i}",
                        rng.choice(("cpu", "cuda:0", "cuda:1")),
                        rng.choice(("finished",) * 8 + ("failed", "cancelled")),
                        n / 10,
                        json.dumps({"step_s": step * rng.uniform(0.8, 1.25), "device": "this machine"}),
                        json.dumps({"median_step_s": step, "training_memory_bytes": rng.randint(2**20, 2**34)}),
                        json.dumps({"accuracy": rng.random(), "macro_f1": rng.random(), "training_time_s": n / 10}),
                        json.dumps({"columns": cols, "rate_hz": 10}),
                        rng.choice(("lab-box", "workstation", "gpu-node-1", "laptop")),
                    ],
                )
                rid = int(cur.lastrowid)
                if n:
                    t = np.arange(n) / 10.0
                    v = (nrng.random((n, columns), dtype=np.float32) * 100).astype(np.float32)
                    for s in range(0, n, sample_chunks.CHUNK_SAMPLES):
                        e = s + sample_chunks.CHUNK_SAMPLES
                        sample_chunks.append_arrays(store.db, rid, t[s:e], v[s:e])
                results_index.refresh(store.db, "run", rid)
                if rng.random() < 0.1:
                    tags = rng.sample(TAGS, rng.randint(1, 2))
                    store.db.execute(
                        "update results_index set tags = ?, search = search || ? where kind = 'run' and id = ?",
                        [json.dumps(tags), " " + " ".join(tags).casefold(), rid],
                    )
                n_written += n
            return n_written

        written += store._write(write_batch)
        print(f"\r  writing: {min(start + batch, runs):,} runs, {written:,} samples", end="", flush=True)
    for i in range(runs // 50):
        result = {
            "candidates": [
                {"device": "H100 SXM", "fits": True, "step_time_s": 0.01 * (i + 1), "training_time_s": 3600.0}
            ]
        }
        store.save_sizing(f"{rng.choice(MODELS)} sizing {i}", {"name": "x"}, ["H100 SXM", "RTX 4090"], result)
    for host in ("lab-box", "workstation", "gpu-node-1", "laptop"):
        store.save_inventory({"fingerprint": host[:4], "host": host, "cpu": {"model": "AMD EPYC"}})
        store.save_calibration(host[:4], {"cpu": {}})
    print(f"\r  wrote {runs:,} runs and {written:,} samples in {time.perf_counter() - t0:.1f} s" + " " * 20)
    store.close()


def hour_on_8_gpus(folder: Path) -> None:
    """The disk one hour at 10 Hz on 8 GPUs takes: the host's 2 columns, the process tree's 4 and
    6 per GPU (54 values a sample, 36,000 samples), written as schema 5 did (one JSON row per
    sample) and as now (float32 chunks), each in a database of its own."""
    import sqlite_utils

    from core.storage.migrations import MIGRATIONS

    rng = np.random.default_rng(3)
    n = 36_000
    host = [np.round(rng.uniform(0, 100, n), 1), rng.integers(8e9, 9e9, n).astype(float)]
    proc = [
        np.round(rng.uniform(0, 800, n), 1),
        rng.integers(5e9, 6e9, n).astype(float),
        np.full(n, 42.0),
        np.full(n, 9.0),
    ]
    gpu = []
    for _ in range(8):
        gpu += [
            rng.integers(0, 101, n).astype(float),  # utilisation %
            rng.integers(6e10, 8e10, n).astype(float),  # memory used, bytes
            np.round(rng.uniform(250, 700, n), 3),  # power, W (NVML: milliwatts / 1000)
            rng.integers(40, 85, n).astype(float),  # temperature, °C
            rng.integers(1400, 1980, n).astype(float),  # SM clock, MHz
            np.full(n, 2619.0),  # memory clock, MHz
        ]
    values = np.column_stack(host + proc + gpu)
    t = np.arange(n) / 10
    rows = [(float(ti), [float(x) for x in row]) for ti, row in zip(t, values.tolist(), strict=True)]
    old = folder / "hour-v5.db"
    db = sqlite_utils.Database(old)
    for m in MIGRATIONS[:5]:
        m(db)
    db["runs"].insert({"id": 1, "name": "hour"})
    with db.conn:
        db.conn.executemany(
            "insert into samples (run_id, t, value_list) values (1, ?, ?)", [(ti, json.dumps(v)) for ti, v in rows]
        )
    db.execute("vacuum")
    t0 = time.perf_counter()  # how schema 5's run_samples read them back
    back = [
        (ti, json.loads(v)) for ti, v in db.execute("select t, value_list from samples where run_id = 1 order by t")
    ]
    old_read = time.perf_counter() - t0
    assert len(back) == n
    db.close()
    new = folder / "hour-v6.db"
    store = Store.open(new)
    rid = store.start_run("trained", "hour", sampling={"columns": [f"c{j}" for j in range(values.shape[1])]})
    for s in range(0, n, 10):  # as a live run writes them, one flush a second
        store.add_samples(rid, rows[s : s + 10])
    store.finish_run(rid, "finished")
    store.db.execute("vacuum")
    t0 = time.perf_counter()
    _cols, t_back, _v = store.run_series(rid)
    new_read = time.perf_counter() - t0
    assert len(t_back) == n
    store.close()
    a, b = old.stat().st_size, new.stat().st_size
    raw = n * (values.shape[1] * 4 + 8)
    print(f"one hour at 10 Hz on 8 GPUs ({values.shape[1]} values × {n:,} samples):")
    print(f"  schema 5 (one JSON row a sample): {a / 1e6:5.1f} MB on disk, read back in {old_read * 1e3:6.0f} ms")
    print(f"  now (float32 chunks):             {b / 1e6:5.1f} MB on disk, read back in {new_read * 1e3:6.0f} ms")
    print(f"  ({a / b:.1f}× smaller; the arrays alone are {raw / 1e6:.1f} MB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--columns", type=int, default=8, help="values per sample (8: one GPU's fields and the host's)")
    ap.add_argument("--long", type=int, default=100_000, help="samples of the one long run (2.8 h at 10 Hz)")
    ap.add_argument("--db", type=Path, help="database file to build or reuse (default: a temporary one)")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    tmp = None
    if args.db is None:
        tmp = tempfile.TemporaryDirectory(prefix="trainrig-bench-")
        args.db = Path(tmp.name) / "results.db"
    if not args.db.exists():
        build(args.db, args.runs, args.samples, args.columns, min(args.long, args.samples), seed=1)
    else:
        print(f"  reusing {args.db}")

    t = time.perf_counter()
    store = Store.open(args.db)
    print(f"{'open the database':44} {(time.perf_counter() - t) * 1e3:8.1f} ms")
    n_runs = store.results_count(kind="run")
    n_samples = store.db.execute("select coalesce(sum(n), 0) from sample_chunks").fetchone()[0]
    print(f"  {store.results_count():,} results ({n_runs:,} runs), {n_samples:,} samples")

    def table() -> None:  # what the tab shows first: the count (for the scroll bar) and one page
        store.results_count()
        store.results(limit=PAGE)

    rows = [
        ("table: count + first page, first after open", table),
        ("table: count + first page", table),
        ("next page (offset 5,000)", lambda: store.results(limit=PAGE, offset=5000)),
        (
            "kind filter: runs, count + page",
            lambda: (store.results_count(kind="run"), store.results(kind="run", limit=PAGE)),
        ),
        (
            "tag filter 'paper', count + page",
            lambda: (store.results_count(tag="paper"), store.results(tag="paper", limit=PAGE)),
        ),
        (
            "sort by measured step, count + page",
            lambda: (store.results_count(), store.results(order_by="measured_step_s", limit=PAGE)),
        ),
        ("sort by name, count + page", lambda: (store.results_count(), store.results(order_by="name", limit=PAGE))),
    ]
    print(
        f"{'what (first / median / worst of ' + str(args.repeat) + ')':44} {'first':>10} {'median':>10} {'worst':>10}"
    )
    first_done = False
    for label, fn in rows:
        if not first_done:
            t = time.perf_counter()
            fn()
            print(f"{label:44} {(time.perf_counter() - t) * 1e3:7.1f} ms")
            first_done = True
            continue
        a, m, w = timed(fn, args.repeat)
        print(f"{label:44} {a * 1e3:7.1f} ms {m * 1e3:7.1f} ms {w * 1e3:7.1f} ms")
    for typed in ("w", "wi", "wid", "wide", "wide res"):
        a, m, w = timed(lambda s=typed: (store.results_count(text=s), store.results(text=s, limit=PAGE)), args.repeat)
        label = f"text filter typed {typed!r}: count + page"
        matches = store.results_count(text=typed)
        print(f"{label:44} {a * 1e3:7.1f} ms {m * 1e3:7.1f} ms {w * 1e3:7.1f} ms   ({matches:,} match)")

    longest = store.db.execute(
        "select run_id, sum(n) s from sample_chunks group by run_id order by s desc limit 1"
    ).fetchone()
    typical_n = n_samples // max(n_runs, 1)
    typical = store.db.execute(
        "select run_id from sample_chunks group by run_id having sum(n) >= ? order by sum(n) limit 1", [typical_n]
    ).fetchone()
    for rid, label in (
        (longest[0], f"run_series, the longest run ({longest[1]:,} samples)"),
        (typical[0], "run_series, a typical run"),
    ):
        a, m, w = timed(lambda r=rid: store.run_series(r), args.repeat)
        k = store.run_series(rid)[2].shape
        print(f"{label:44} {a * 1e3:7.1f} ms {m * 1e3:7.1f} ms {w * 1e3:7.1f} ms   ({k[0]:,} × {k[1]})")

    # the live path: one sampler flush (10 samples at 10 Hz) of a running run
    rid = store.start_run("trained", "live", sampling={"columns": [f"c{j}" for j in range(args.columns)]})
    flush = [(i / 10, [float(i)] * args.columns) for i in range(10)]
    a, m, w = timed(lambda: store.add_samples(rid, flush), 100)
    print(f"{'add_samples: one second at 10 Hz (live run)':44} {a * 1e3:7.2f} ms {m * 1e3:7.2f} ms {w * 1e3:7.2f} ms")
    t = time.perf_counter()
    store.finish_run(rid, "finished")
    print(f"{'finish_run (merges 100 chunks of 10)':44} {(time.perf_counter() - t) * 1e3:7.1f} ms")
    store.delete_results([("run", rid)])  # a reused database stays as it was built
    store.discard_undo()

    victims = [("run", r["id"]) for r in store.results(kind="run", limit=100, offset=100)]
    t = time.perf_counter()
    store.delete_results(victims)
    d = time.perf_counter() - t
    t = time.perf_counter()
    store.undo_delete()
    u = time.perf_counter() - t
    print(f"{'delete 100 runs with their samples / undo':44} {d * 1e3:7.1f} ms {u * 1e3:7.1f} ms")

    store.close()
    size = args.db.stat().st_size
    print(
        f"database file: {size / 1e6:,.0f} MB, {size / max(n_samples, 1):.1f} bytes per sample of {args.columns} values"
    )
    hour_on_8_gpus(args.db.parent)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
