"""Cases for a real kernel library, FlagGems 5.0.2 (`flag-gems` on PyPI, imported as `flag_gems`).

Each module beside this one is one FlagGems op as a case: it imports the library's launcher, its kernels and its
shipped op (nothing copied) and adds only what the harness needs, a PyTorch reference, inputs and, where the
library's function does not take exactly the tensor inputs, a small adapter. FlagGems runs on a GPU only: its
import detects the device and raises on a machine without one, so these modules load only there. See README.md.

Install it without its pinned dependencies, then what its import needs (README.md says why), and run the folder:

    pip install --no-deps flag-gems==5.0.2 && pip install pyyaml sqlalchemy packaging
    triton-compat-matrix run -n auto --cases examples/flag_gems_cases --report-dir reports/libraries/flag_gems

The folder is not named flag_gems: a --cases path puts examples/ on sys.path, where a folder of that name would
stand in for the library.
"""
