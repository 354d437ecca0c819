#!/usr/bin/env python3
"""Size of the app's FIT file against the same messages encoded by Garmin's own encoder.

    .venv/bin/python scripts/bench/garmin_encode_size.py RIDE.fit [--out GARMIN.fit]

Reads RIDE.fit with garmin-fit-sdk's Decoder (no scaling, no component expansion, no merged
heart rates, so every message comes back with the fields the file holds, in raw units) and feeds
each message, in file order, to garmin-fit-sdk's Encoder. Prints:

    app_bytes N
    garmin_bytes N
    messages N (by type: record N, hrv N, ...)

Fields the Garmin profile does not name (numeric keys) cannot be given to its encoder; they are
counted and left out (printed as `unknown_fields_dropped N`), which only makes Garmin's file
smaller. Exits 1 when the app's file does not decode.
"""
import argparse
import collections
import sys

from garmin_fit_sdk import Decoder, Encoder, Stream


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fit", help="the app's FIT file")
    ap.add_argument("--out", help="also write Garmin's re-encoded file here")
    a = ap.parse_args()

    data = open(a.fit, "rb").read()
    encoder = Encoder()
    kinds = collections.Counter()
    dropped = 0

    def listener(mesg_num, mesg):
        nonlocal dropped
        clean = {}
        for k, v in mesg.items():
            if isinstance(k, int):
                dropped += 1
                continue
            # Invalid values decode as None, which Garmin's encoder cannot write back: a single
            # one is left out; inside an array (the app pads unused hrv slots with the uint16
            # invalid value) it is written back as that raw invalid value, so both files carry
            # the same arrays.
            if v is None:
                continue
            if isinstance(v, list):
                v = [0xFFFF if x is None else x for x in v]
            clean[k] = v
        kinds[mesg_num] += 1
        encoder.on_mesg(mesg_num, clean)

    decoder = Decoder(Stream.from_byte_array(bytearray(data)))
    _, errors = decoder.read(
        apply_scale_and_offset=False,
        convert_datetimes_to_dates=False,
        convert_types_to_strings=False,
        expand_sub_fields=False,
        expand_components=False,
        merge_heart_rates=False,
        mesg_listener=listener,
    )
    if errors:
        print(f"garmin_encode_size: the Garmin decoder rejected {a.fit}: {errors[0]}", file=sys.stderr)
        return 1
    garmin = encoder.close()
    if a.out:
        open(a.out, "wb").write(garmin)
    print(f"app_bytes {len(data)}")
    print(f"garmin_bytes {len(garmin)}")
    names = {0: "file_id", 8: "hr_zone", 216: "time_in_zone", 18: "session", 19: "lap", 20: "record", 21: "event", 23: "device_info", 34: "activity", 78: "hrv"}
    by_type = ", ".join(f"{names.get(k, k)} {n}" for k, n in kinds.most_common())
    print(f"messages {sum(kinds.values())} (by type: {by_type})")
    print(f"unknown_fields_dropped {dropped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
