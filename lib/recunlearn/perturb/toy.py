"""The IDAG example of CASPER Figure 4(b), as a tiny stream.

The paper's Figure 1 data (drawn, not tabulated) are not in its text, so these twelve training
interactions X1..X12 are a **reconstruction** that satisfies everything the text says about
Figure 4(b): X1 -> X4 is a user edge, X3 -> X5 an item edge, and X3 has the highest cascade score,
8 descendants including itself.
"""

from __future__ import annotations

import numpy as np

from ..data.sequences import Stream

TOY_INTERACTIONS = [("A", "a"), ("B", "b"), ("C", "c"), ("A", "f"), ("B", "c"), ("C", "d"),
                    ("D", "d"), ("B", "a"), ("D", "c"), ("A", "e"), ("C", "b"), ("E", "d")]
"""(user, item) of X1..X12, at timestamps 1..12."""


def figure_4b_stream() -> Stream:
    """X1..X12 as a training-only stream (timestamps 1..12; node k-1 is X_k)."""
    users = sorted({u for u, _ in TOY_INTERACTIONS})
    items = sorted({i for _, i in TOY_INTERACTIONS})
    n = len(TOY_INTERACTIONS)
    return Stream(user=np.array([users.index(u) for u, _ in TOY_INTERACTIONS], dtype=np.int64),
                  item=np.array([items.index(i) for _, i in TOY_INTERACTIONS], dtype=np.int64),
                  timestamp=np.arange(1.0, n + 1), is_test=np.zeros(n, dtype=bool), row=np.arange(n),
                  n_users=len(users), n_items=len(items), description="CASPER Figure 4(b) toy (reconstructed)",
                  item_ids=np.array(items), user_ids=np.array(users))
