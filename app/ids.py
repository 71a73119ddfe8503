"""The alphabet of root and run ids, shared by the API's validation and the runner's store.

Kept apart from rewake.api.schemas because importing that module costs FastAPI and the domain
(over a second), and `rewake hook` runs on every prompt a Claude Code user types.
"""

from __future__ import annotations

import re

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$"
ID_HELP = "1 to 200 of A-Z a-z 0-9 . _ : @ -, starting with a letter or digit"
ID_RE = re.compile(ID_PATTERN)

#: Root ids no session may take: `GET /api/agent/runs/tombstones/{root_id}` owns this word.
RESERVED_ROOT_IDS = frozenset({"tombstones"})
