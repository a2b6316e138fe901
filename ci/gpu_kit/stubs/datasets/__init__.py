"""Import stub of `datasets` for the GPU evidence kit only (see _gpu_kit_stub.py); never installed anywhere else."""

import sys

from _gpu_kit_stub import install

install(sys.modules[__name__])
