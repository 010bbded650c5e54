"""What keeps `sluice bench`'s comparisons fair, without running anything: the rotation of
the run order and its seed, the overlap rule and the wide-spread flag, the placements, and
the options that choose them."""

import pytest

from benchkit import fair, procs, runner


# --------------------------------------------------------------------------- rotation

CELLS = [("Sluice", 1), ("nginx", 1), ("HAProxy", 1), ("Sluice", 2), ("nginx", 2),
         ("HAProxy", 2), ("direct", 1)]


def test_every_round_runs_every_cell_once():
    rounds = fair.Rotation(42).rounds(CELLS, 5)
    assert len(rounds) == 5
    for r in rounds:
        assert sorted(r) == sorted(CELLS)


def test_rounds_are_shuffled_each_on_its_own():
    rounds = fair.Rotation(42).rounds(CELLS, 5)
    # 7 cells have 5040 orders: five rounds in one order would mean no shuffling at all.
    assert len({tuple(r) for r in rounds}) > 1
    assert any(r != CELLS for r in rounds)


def test_a_seed_gives_the_same_orders_again_and_another_seed_others():
    a, b = fair.Rotation(1234), fair.Rotation(1234)
    # Successive phases draw on from the same generator, in the same way for both.
    assert a.rounds(CELLS, 3) == b.rounds(CELLS, 3)
    assert a.rounds(CELLS, 3) == b.rounds(CELLS, 3)
    assert fair.Rotation(1234).rounds(CELLS, 3) != fair.Rotation(1235).rounds(CELLS, 3)
    # The next phase's rounds are not the first phase's again.
    c = fair.Rotation(1234)
    assert c.rounds(CELLS, 3) != c.rounds(CELLS, 3)


def test_new_seeds_are_positive_and_vary():
    seeds = {fair.new_seed() for _ in range(20)}
    assert all(0 < s < 1 << 31 for s in seeds) and len(seeds) > 1


# --------------------------------------------------------------------------- overlap rule

@pytest.mark.parametrize("a, b, want", [
    ([10, 20], [15, 25], True),      # intersect
    ([10, 20], [20, 30], True),      # touch at one end
    ([10, 20], [12, 18], True),      # one inside the other
    ([10, 20], [21, 30], False),     # apart
    ([30, 21], [10, 20], False),     # given high first
    ([5, 5], [5, 5], True),          # one run each, equal
    (None, [1, 2], None),            # unknown
    ([1, "x"], [1, 2], None),
])
def test_overlap(a, b, want):
    assert fair.overlap(a, b) is want
    assert fair.differs(a, b) is (want is False)


def test_ratio_text_names_no_winner_where_runs_overlap():
    def fmt(x, y):
        return "%.2fx" % (x / y)

    # The example: Sluice scenario 1 p99 3.2x nginx's, by runs that overlap.
    assert fair.ratio_text(3.2, [0.4, 6.0], 1.0, [0.8, 1.9], fmt) == fair.NO_DIFFERENCE
    assert fair.ratio_text(13.8, [13.5, 19.4], 29.1, [28.4, 37.6], fmt) == "0.47x"
    assert fair.ratio_text(13.8, None, 29.1, [28.4, 37.6], fmt) == "0.47x"


@pytest.mark.parametrize("median, rng, wide", [
    (26000, [26000, 39500], True),    # 52% of the median
    (30000, [27000, 34000], False),   # 23%
    (30000, [26000, 33600], True),    # 25.3%
    (0, [0, 10], False),
    (10, None, False),
])
def test_too_wide(median, rng, wide):
    assert fair.too_wide(median, rng) is wide


# --------------------------------------------------------------------------- placements

def test_placements_on_two_cpus():
    assert procs.place(2, 1, "own") is None
    assert procs.place(2, 1, "load-alone") == {"gateway": [1], "upstream": [1], "load": [0]}
    assert procs.place(2, 1, "gateway-alone") == {"gateway": [1], "upstream": [0], "load": [0]}
    assert procs.default_placement(2, 1) == "load-alone"
    assert procs.pin_plan(2, 1) == procs.place(2, 1, "load-alone")


def test_four_or_more_cpus_give_each_its_own_by_default():
    for n in (4, 8):
        plan = procs.place(n, 1, procs.default_placement(n, 1))
        assert procs.default_placement(n, 1) == "own"
        assert plan == {"gateway": [0], "upstream": [1], "load": list(range(2, n))}
        sets = [set(plan[k]) for k in ("gateway", "upstream", "load")]
        assert sum(len(x) for x in sets) == len(set().union(*sets))  # no CPU shared
    assert procs.place(6, 2, "own") == {"gateway": [0, 1], "upstream": [2], "load": [3, 4, 5]}
    # The shared plans on a larger machine: what is not the gateway's goes to the other side.
    assert procs.place([2, 5, 7, 9], 1, "gateway-alone") == {
        "gateway": [5], "upstream": [2, 7, 9], "load": [2, 7, 9]}
    assert procs.place([2, 5, 7, 9], 1, "load-alone") == {
        "gateway": [5], "upstream": [5], "load": [2, 7, 9]}


def test_one_cpu_cannot_be_pinned():
    assert procs.default_placement(1, 1) is None
    assert all(procs.place(1, 1, n) is None for n in procs.PLACEMENTS)
    with pytest.raises(ValueError):
        procs.place(4, 1, "everything-on-one")


# --------------------------------------------------------------------------- options

SLUICE = "/bin/true"  # parse_args only checks that it is executable


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setattr(procs, "usable_cpus", lambda: [0, 1])


@pytest.fixture
def four_cpus(monkeypatch):
    monkeypatch.setattr(procs, "usable_cpus", lambda: [0, 1, 2, 3])


def parse(*argv):
    return runner.parse_args(["--sluice", SLUICE, *argv])


def test_default_placement_and_a_fresh_seed(two_cpus):
    args = parse()
    assert args.placement_name == "load-alone"
    assert args.pinning == {"gateway": [1], "upstream": [1], "load": [0]}
    assert isinstance(args.seed, int) and args.seed > 0


def test_five_rounds_by_default(two_cpus):
    # Two equal cells keep apart ranges in 2 of C(10, 5) = 252 cases with 5 runs, 2 of 20
    # with 3: fewer rounds would name false winners (docs/benchmark.md).
    assert parse().runs == 5 and parse("--runs", "3").runs == 3


def test_default_placement_with_four_cpus(four_cpus):
    args = parse()
    assert args.placement_name == "own"
    assert args.pinning == {"gateway": [0], "upstream": [1], "load": [2, 3]}


def test_placement_by_name_by_cpus_and_none(two_cpus):
    args = parse("--placement", "gateway-alone", "--seed", "77")
    assert args.placement_name == "gateway-alone" and args.seed == 77
    assert args.pinning == {"gateway": [1], "upstream": [0], "load": [0]}
    args = parse("--placement", "gateway=0,upstream=0,load=1")
    assert args.placement_name == "custom"
    assert args.pinning == {"gateway": [0], "upstream": [0], "load": [1]}
    args = parse("--no-pin")
    assert args.placement_name is None and args.pinning is None


@pytest.mark.parametrize("argv, message", [
    (["--placement", "own"], "--placement own: too few CPUs here"),
    (["--placement", "sideways"], "expected own|load-alone|gateway-alone or gateway=LIST"),
    (["--placement", "gateway=1"], "give gateway, upstream and load"),
    (["--placement", "gateway=1,upstream=1,load=9"], "not usable here"),
    (["--placement", "load-alone", "--no-pin"], "choose one"),
    (["--seed", "x"], "--seed"),
])
def test_bad_placement_and_seed_options(two_cpus, capsys, argv, message):
    with pytest.raises(SystemExit) as e:
        parse(*argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err
