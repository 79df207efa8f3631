"""torch-spyre's ``torch_spyre.constants``: the device's name."""

DEVICE_NAME = "spyre"
