"""Fail the build when a public object of skbandit has no page in the reference.

Every name in the ``__all__`` of the public modules listed in ``api_reference`` must
be documented as a Python object; a missing one is a warning, hence an error under
``-W``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from api_reference import PUBLIC_MODULES, public_objects
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _check(app, env):
    documented = set(env.get_domain("py").objects)
    missing = [
        f"{modname}.{name}"
        for modname in PUBLIC_MODULES
        for name, _ in public_objects(modname)
        if f"{modname}.{name}" not in documented
    ]
    if missing:
        logger.warning(
            "public objects without a page in the API reference: %s",
            ", ".join(missing),
        )


def setup(app):
    app.connect("env-check-consistency", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
