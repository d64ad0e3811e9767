"""aiograd benchmark suite: ``python -m benchmarks [names...] [--repeat N] [--quick]``.

Each module (forward, chain, fanout, loop_lag, devices, concurrency, mlp, conv, offload, transformer, cnn,
sync_call, distributed, server, lstm, neighbour) exposes ``run(repeat: int, quick: bool) -> list[dict]`` and prints its own table.
"""

BENCHMARKS = ("forward", "chain", "fanout", "loop_lag", "devices", "concurrency", "mlp", "conv", "offload", "transformer",
              "cnn", "sync_call", "distributed", "server", "lstm", "neighbour")
