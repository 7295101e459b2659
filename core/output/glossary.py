"""One name per concept: the label the window and the PDF show, the key `size --json` writes and
the CSV header with its unit, for every figure a candidate has (docs/glossary.md).

"Peak" is kept for what it means in the literature: a device's peak FLOP/s and, for a traced
model, the live-tensor peak. What a training step needs on each device is "memory per device"."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    label: str  # window column and PDF header
    json_key: str  # key of a candidate in `size --json` (bytes, seconds: SI base units)
    csv_header: str  # CSV column, with its unit; {currency} is the workload's currency; "" if not in the CSV
    meaning: str  # tooltip and glossary text

    def csv(self, currency: str) -> str:
        return self.csv_header.format(currency=currency)


DEVICE = Term("Device", "device", "specification", "the candidate device, with its datasheet source")
COUNT = Term("Count", "count", "quantity", "devices per node, training data parallel")
FITS = Term(
    "Fits",
    "fits",
    "fits",
    "whether the memory per device fits in the device's memory (RAM for a CPU) at the micro-batch: "
    "a micro-batch of one sample or more fits",
)
MEMORY_PER_DEVICE = Term(
    "Memory per device",
    "memory_per_device",
    "memory_per_device_GiB",
    "what one training step needs on each device at its highest point: weights, gradients, optimizer "
    "state, saved activations, the input batch and the runtime (CUDA context or Python process)",
)
CAPACITY = Term("Capacity", "capacity_bytes", "capacity_GiB", "the device's memory (RAM of the host for a CPU)")
LARGEST_BATCH = Term(
    "Largest batch",
    "largest_batch",
    "",
    "the largest global batch the devices hold at once, without gradient accumulation (at most the dataset)",
)
MICRO_BATCH = Term(
    "Micro-batch",
    "micro_batch",
    "",
    "samples per device in one forward and backward pass: the batch per device when it fits at once, else the "
    "largest that fits (or training.micro_batch_size)",
)
ACCUMULATION_STEPS = Term(
    "Accumulation steps",
    "accumulation_steps",
    "",
    "micro-steps whose gradients are summed before one optimizer step: ⌈batch per device / micro-batch⌉ "
    "(1: no gradient accumulation)",
)
STEP_TIME = Term("Step time", "step_time_s", "", "predicted time of one training step (hover a row for its terms)")
TRAINING_TIME = Term(
    "Training time", "training_time_s", "training_time_h", "predicted time of the whole run: epochs × steps"
)
CAPEX = Term(
    "Capex",
    "capex",
    "capex_{currency}",
    "the devices bought (SXM parts on whole baseboards), the machines that hold them and, across nodes, the network, "
    "at dated prices (docs/advice.md)",
)
ENERGY = Term("Energy", "energy_kwh", "energy_kWh", "energy of the training run, power × time × PUE")
TCO = Term(
    "TCO", "tco", "tco_{currency}", "capex plus energy and maintenance over the amortisation period (Hooda 2023 §3.3.4)"
)
CLOUD_COST = Term(
    "Cloud cost",
    "cloud_cost",
    "cloud_cost_{currency}",
    "one run on the same devices rented on demand, at each device's dated cloud price (empty: no public offer)",
)
BREAK_EVEN = Term(
    "Break-even", "break_even_hours", "break_even_h", "hours of training after which owning is cheaper than renting"
)
BREAK_EVEN_RUNS = Term(
    "Break-even runs",
    "break_even_runs",
    "break_even_runs",
    "runs of this training after which owning the devices costs less than renting them",
)
MEASURED_STEP = Term(
    "Measured & scaled",
    "measured_step_s",
    "",
    "the step measured on this machine's GPU (Measure on this GPU) and scaled kernel by kernel to this device; "
    "empty when not measured or when it cannot be scaled (hover for why)",
)
BUY_OR_RENT = Term(
    "Buy or rent",
    "buy_or_rent",
    "buy_or_rent",
    "which costs less for the expected use (cost.runs or cost.hours_per_year): buying (capex, maintenance, energy) "
    'or renting the same devices; "use" for this machine, already here; empty when one of them has no price',
)
VERDICT = Term("Deadline, budget", "verdict", "verdict", "whether the candidate meets the deadline and the budget")

CANDIDATE_TERMS = (
    DEVICE,
    COUNT,
    FITS,
    MEMORY_PER_DEVICE,
    CAPACITY,
    LARGEST_BATCH,
    MICRO_BATCH,
    ACCUMULATION_STEPS,
    STEP_TIME,
    TRAINING_TIME,
    CAPEX,
    ENERGY,
    TCO,
    CLOUD_COST,
    BREAK_EVEN,
    BREAK_EVEN_RUNS,
    BUY_OR_RENT,
    VERDICT,
)


def verdict_text(meets_deadline: bool | None, within_budget: bool | None) -> str:
    """The Deadline, budget column: "deadline met, within budget"; empty when neither was asked."""
    parts = []
    if meets_deadline is not None:
        parts.append("deadline met" if meets_deadline else "deadline missed")
    if within_budget is not None:
        parts.append("within budget" if within_budget else "over budget")
    return ", ".join(parts)
