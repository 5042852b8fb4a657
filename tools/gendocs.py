"""``make docs``: write the files generated from code (the finding catalogue, the envelope schema).

Tests compare the committed files with what this writes, so the docs cannot drift from the code.
"""

from __future__ import annotations

import json
from pathlib import Path

from callgate.reassemble import ENVELOPE_SCHEMA
from callgate.reassemble.catalogue import markdown
from callgate.redact.scanning.findings import markdown as scan_markdown

ROOT = Path(__file__).resolve().parents[1]
GENERATED: dict[Path, str] = {
    ROOT / "docs" / "findings.md": markdown(),
    ROOT / "docs" / "scan.md": scan_markdown(),
    ROOT / "schemas" / "envelope-v1.schema.json": json.dumps(ENVELOPE_SCHEMA, indent=2) + "\n",
}


def main() -> None:
    for path, text in GENERATED.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
