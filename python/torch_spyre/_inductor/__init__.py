"""torch-spyre's ``torch_spyre._inductor`` package, for the names its users import from it:
``errors`` (the ``Unsupported`` exception). Our compiler is ``torch_spyre._compile`` and the C++
frontend, not an inductor backend."""
