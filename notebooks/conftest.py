"""nbval runs these notebooks at their smoke parameters, as a new machine would: run records and
derived-data caches go to temporary directories created for this test session and removed at its
end, so every run computes afresh, nothing lands in book/_results, and nothing is read from a cache
in the home directory."""

import atexit
import os
import shutil
import tempfile

_scratch = tempfile.mkdtemp(prefix="recunlearn-nbval-")
atexit.register(shutil.rmtree, _scratch, True)
os.environ["RECUNLEARN_RECORDS"] = os.path.join(_scratch, "records")
os.environ["RECUNLEARN_CACHE"] = os.path.join(_scratch, "cache")
os.environ.setdefault("JUPYTER_PREFER_ENV_PATH", "1")
os.environ.setdefault("RECUNLEARN_OFFLINE", "1")
