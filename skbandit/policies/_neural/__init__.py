"""Neural policies: NeuralTS, NeuralUCB, their baselines, and the neural logistic ones.

A policy of this family is a ``NeuralPolicy`` (``skbandit.policies.base``): a torch
network trained through the library's training core (buffer, schedule, loss,
rollback), optionally with the tangent-feature precision ``U``. It implements its
scores and its exploration; its parameters and their texts come once from
``_core._neural_params``.
"""
