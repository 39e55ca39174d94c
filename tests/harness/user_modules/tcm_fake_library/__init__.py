"""A kernel library as a user's cases meet one installed: the package re-exports what its modules define, and its
`kernels` module imports a module beside it relatively. Run on its own before its package is imported (as the
warm-cache row once reloaded an edited kernel's module), `kernels` fails: importing its package runs this
__init__, which imports `kernels` back before `kernels` has defined what it takes. For the harness's tests
(tests/harness/test_warm_cache_installed.py); the cases over it are in fake_library_cases.py."""

from ._executions import executed

executed.append(__name__)

from .kernels import copy_kernel, launch_copy  # noqa: E402 - after this module's execution is recorded

__all__ = ["copy_kernel", "launch_copy"]
