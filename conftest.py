# The matrix is a pytest plugin; this root conftest loads it for every run from this checkout.
pytest_plugins = ["harness.plugin"]
