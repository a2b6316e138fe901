"""Import stubs for the GPU evidence kit (ci/gpu_evidence.sh): packages that importing verl needs but that the
series' GPU tests never call, left out of the kit's wheelhouse for size (ray: a 79 MB wheel; datasets: pyarrow and
pandas; pandas: 12 MB). Any name of a stubbed package resolves to a placeholder that works as a decorator, a base
class or a type annotation; calling it with arguments raises StubUsed, so a test that really uses the package errors
instead of passing."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types


class StubUsed(RuntimeError):
    pass


class _StubMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return placeholder(f"{cls.__qualname__}.{name}")

    def __call__(cls, *args, **kwargs):
        if _PLACEHOLDERS.get(cls.__qualname__) is not cls:
            return super().__call__(*args, **kwargs)  # a class of the tested code derived from a placeholder
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # @ray.remote
        if not args:
            return lambda target: target  # @ray.remote(num_gpus=1)
        raise StubUsed(f"{cls.__qualname__} is an import stub of the GPU evidence kit; the package is not installed")

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls


_PLACEHOLDERS: dict[str, type] = {}


def placeholder(qualname: str) -> type:
    """One placeholder class per dotted name, so that isinstance and issubclass checks are consistent."""
    if qualname not in _PLACEHOLDERS:
        namespace = {"__qualname__": qualname, "__module__": "gpu_kit_stub"}
        _PLACEHOLDERS[qualname] = _StubMeta(qualname.rsplit(".", 1)[-1], (), namespace)
    return _PLACEHOLDERS[qualname]


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return placeholder(f"{self.__name__}.{name}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, root: str):
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(self.root + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def install(module: types.ModuleType) -> None:
    """Turn a stub package's __init__ module into a stub and serve its submodules."""
    module.__class__ = _StubModule
    module.__path__ = []
    module.__version__ = "0+gpu-kit-stub"
    sys.meta_path.insert(0, _Finder(module.__name__))
