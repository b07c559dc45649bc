"""Make the shared document builders (fork_score_docs) importable.

The repository runs pytest with ``--import-mode=importlib``, which does not put
test directories on ``sys.path``; the helper module has a package-unique name.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
