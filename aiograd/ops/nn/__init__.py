"""The neural-network family: the fused primitives behind torch.nn.functional, each one node with
its own rule where composing from other families would be slower or lose precision.

``activation``: every activation function (softmax and log_softmax, gelu, softplus, silu, elu...);
``loss``: every loss op (nll_loss and the fused pointwise losses); ``layers``: linear, embedding,
one_hot, dropout; ``conv`` (convolutions, unfold/fold) and ``pool`` over the window geometry of
``_window``; ``resample`` (interpolate, adaptive average pooling) and ``pad``, separable maps;
``normalization``, ``attention``, ``recurrent``. ``_nn_common``: what they share (float-only
inputs, int-tuple arguments, loss reductions).

aiograd.nn.functional puts torch's signatures in front of these (``inplace=``, the legacy loss
keywords) and composes what torch composes; the nn.Module classes are in aiograd.nn.

The package imports none of its modules: aiograd.ops imports each (their imports of one
another cross families, so a package that imported its modules would close import circles).
"""
