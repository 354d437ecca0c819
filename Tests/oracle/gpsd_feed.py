"""Runs a real gpsd and feeds it a receiver log through a pseudo-terminal, with gpsfake's own
library (python3-gps: gps.fake), under the test's control. Run with Debian's /usr/bin/python3
(the venv does not see python3-gps):

    /usr/bin/python3 Tests/oracle/gpsd_feed.py PORT CYCLE_S LOG

1. spawns gpsd (-N -b -S PORT, its control socket private) and prints "listening PORT";
2. waits for a line on standard input (the test sends it once the app has connected and is
   watching, so no sentence is fed before a client can see its report);
3. adds the log as a fake GPS on a pty, waits for gpsd to open it, then writes one sentence or
   binary packet every CYCLE_S seconds, printing "fed N" at the end;
4. waits for a second line on standard input (or end of input), then stops gpsd.

gpsfake's command line cannot do step 2 (it feeds at once, and gpsd discards what reached the
pty before it opened it) nor stop without a client of its own; this keeps its packet splitting
of binary logs (TestLoad) and its daemon handling.
"""
import sys
import time

import gps.fake as gpsfake


def main() -> int:
    port, cycle_s, log = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    session = gpsfake.TestSession(port=port, options="", timeout=0)
    session.spawn()
    print(f"listening {port}", flush=True)
    try:
        if not sys.stdin.readline():
            return 0
        name = session.gps_add(log, speed=115200, oneshot=True)
        fake = session.fakegpslist[name]
        # gpsd opens the pty when told (+device on its control socket) and flushes its input:
        # wait until it has, as gpsfake itself does before feeding.
        time.sleep(1.5)
        count = len(fake.testload.sentences)
        for _ in range(count):
            fake.read()  # whatever gpsd wrote to the "receiver" (probes)
            fake.feed()
            if cycle_s > 0:
                time.sleep(cycle_s)
        print(f"fed {count}", flush=True)
        sys.stdin.readline()
    finally:
        session.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
