"""Docstring text shared between classes, substituted once at import.

As imbalanced-learn's ``Substitution``: a class docstring holds ``%(name)s`` markers,
and :class:`Substitution` fills them from one place, so that a parameter shared by
several policies is described once.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import textwrap

__all__ = ["Substitution", "parameter_block"]


class Substitution:
    """Decorator filling ``%(name)s`` markers of a docstring.

    Parameters
    ----------
    **texts : str
        The text of each marker; each line after the first is indented like the
        marker's own line.
    """

    def __init__(self, **texts):
        self.texts = texts

    def __call__(self, obj):
        doc = obj.__doc__
        for name, text in self.texts.items():
            marker = f"%({name})s"
            while marker in doc:
                start = doc.index(marker)
                indent = start - (doc.rfind("\n", 0, start) + 1)
                lines = text.strip("\n").splitlines()
                filled = ("\n" + " " * indent).join(
                    line if line.strip() else "" for line in lines
                )
                doc = doc[:start] + filled + doc[start + len(marker) :]
        obj.__doc__ = doc
        return obj


def parameter_block(entries, names):
    """The numpydoc text of ``names``, in that order, from ``{name: text}``."""
    return "\n".join(textwrap.dedent(entries[name]).strip("\n") for name in names)
