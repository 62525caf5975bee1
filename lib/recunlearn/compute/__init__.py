"""Computing the book: the compute plan, the cost model, and running the plan on local workers or Ray.

- :mod:`~recunlearn.compute.plan`: the plan file (``grids/plan.yml``), its runs, done and pending, batches;
- :mod:`~recunlearn.compute.costs`: measured seconds from records and an estimate for any config;
- :mod:`~recunlearn.compute.summary`: runs done and CPU-hours left per plan entry and per page;
- :mod:`~recunlearn.compute.executors`: local worker processes and Ray tasks, both writing records
  through ``run_or_load``;
- :mod:`~recunlearn.compute.scheduler`: plan order, progress, deadline and clean stop;
- :mod:`~recunlearn.compute.command`: ``python -m recunlearn compute``.

Nothing here changes what a run computes; the package is left out of the source fingerprint.
"""
