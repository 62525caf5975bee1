"""nbval runs these notebooks at their smoke parameters; their run records go to a temporary
directory so that every test run computes afresh and nothing lands in book/_results."""

import os
import tempfile

os.environ["RECUNLEARN_RECORDS"] = tempfile.mkdtemp(prefix="recunlearn-nbval-records-")
os.environ.setdefault("JUPYTER_PREFER_ENV_PATH", "1")
os.environ.setdefault("RECUNLEARN_OFFLINE", "1")
