"""Policies on any scikit-learn regressor: SquareCB, FALCON, BootstrappedTS.

A policy of this family keeps clones of the user's estimator (one per arm, or one of
all arms), learns online through ``partial_fit`` or by refits on a doubling schedule,
and implements only the exact law it plays: inverse-gap weighting, bootstrap replicas
(its base: ``BaseEstimatorPolicy``, in ``skbandit.policies.base``).
"""
