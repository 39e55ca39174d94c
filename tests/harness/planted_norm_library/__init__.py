"""A planted kernel library written as libraries are, for the adoption tests: launchers that return tuples (the output
and what the backward needs), a backward launcher that takes what the forward saved, two outputs with their
gradients, and the library's own autograd.Functions over them. No annotations, as libraries ship them."""
