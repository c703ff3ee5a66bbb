"""The conformance kit's checks, behind :mod:`skbandit.utils.estimator_checks`.

Like the public module, these look at the whole library (they fit policies and
evaluate them), so they sit above everything else: nothing in the library imports
them but ``skbandit.utils.estimator_checks``.
"""
# SPDX-License-Identifier: BSD-3-Clause
