"""Policy evaluation: off-policy estimators, scorers, simulation."""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.evaluation._ope import ips_value, snips_value
from skbandit.evaluation._scorers import make_ope_scorer

__all__ = ["ips_value", "make_ope_scorer", "snips_value"]

from skbandit.evaluation._simulate import SimulationResult, simulate  # noqa: E402

__all__ += ["SimulationResult", "simulate"]

from skbandit.evaluation._logging import collect_logged_data  # noqa: E402
from skbandit.evaluation._ope import (  # noqa: E402
    dm_value,
    dr_value,
    replay_value,
    sndr_value,
    switch_dr_value,
)
from skbandit.evaluation._policy_value import PolicyValue, estimate_value  # noqa: E402

__all__ += [
    "PolicyValue",
    "collect_logged_data",
    "dm_value",
    "dr_value",
    "estimate_value",
    "replay_value",
    "sndr_value",
    "switch_dr_value",
]

from skbandit.evaluation._compare import ComparisonResult, compare  # noqa: E402

__all__ += ["ComparisonResult", "compare"]

from skbandit.evaluation._replay import online_replay  # noqa: E402

__all__ += ["online_replay"]

from skbandit.evaluation._slate_ope import (  # noqa: E402
    estimate_slate_value,
    uniform_slate_propensities,
)

__all__ += ["estimate_slate_value", "uniform_slate_propensities"]

from skbandit._base._propensities import chosen_propensities  # noqa: E402

__all__ += ["chosen_propensities"]

from skbandit.evaluation._ope_weighted import (  # noqa: E402
    balanced_ipw_value,
    dros_value,
    mips_value,
    subgaussian_dr_value,
    subgaussian_ips_value,
)

__all__ += [
    "balanced_ipw_value",
    "dros_value",
    "mips_value",
    "subgaussian_dr_value",
    "subgaussian_ips_value",
]

from skbandit.evaluation._ope_intervals import betting_interval, slope_value  # noqa: E402

__all__ += ["betting_interval", "slope_value"]

from skbandit.evaluation._cascade_ope import cascade_dr_value  # noqa: E402

__all__ += ["cascade_dr_value"]

from skbandit.evaluation._ope_el import empirical_likelihood_interval  # noqa: E402

__all__ += ["empirical_likelihood_interval"]
