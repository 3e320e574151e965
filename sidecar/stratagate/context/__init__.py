"""The context engine: what of a DSH session's native history the model sees, and at which level.

The sidecar decides, the shim applies (shim-js/context.js). Every surface node is archived (archive.py) before
anything replaces it; a plan (plan.py) proposes tool cards, ready blocks at their decayed level and folds (model-
written ``compress`` calls or automatic extractive digests) over a range, lands them only when worth the one-time
prefix-cache miss (cost.py), and every layer can be expanded back one tier at a time to the byte-identical originals
(restore.py). Layering: above activation (which it tells to stop repeating this session's blocks), below tools.
"""
