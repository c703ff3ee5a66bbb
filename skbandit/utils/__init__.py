"""Utilities: validation helpers, discovery and estimator checks."""
# SPDX-License-Identifier: BSD-3-Clause

__all__: list[str] = []
