"""The source papers' formulas, implemented exactly as published (SPEC 3.1).

Jamgharyan (2024), after Subbotin (2003): eq. 1 memory of the synthesis algorithm, eq. 2 and 3
sequential and hardware-parallel feed-forward complexity, eq. 4 network memory redundancy.
Hooda (2023) §3.3: R = 2NC, C_train = O_f·O_b·P·S·E, T_train = C_train / R. Hooda's S counts what one
forward pass of 2·P FLOP per parameter is spent on: a sample of a feed-forward network, a token of a
sequence model (:func:`hooda_s`).
"""

from __future__ import annotations

JAMGHARYAN = "Jamgharyan 2024, after Subbotin 2003"
HOODA = "Hooda 2023, §3.3"
O_F = 2  # Hooda: FLOP per parameter per sample, forward
O_B = 3  # Hooda: forward plus backward multiplier
REAL_OVERHEAD = (0.15, 0.25)  # Hooda: real throughput is typically 15–25 % below R


def n_na(
    eta_b: float, samples: int, features: int, outputs: int, eta_w: float, n_w: int, eta_v: float, n_v: int
) -> float:
    """Jamgharyan eq. 1: N_na = η_b·S·(N + N_M) + η_w·N_w + η_v·N_v, in memory cells (bytes
    when the η are bytes per element). The whole training set resident, as the GPU rule asks."""
    return eta_b * samples * (features + outputs) + eta_w * n_w + eta_v * n_v


def k1(n_w: int, samples: int, features: int) -> float:
    """Jamgharyan eq. 4: K1 = N_w / (S·N), defined for N_w > 1, S > 0, N > 0."""
    if n_w <= 1 or samples <= 0 or features <= 0:
        raise ValueError("K1 needs N_w > 1, S > 0 and N > 0")
    return n_w / (samples * features)


def k1_meaning(value: float) -> str:
    """Jamgharyan's interpretation of K1."""
    if value > 1:
        return "K1 > 1: the network memory is redundant (larger than the training sample)"
    if value == 1:
        return "K1 = 1: the network can remember the whole training sample"
    return "K1 < 1: the network cannot remember the whole training sample exactly"


def peak_flops(cuda_cores: int, clock_hz: float) -> float:
    """Hooda eq. 1: R = 2·N·C (FLOP/s), a fused multiply-add per core per cycle."""
    return 2.0 * cuda_cores * clock_hz


def token_sequence_length(input_shape: tuple[int, ...], input_dtype: str) -> int | None:
    """Tokens per sample when the input is one sequence of integer token ids (a 1-D int64 input:
    an embedding's input), else None."""
    if input_dtype == "int64" and len(input_shape) == 1 and input_shape[0] > 1:
        return input_shape[0]
    return None


def hooda_s(samples: int, sequence_length: int | None) -> tuple[int, str]:
    """Hooda's S in the unit the network trains on, and that unit: ``samples`` for a network that
    takes one vector per sample; ``samples × sequence_length`` tokens when each sample is a sequence
    of token ids, because a sequence model spends its 2·P FLOP per parameter on every token (GPT-2
    small on 1,024-token sequences: 1,024 × the FLOP of counting sequences)."""
    if sequence_length is None or sequence_length <= 1:
        return samples, "samples"
    return samples * sequence_length, "tokens"


def c_train(parameters: int, samples: int, epochs: int) -> float:
    """Hooda eq. 3: C_train = O_f·O_b·P·S·E (FLOP), O_f = 2, O_b = 3; ``samples`` is S in the
    unit of :func:`hooda_s`."""
    return float(O_F * O_B * parameters * samples * epochs)


def t_train(c_train_flop: float, r_flops: float) -> float:
    """Hooda eq. 4: T_train = C_train / R (seconds at peak)."""
    return c_train_flop / r_flops
