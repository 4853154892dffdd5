#!/usr/bin/env python3
"""The startup_order_current test: isb's start-up functions lie together at the start of its text.

src/cli/startup.order lists the functions `isb run` runs (scripts/startup_order.sh writes it); the link places them
first (CMakeLists.txt). Fails when the list has lost names (fewer than 90% of them are left in the binary: run
scripts/startup_order.sh again; functions that joined the start-up path since are not seen) or when the listed
functions spread over more than twice their own size: the link did not follow the list (lld not used, or the option
lost: unordered, they spread over the whole text, 13 MB), or isb's own files on the path, which move whole, grew.
Usage: check_startup_order.py ISB_BINARY ORDER_FILE
"""
import subprocess
import sys


def main():
    binary, order_file = sys.argv[1], sys.argv[2]
    names = [line.strip() for line in open(order_file) if line.strip()]
    if len(names) < 100:
        sys.exit(f"{order_file}: {len(names)} names; a trace of isb run gives hundreds")
    symbols = {}
    nm = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True)
    for line in nm.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3:  # no size: _init, crtbegin's, an ifunc's entry in .iplt, which no order moves
            fields.insert(1, "0")
        if len(fields) == 4 and fields[2] in "TtWwi":
            symbols.setdefault(fields[3], []).append((int(fields[0], 16), int(fields[1], 16)))
    sections = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    text = [line.split("]", 1)[1].split() for line in sections.splitlines() if " .text " in line]
    if len(text) != 1:
        sys.exit(f"{binary}: no single .text section")
    text_start = int(text[0][2], 16)

    present = [n for n in names if n in symbols]
    if len(present) < 0.9 * len(names):
        missing = [n for n in names if n not in symbols][:5]
        sys.exit(f"{order_file} is stale: {len(present)} of its {len(names)} functions are in {binary} "
                 f"(missing, among others: {', '.join(missing)}); run scripts/startup_order.sh BUILD_DIR")
    spans = [s for n in present for s in symbols[n] if s[1] > 0]
    size = sum(s for _, s in spans)
    end = max(a + s for a, s in spans)
    allowed = 2 * size + 65536  # isb's own files move whole: about 1.6 times the functions' size
    if end - text_start > allowed:
        far = max(present, key=lambda n: max((a for a, s in symbols[n] if s > 0), default=0))
        sys.exit(f"{binary}: the {len(present)} start-up functions ({size} bytes) spread {end - text_start} bytes "
                 f"into the text, beyond {allowed}: the link did not follow {order_file}, or the files that hold "
                 f"them grew (furthest: {far} at {hex(max(a for a, _ in symbols[far]))})")
    print(f"{len(present)} of {len(names)} start-up functions, {size} bytes, within the first "
          f"{end - text_start} bytes of the text")


if __name__ == "__main__":
    main()
