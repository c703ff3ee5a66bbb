"""Ensemble sampling: LinES and GLMES (NeuralES, a neural policy, lives in ``_neural``).

A policy of this family fits ``n_models`` models to the history with perturbations
stored once per member and observation, plays the greedy arm of one member drawn per
round, and may restart on the anytime schedule of ``_core._anytime_schedule``
(its base: ``EnsemblePolicyMixin``, in ``skbandit.policies.base``). It implements the
members' joint update (``_update_phase``) and their linear predictor.
"""
