"""Prints how many bytes stage 0's predicted peak drops between two
dist-opt reports (--dist-report)."""
import json
import sys

before, after = (json.load(open(p))["estimate"]["peak_memory_bytes"][0]
                 for p in sys.argv[1:3])
print(f"ZeRO-1 saves {before - after} bytes per stage")
