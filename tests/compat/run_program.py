"""Runs a program from programs/ on aiokafkawire's compatibility layer (``--compat``) or on the
real aiokafka (no flag).  Used by test_programs.py in a subprocess each time, so the two never
share ``sys.modules``."""

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "--compat":
        from aiokafkawire.compat import install_as_aiokafka

        install_as_aiokafka()
        args = args[1:]
    else:
        import aiokafka

        assert not aiokafka.__name__.startswith("aiokafkawire")
    sys.argv = args
    sys.path.insert(0, str(Path(args[0]).parent))  # the programs' shared _common module
    runpy.run_path(args[0], run_name="__main__")
