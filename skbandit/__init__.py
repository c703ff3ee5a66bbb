"""skbandit: contextual bandits as scikit-learn estimators."""
# SPDX-License-Identifier: BSD-3-Clause

__version__ = "0.1.0"

__all__ = ["__version__"]
