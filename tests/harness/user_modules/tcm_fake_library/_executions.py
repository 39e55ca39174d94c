"""The name of each module of the package, appended as the module executes: a module run again shows up twice."""

executed: list[str] = []
