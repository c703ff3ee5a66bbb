"""Warnings and errors raised by skbandit."""
# SPDX-License-Identifier: BSD-3-Clause

__all__ = ["NumericalError", "PropensityWarning"]


class NumericalError(ArithmeticError, ValueError):
    """Raised when an update would leave the policy with non-finite state.

    The policy is left exactly as it was before the failing call.
    """


class PropensityWarning(UserWarning):
    """Raised when logged propensities are so small that IPS weights explode."""
