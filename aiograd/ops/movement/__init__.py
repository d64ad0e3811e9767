"""The movement family: ops that move, view, join or repeat elements without computing on them.

``shape``: views (reshape/view, squeeze, permute, transpose, expand...); ``rearrange``: copies
that move or repeat (flip, roll, repeat, tile, diff); ``join``: cat/stack and the splits;
``diagonal``: diagonals and triangles (diagonal, diag_embed, tril/triu, trace).

The package imports none of its modules: aiograd.ops imports each (their imports of one
another cross families, so a package that imported its modules would close import circles).
"""
