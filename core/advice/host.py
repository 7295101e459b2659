"""What the host around the accelerators needs: CPU cores and cache. One definition of each rule,
used by the recommendation rules (resources/rules.json) and the bill of materials."""

from __future__ import annotations

# Data loading: a few CPU cores per GPU (SPEC 3.5, after Wünsche 2016); TrainRig counts four,
# PyTorch's DataLoader default of one worker process per core.
LOADER_CORES_PER_GPU = 4
# One core per training process (DDP runs one process per GPU) plus one for the system, at least:
# a workstation's 8 cores.
MIN_HOST_CORES = 8
# Jamgharyan 2024: cache size is critical when several networks train at once; TrainRig asks for
# 8 MB of L3 per concurrent network, at least a desktop part's 16 MB.
L3_MB_PER_CONCURRENT_RUN, MIN_L3_MB = 8, 16


def loader_cores(gpus: int) -> int:
    """Cores that feed ``gpus`` GPUs with data."""
    return LOADER_CORES_PER_GPU * gpus


def host_cores(gpus: int) -> int:
    """Physical cores a host with ``gpus`` GPUs needs: the loaders and two for the training
    processes and the system, never fewer than MIN_HOST_CORES."""
    return max(MIN_HOST_CORES, loader_cores(gpus) + 2)


def l3_cache_mb(concurrent_runs: int) -> int:
    """L3 cache for ``concurrent_runs`` networks trained at once (Jamgharyan 2024)."""
    return max(MIN_L3_MB, L3_MB_PER_CONCURRENT_RUN * concurrent_runs)
