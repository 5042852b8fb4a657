"""What the apps ``tests.proxy_harness.app_results`` runs share: each case of ``APP_CASES`` run
sync, then async, against ``APP_SERVE_URL``, one JSON line per case. An app imports it from its
own folder (the folder of the script Python runs)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Coroutine
from typing import Any

Case = dict[str, Any]


def run_cases(
    run: Callable[[Case, str], Any], run_async: Callable[[Case, str], Coroutine[Any, Any, Any]]
) -> None:
    url = os.environ["APP_SERVE_URL"]
    for case in json.loads(os.environ["APP_CASES"]):
        sync = run(case, url)
        print(
            json.dumps({"id": case["id"], "sync": sync, "async": asyncio.run(run_async(case, url))})
        )
