"""Writing cases: the Case API, input strategies, finding cases in modules, the case table."""
