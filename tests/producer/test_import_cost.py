"""Import cost (issue 24): a producer loads only the message codecs it speaks, lazily.

Each check runs in a fresh interpreter (a subprocess): what this test process imported already
must not count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from aiokafkawire import Producer  # noqa: F401
from aiokafkawire.metrics import api_name
assert api_name(0) == "Produce" and api_name(2) == "ListOffsets"  # names, no class lookups
loaded = sorted(
    m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("aiokafkawire.protocol.messages.")
)
print(json.dumps({"messages": loaded, "crc32c": "crc32c" in sys.modules}))
"""


def _probe(code: str) -> dict[str, object]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_importing_the_producer_loads_no_codec_of_an_api_it_does_not_speak() -> None:
    result = _probe(PROBE)
    loaded = result["messages"]
    assert isinstance(loaded, list)
    # Consumer, group, share and admin APIs stay unloaded until used.
    for module in ("fetch", "join_group", "sync_group", "share_fetch", "create_topics"):
        assert module not in loaded, f"{module} imported with the producer: {loaded}"
    assert len(loaded) < 20, loaded  # a handful, not all ~84
    assert result["crc32c"] is False  # the pure-Python CRC's package loads on first use


def test_message_names_and_type_tables_load_their_module_on_first_use() -> None:
    code = """
import json, sys
from aiokafkawire.protocol import messages
before = "aiokafkawire.protocol.messages.fetch" in sys.modules
fetch = messages.REQUEST_TYPES[1]
by_name = messages.FetchResponse
ok = (
    fetch is messages.FetchRequest
    and by_name is messages.RESPONSE_TYPES[1]
    and fetch.API_KEY == 1
    and 1 in messages.REQUEST_TYPES
    and 999 not in messages.REQUEST_TYPES
    and messages.REQUEST_TYPES.get(999) is None
    and len(messages.REQUEST_TYPES) == len(messages.SUPPORTED_VERSIONS)
    and "MetadataRequest" in dir(messages)
)
try:
    messages.NoSuchMessage
    missing = False
except AttributeError:
    missing = True
print(json.dumps({"before": before, "ok": ok, "missing": missing,
                  "after": "aiokafkawire.protocol.messages.fetch" in sys.modules}))
"""
    result = _probe(code)
    assert result == {"before": False, "ok": True, "missing": True, "after": True}
