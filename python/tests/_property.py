"""Hypothesis settings shared by the property tests (reference model vs kstate).

Examples are derandomized (stable CI) and their number comes from ``KSTATE_HYPOTHESIS_EXAMPLES``
(default 7; each example runs Spark jobs). Shrinking is off to bound the runtime of a failing run;
set ``KSTATE_HYPOTHESIS_SHRINK=1`` to get a minimal example.
"""

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

PHASES = (
    [Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink]
    if os.environ.get("KSTATE_HYPOTHESIS_SHRINK")
    else [Phase.explicit, Phase.generate]
)
PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("KSTATE_HYPOTHESIS_EXAMPLES", "7")),
    deadline=None,
    derandomize=True,
    database=None,
    phases=PHASES,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)


@st.composite
def micro_batches(draw, records: list, max_cuts: int = 4) -> list:
    """``records`` split at up to ``max_cuts`` random boundaries: one list per micro-batch."""
    n = len(records)
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=max_cuts))) if n > 1 else []
    bounds = [0] + cuts + [n]
    return [records[a:b] for a, b in zip(bounds, bounds[1:])]
