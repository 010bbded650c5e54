"""What keeps the kit's comparisons fair: the order its runs are taken in, and the rule that
says whether two measured figures differ at all.

Rotation. A cell is one target in one scenario. Every measured quantity (the closed loop,
the fixed load, the SLA search) is taken in rounds: each round runs every cell once, in an
order shuffled afresh for that round, before any cell runs again. A machine whose speed
drifts (a neighbour's build starting, a frequency change) then slows every cell alike instead
of the cells that happened to run in its slow minutes; long phases (all of scenario 1, then
all of scenario 2) turned such drift into "plugins that make the gateway 50% faster". The
shuffles come from one seed, which the report prints, so an order can be replayed.

Overlap rule. Two cells differ measurably only when the ranges of their runs (lowest to
highest) do not intersect; where they do, the report says "no measurable difference"
instead of naming a winner.

Wide spread. A cell whose runs spread over more than WIDE_SPREAD of its median says little
about anything; the report flags it and asks for a quieter machine.
"""

import random

NO_DIFFERENCE = "no measurable difference"
WIDE_SPREAD = 0.25


def new_seed():
    """A seed for a run that was not given one (printed, so the order can be replayed)."""
    return random.SystemRandom().randrange(1, 1 << 31)


class Rotation:
    """The run order of one kit run: successive calls to rounds() draw from one seeded
    generator, so a seed and the same cells give the same orders again."""

    def __init__(self, seed):
        self.seed = seed
        self._rng = random.Random(seed)

    def rounds(self, cells, n):
        """n rounds; each holds every cell once, in its own shuffled order."""
        out = []
        for _ in range(n):
            order = list(cells)
            self._rng.shuffle(order)
            out.append(order)
        return out


def _pair(r):
    if isinstance(r, (list, tuple)) and len(r) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in r):
        return float(min(r)), float(max(r))
    return None


def overlap(a, b):
    """True when ranges a and b ([lo, hi]) intersect; None when either is unknown."""
    a, b = _pair(a), _pair(b)
    if a is None or b is None:
        return None
    return a[0] <= b[1] and b[0] <= a[1]


def differs(a, b):
    """True when the ranges are known and apart (a measurable difference)."""
    return overlap(a, b) is False


def too_wide(median, rng, limit=WIDE_SPREAD):
    """True when a cell's range is wider than `limit` of its median."""
    r = _pair(rng)
    if r is None or not isinstance(median, (int, float)) or median <= 0:
        return False
    return (r[1] - r[0]) / median > limit


def ratio_text(a, a_range, b, b_range, fmt):
    """a / b formatted by fmt, or NO_DIFFERENCE when the two cells' ranges overlap."""
    if overlap(a_range, b_range):
        return NO_DIFFERENCE
    return fmt(a, b)
