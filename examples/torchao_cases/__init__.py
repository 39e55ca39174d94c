"""Cases for a second real kernel library, torchao (`torchao` on PyPI): an autotuned kernel with many configs over a
size key, which the matrix's estimates and speed were not fitted on.

Each module beside this one is one torchao op as a case: it imports the library's launcher, its kernels and the op
the library ships (nothing copied) and adds only what the harness needs, a PyTorch reference and inputs. torchao
registers these ops for CUDA only, so the cases run on a GPU; on the CPU they load and their cells say why they
are skipped. See README.md.

    pip install --no-deps torchao==0.18.0
    triton-compat-matrix run -n auto --cases examples/torchao_cases --report-dir reports/libraries/torchao

The folder is not named torchao: a --cases path puts examples/ on sys.path, where a folder of that name would stand
in for the library.
"""
