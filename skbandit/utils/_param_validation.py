"""The only module that imports scikit-learn's private parameter validation.

A break in a future scikit-learn release is then a one-file fix. The three
constraints a policy's ``_parameter_constraints`` is written with (:class:`Interval`,
:class:`StrOptions`, :class:`HasMethods`) are public, through
:mod:`skbandit.utils.validation`: they are scikit-learn's own constraint types, kept
as thin subclasses so that scikit-learn's validation accepts them unchanged and
skbandit documents them.
"""
# SPDX-License-Identifier: BSD-3-Clause

from sklearn.utils import _param_validation as _sklearn
from sklearn.utils._param_validation import (  # noqa: F401
    InvalidParameterError,
    Options,
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


class Interval(_sklearn.Interval):
    """Constraint of a parameter: a number of a given type within an interval.

    scikit-learn's own constraint type, accepted in ``_parameter_constraints``;
    a value outside it raises scikit-learn's ``InvalidParameterError`` (a
    ``ValueError``) at ``fit`` or at the first ``partial_fit``, naming the parameter
    and the interval.

    Parameters
    ----------
    type : {numbers.Integral, numbers.Real}
        The set of numbers the value belongs to.
    left : float, int or None
        The left bound; ``None`` is minus infinity.
    right : float, int or None
        The right bound; ``None`` is plus infinity.
    closed : {"left", "right", "both", "neither"}
        Which bounds belong to the interval.

    See Also
    --------
    StrOptions : A set of allowed strings.
    HasMethods : An object with given methods.

    Examples
    --------
    >>> from numbers import Real
    >>> from skbandit.utils.validation import Interval
    >>> positive = Interval(Real, 0, None, closed="neither")
    >>> positive.is_satisfied_by(0.5), positive.is_satisfied_by(0.0)
    (True, False)
    """


class StrOptions(_sklearn.StrOptions):
    """Constraint of a parameter: one string of a finite set.

    scikit-learn's own constraint type, accepted in ``_parameter_constraints``.

    Parameters
    ----------
    options : set of str
        The allowed strings.
    deprecated : set of str or None, default=None
        The allowed strings that are deprecated (marked so in the error message).

    See Also
    --------
    Interval : A number within an interval.
    HasMethods : An object with given methods.

    Examples
    --------
    >>> from skbandit.utils.validation import StrOptions
    >>> covariance = StrOptions({"diag", "full"})
    >>> covariance.is_satisfied_by("full"), covariance.is_satisfied_by("dense")
    (True, False)
    """


class HasMethods(_sklearn.HasMethods):
    """Constraint of a parameter: an object that has the given methods.

    scikit-learn's own constraint type, accepted in ``_parameter_constraints``: a
    protocol (a regressor's ``fit`` and ``predict``), not a class.

    Parameters
    ----------
    methods : str or list of str
        The methods the object must have.

    See Also
    --------
    Interval : A number within an interval.
    StrOptions : A set of allowed strings.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from skbandit.utils.validation import HasMethods
    >>> HasMethods(["fit", "predict"]).is_satisfied_by(Ridge())
    True
    """
