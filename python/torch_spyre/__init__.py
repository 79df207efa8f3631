"""torch_spyre: a simulated IBM Spyre accelerator as the PyTorch device "spyre" (PrivateUse1).

Importing the package (or plain ``import torch`` once the package is installed, through the
``torch.backends`` entry point) renames PrivateUse1 to "spyre", registers ``torch.spyre`` and
the Tensor helpers and the eager kernels. torch.compile's "spyre" backend
(``torch_spyre._compile``) is registered through the ``torch_dynamo_backends`` entry point and
imported, like dynamo and inductor, only when something compiles.
"""

from __future__ import annotations

import sys
import threading
import warnings

_lock = threading.RLock()
_loaded = False
_ready = False  # set when this file has finished executing
_IMPORT_ERROR: ImportError | None = None


def _autoload() -> None:
    """Registers the spyre device with torch. Idempotent; runs at the end of ``import
    torch_spyre`` and from torch's ``torch.backends`` entry point during ``import torch``."""
    global _loaded
    if not _ready or _IMPORT_ERROR is not None:
        # torch's entry point calls us while `import torch_spyre` (which imports torch) is still
        # running: the end of this file does the registration.
        return
    with _lock:
        if _loaded:
            return
        if torch._C._get_privateuse1_backend_name() != "spyre":
            torch.utils.rename_privateuse1_backend("spyre")
        if not hasattr(torch, "spyre"):
            torch._register_device_module("spyre", _device.make_spyre_module())
        if not hasattr(torch.Tensor, "is_spyre"):
            torch.utils.generate_methods_for_privateuse1_backend()
        from . import _custom_ops, _monkey_patch  # noqa: F401 - _custom_ops defines spyre:: ops

        _monkey_patch.apply()
        from . import _collectives, _distributed  # noqa: F401 - spyre::*_async, c10d "spyre"

        _distributed.register_backend()  # the c10d backend "spyre"
        from . import _config

        _config.per_rank_trace()  # SPYRE_TRACE=t.json -> t.rank<R>.json under torchrun
        # Set before importing _compile: it may import torch_spyre itself.
        _loaded = True
    try:
        from . import _eager

        _eager.register()
    except Exception as e:  # noqa: BLE001 - the device must stay usable without eager compute
        warnings.warn(f"torch_spyre: the spyre eager kernels failed to register: {e!r}", RuntimeWarning,
                      stacklevel=2)
    # torch.compile machinery (dynamo, inductor, our _compile) is imported on first use only:
    # the "spyre" backend is found through the `torch_dynamo_backends` entry point, and the
    # "inductor" backend reaches it through _route_default_backend. `import torch` stays cheap.
    _route_default_backend()


def _route_default_backend() -> None:
    """``torch.compile(fn)`` (the default "inductor" backend), ``torch._dynamo.optimize("inductor")``
    and every other caller of inductor's ``compile_fx`` compile graphs whose inputs are spyre
    tensors with the "spyre" backend; other graphs go to inductor unchanged (``_route``). Imports
    neither dynamo nor inductor."""
    from . import _route

    _route.install()


# _autoload must exist before this import: torch's entry point looks it up on this module.
import torch  # noqa: E402


def _torch_is_importing() -> bool:
    """True while ``import torch`` is still running, i.e. we are being autoloaded."""
    spec = getattr(sys.modules.get("torch"), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


try:
    from . import _device
    from ._device import *  # noqa: F403 - the torch.spyre API, re-exported
    from ._device import __all__  # noqa: F401
except ImportError as _e:
    # A missing or stale extension must not make every `import torch` in the environment fail
    # (that would also break the CMake configure step, which imports torch): when autoloaded,
    # warn and leave the device unregistered. A direct `import torch_spyre` still raises.
    if not _torch_is_importing():
        raise
    _IMPORT_ERROR = _e
    warnings.warn(
        f"torch_spyre: the _C extension failed to load, so the spyre device is not registered "
        f"({_e}). Build it with `ninja -C build torch_spyre_C`.",
        RuntimeWarning,
        stacklevel=2,
    )

    def __getattr__(name: str):  # noqa: ANN202 - module-level attribute hook
        raise ImportError(f"torch_spyre is unusable: its _C extension failed to load ({_IMPORT_ERROR})")


if _IMPORT_ERROR is None:
    from ._errors import ConfigError, FallbackWarning, Unsupported  # noqa: E402,F401 - torch-spyre's names

_ready = True
_autoload()
