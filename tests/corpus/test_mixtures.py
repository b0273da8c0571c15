"""Mixtures of example views (``convbank.examples.mix``): the draws follow the weights within
a binomial bound, the plan is exact for a seed and an epoch and new for another epoch, the
stopping rules end where they say, every example has its source's name, and a mixture
pickles to an equal one."""

from __future__ import annotations

import math
import pickle
from collections import Counter
from typing import Any

import numpy as np
import pytest

from convbank.examples import Selected
from convbank.examples._mix import Mixture, mix
from convbank.store import Bank
from listviews import ListExamples, casino_turns, numbered


def reference_plan(
    sizes: list[int], weights: list[float], seed: int, epoch: int, stopping: str
) -> list[tuple[int, int]]:
    """The unshuffled plan drawn one example at a time, as the loop of Hugging Face's
    ``interleave_datasets``: before each draw, stop if one (every) source is exhausted;
    an exhausted source starts again at 0 (all_exhausted)."""
    cdf = np.cumsum(weights) / sum(weights)
    uniforms = np.random.default_rng([seed, epoch, 0]).random(1 << 16)
    nxt, exhausted, plan = [0] * len(sizes), [False] * len(sizes), []
    for u in uniforms:
        if (any if stopping == "first_exhausted" else all)(exhausted):
            return plan
        s = min(int(np.searchsorted(cdf, u, side="right")), len(sizes) - 1)
        plan.append((s, nxt[s]))
        nxt[s] += 1
        if nxt[s] == sizes[s]:
            exhausted[s], nxt[s] = True, 0
    raise AssertionError("more than one block of draws")


def plan_of(m: Mixture) -> list[tuple[int, int]]:
    return list(zip(m.plan_sources.tolist(), m.plan_positions.tolist(), strict=True))


def test_draws_follow_the_weights_within_a_binomial_bound() -> None:
    weights = [0.5, 0.3, 0.2]
    views = [numbered(100_000, n) for n in ("a", "b", "c")]
    draws = 20_000
    for seed in range(5):
        m = mix(views, weights=[5, 3, 2], seed=seed)
        assert m.weights == pytest.approx(weights)
        assert len(m) > draws  # no source runs out before 20,000 draws (the first needs 100,000)
        found = np.bincount(m.plan_sources[:draws], minlength=3)
        for count, p in zip(found.tolist(), weights, strict=True):
            sd = math.sqrt(draws * p * (1 - p))  # binomial: 70.7, 64.8 and 56.6 draws
            assert abs(count - draws * p) < 4.5 * sd, (seed, count, draws * p, sd)


def test_weights_by_size_are_the_sizes_shares() -> None:
    a, b = numbered(300, "a"), numbered(100, "b")
    assert mix([a, b]).weights == (0.75, 0.25)
    assert mix({a: 3, b: 1}).weights == (0.75, 0.25)
    assert mix([a, b], weights=[1, 3]).weights == (0.25, 0.75)


def test_the_plan_is_exact_for_a_seed_and_new_for_another_epoch() -> None:
    a, b = numbered(3, "a"), numbered(2, "b")
    m = mix([a, b], weights=[1, 1], seed=0)
    # pinned: the same on every machine (NumPy's SeedSequence and PCG64 are portable)
    assert plan_of(m) == [(1, 1), (0, 1), (0, 0), (0, 2)]
    assert [(e["source"], e["i"]) for e in m] == [("b", 1), ("a", 1), ("a", 0), ("a", 2)]
    big = [numbered(1000, "a"), numbered(500, "b")]
    first = mix(big, seed=7)
    again = mix(big, seed=7)
    assert np.array_equal(first.plan_sources, again.plan_sources)
    assert np.array_equal(first.plan_positions, again.plan_positions)
    assert first.to_list() == again.to_list()
    assert plan_of(mix(big, seed=8)) != plan_of(first)
    epoch0 = plan_of(first)
    first.set_epoch(1)
    assert first.epoch == 1 and plan_of(first) != epoch0
    assert plan_of(first) == plan_of(_at_epoch(mix(big, seed=7), 1))
    first.set_epoch(0)
    assert plan_of(first) == epoch0


def _at_epoch(m: Mixture, epoch: int) -> Mixture:
    m.set_epoch(epoch)
    return m


@pytest.mark.parametrize("stopping", ["first_exhausted", "all_exhausted"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unshuffled_plans_are_the_one_at_a_time_loop_s(stopping: Any, seed: int) -> None:
    sizes, weights = [40, 25, 10], [0.2, 0.5, 0.3]
    views = [numbered(n, f"v{n}") for n in sizes]
    m = mix(views, weights=weights, seed=seed, stopping=stopping, shuffle=False)
    assert plan_of(m) == reference_plan(sizes, weights, seed, 0, stopping)


def test_first_exhausted_ends_with_the_last_example_of_a_source() -> None:
    one = mix([numbered(7, "only")], stopping="first_exhausted")
    assert len(one) == 7 and sorted(e["i"] for e in one) == list(range(7))
    assert len(mix([numbered(7, "only")], stopping="all_exhausted")) == 7
    a, b = numbered(5, "a"), numbered(5, "b")
    tilted = mix([a, b], weights=[1e9, 1])  # b is (almost surely) never drawn in 5 draws
    assert len(tilted) == 5 and tilted.counts() == {"a": 5, "b": 0}
    sizes = [30, 200, 100]
    m = mix([numbered(n, f"v{n}") for n in sizes], weights=[1, 1, 1], seed=4)
    counts = np.bincount(m.plan_sources, minlength=3)
    last = int(m.plan_sources[-1])
    assert counts[last] == sizes[last]  # the last draw took the last example of its source
    assert all(counts[s] < sizes[s] for s in range(3) if s != last)  # no other ran out
    assert all(len(set(m.plan_positions[m.plan_sources == s].tolist())) == counts[s] for s in range(3))


def test_all_exhausted_sees_every_example_and_restarts_in_a_new_order() -> None:
    sizes = [7, 50, 20]
    views = [numbered(n, f"v{n}") for n in sizes]
    m = mix(views, weights=[0.6, 0.2, 0.2], seed=3, stopping="all_exhausted")
    seen = Counter((e["source"], e["i"]) for e in m)
    assert {(v.name, i) for v, n in zip(views, sizes, strict=True) for i in range(n)} == set(seen)
    counts = np.bincount(m.plan_sources, minlength=3)
    last = int(m.plan_sources[-1])
    assert counts[last] == sizes[last] and all(counts >= sizes)  # the plan ends when the last ran out
    small = m.plan_positions[m.plan_sources == 0].tolist()
    passes = [small[i : i + 7] for i in range(0, len(small) - 6, 7)]
    assert len(passes) >= 3
    assert all(sorted(p) == list(range(7)) for p in passes)  # each pass: every example once
    assert len({tuple(p) for p in passes}) == len(passes)  # each pass in a new order


def test_examples_carry_their_source_s_name_on_real_turns(built: Bank) -> None:
    valid, test = casino_turns("valid"), casino_turns("test")
    assert (len(valid), len(test)) == (402, 1394)
    m = mix({valid: 1, test: 1}, seed=0)
    assert m.names == ("casino-valid", "casino-test")
    rows = m.to_list()
    assert {r["source"] for r in rows} == {"casino-valid", "casino-test"}
    for r in rows[:50]:
        source = valid if r["source"] == "casino-valid" else test
        plain = {k: v for k, v in r.items() if k != "source"}
        assert plain in source.rows and r["split"] == r["source"].split("-")[1]
    named = mix([valid, test], names=["v", "t"])
    assert named.names == ("v", "t") and {r["source"] for r in named.to_list()} == {"v", "t"}
    assert mix([ListExamples([{"x": 1}]), ListExamples([{"x": 2}])]).names == ("source0", "source1")
    twins = mix([numbered(3, "same"), numbered(4, "same")], weights=[1, 1])
    assert twins.names == ("source0", "source1")  # a name two views offer names neither


def test_a_mixture_is_an_examples_view_that_pickles_equal() -> None:
    a, b = numbered(60, "a"), numbered(40, "b")
    m = mix({a: 2, b: 1}, seed=5, stopping="all_exhausted")
    m.set_epoch(2)
    back = pickle.loads(pickle.dumps(m))
    assert back == m and hash(back) == hash(m)
    assert back.epoch == 2 and plan_of(back) == plan_of(m) and back.to_list() == m.to_list()
    assert len(pickle.dumps(m)) < 10_000  # the plan is not pickled: drawn again
    head = m[:10]
    assert isinstance(head, Selected) and head.to_list() == m.to_list()[:10]
    assert m[-1] == m.to_list()[-1] and m[3]["source"] in ("a", "b")
    assert m.__getitems__([4, 1, 4]) == [m[4], m[1], m[4]]
    assert m != mix({a: 2, b: 1}, seed=5, stopping="all_exhausted")  # epoch 0
    assert repr(m).startswith("<Mixture of a 0.67, b 0.33 (all_exhausted, seed 5, epoch 2): ")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda a, b: mix([a, b], weights=[1, -1]),
            ValueError,
            "weight 1 is -1: weights are positive finite numbers",
        ),
        (lambda a, b: mix({a: 0, b: 1}), ValueError, "weight 0 is 0: weights are positive finite numbers"),
        (
            lambda a, b: mix([a, b], weights=[1, float("nan")]),
            ValueError,
            "weight 1 is nan: weights are positive finite numbers",
        ),
        (
            lambda a, b: mix([a, b], weights=[1, "2"]),
            TypeError,
            "weight 1 is '2': weights are positive numbers",
        ),
        (
            lambda a, b: mix([a, b], weights=[1]),
            ValueError,
            "1 weight for 2 sources: give one weight per source",
        ),
        (
            lambda a, b: mix([a, b], weights="equal"),
            ValueError,
            "weights must be 'size' or one positive number per source, not 'equal'",
        ),
        (
            lambda a, b: mix({a: 1}, weights=[1]),
            TypeError,
            "give the weights as the mapping's values or as weights=, not both",
        ),
        (
            lambda a, b: mix([a, b], stopping="longest"),
            ValueError,
            "stopping must be 'first_exhausted' or 'all_exhausted', not 'longest'",
        ),
        (lambda a, b: mix([]), ValueError, "mix() needs at least one view"),
        (lambda a, b: mix([a, [1, 2]]), TypeError, "source 1 is a list, not an Examples view"),
        (
            lambda a, b: mix([a, ListExamples([], "empty")]),
            ValueError,
            "source 'empty' has no examples: a mixture cannot draw from it",
        ),
        (lambda a, b: mix([a, b], names=["x", "x"]), ValueError, "source names must differ; repeated: x"),
        (
            lambda a, b: mix([a, b], names=["x"]),
            ValueError,
            "1 names for 2 sources: give one name per source",
        ),
        (
            lambda a, b: mix([a, b], weights=[1e-12, 1], stopping="all_exhausted"),
            ValueError,
            "source 'a' has probability 1e-12: drawing its 3 examples takes about 3e+12 draws under "
            "stopping='all_exhausted', more than 268,435,456; give it a larger weight or use "
            "stopping='first_exhausted'",
        ),
        (
            lambda a, b: mix([a, b], weights=[1, 5e-324], stopping="all_exhausted"),
            ValueError,
            "source 'b' has probability 4.94e-324: drawing its 4 examples takes about inf draws under "
            "stopping='all_exhausted', more than 268,435,456; give it a larger weight or use "
            "stopping='first_exhausted'",
        ),
        (
            lambda a, b: mix([a, b], weights=[1e308, 5e-324], stopping="all_exhausted"),
            ValueError,
            "source 'b' has probability 0: drawing its 4 examples takes about inf draws under "
            "stopping='all_exhausted', more than 268,435,456; give it a larger weight or use "
            "stopping='first_exhausted'",
        ),
    ],
)
def test_bad_weights_stopping_and_names_say_what_is_wrong(
    call: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        call(numbered(3, "a"), numbered(4, "b"))
    assert str(caught.value) == message


@pytest.mark.parametrize("stopping", ["first_exhausted", "all_exhausted"])
@pytest.mark.parametrize(
    ("weights", "shares"),
    [([1e308, 1e308], (0.5, 0.5)), ([1.5e308, 1e308, 0.5e308], (0.5, 1 / 3, 1 / 6))],
)
def test_weights_whose_sum_overflows_are_their_shares(
    stopping: Any, weights: list[float], shares: tuple[float, ...]
) -> None:
    """Positive finite weights are normalised whatever their size (before: 1e308 twice was an
    ``OverflowError`` from ``math.fsum``); the plan is that of their shares."""
    views = [numbered(3 + i, n) for i, n in enumerate("abc"[: len(weights)])]
    m = mix(views, weights=weights, seed=1, stopping=stopping)
    assert m.weights == pytest.approx(shares)
    assert plan_of(m) == plan_of(mix(views, weights=list(shares), seed=1, stopping=stopping))


def test_a_weight_of_any_number_kind_is_its_share() -> None:
    """Twentieth pass. Before: an int weight beyond a float (``2**1100``) was Python's bare
    ``OverflowError: int too large to convert to float``, and a ``Fraction``, a ``Decimal`` or a
    0-d tensor (``torch.softmax(...)[i]``), positive numbers all, were refused as not numbers
    (4 of 4 kinds). Now each is its exact share; a Decimal infinity or NaN and a 0-d bool or
    1-d array are refused as before."""
    from decimal import Decimal
    from fractions import Fraction

    a, b = numbered(3, "a"), numbered(4, "b")
    for weights, shares in [
        ([2**1100, 2**1100], (0.5, 0.5)),
        ([2**1100, 1.0], (1.0, 0.0)),
        ([Fraction(1, 3), Fraction(2, 3)], (1 / 3, 2 / 3)),
        ([Decimal("0.25"), Decimal("0.75")], (0.25, 0.75)),
        ([np.array(1.0), np.float32(3)], (0.25, 0.75)),
    ]:
        assert mix([a, b], weights=weights, seed=1).weights == pytest.approx(shares)
    for bad, error in [
        (Decimal("NaN"), ValueError),
        (Decimal("-Infinity"), ValueError),
        (np.array(True), TypeError),
    ]:
        with pytest.raises(error, match=r"^weight 0 is .*: weights are positive( finite)? numbers$"):
            mix([a, b], weights=[bad, 1])
    with pytest.raises(TypeError, match=r"^weight 0 is array\(\[1\.\]\): weights are positive numbers$"):
        mix([a, b], weights=[np.array([1.0]), 1])
    torch = pytest.importorskip("torch")
    assert mix([a, b], weights=list(torch.tensor([1.0, 3.0])), seed=1).weights == pytest.approx((0.25, 0.75))


@pytest.mark.parametrize("stopping", ["first_exhausted", "all_exhausted"])
def test_at_epoch_0_unshuffled_the_plan_is_interleave_datasets_s(stopping: Any) -> None:
    """The draws at epoch 0 are those of Hugging Face's ``interleave_datasets`` for the same
    seed and probabilities; unshuffled, the same examples in the same order."""
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    sizes = [700, 300, 120]
    offsets = np.cumsum([0, *sizes])
    parts = [
        datasets.Dataset.from_dict({"at": list(range(a, a + n))})
        for a, n in zip(offsets, sizes, strict=False)
    ]
    for seed in (0, 1, 42):
        theirs = datasets.interleave_datasets(
            parts, probabilities=[0.5, 0.3, 0.2], seed=seed, stopping_strategy=stopping
        )
        ours = mix(
            [numbered(n, f"v{n}") for n in sizes],
            weights=[0.5, 0.3, 0.2],
            seed=seed,
            stopping=stopping,
            shuffle=False,
        )
        assert (offsets[ours.plan_sources] + ours.plan_positions).tolist() == theirs["at"]
