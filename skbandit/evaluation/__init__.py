"""Policy evaluation: off-policy estimators, scorers, simulation."""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.evaluation._ope import ips_value, snips_value

__all__ = ["ips_value", "snips_value"]
