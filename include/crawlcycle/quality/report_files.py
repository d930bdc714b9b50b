"""Where GX writes a gate's HTML report (its data docs). Each report uses GX's static files (fonts and images, 4 MB):
they are hard links to one copy per GX version in the quality folder, not a copy per gate and cycle. GX loads this
module by name, from the report's site configuration (``quality/gates.py``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from great_expectations.data_context.store import TupleFilesystemStoreBackend


class ReportFiles(TupleFilesystemStoreBackend):
    def __init__(self, shared_static: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.shared_static = Path(shared_static)

    def _set(self, key: Any, value: Any, **kwargs: Any) -> str:
        if not (isinstance(key, tuple) and key[:1] == ("static",)):
            return super()._set(key, value, **kwargs)
        shared = self.shared_static.joinpath(*key[1:])
        if not shared.exists():  # written whole or not at all: another process may be linking it
            shared.parent.mkdir(parents=True, exist_ok=True)
            part = shared.with_name(f".{shared.name}.{os.getpid()}")
            part.write_bytes(value.encode() if isinstance(value, str) else value)
            part.replace(shared)
        linked = Path(self.full_base_directory).joinpath(*key)
        linked.parent.mkdir(parents=True, exist_ok=True)
        linked.unlink(missing_ok=True)
        try:
            os.link(shared, linked)
        except OSError:  # a file system without hard links: a copy
            return super()._set(key, value, **kwargs)
        return str(linked)
