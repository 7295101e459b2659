"""The input pipeline: a sample's size on disk by format and resolution, the CPU time to decode and
augment it, the loader cores per GPU that follow, the step that waits for them, and the bill of
materials' CPU and Memory lines (docs/sizing.md, "Input pipeline")."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from core.advice.bom import BomLine, recommend_bom
from core.advice.host import MIN_HOST_CORES, loader_cores_per_gpu
from core.errors import WorkloadError
from core.estimate.input_pipeline import (
    IMAGENET_TRAIN_TAR_BYTES,
    LOADER_CORES_PER_GPU,
    MAX_LOADER_CORES_PER_DEVICE,
    dataset_bytes_on_disk,
    decode_cost,
    sample_bytes_on_disk,
)
from core.estimate.sizing import CandidateResult, SizingResult, size_candidate, size_workload
from core.hardware.catalogue import DeviceSpec, find_device, load_catalogue
from core.spec.workload import parse_workload, read_workload_document

CATALOGUE = tuple(load_catalogue())
ROOT = Path(__file__).resolve().parents[2]
# ResNet-50 on ImageNet as people train it: the preset (1,281,167 JPEGs) in bf16 autocast
RESNET_JPEG: dict[str, Any] = {"model": {"preset": "resnet-50"}, "training": {"precision": "bf16_mixed"}}
AS_NPY_IN_RAM = {"data": {"format": "npy", "storage": "ramdisk"}}


def dev(name: str) -> DeviceSpec:
    return find_device(name, CATALOGUE)


def workload(*parts: dict[str, Any]) -> Any:
    doc: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            doc[key] = {**doc.get(key, {}), **value}
    return parse_workload(doc)


def sized(doc: dict[str, Any], device: str, count: int = 1, host_ram: int | None = None) -> SizingResult:
    w = parse_workload({**doc, "hardware": {"gpu_count": count}})
    return size_workload(w, [dev(device)], host_ram_bytes=host_ram)


def bom_line(result: SizingResult, item: str) -> BomLine:
    return {line.item: line for line in recommend_bom(result)}[item]


def test_imagenet_as_jpeg_takes_its_real_size_on_disk() -> None:
    # ILSVRC2012_img_train.tar is 147,897,477,120 B ("138 GB" on ImageNet's page, in GiB): 115 KB an
    # image, where 0.1 × the 224 × 224 × 3 tensor (15 KB, 19 GB in all) was counted before
    w = workload({"model": {"preset": "resnet-50"}})
    assert (w.data.format, w.data.samples) == ("jpeg", 1_281_167)
    assert dataset_bytes_on_disk(w.data) == pytest.approx(140e9, rel=0.10)
    assert dataset_bytes_on_disk(w.data) == pytest.approx(IMAGENET_TRAIN_TAR_BYTES, rel=1e-9)
    assert sample_bytes_on_disk(w.data) == pytest.approx(115_440, rel=1e-3)


def test_the_stored_resolution_sets_the_size_and_the_workloads_own_bytes_win() -> None:
    base = {"model": {"preset": "resnet-50"}}
    imagenet = sample_bytes_on_disk(workload(base).data)
    camera = workload(base, {"data": {"stored_resolution": [3024, 4032]}})  # a 12-megapixel photo
    assert sample_bytes_on_disk(camera.data) == pytest.approx(imagenet * 3024 * 4032 / (469 * 387))
    assert decode_cost(camera.data).per_sample_s > 30 * decode_cost(workload(base).data).per_sample_s
    own = workload(base, {"data": {"stored_resolution": [3024, 4032], "bytes_per_sample_on_disk": 2_500_000}})
    assert sample_bytes_on_disk(own.data) == 2_500_000
    # the same images as PNG (lossless, 0.54 of the pixels' bytes) and uncompressed TIFF
    png = sample_bytes_on_disk(workload(base, {"data": {"format": "png"}}).data)
    tiff = sample_bytes_on_disk(workload(base, {"data": {"format": "tiff"}}).data)
    assert (png, tiff) == (pytest.approx(469 * 387 * 3 * 0.54), 469 * 387 * 3)


def test_a_jpeg_sample_costs_published_decode_and_augmentation_time() -> None:
    cost = decode_cost(workload({"model": {"preset": "resnet-50"}}).data)
    # Pillow decodes 577 ImageNet images of ~500 × 400 a second (imread_benchmark): 1.57 ms for
    # 469 × 387; torchvision's RandomResizedCrop, flip, to-tensor, normalise on 469 × 387: 1.73 ms
    assert cost.decode_s == pytest.approx(469 * 387 / (577 * 500 * 400))
    assert cost.augment_s == pytest.approx(1.728e-3)
    assert cost.per_sample_s == pytest.approx(3.30e-3, rel=0.01)
    # arrays prepared at the network's size: nothing to decode, nothing to augment
    assert decode_cost(workload({"model": {"preset": "resnet-50"}}, AS_NPY_IN_RAM).data).per_sample_s == 0


# the GPU kernel model's paces in bf16 with PyTorch's default NCHW layout: H100 SXM about 2,240, H200 about
# 2,590 images/s (1,880 and 2,350 before cuDNN's NCHW transposes were priced at the rate the lent GPUs'
# profiles showed; in fp16, which cuDNN's batch norm runs, about 2,880 on the H100 where the Lambda benchmark
# publishes 2,616; in bf16 PyTorch runs its own per-channel batch norm, gpu_memory.batchnorm_channel_s):
# 7.4 and 8.5 cores of decoding and augmenting
@pytest.mark.parametrize(("device", "at_least"), [("H100 SXM", 8), ("H200 SXM", 9)])
def test_resnet50_on_jpegs_needs_many_loader_cores_per_gpu_and_the_bill_says_so(device: str, at_least: int) -> None:
    result = sized(RESNET_JPEG, device)
    (c,) = result.candidates
    assert c.step.loader_cores >= at_least
    assert c.step.loader_cores_needed > 4  # more than the 4 a GPU gets by default
    line = bom_line(result, "CPU")
    # its loader cores + one training process + one core for the system, against the CPUs its
    # platform (an HGX board server for these SXM parts) is bought with
    assert line.spec.endswith(f"physical cores (≥ {max(MIN_HOST_CORES, c.step.loader_cores + 2)} needed)")
    assert f"needs ≈ {c.step.loader_cores_needed:.1f} cores per GPU" in line.reason or (
        f"would need ≈ {c.step.loader_cores_needed:.0f} cores per GPU" in line.reason
    )
    assert "decoding JPEG" in line.reason


def test_an_a100_gets_the_loader_cores_that_keep_up_with_it() -> None:
    # about 1,330 images/s at batch 256 (the GPU kernel model's bf16 NCHW pace, PyTorch's own batch norm and
    # the device's waits for the host's dispatch included; 1,120 before cuDNN's NCHW transposes were priced
    # from the lent GPUs' profiles, 1,515 before that batch norm was) × 3.30 ms of one core each: 4.4 cores,
    # so the step counts 5 and does not wait for data
    (c,) = sized(RESNET_JPEG, "A100 80GB").candidates
    pace = 256 / c.step.step_s
    assert c.step.loader_cores_needed == pytest.approx(pace * 3.30e-3, rel=0.01)
    assert c.step.loader_cores == math.ceil(c.step.loader_cores_needed) == 5
    assert c.step.bound != "input pipeline"
    assert any(f"the step counts {c.step.loader_cores}" in a for a in c.assumptions)


def test_the_same_dataset_as_npy_in_ram_needs_the_default_few_cores() -> None:
    result = sized({**RESNET_JPEG, **AS_NPY_IN_RAM}, "H100 SXM")
    (c,) = result.candidates
    assert (c.step.loader_cores, c.step.loader_cores_needed, c.step.decode_s) == (LOADER_CORES_PER_GPU, 0.0, 0.0)
    line = bom_line(result, "CPU")
    assert line.spec.endswith("(≥ 8 needed)")
    assert line.reason.startswith("reading npy needs no decoding; 4 per GPU")
    # 4 loaders + 1 training process + 1 for the system = 6, rounded up to the 8 of the smallest host
    assert "1 GPU(s) × 4 loader cores = 4, + 1 training process(es), one per GPU, + 1 for the system = 6" in line.reason
    assert "rounded up to 8" in line.reason


def test_decoding_that_cannot_keep_up_bounds_the_step() -> None:
    # 12-megapixel camera JPEGs cropped to 224 × 224: 168 ms of one core a sample; even the 16 cores a
    # host gives a GPU deliver 95 images/s, far below what an A100 trains
    doc = {**RESNET_JPEG, "data": {"stored_resolution": [3024, 4032]}}
    w = parse_workload(doc)
    c = size_candidate(w, dev("A100 80GB"), 1)
    per_sample = decode_cost(w.data).per_sample_s
    assert per_sample == pytest.approx(0.168, rel=0.01)
    assert c.step.bound == "input pipeline"
    assert c.step.loader_cores == MAX_LOADER_CORES_PER_DEVICE
    assert c.step.input_s == c.step.decode_s == pytest.approx(256 * per_sample / 16)
    assert c.step.step_s >= c.step.input_s > 4 * c.step.read_s  # 7.7 MB a photo read at 3 GB/s: 0.66 s a step
    note = next(a for a in c.assumptions if a.startswith("input pipeline:"))
    assert "steps wait for the decoding" in note and "NVIDIA DALI" in note
    cpu = bom_line(size_workload(w, [dev("A100 80GB")]), "CPU")
    assert "16 counted, so steps wait for data" in cpu.reason and "DALI" in cpu.reason


def test_loader_cores_sized_to_keep_up_do_not_bound_the_step() -> None:
    # a 4090 trains ResNet-50 in bf16 (NCHW, PyTorch's own batch norm) at about 1,130 images/s (1,320
    # before that batch norm was priced; the Lambda benchmark publishes 1,301 in fp16, cuDNN's batch norm):
    # 3.74 cores decode that, the step counts 4 and waits for nothing — the device's own work bounds it
    (c,) = sized(RESNET_JPEG, "4090").candidates
    assert c.step.loader_cores_needed == pytest.approx(3.74, abs=0.1)
    assert c.step.loader_cores == 4
    assert c.step.bound in ("compute", "memory bandwidth")
    assert c.step.decode_s < c.step.step_s


def numbers(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]


@pytest.mark.parametrize(
    ("doc", "cpu"),
    [
        ({"model": {"preset": "seed-mlp"}}, "Ryzen 9 7950X"),
        ({"model": {"preset": "resnet-50"}, "training": {"epochs": 1}}, "EPYC 9654"),
    ],
)
def test_a_cpu_only_sizing_asks_for_cores_that_add_up_without_a_gpu(doc: dict[str, Any], cpu: str) -> None:
    result = size_workload(parse_workload(doc), [dev(cpu)], host_ram_bytes=512 * 2**30)
    line = bom_line(result, "CPU")
    assert "GPU" not in line.spec + line.reason
    m = re.search(r"(\d+) loader core\(s\).*? \+ (\d+) training threads .*?= (\d+),", line.reason)
    assert m is not None, line.reason
    loaders, threads, total = map(int, m.groups())
    assert loaders + threads == total
    assert line.spec == f"≥ {total} physical cores, one socket"
    assert total == int(dev(cpu).extra["cores"])  # all of the processor's cores, none counted twice


def test_the_gpu_cpu_line_adds_up() -> None:
    result = sized(RESNET_JPEG, "A100 80GB", count=8)
    best: CandidateResult = result.candidates[0]
    line = bom_line(result, "CPU")
    m = re.search(
        r"(\d+) GPU\(s\) × (\d+) loader cores = (\d+), \+ (\d+) training .*?\+ (\d+) for the system = (\d+)",
        line.reason,
    )
    assert m is not None, line.reason
    gpus, per_gpu, loaders, processes, system, total = map(int, m.groups())
    assert (gpus, per_gpu) == (8, best.step.loader_cores)
    assert gpus * per_gpu == loaders and loaders + processes + system == total
    assert line.spec.endswith(f"(≥ {total} needed)")
    assert loader_cores_per_gpu(result, 8) == per_gpu  # the rules' "loader_cores" use the same count


def test_ram_caches_the_dataset_as_stored() -> None:
    # from a 7,200 rpm drive (about 160 MB/s) ImageNet's 138 GiB of JPEGs cannot feed the GPU, so RAM
    # keeps them cached: twice (the sizing counts a dataset as cached when it fits in half the RAM),
    # 296 GB → 384 GB; the decoded tensors (181 GiB) are not what the page cache holds
    on_hdd = {**RESNET_JPEG, "data": {"storage": "hdd"}}
    line = bom_line(sized(on_hdd, "4090"), "Memory")
    assert line.spec.startswith("384 GB")
    assert "2 × the dataset as stored (138 GiB of jpeg)" in line.reason
    # an NVMe drive reads it faster than twice what training consumes: no RAM for caching
    nvme = bom_line(sized(RESNET_JPEG, "4090"), "Memory")
    assert nvme.spec.startswith("64 GB") and "need not stay in the page cache" in nvme.reason
    small = bom_line(sized({"model": {"preset": "seed-mlp"}}, "4090"), "Memory")
    assert small.spec.startswith("64 GB")  # 2 × the card's 24 GiB; the 23 MiB dataset changes nothing


def test_an_old_workload_without_the_new_field_sizes_as_before_for_non_image_data() -> None:
    # figures recorded before the input pipeline counted decoding (same code, same catalogue)
    doc = read_workload_document(ROOT / "examples" / "seed-mlp.json")
    assert "stored_resolution" not in doc["data"]
    for fmt, input_s in (("npy", 1.5449600000000002e-05), ("csv", 3.8624e-05)):
        w = parse_workload({**doc, "data": {**doc["data"], "format": fmt}})
        c = size_candidate(w, dev("4090"), 1)
        # the step re-recorded when the host side was modelled (core/estimate/host.py): the default loop's
        # DataLoader in the main process (1.63 ms) and the framework's dispatch (1.00 ms on the desktop's
        # Ryzen 9 7950X core at the reference host's prices fitted on the shared fit set with cuDNN's calls
        # priced apart; 1.07 ms before them, 1.45 ms at the earlier fit, 1.38 ms per framework call before;
        # 2.6541 ms a step before the prices were refitted with the device's casts and foreach optimizer priced
        # from real profiles, 2.65388 ms before they were fitted on the probed suites, 2.65419 ms before they were
        # refitted without the fp16 steps GradScaler skipped the optimizer of) against 0.24 ms of GPU work; the
        # input pipeline's figures are unchanged
        assert (c.step.step_s, c.step.input_s, c.train_time_s) == (0.002654479815053763, input_s, 168.82491623741933)
        assert c.step.bound == "host data loading"
    bert = size_candidate(parse_workload({"model": {"preset": "bert-base"}}), dev("A100 80GB"), 1)
    # its step re-recorded when the GPU kernel model replaced the datasheet peak × default efficiency
    # (0.158 s before), when the host side was modelled and when cross-entropy's bytes were counted from
    # its kernels (0.1266 s before), and when each matrix product took its fixed time (GEMM_FIXED_S:
    # 0.12699 s before), and when the device came to wait for the host's dispatch where it is the
    # slower (0.36 ms: 0.12771 s before), when the host's prices were refitted with cuDNN's calls
    # (0.12807 s before), and when autocast's fp32 residual stream and its casts at each matrix product
    # were priced (0.12803 s before: 58 ms of memory-bound kernels, was 38), and when a bias's gradient was
    # (0.14856 s before), and when autocast's casts and the foreach optimizer were priced from real profiles
    # (0.15189 s before), and when the biases' and layer norms' weight-gradient kernels were priced at the
    # rates a lent H100's profiles showed (0.15462 s before), and when the host's prices were fitted on the
    # probed suites (0.16217 s before), and when they were refitted without the fp16 steps GradScaler skipped
    # the optimizer of (0.162217 s before); the input figure is unchanged
    assert (bert.step.step_s, bert.step.input_s, bert.train_time_s) == (
        0.16221627052212503,  # the kernels' and the host's loader and copy
        8.738133333333333e-05,
        633.7789689299425,
    )


@pytest.mark.parametrize(
    ("value", "path", "words"),
    [
        ([387], "data.stored_resolution", "must be [height, width]"),
        ("387x469", "data.stored_resolution", "must be [height, width]"),
        ([387, 0], "data.stored_resolution[1]", "must be a positive integer (pixels), got 0"),
        ([387.5, 469], "data.stored_resolution[0]", "must be a positive integer"),
        ([True, 469], "data.stored_resolution[0]", "must be a positive integer"),
        ([387, 200_000], "data.stored_resolution[1]", "out of range (at most 100,000 pixels)"),
    ],
)
def test_a_bad_stored_resolution_is_refused_by_its_key(value: Any, path: str, words: str) -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload({"model": {"preset": "resnet-50"}, "data": {"stored_resolution": value}})
    assert err.value.path == path
    assert words in str(err.value)


def test_a_stored_resolution_needs_an_image_input() -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload({"model": {"preset": "seed-mlp"}, "data": {"stored_resolution": [28, 28]}})
    assert err.value.path == "data.stored_resolution"
    assert "needs an image input [C, H, W]" in str(err.value)


def test_a_loop_on_tensors_already_on_the_gpu_reads_and_decodes_nothing() -> None:
    """ResNet-18 NHWC bf16, batch 256, on an H200: 18.9 ms measured (random tensors on the GPU); the
    device-tensor loop was once charged a 51 ms disk read of 256 images and called input-bound."""
    doc = {
        "model": {"preset": "resnet-50"},
        "data": {"samples": 2560, "storage": "hdd"},
        "training": {"batch_size": 256, "precision": "bf16_mixed", "memory_format": "channels_last"},
    }
    fed = size_candidate(workload(doc), dev("H200 SXM"), 1).step
    tensors = size_candidate(workload(doc, {"training": {"loop": "device_tensors"}}), dev("H200 SXM"), 1).step
    assert fed.input_s > 0.04 and fed.bound == "input pipeline"  # 256 images from a hard disk
    assert tensors.input_s == 0.0 and tensors.bound != "input pipeline"
    assert tensors.step_s < fed.step_s
