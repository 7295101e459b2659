"""The host side of a training step (core/estimate/host.py, docs/sizing.md §4b): which side bounds
the step, what the loop style changes, what the published small-MLP measurements say about batch
size, the advice and the ranking for a host-bound workload, and calibrate's host figures."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from benchmarks.host_heldout import LOOPS, predict
from core.advice.ranking import rank_candidates
from core.advice.recommendation import recommend
from core.errors import WorkloadError
from core.estimate import host as host_model
from core.estimate.calibration import calibrated_rates, host_figures, what_calibration_applies
from core.estimate.sizing import size_candidate, size_workload
from core.hardware.catalogue import find_device, load_catalogue
from core.spec.loop import LoopSpec
from core.spec.workload import parse_workload

CATALOGUE = load_catalogue()


def device(name: str) -> Any:
    return find_device(name, CATALOGUE)


def seed_mlp(**training: Any) -> Any:
    return parse_workload({"model": {"preset": "seed-mlp"}, "training": training})


def test_a_small_mlp_is_host_bound_and_resnet50_is_device_bound() -> None:
    small = size_candidate(seed_mlp(), device("RTX 3060"), 1).step
    assert small.host_bound and small.bound in ("framework overhead", "host data loading")
    assert small.device_load < 0.3  # Finocchiaro: GPU load 0.02–0.26 for such MLPs on an RTX 3060
    # the GPU waits for the host; the host waits only for the kernels after its last dispatch (the
    # optimizer's, 0.03 ms of 1.4 here)
    assert small.step_s == pytest.approx(small.host_s + small.turns_s) and small.turns_s < 0.1 * small.step_s
    resnet = parse_workload({"model": {"preset": "resnet-50"}, "training": {"batch_size": 256}})
    big = size_candidate(resnet, device("RTX 3060"), 1).step
    assert not big.host_bound and big.bound in ("compute", "memory bandwidth")
    assert big.device_load > 0.9


def test_a_host_bound_step_is_the_same_on_a_faster_gpu_in_the_same_host() -> None:
    # an RTX 3060 and an RTX 4090 both go in the desktop platform (Ryzen 9 7950X): the 4090's
    # kernels are several times faster, the step is not
    s3060 = size_candidate(seed_mlp(), device("RTX 3060"), 1).step
    s4090 = size_candidate(seed_mlp(), device("RTX 4090"), 1).step
    assert s4090.device_s < s3060.device_s / 2
    assert s4090.host_s == s3060.host_s and s4090.step_s - s4090.turns_s == pytest.approx(s3060.step_s - s3060.turns_s)
    # only the kernels after the host's last dispatch (the optimizer step) finish sooner on the 4090
    assert s3060.step_s * 0.95 < s4090.step_s < s3060.step_s


def test_a_host_bound_data_parallel_step_hides_its_all_reduce_behind_the_hosts_dispatch() -> None:
    # two nodes of 8: the all-reduce runs while the host issues the backward, however fast the kernels;
    # it read 0.024 ms exposed on the RTX 4090 and none on the slower RTX 3060 (hidden behind its
    # longer kernels), so the faster GPU showed the longer step
    w = seed_mlp(nodes=2, sharding="ddp")
    s3060, s4090 = (size_candidate(w, device(n), 8).step for n in ("RTX 3060", "RTX 4090"))
    assert s4090.device_s < s3060.device_s and s4090.comm_s > 0
    assert s4090.exposed_comm_s == 0.0 and s3060.exposed_comm_s == 0.0
    assert s4090.step_s - s4090.turns_s == pytest.approx(s3060.step_s - s3060.turns_s)
    assert s4090.step_s <= s3060.step_s


def test_collectives_finish_while_the_loader_prepares_the_next_batch() -> None:
    # an input-bound data-parallel step (a 150,000-feature MLP at batch 4,096, two nodes of 8): the
    # all-reduce outlasts the passes but not the wait for the next batch; it had been added on top of
    # that wait, 6.0 ms on RTX 3060s and 8.2 ms on the faster RTX 4090s (57.2 against 59.4 ms a step)
    mlp = {
        "input_shape": [150000],
        "layers": [{"type": "linear", "out_features": 256}] * 2 + [{"type": "linear", "out_features": 10}],
    }
    w = parse_workload(
        {
            "model": mlp,
            "data": {"samples": 100000},
            "training": {"batch_size": 4096, "epochs": 1, "nodes": 2, "sharding": "ddp"},
        }
    )
    s3060, s4090 = (size_candidate(w, device(n), 8).step for n in ("RTX 3060", "RTX 4090"))
    for s in (s3060, s4090):
        assert s.bound == "input pipeline" and s.comm_s > 0.005 and s.exposed_comm_s == 0.0
        assert s.step_s == pytest.approx(s.input_s)


def test_the_step_at_batch_64_and_512_is_nearly_flat_as_published() -> None:
    # Finocchiaro Table 4.3 (RTX 3060, Ryzen 7 2700): 400 epochs take 3,426 s at batch 64 and 347 s
    # at 512, 8 × the steps: the step at batch 64 is 1.24 × the step at 512 (0.81–1.24 × over
    # batches 64–512). The paper's loop is not published; with the data already on the GPU or a
    # DataLoader with workers, the host's per-step cost dominates and the step barely moves.
    for name in ("device tensors", "DataLoader, 4 workers"):
        s64, load64 = predict(3, 512, 64, "adam", LOOPS[name])
        s512, load512 = predict(3, 512, 512, "adam", LOOPS[name])
        assert 0.8 <= s64 / s512 <= 1.25, name
        assert load64 < load512 < 0.5  # GPU load grows with the batch, as the paper's 0.056 → 0.15
    # from a DataLoader, as the paper trained, the loads are the paper's within 5 points (0.08 and 0.16)
    _, load64 = predict(3, 512, 64, "adam", LOOPS["DataLoader, 4 workers"])
    _, load512 = predict(3, 512, 512, "adam", LOOPS["DataLoader, 4 workers"])
    assert load64 == pytest.approx(0.056, abs=0.05) and load512 == pytest.approx(0.150, abs=0.05)
    # with no workers the main process indexes and collates every sample: the step grows with it
    s64, _ = predict(3, 512, 64, "adam", LOOPS["DataLoader, 0 workers"])
    s512, _ = predict(3, 512, 512, "adam", LOOPS["DataLoader, 0 workers"])
    assert s512 > 1.5 * s64


def widths() -> dict[int, tuple[float, float]]:
    return {w: predict(3, w, 512, "adam", LOOPS["DataLoader, 4 workers"]) for w in (128, 256, 512, 1024, 2048)}


def test_the_published_width_study_is_flat_until_the_gpu_saturates() -> None:
    # Finocchiaro Table 4.2: widths 128–1024 train in 341–347 s; 2048 in 380 s with the GPU at 100 %
    steps = widths()
    narrow = [steps[w][0] for w in (128, 256, 512)]
    assert max(narrow) / min(narrow) < 1.05
    assert steps[2048][0] > 1.3 * steps[512][0] and steps[2048][1] > 0.7


@pytest.mark.xfail(
    strict=True,
    reason="width 1024 reads 4.53 ms against 4.02 at width 128 (+13 %; published +1 %): the host's dispatch "
    "(about 2 ms) and the GPU's kernels (2.1 ms) are nearly equal there, and the model has the GPU wait for the "
    "forward's dispatch and the host for the wide layers' backward and Adam's kernels (0.46 ms); the paper's "
    "slower host (5.4 ms steps) leaves its GPU waiting throughout",
)
def test_the_width_1024_step_is_as_flat_as_published() -> None:
    steps = widths()
    assert steps[1024][0] / steps[128][0] < 1.05


@pytest.mark.parametrize(
    ("loop", "faster_loop"),
    [
        ({"style": "dataloader"}, {"style": "device_tensors"}),
        ({"style": "dataloader"}, {"style": "dataloader", "workers": 4}),
    ],
)
def test_the_loop_style_changes_the_step(loop: dict, faster_loop: dict) -> None:
    slow = size_candidate(seed_mlp(loop=loop), device("RTX 3060"), 1).step
    fast = size_candidate(seed_mlp(loop=faster_loop), device("RTX 3060"), 1).step
    assert fast.step_s < 0.95 * slow.step_s
    assert slow.host.loop.describe() != fast.host.loop.describe()


def test_without_a_synchronisation_each_step_the_loader_overlaps_the_gpu() -> None:
    # an MLP 2048 wide (Finocchiaro's widest) at batch 512 on an RTX 3060: its kernels take about as
    # long as the host; loss.item() each step makes the GPU wait while the next batch is loaded
    wide = {"input_shape": [75], "layers": [{"type": "linear", "out_features": 2048}, {"type": "relu"}] * 3}
    doc = {
        "model": {**wide, "layers": [*wide["layers"], {"type": "linear", "out_features": 10}]},
        "data": {"samples": 80_909},
    }
    synced = size_candidate(
        parse_workload({**doc, "training": {"batch_size": 512, "epochs": 1}}), device("RTX 3060"), 1
    ).step
    free = size_candidate(
        parse_workload(
            {**doc, "training": {"batch_size": 512, "epochs": 1, "loop": {"style": "dataloader", "sync_every": 0}}}
        ),
        device("RTX 3060"),
        1,
    ).step
    assert synced.step_s == pytest.approx(
        synced.host.serial_s + max(synced.host.dispatch_s + 30e-6, synced.device_s) + synced.turns_s
    )
    # between synchronisations the host runs ahead into the next step: no turns without any
    assert free.turns_s == 0.0
    assert free.step_s == pytest.approx(max(free.host_s, free.device_s))
    assert free.step_s < 0.9 * synced.step_s


def test_pinned_memory_takes_the_copy_off_the_hosts_critical_path() -> None:
    doc = {
        "model": {"preset": "resnet-50"},
        "data": {"format": "npy"},  # decoded arrays in RAM: a DataLoader over in-memory data
        "training": {"batch_size": 64, "precision": "bf16_mixed"},
    }
    pageable = size_candidate(parse_workload(doc), device("H100 SXM"), 1).step
    pinned_doc = {**doc, "training": {**doc["training"], "loop": {"style": "dataloader", "pin_memory": True}}}
    pinned = size_candidate(parse_workload(pinned_doc), device("H100 SXM"), 1).step
    assert pageable.host.copy_s > 0 and pinned.host.copy_s == 0
    # 64 uint8 images of 3 × 224 × 224 (and their labels) over the H100's PCIe 5.0 × 16 link at half
    # its rate from pageable memory
    assert pageable.host.copy_s == pytest.approx(64 * (3 * 224 * 224 + 8) / (63.015e9 * 0.5), rel=0.01)


def test_on_a_cpu_the_host_and_the_work_add() -> None:
    cpu = next(d for d in CATALOGUE if d.kind == "cpu")
    st = size_candidate(seed_mlp(), cpu, 1).step
    assert st.step_s == pytest.approx(st.device_s + st.host_s)
    assert not st.host_bound or st.host_s >= st.device_s


def test_a_faster_host_core_shortens_a_host_bound_step() -> None:
    # the same H100 SXM: an HGX server's Xeon Platinum 8480C core against a desktop Ryzen 9 7950X's
    # (resources/host_cpus.json: 3.8 GHz × 1.40 against 5.7 GHz × 1.55)
    speed, text = host_model.cpu_speed("2 × Intel Xeon Platinum 8480C (112 cores)")
    assert speed == 1.0 and "8480C" in text
    fast, _ = host_model.cpu_speed("AMD Ryzen 9 7950X (16 cores)")
    assert fast == pytest.approx(5.7 * 1.55 / (3.8 * 1.40))
    assert host_model.cpu_speed("a CPU nobody rated")[0] == 1.0


def test_the_advice_for_a_host_bound_workload_recommends_no_faster_gpu() -> None:
    rec = recommend(seed_mlp(), [device("RTX 3060"), device("RTX 4090"), device("H100 SXM")])
    (finding,) = [f for f in rec.findings if f.rule == "host-bound-step"]
    assert "A faster GPU would shorten it only by the kernels the host waits for" in finding.message
    for remedy in ("larger batch", "fewer synchronisations", "DataLoader workers", "faster core", "torch.compile"):
        assert remedy in finding.message
    assert "GPU is busy about" in finding.message
    # the table: the RTX 3060 and 4090 are equally fast here (same desktop host): the cheaper first;
    # the H100 SXM's HGX host has a slower core and comes last
    order = [c.device.name for c in rank_candidates(rec.result.candidates)]
    assert order == ["NVIDIA GeForce RTX 3060 12 GB", "NVIDIA GeForce RTX 4090", "NVIDIA H100 SXM"]
    assert rec.best is not None and rec.best.device.name == "NVIDIA GeForce RTX 3060 12 GB"


def test_a_device_bound_workload_keeps_the_fastest_first() -> None:
    w = parse_workload({"model": {"preset": "resnet-50"}, "training": {"batch_size": 256, "precision": "bf16_mixed"}})
    result = size_workload(w, [device("RTX 3060"), device("RTX 4090")])
    order = [c.device.name for c in rank_candidates(result.candidates)]
    assert order == ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3060 12 GB"]
    rec = recommend(w, [device("RTX 3060"), device("RTX 4090")])
    assert "host-bound-step" not in {f.rule for f in rec.findings}


# what resources/workers/host_bench.py returned on the development machine (2 busy cores)
MEASURED = {
    "per_call_s": 1.77e-05,
    "loader_batch_s": 1.0e-04,
    "loader_sample_s": 8.0e-06,
    "handoff_batch_s": 2.28e-03,
    "handoff_note": "2 worker processes at batch 32",
    "sync_s": 5.2e-07,
    "log_line_s": 2.3e-06,
    "sample_bytes": 308,
}


def test_calibrates_host_figures_are_parsed_and_impossible_ones_dropped() -> None:
    cal = {"host": {**MEASURED, "sync_s": -1.0, "log_line_s": float("nan"), "loader_sample_s": 5.0}}
    figures = host_figures(cal)
    assert figures == {"per_call_s": 1.77e-05, "loader_batch_s": 1.0e-04, "handoff_batch_s": 2.28e-03}
    assert host_figures({"host": {"per_call_s": "fast"}}) == {}
    assert "this machine as a host" in what_calibration_applies({"host": MEASURED})


def test_calibrates_host_figures_size_this_machines_gpu() -> None:
    here = dataclasses.replace(device("RTX 4090"), name="this machine (RTX 4090)", origin="this-machine")
    rates = calibrated_rates([here, device("RTX 4090")], {"host": MEASURED}, CATALOGUE)
    assert rates[here.name]["host"]["loader_sample_s"] == 8.0e-06
    assert "host" not in rates.get(device("RTX 4090").name, {})  # a catalogue GPU's host is not this machine
    w = seed_mlp()
    st = size_candidate(w, here, 1, calibrated=rates[here.name]).step
    # the measured DataLoader costs as they are: per batch + per sample (and its 308 bytes stacked)
    assert st.host.loader_s == pytest.approx(1.0e-04 + 512 * (8.0e-06 + 308 / host_model.HOST_COPY_BPS))
    # this machine's core speed from its measured cost per call: 11.2 µs on the reference CPU
    assert st.host.speed == pytest.approx(host_model.REFERENCE_BENCH_CALL_S / 1.77e-05)
    assert "measured by calibrate" in st.host.cpu
    catalogue = size_candidate(w, device("RTX 4090"), 1).step
    assert st.host_s > catalogue.host_s  # this 2-core machine's core is slower than the desktop's


@pytest.mark.parametrize(
    ("loop", "path", "words"),
    [
        ("tensors", "training.loop.style", "must be one of"),
        ({"style": "device_tensors", "workers": 2}, "training.loop.workers", "no DataLoader workers"),
        ({"style": "dataloader", "workers": -1}, "training.loop.workers", "an integer >= 0"),
        ({"style": "dataloader", "prefetch": 2}, "training.loop", "prefetch"),
    ],
)
def test_a_bad_loop_is_refused_by_its_key(loop: Any, path: str, words: str) -> None:
    with pytest.raises(WorkloadError) as err:
        seed_mlp(loop=loop)
    assert err.value.path.startswith(path)
    assert words in str(err.value)


def test_the_default_loop_follows_the_data() -> None:
    assert seed_mlp().training.loop is None
    st = size_candidate(seed_mlp(), device("RTX 3060"), 1).step
    assert st.host.loop == LoopSpec()  # a DataLoader in memory, no workers, loss.item() each step
    jpeg = parse_workload({"model": {"preset": "resnet-50"}, "data": {"format": "jpeg"}})
    st = size_candidate(jpeg, device("RTX 3060"), 1).step
    assert st.host.loop == LoopSpec(style="dataloader_files", workers=4, pin_memory=True)


def test_the_device_waits_for_the_dispatch_only_where_the_host_is_slower() -> None:
    wait = host_model.device_wait
    # the host issues each piece faster than the device runs it: the device waits for the first only
    assert wait([0.1, 0.1, 0.1], [1.0, 1.0, 1.0]) == pytest.approx(0.1)
    # the host slower throughout: the pass ends with the last piece's kernels after its last dispatch
    assert wait([1.0, 1.0, 1.0], [0.5, 0.5, 0.5]) + 1.5 == pytest.approx(3.0 + 0.5)
    # a host-bound stretch, then a device-bound one: nearly their sum, where either side alone is 2.1
    assert wait([2.0, 0.1], [0.1, 2.0]) + 2.1 == pytest.approx(4.1)
    assert wait([], []) == 0.0


def test_the_device_wait_lies_between_the_slower_side_and_the_sum() -> None:
    rng = np.random.default_rng(2026)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        h, d = rng.exponential(1.0, n), rng.exponential(1.0, n)
        finish = d.sum() + host_model.device_wait(h, d)
        assert max(h.sum() + d[-1], h[0] + d.sum()) - 1e-9 <= finish <= h.sum() + d.sum() + 1e-9


def test_bert_ends_with_the_hosts_dispatch_and_then_adams_kernels() -> None:
    # BERT-base b64 bf16 on an H100 is host-bound (about 2,100 operators dispatched): AdamW's foreach
    # kernels over 109 M parameters run 4.1 ms on the device, queued call by call after the host's
    # backward, and the step's synchronisation waits for them: 3.8 ms beyond the host's dispatch
    w = parse_workload(
        {
            "model": {"preset": "bert-base"},
            "training": {"batch_size": 64, "precision": "bf16_mixed", "optimizer": "adamw", "loop": "device_tensors"},
        }
    )
    st = size_candidate(w, device("H100 SXM"), 1).step
    assert st.host_bound and st.bound == "framework overhead"
    assert st.step_s == pytest.approx(st.host_s + st.turns_s)
    assert 0.002 < st.turns_s < 0.005


def test_a_synchronisation_every_k_steps_pays_the_turns_once_per_k() -> None:
    def step(k: int, wait: float, synchronised: bool = False) -> float:
        # the host: 7 s of dispatch after 3 s of loading the next batch; the device: 8 s of work
        h = host_model.HostTime(7.0, 3.0, 0.0, 0.0, 0.0, 0.0, 1.0, "", LoopSpec(sync_every=k))
        return host_model.combine(h, 8.0, "gpu", wait, synchronised)

    # every step: the device waits for the loading and the dispatch's slow stretches, 3 + 2 s
    assert step(1, 2.0) == pytest.approx(13.0)
    # every second step: half of what that adds to the slower side (the host's 10 s)
    assert step(2, 2.0) == pytest.approx(11.5)
    assert step(0, 2.0) == pytest.approx(10.0)  # never: the slower side alone
    # GradScaler's read of its found-inf flag synchronises every step, whatever the loop does
    assert step(0, 2.0, synchronised=True) == step(4, 2.0, synchronised=True) == pytest.approx(13.0)
    assert all(step(k, 3.0) >= step(k, 2.0) for k in (0, 1, 2, 8))


def test_fp16_steps_meet_at_gradscalers_synchronisation_every_step() -> None:
    def bert(precision: str, sync_every: int) -> Any:
        loop = {"style": "device_tensors", "sync_every": sync_every}
        training = {"batch_size": 64, "precision": precision, "optimizer": "adamw", "loop": loop}
        return size_candidate(
            parse_workload({"model": {"preset": "bert-base"}, "training": training}), device("H100 SXM"), 1
        ).step

    fp16 = [bert("fp16_mixed", k).step_s for k in (1, 4, 0)]
    assert fp16[0] == pytest.approx(fp16[1], rel=0.002) == pytest.approx(fp16[2], rel=0.002)
    bf16 = [bert("bf16_mixed", k) for k in (1, 4, 0)]
    assert bf16[0].step_s > bf16[1].step_s > bf16[2].step_s and bf16[2].turns_s == 0.0
