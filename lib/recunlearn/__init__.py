"""recunlearn: a thin library behind the reproducible study of CURE4Rec, SRU and CASPER.

Subpackages: ``data`` (registry, preprocessing, splits), ``models`` (WMF, BPR, LightGCN and the
trainer), ``metrics`` (ranking metrics and fairness), ``experiments`` (validated configs, run
records, runners) and ``report`` (paper values, comparisons, notebook runner, status page).
"""

__version__ = "0.1.0"
