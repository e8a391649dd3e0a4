#!/usr/bin/env python3
"""Adds up JUnit XML results of every suite and prints one closing line:
"N passed, N failed, N skipped". Exits non-zero when anything failed or
when no test ran at all."""
import sys
import xml.etree.ElementTree as ET


def count(path):
    passed = failed = skipped = 0
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(paths):
    total = [0, 0, 0]
    for path in paths:
        try:
            p, f, s = count(path)
        except (OSError, ET.ParseError) as err:
            print(f"error: cannot read test results {path}: {err}")
            total[1] += 1
            continue
        print(f"  {path.rsplit('/', 1)[-1]}: {p} passed, {f} failed, {s} skipped")
        for i, n in enumerate((p, f, s)):
            total[i] += n
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if total[1] or total[0] == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
