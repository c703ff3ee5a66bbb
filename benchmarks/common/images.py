"""Image preparation shared by the real-data studies."""
# SPDX-License-Identifier: BSD-3-Clause


def pool_14x14(images):
    """28 x 28 images averaged in 2 x 2 blocks: the paper's d = 196 (its "7 x 7"
    is a typo: 7 x 7 = 49)."""
    return images.reshape(-1, 14, 2, 14, 2).mean(axis=(2, 4)).reshape(-1, 196)
