"""torch-spyre's ``torch_spyre.ops`` package: ``fallbacks`` names the CPU-fallback warning."""
