"""The only module that imports scikit-learn's private parameter validation.

A break in a future scikit-learn release is then a one-file fix.
"""
# SPDX-License-Identifier: BSD-3-Clause

from sklearn.utils._param_validation import (  # noqa: F401
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_params,
)

__all__ = [
    "HasMethods",
    "Interval",
    "InvalidParameterError",
    "Options",
    "StrOptions",
    "validate_params",
]
