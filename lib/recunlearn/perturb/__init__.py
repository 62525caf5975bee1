"""CASPER perturbations: the interaction-dependency graph, selectors, and LOO / replacement / insertion."""
