"""Runs a real gpsd and feeds it a receiver log through a pseudo-terminal, with gpsfake's own
library (python3-gps: gps.fake), under the test's control. Run with Debian's /usr/bin/python3
(the venv does not see python3-gps):

    /usr/bin/python3 Tests/oracle/gpsd_feed.py PORT CYCLE_S LOG

1. spawns gpsd (-N -b -S PORT, its control socket private) and prints "listening PORT";
2. waits for a line on standard input (the test sends it once the app has connected and is
   watching, so no sentence is fed before a client can see its report);
3. adds the log as a fake GPS on a pty, waits for gpsd to open it, then writes one sentence or
   binary packet every CYCLE_S seconds: all of them for "go", printing "fed N"; for "feed K",
   the next K, printing "fed N" (N so far, "done" after it at the end), and waits for the next
   line: the test feeds a chunk at a time and waits for the app to catch up in between, since
   gpsd drops a client that falls a socket buffer behind (a "short write"), and a replay far
   faster than real time on a loaded host would lose reports that way;
4. waits for a line on standard input (or end of input), then stops gpsd.

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
        command = sys.stdin.readline().split()
        if not command:
            return 0
        name = session.gps_add(log, speed=115200, oneshot=True)
        fake = session.fakegpslist[name]
        # gpsd opens the pty when told (+device on its control socket) and flushes its input:
        # wait until it has, as gpsfake itself does before feeding.
        time.sleep(1.5)
        count = len(fake.testload.sentences)
        fed = 0
        while command and command[0] in ("go", "feed"):
            want = count - fed if command[0] == "go" else min(int(command[1]), count - fed)
            for _ in range(want):
                fake.read()  # whatever gpsd wrote to the "receiver" (probes)
                fake.feed()
                if cycle_s > 0:
                    time.sleep(cycle_s)
            fed += want
            if command[0] == "go":
                print(f"fed {fed}", flush=True)
                break
            print(f"fed {fed}" + (" done" if fed == count else ""), flush=True)
            command = sys.stdin.readline().split()
        else:
            return 0
        sys.stdin.readline()
    finally:
        session.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
