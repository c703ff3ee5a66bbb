"""GrowingRows: amortised appends with the value semantics of new arrays."""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skbandit._base._growing import GrowingRows


def _chunks(seed, sizes, width=3):
    rng = np.random.RandomState(seed)
    return [rng.standard_normal((n, width)) for n in sizes]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_appends_equal_concatenation(seed):
    chunks = _chunks(seed, [0, 1, 5, 16, 2, 40, 1])
    held = GrowingRows(3)
    for i, chunk in enumerate(chunks):
        held = held.appended(chunk)
        assert_array_equal(
            held.rows, np.concatenate([np.empty((0, 3)), *chunks[: i + 1]])
        )


def test_an_old_holder_keeps_its_rows_and_appends_apart():
    a, b, c = _chunks(0, [4, 2, 3])
    before = GrowingRows(3).appended(a)
    after = before.appended(b)  # in place, into spare capacity
    # ``before`` is a snapshot (the rollback protocol's shallow copy): its rows
    # did not move, and appending to it must not write over ``after``'s rows.
    assert_array_equal(before.rows, a)
    other = before.appended(c)
    assert_array_equal(after.rows, np.concatenate([a, b]))
    assert_array_equal(other.rows, np.concatenate([a, c]))


def test_rows_are_read_only():
    held = GrowingRows(2).appended(np.ones((3, 2)))
    with pytest.raises(ValueError):
        held.rows[0, 0] = 5.0


def test_appends_are_amortised():
    held = GrowingRows(1)
    storages = set()
    for _ in range(1000):
        held = held.appended(np.zeros((1, 1)))
        storages.add(id(held._storage.data))
    # capacity doubles from 16: 16, 32, ..., 1024 hold 1,000 rows in 7 arrays
    assert len(storages) <= 7


@pytest.mark.parametrize(
    "duplicate", [copy.deepcopy, lambda h: pickle.loads(pickle.dumps(h))]
)
def test_copies_keep_the_rows_alone(duplicate):
    a, b = _chunks(1, [5, 2])
    held = GrowingRows(3).appended(a)
    twin = duplicate(held)
    assert twin._storage.data.shape == (5, 3)  # no spare capacity travels
    assert_array_equal(twin.appended(b).rows, np.concatenate([a, b]))
    assert_array_equal(held.rows, a)
