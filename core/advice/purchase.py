"""The purchase decision (SPEC 3.5a): which fitting option to buy, which to rent, which wins for
the workload's expected use and after how many runs buying pays off; and, when nothing the user
listed fits the budget, the best option that does, found among the catalogue's devices, with what
it gives up."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.advice.ranking import rank_candidates
from core.estimate.sizing import CandidateResult, SizingResult, size_candidate
from core.hardware.catalogue import DeviceSpec
from core.units import fmt_money, fmt_seconds

# counts the budget search tries for a GPU: one workstation card up to one 8-GPU server
SEARCH_COUNTS = (1, 2, 4, 8)
# without a deadline, hardware already here that trains the workload within a day is advised: nothing is
# bought (or rented) to shorten a run the user has not asked to be shorter
USE_HERE_HOURS = 24.0


@dataclass(frozen=True)
class Option:
    candidate: CandidateResult
    mode: str  # "buy" or "rent"
    cost_for_use: float  # what the expected use costs this way (core.estimate.cost.CostEstimate)
    per_run: float  # the same per run of this training: what buy and rent are compared on
    gives_up: tuple[str, ...] = ()  # what a within-budget alternative gives up against the request

    @property
    def label(self) -> str:
        return self.candidate.label


@dataclass(frozen=True)
class Decision:
    verdict: str | None  # "use" (this machine), "buy", "rent", or None when nothing fits or neither is priced
    buy: Option | None  # the purchase to make (the bill of materials is written for it)
    rent: Option | None  # the cheapest rental that fits
    break_even_runs: int | None  # runs after which buying ``buy`` costs less than renting the same devices
    break_even_hours: float | None  # the same in hours of training
    searched: int  # configurations the budget search sized (0: the listed candidates sufficed)
    text: str  # the decision in one paragraph, for the wizard and the reports
    use: CandidateResult | None = None  # hardware already here that does the job (usable_here): nothing bought
    searched_for: str | None = None  # why the catalogue was searched: "budget" or "deadline" (None: it was not)


def usable_here(candidates: Sequence[CandidateResult], deadline_h: float | None) -> CandidateResult | None:
    """The fastest candidate already here (this machine, CostEstimate.owned) that fits and meets the
    deadline, or without one trains within USE_HERE_HOURS; None if there is none."""
    ok = [
        c
        for c in candidates
        if c.cost.owned
        and c.fits
        and c.cost.systems_for_use == 1  # 100,000 runs of 47 min are 8.8 years of it, non-stop
        and (c.meets_deadline if deadline_h is not None else c.train_time_s <= USE_HERE_HOURS * 3600)
    ]
    return min(ok, key=lambda c: c.train_time_s) if ok else None


def _rank_buy(c: CandidateResult) -> tuple[Any, ...]:
    return (
        c.meets_deadline is False,
        c.within_budget is False,
        c.cost.buy_per_run if c.cost.buy_per_run is not None else math.inf,
        c.train_time_s,
    )


def best_purchase(candidates: Sequence[CandidateResult]) -> CandidateResult | None:
    """The candidate to buy: it fits and can be bought; then meets the deadline and budget; then
    costs least per run at the expected use (capex, maintenance, energy: a machine twice as fast
    does twice the runs in the same hours); then trains fastest."""
    fitting = [c for c in candidates if c.fits and c.cost.capex is not None]
    if not fitting:
        fitting = [c for c in candidates if c.fits]
    return min(_none_idle(fitting), key=_rank_buy) if fitting else None


def _none_idle(pool: list[CandidateResult]) -> list[CandidateResult]:
    return [c for c in pool if not any(_idles_bought(c, o) for o in pool)] or pool


def _bought(c: CandidateResult) -> int:
    return sum(line.quantity for line in c.cost.capex_lines if line.role == "device")


def _idles_bought(c: CandidateResult, other: CandidateResult) -> bool:
    """``c`` leaves devices it pays for idle where ``other`` buys as many of the same and uses more of them,
    faster, in time and within the budget (2 of each 4-GPU board's A100s per node were advised: 18.6 h against
    9.21 h on all four for 7 % more, the network ports of the other two)."""
    return (
        other.device.name == c.device.name
        and other.nodes == c.nodes
        and other.count > c.count
        and _bought(other) == _bought(c) > 0
        and other.train_time_s < c.train_time_s
        and other.meets_deadline is not False
        and other.within_budget is not False
    )


def best_rental(candidates: Sequence[CandidateResult], budget: float | None) -> CandidateResult | None:
    """The cheapest rental that fits: meets the deadline, then within budget, then costs least per run."""
    priced = [c for c in candidates if c.fits and c.cost.cloud_cost is not None]
    if not priced:
        return None

    def key(c: CandidateResult) -> tuple[Any, ...]:
        rent = c.cost.rent_for_use or 0.0
        return (c.meets_deadline is False, budget is not None and rent > budget, c.cost.cloud_cost, c.train_time_s)

    return min(priced, key=key)


def budget_search(
    result: SizingResult,
    catalogue: Sequence[DeviceSpec],
    host_ram_bytes: int | None,
    calibrated: Mapping[str, Mapping[str, Any]] | None,
    *,
    cheapest: bool = False,
    rentals: bool = False,
) -> tuple[CandidateResult | None, int, tuple[CandidateResult, ...]]:
    """The best purchase within the budget among the catalogue's devices at 1–8 GPUs (micro-batches
    and accumulation as the sizing chooses them): it fits, meets the deadline if any does, then
    trains fastest; without a budget (nothing listed fits at all), or ``cheapest`` (what is listed
    misses the deadline), the cheapest for the expected use that meets it. ``rentals``: the configurations
    with an on-demand price are sized too, whatever they cost to buy (a deadline only the catalogue met was
    met by buying two Gaudi 3s for 186,668 USD where renting an MI300X cost 0.26 USD); rentals that miss the
    deadline are not offered. With ``cheapest`` each device is sized at its most GPUs first — where those miss
    the deadline, fewer would too, and the device is left — else upwards from one to the fewest that meet it
    (more of the same device cost more): 49 configurations instead of 146 where few devices meet it. Returns
    the purchase (None if nothing qualifies), how many configurations were sized and the rentable ones."""
    w = result.workload
    budget = w.cost.budget if w.cost.budget is not None else math.inf
    listed = {(c.device.name, c.count) for c in result.candidates}
    found: list[CandidateResult] = []
    rentable: list[CandidateResult] = []
    sized = 0
    for device in catalogue:
        price = device.purchase_price()
        rent = rentals and (device.cloud_usd_per_hour is not None or w.cost.cloud_per_gpu_hour is not None)
        if device.origin == "this-machine" or (price is None and not rent):
            continue
        lowest = w.cost.from_usd(price[0]) if price is not None else math.inf
        counts = [  # listed ones are in the pool already
            n
            for n in (SEARCH_COUNTS if device.kind != "cpu" else (1,))
            if (device.name, n) not in listed and (lowest * n <= budget or rent)
        ]
        sizes: list[CandidateResult] = []
        if cheapest and len(counts) > 1:  # the fewest that meet the deadline: the most first, then upwards
            top = size_candidate(w, device, counts[-1], host_ram_bytes, (calibrated or {}).get(device.name))
            sizes.append(top)
            if top.fits and top.meets_deadline is not False:
                for n in counts[:-1]:
                    sizes.append(size_candidate(w, device, n, host_ram_bytes, (calibrated or {}).get(device.name)))
                    if sizes[-1].fits and sizes[-1].meets_deadline is not False:
                        break
        else:
            sizes = [size_candidate(w, device, n, host_ram_bytes, (calibrated or {}).get(device.name)) for n in counts]
        sized += len(sizes)
        for c in sizes:
            if c.fits and c.cost.capex is not None and c.cost.capex <= budget:
                found.append(c)
            if rent and c.fits and c.meets_deadline is not False and c.cost.cloud_cost is not None:
                rentable.append(c)
    found += [c for c in result.candidates if c.fits and c.cost.capex is not None and c.cost.capex <= budget]
    found = _none_idle(found)  # a board's GPUs left idle where the same board trains faster on all of them
    if not found:
        return None, sized, tuple(rentable)
    if w.cost.budget is None or cheapest:  # the cheapest that fits (meeting the deadline if one can)
        best = min(found, key=lambda c: (c.meets_deadline is False, c.cost.buy_per_run, c.train_time_s))
        return best, sized, tuple(rentable)
    # the fastest, the cheaper first among equally fast ones where the step is host-bound (core.advice.ranking)
    return rank_candidates(found)[0], sized, tuple(rentable)


def gives_up(alt: CandidateResult, wanted: CandidateResult | None, deadline_h: float | None) -> tuple[str, ...]:
    """What ``alt`` gives up against ``wanted`` (the purchase the budget does not allow)."""
    out = []
    if deadline_h is not None and alt.meets_deadline is False:
        out.append(f"misses the {deadline_h:g} h deadline: training takes {fmt_seconds(alt.train_time_s)}")
    if wanted is None:
        out.append("a device that is not among the listed candidates")
    else:
        if alt.train_time_s > wanted.train_time_s * 1.05:
            out.append(
                f"trains in {fmt_seconds(alt.train_time_s)} instead of {fmt_seconds(wanted.train_time_s)} "
                f"({alt.train_time_s / wanted.train_time_s:.1f} × longer)"
            )
        if alt.device.name != wanted.device.name:
            out.append(f"{alt.device.name} instead of {wanted.device.name}")
        if alt.count < wanted.count:
            out.append(f"{alt.count} device(s) instead of {wanted.count}")
    if alt.accumulation_steps > 1:
        out.append(f"micro-batch {alt.micro_batch} × {alt.accumulation_steps} accumulation steps")
    return tuple(out)


def decide(
    result: SizingResult,
    catalogue: Sequence[DeviceSpec] = (),
    *,
    host_ram_bytes: int | None = None,
    calibrated: Mapping[str, Mapping[str, Any]] | None = None,
) -> Decision:
    """Buy or rent for the workload's expected use (cost.runs, cost.hours_per_year), and the best
    purchase within the budget when the listed candidates exceed it (searching ``catalogue``)."""
    c = result.workload.cost
    wanted = best_purchase(result.candidates)
    buy_c, searched, lost = wanted, 0, ()
    # nothing listed meets the deadline (within the budget): the catalogue's cheapest that does ("Buy RTX 3060",
    # 8 times over a 1 h deadline, with 50,000 USD of budget left unspent)
    late = wanted is not None and wanted.meets_deadline is False and wanted.within_budget is not False
    reason, rentable = None, ()
    if (wanted is None or wanted.within_budget is False or late) and catalogue:
        reason = "deadline" if late else "budget"
        rentals = late and c.rent_allowed and not any(x.fits and x.meets_deadline for x in result.candidates)
        alt, searched, rentable = budget_search(
            result, catalogue, host_ram_bytes, calibrated, cheapest=late, rentals=rentals
        )
        if alt is not None and not (late and alt.meets_deadline is False):
            buy_c, lost = alt, () if late else gives_up(alt, wanted, c.deadline_hours)
    rent_c = best_rental([*result.candidates, *rentable], c.budget) if c.rent_allowed else None
    buy = None
    if buy_c is not None and buy_c.cost.buy_for_use is not None and buy_c.cost.buy_per_run is not None:
        buy = Option(buy_c, "buy", buy_c.cost.buy_for_use, buy_c.cost.buy_per_run, lost)
    rent = None
    if rent_c is not None and rent_c.cost.rent_for_use is not None and rent_c.cost.cloud_cost is not None:
        rent = Option(rent_c, "rent", rent_c.cost.rent_for_use, rent_c.cost.cloud_cost)
    use = usable_here(result.candidates, c.deadline_hours)
    verdict = "use" if use is not None else _verdict(buy, rent, c.budget)
    runs = hours = None
    if buy is not None:  # against renting the same devices: a break-even between two machines means nothing
        runs = buy.candidate.cost.break_even_runs
        hours = buy.candidate.cost.break_even_hours
    text = (
        _use_here_text(use, buy, rent, result)
        if use is not None
        else _text(verdict, buy, rent, runs, result, searched, reason)
    )
    return Decision(verdict, buy, rent, runs, hours, searched, text, use, reason)


def _use_here_text(use: CandidateResult, buy: Option | None, rent: Option | None, result: SizingResult) -> str:
    c = result.workload.cost
    name = f"{use.device.name[0].upper()}{use.device.name[1:]}"
    parts = [
        f"Use this machine. {name} × {use.count} trains it in {fmt_seconds(use.train_time_s)}"
        + (f", within the deadline of {c.deadline_hours:g} h" if c.deadline_hours is not None else "")
        + ": nothing needs to be bought or rented."
    ]
    if c.deadline_hours is None:
        parts.append(
            f"No deadline is set, and a run of at most {USE_HERE_HOURS:g} h on hardware already here is advised as "
            "it is (a deadline, on the Goal page or in cost.deadline_hours, asks for a shorter run)."
        )
    faster = [o for o in (buy, rent) if o is not None and o.candidate.train_time_s < use.train_time_s]
    if faster:
        parts.append(
            "For a shorter run: "
            + "; ".join(
                f"{o.mode}ing {o.label} trains it in {fmt_seconds(o.candidate.train_time_s)} for "
                f"{fmt_money(o.per_run, c.currency)} a run"
                + (f" (capex {fmt_money(o.candidate.cost.capex, c.currency)})" if o.mode == "buy" else "")
                for o in faster
            )
            + "."
        )
    return " ".join(parts)


def _verdict(buy: Option | None, rent: Option | None, budget: float | None) -> str | None:
    if buy is None and rent is None:
        return None
    if buy is None:
        return "rent"
    if rent is None:
        return "buy"
    b, r = buy.candidate, rent.candidate
    if (r.meets_deadline is not False) != (b.meets_deadline is not False):
        return "rent" if r.meets_deadline is not False else "buy"
    if budget is not None and (buy.candidate.cost.capex or 0) > budget and rent.cost_for_use <= budget:
        return "rent"
    return "rent" if rent.per_run < buy.per_run else "buy"


def _systems_text(b: CandidateResult, result: SizingResult) -> str:
    """ " (7 such systems: …)" where the use takes longer than one system's busy hours over its life."""
    n = b.cost.systems_for_use
    if n <= 1:
        return ""
    c = result.workload.cost
    runs = math.floor(b.cost.life_hours / b.train_time_s * 3600) if b.train_time_s > 0 else 0
    return (
        f" ({n} such systems: one trains {runs:,} runs in {c.amortisation_years:g} years at "
        f"{c.utilisation * 100:.0f} % use)"
    )


def _use_text(result: SizingResult) -> str:
    c = result.workload.cost
    if c.hours_per_year is not None:
        return f"{c.hours_per_year:,.0f} h of training a year for {c.amortisation_years:g} years"
    return "one run" if c.runs == 1 else f"{c.runs} runs"


def _text(
    verdict: str | None,
    buy: Option | None,
    rent: Option | None,
    runs: int | None,
    result: SizingResult,
    searched: int,
    reason: str | None = None,
) -> str:
    cur = result.workload.cost.currency
    if verdict is None:
        return "Nothing that fits can be bought or rented at a known price."
    use = _use_text(result)
    parts = []
    rent_text = buy_text = ""
    if rent is not None:
        r = rent.candidate
        rent_text = (
            f"renting {rent.label} costs {fmt_money(rent.per_run, cur)} a run of {fmt_seconds(r.train_time_s)} "
            f"({r.cost.cloud_note})"
        )
    if buy is not None:
        b = buy.candidate
        buy_text = (
            f"buying {buy.label} (capex {fmt_money(b.cost.capex, cur)}, {b.cost.purchase_note}) costs "
            f"{fmt_money(buy.cost_for_use, cur)} for {use} with maintenance and energy"
            + _systems_text(b, result)
            + (f", {fmt_money(buy.per_run, cur)} a run" if abs(b.cost.runs_in_use - 1) > 1e-9 else "")
        )
        if b.cost.break_even_runs is not None:
            buy_text += f"; against renting the same devices it pays off after {b.cost.break_even_runs:,} runs"
        elif b.cost.cloud_per_hour is None:
            buy_text += "; the same devices have no on-demand price to compare with"
        else:
            years = result.workload.cost.amortisation_years
            buy_text += f"; renting the same devices costs less over their {years:g} years"
    first, second = (rent_text, buy_text) if verdict == "rent" else (buy_text, rent_text)
    parts.append(f"{verdict.capitalize()}. {first[0].upper()}{first[1:]}.")
    if second:
        parts.append(f"For comparison, {second}.")
    elif verdict == "buy" and not result.workload.cost.rent_allowed:
        parts.append("Renting is ruled out in the workload (cost.rent_allowed: false): the data stays on site.")
    elif verdict == "buy":
        parts.append("No listed candidate that fits has a public on-demand price to compare with.")
    budget = result.workload.cost.budget
    within = f" within the budget of {fmt_money(budget, cur)}" if budget is not None else ""
    deadline = result.workload.cost.deadline_hours
    met = [o for o in (buy, rent) if o is not None and o.candidate.meets_deadline]
    found = sorted((o for o in met if o.candidate not in result.candidates), key=lambda o: o.mode != verdict)
    if reason == "deadline" and not met:  # said nowhere: "Rent … 3060 … 7.6 h" for a 1 h deadline
        parts.append(
            f"Nothing listed, nor any of {searched} catalogue configurations sized, meets the deadline of "
            f"{deadline:g} h{within}."
        )
    elif reason == "deadline" and found:
        parts.append(
            f"Nothing listed meets the deadline of {deadline:g} h{within}; {found[0].mode}ing {found[0].label} is "
            f"the cheapest of {searched} catalogue configurations sized that does, for {_use_text(result)}."
        )
    elif searched and buy is not None and buy.candidate not in result.candidates:
        listed_fits = any(x.fits for x in result.candidates)
        parts.append(
            ("Nothing listed fits in memory" if not listed_fits else "Nothing listed fits")
            + (f" within the budget of {fmt_money(budget, cur)}" if budget is not None else "")
            + f"; {buy.label} is the best of {searched} catalogue configurations sized"
            + (" and gives up: " + "; ".join(buy.gives_up) + "." if buy.gives_up else ".")
        )
    elif buy is not None and buy.gives_up:
        parts.append(
            f"The best purchase within the budget of {fmt_money(result.workload.cost.budget, cur)} gives up: "
            + "; ".join(buy.gives_up)
            + "."
        )
    return " ".join(parts)
