"""Dynamo backend "spyre" (placeholder until the compile path lands in this session)."""


def spyre_backend(gm, example_inputs):
    raise NotImplementedError("Unsupported: torch.compile backend 'spyre' is not wired yet")
