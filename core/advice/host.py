"""What the host around the accelerators needs: CPU cores, cache and RAM for the page cache. One
definition of each rule, used by the recommendation rules (resources/rules.json) and the bill of
materials."""

from __future__ import annotations

from core.estimate.input_pipeline import LOADER_CORES_PER_GPU, dataset_bytes_on_disk
from core.estimate.sizing import TMPFS_DEFAULT_FRACTION, SizingResult
from core.spec.workload import DataSpec

# Data loading: a few CPU cores per GPU (LOADER_CORES_PER_GPU; SPEC 3.5, after Wünsche 2016), more
# when the data must be decoded: the decode model (core/estimate/input_pipeline.py) gives each
# candidate's loader cores (StepTime.loader_cores).
# A host with GPUs: its loader cores, one core per training process (DDP runs one process per GPU)
# and one for the system; at least a workstation's 8 cores.
MIN_HOST_CORES = 8
SYSTEM_CORES = 1
# Jamgharyan 2024: cache size is critical when several networks train at once; TrainRig asks for
# 8 MB of L3 per concurrent network, at least a desktop part's 16 MB.
L3_MB_PER_CONCURRENT_RUN, MIN_L3_MB = 8, 16


def loader_cores(gpus: int, per_gpu: int = LOADER_CORES_PER_GPU) -> int:
    """Cores that feed ``gpus`` GPUs with data, ``per_gpu`` each."""
    return per_gpu * gpus


def host_cores(gpus: int, per_gpu: int = LOADER_CORES_PER_GPU) -> int:
    """Physical cores a host with ``gpus`` GPUs needs: ``per_gpu`` loader cores and one training
    process per GPU, one for the system; never fewer than MIN_HOST_CORES."""
    return max(MIN_HOST_CORES, loader_cores(gpus, per_gpu) + gpus + SYSTEM_CORES)


def loader_cores_per_gpu(result: SizingResult, gpus: int | None = None) -> int:
    """Loader cores per GPU the sizing counted for the GPU candidates with ``gpus`` GPUs (None: any
    count): the most any of them needs (the fastest decodes the most); LOADER_CORES_PER_GPU when
    there is none."""
    counted = [
        c.step.loader_cores
        for c in result.candidates
        if c.device.kind != "cpu" and c.step.loader_cores and (gpus is None or c.count == gpus)
    ]
    return max(counted, default=LOADER_CORES_PER_GPU)


def page_cache_ram_bytes(data: DataSpec) -> float:
    """RAM that keeps the dataset in the page cache after the first epoch: its size as stored (what
    the page cache holds, not the decoded tensors), in no more than the share of RAM the sizing
    counts on for it (TMPFS_DEFAULT_FRACTION, core/estimate/sizing.py)."""
    return dataset_bytes_on_disk(data) / TMPFS_DEFAULT_FRACTION


def l3_cache_mb(concurrent_runs: int) -> int:
    """L3 cache for ``concurrent_runs`` networks trained at once (Jamgharyan 2024)."""
    return max(MIN_L3_MB, L3_MB_PER_CONCURRENT_RUN * concurrent_runs)
