"""The pointwise family: ops that map each element (after broadcasting) on its own.

``elementwise``: arithmetic, comparisons, unary math, clamp, where, lerp (most made from a
kernel and a derivative formula, NOTE [Formulas] in ../_pointwise.py); ``special``: the
``torch.special`` functions (erfc, lgamma, digamma, polygamma, xlogy...), scipy.special's kernels.

The package imports none of its modules: aiograd.ops imports each (their imports of one
another cross families, so a package that imported its modules would close import circles).
"""
