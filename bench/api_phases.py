#!/usr/bin/env python3
"""Where a sandbox's create + first exec goes, call by call, over one kept-alive REST connection per cycle:
sandbox_create, the first sandbox_exec of `true`, a second one, sandbox_remove. Medians in ms.

    api_phases.py URL TOKEN [CYCLES] [PAUSE_S] [PERIOD_S]

PAUSE_S between cycles (default 0) lets the daemon's pool refill finish before the next create, which separates
what a create and a first exec cost from what the refill running beside them costs. With PERIOD_S, a cycle starts
PERIOD_S after the last one started (at once when that one took longer), and PAUSE_S is not used: the same
arrival rate for every daemon compared, however long its own calls take.
"""
import http.client
import json
import statistics
import sys
import time


def main():
    url, token = sys.argv[1], sys.argv[2]
    cycles = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    pause = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    period = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    host = url.split("//", 1)[1]
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

    def call(conn, tool, body):
        conn.request("POST", "/api/v1/tools/" + tool, json.dumps(body), headers)
        r = conn.getresponse()
        data = r.read()
        if r.status != 200:
            sys.exit("api_phases: %s failed: %s" % (tool, data.decode(errors="replace")))
        return json.loads(data)["result"]

    phases = {"create": [], "first exec": [], "create + first exec": [], "second exec": [], "remove": []}
    for _ in range(cycles):
        conn = http.client.HTTPConnection(host)
        t0 = time.perf_counter()
        sandbox = call(conn, "sandbox_create", {})["id"]
        t1 = time.perf_counter()
        call(conn, "sandbox_exec", {"sandbox": sandbox, "argv": ["true"]})
        t2 = time.perf_counter()
        call(conn, "sandbox_exec", {"sandbox": sandbox, "argv": ["true"]})
        t3 = time.perf_counter()
        call(conn, "sandbox_remove", {"sandbox": sandbox})
        t4 = time.perf_counter()
        conn.close()
        for name, value in (("create", t1 - t0), ("first exec", t2 - t1), ("create + first exec", t2 - t0),
                            ("second exec", t3 - t2), ("remove", t4 - t3)):
            phases[name].append(value * 1000)
        if period:
            time.sleep(max(0.0, t0 + period - time.perf_counter()))
        else:
            time.sleep(pause)
    if period:
        print("cycles %d, one every %.3f s" % (cycles, period))
    else:
        print("cycles %d, %.1f s between them" % (cycles, pause))
    for name, values in phases.items():
        print("  %-22s p50 %7.2f ms" % (name, statistics.median(values)))


if __name__ == "__main__":
    main()
