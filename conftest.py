# The matrix's pytest plugin is installed with the package (a pytest11 entry point, so `pip install -e .`
# here), which loads it into every pytest run; it does nothing until a run asks for the matrix (--matrix).
