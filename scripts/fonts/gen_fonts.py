#!/usr/bin/env python3
"""Generates Sources/Display/FontTables.swift from the Terminus console fonts.

Source font: Terminus Font by Dimitar Toshkov Zhekov, SIL Open Font License 1.1,
as shipped in the Debian package `console-setup-linux` (/usr/share/consolefonts/*.psf.gz).
Install it with `apt-get install -y console-setup-linux`, then run
    python3 scripts/fonts/gen_fonts.py > Sources/Display/FontTables.swift
The generated file is committed, so building never needs the font package.

Only the glyphs the screens use are kept: printable ASCII (0x20-0x7E) for the text fonts,
digits and ':' '.' '-' ' ' for the digit fonts. Digit fonts are cropped to the rows the digits
ink, and the largest is stretched vertically (six whole rows repeated per glyph, chosen where a
row equals the one above, i.e. in straight vertical strokes) so its digits are 26 px tall.
A large panel (400x240 memory LCD) adds a 12x24 text font and the large and huge digits with
each pixel doubled (24x30 and 32x52): the same glyphs, so every panel reads alike.

Glyph layout in the tables: rows top to bottom, each row ceil(width/8) bytes, most significant
bit = leftmost pixel (as in PSF).
"""
import gzip
import struct
import subprocess
import sys

FONT_DIR = "/usr/share/consolefonts"
PSF2_MAGIC = bytes.fromhex("72b54a86")
ASCII = [chr(c) for c in range(0x20, 0x7F)]
DIGITS = list(" -.0123456789:")


def load_psf(name):
    data = gzip.open(f"{FONT_DIR}/{name}.psf.gz").read()
    if data[:4] == PSF2_MAGIC:
        _, _, header, flags, count, size, height, width = struct.unpack("<8I", data[:32])
        glyphs = data[header:header + count * size]
        table = data[header + count * size:]
        unicode = {}
        if flags & 1:
            index, pos = 0, 0
            while index < count and pos < len(table):
                end = table.index(b"\xff", pos)
                entry = table[pos:end]
                seq_start = entry.find(b"\xfe")
                singles = entry if seq_start < 0 else entry[:seq_start]
                for ch in singles.decode("utf-8"):
                    unicode.setdefault(ch, index)
                pos, index = end + 1, index + 1
        return glyphs, size, height, width, unicode
    mode, size = data[2], data[3]
    count = 512 if mode & 1 else 256
    glyphs = data[4:4 + count * size]
    unicode = {}
    if mode & 2:
        table = data[4 + count * size:]
        index, pos = 0, 0
        while index < count and pos + 1 < len(table):
            (code,) = struct.unpack("<H", table[pos:pos + 2])
            pos += 2
            if code == 0xFFFF:
                index += 1
            elif code == 0xFFFE:
                while pos + 1 < len(table) and struct.unpack("<H", table[pos:pos + 2])[0] != 0xFFFF:
                    pos += 2
            else:
                unicode.setdefault(chr(code), index)
    return glyphs, size, size, 8, unicode


def glyph_rows(font, ch):
    glyphs, size, height, width, unicode = font
    index = unicode.get(ch, ord(ch))
    bpr = (width + 7) // 8
    raw = glyphs[index * size:(index + 1) * size]
    return [int.from_bytes(raw[r * bpr:(r + 1) * bpr], "big") for r in range(height)]


def ink_rows(font, chars):
    rows = [i for ch in chars for i, r in enumerate(glyph_rows(font, ch)) if r]
    return min(rows), max(rows)


def straight_rows(rows, width, halves, per_half, fallback):
    """Rows to double for one glyph: in each half, the `per_half` rows equal to the row above and
    at most half inked (straight vertical strokes or blank space, not bars) nearest the half's
    middle, so stretching never thickens a horizontal bar; `fallback` rows fill in if a half has
    too few."""
    chosen = set()
    for half in halves:
        middle = (half.start + half.stop - 1) / 2
        candidates = sorted((i for i in half if rows[i] == rows[i - 1] and bin(rows[i]).count("1") <= width // 2), key=lambda i: (abs(i - middle), i))
        picked = candidates[:per_half]
        for i in sorted(fallback, key=lambda i: abs(i - middle)):
            if len(picked) == per_half:
                break
            if i in half and i not in picked:
                picked.append(i)
        chosen.update(picked)
    return chosen


def stretch(rows, repeat):
    out = []
    for i, r in enumerate(rows):
        out.append(r)
        if i in repeat:
            out.append(r)
    return out


def magnify(rows, width, scale):
    """Each pixel as a `scale` x `scale` block (nearest neighbour): a larger panel's digits."""
    # Rows are left-aligned in whole bytes (the leftmost pixel in the top bit), in and out.
    bits_in = (width + 7) // 8 * 8
    bits_out = (width * scale + 7) // 8 * 8
    out = []
    for r in rows:
        wide = 0
        for col in range(width):
            bit = (r >> (bits_in - 1 - col)) & 1
            for _ in range(scale):
                wide = (wide << 1) | bit
        out.extend([wide << (bits_out - width * scale)] * scale)
    return out


def build(swift_name, psf, chars, doc, crop=None, repeat=None, scale=1):
    """`repeat`: None, or (halves, rows per half, fallback rows) for `straight_rows`; `scale`: each
    pixel magnified to a scale x scale block after cropping and stretching."""
    font = load_psf(psf)
    _, _, height, width, _ = font
    top, bottom = crop if crop else (0, height - 1)
    table = {}
    for ch in chars:
        rows = glyph_rows(font, ch)[top:bottom + 1]
        table[ch] = stretch(rows, straight_rows(rows, width, *repeat)) if repeat else rows
        if scale > 1:
            table[ch] = magnify(table[ch], width, scale)
    width *= scale
    out_height = len(next(iter(table.values())))
    bpr = (width + 7) // 8
    index = []
    slot = {}
    for code in range(0x20, 0x7F):
        ch = chr(code)
        if ch in table:
            slot[ch] = len(slot)
        index.append(slot.get(ch, 0xFF))
    lines = [f"    /// {doc}", f"    /// Source: {psf}.psf.gz, rows {top}-{bottom}" + (", stretched: 3 straight rows doubled in each half" if repeat else "")
             + (f", each pixel magnified {scale}x{scale}" if scale > 1 else "") + ".",
             f"    public static let {swift_name} = Font(",
             f"        width: {width}, height: {out_height}, bytesPerRow: {bpr},",
             "        glyphIndex: [" + ", ".join(str(i) for i in index) + "],",
             "        glyphs: ["]
    for ch in sorted(slot, key=slot.get):
        data = []
        for row in table[ch]:
            data.extend(row.to_bytes(bpr, "big"))
        lines.append("            " + ", ".join(f"0x{b:02X}" for b in data) + f",  // {ch!r}")
    lines.append("        ])")
    return "\n".join(lines)


def main():
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "console-setup-linux"],
                             capture_output=True, text=True).stdout or "unknown"
    big = load_psf("Lat15-TerminusBold32x16")
    big_top, big_bottom = ink_rows(big, "0123456789")
    # Stretch the 20-row digits to 26 rows: per glyph, three rows doubled in the upper half and
    # three in the lower half, chosen among straight rows (indices relative to the cropped glyph).
    big_repeat = ([range(1, 10), range(10, 20)], 3, [4, 5, 6, 13, 14, 15])
    large = load_psf("Lat15-TerminusBold24x12")
    large_top, large_bottom = ink_rows(large, "0123456789")
    medium = load_psf("Lat15-TerminusBold16")
    medium_top, medium_bottom = ink_rows(medium, "0123456789")
    parts = [
        "// GENERATED by scripts/fonts/gen_fonts.py - do not edit by hand.",
        "//",
        "// Glyphs from Terminus Font, Copyright (c) 2010 Dimitar Toshkov Zhekov, with Reserved Font",
        "// Name \"Terminus Font\", licensed under the SIL Open Font License, Version 1.1",
        f"// (https://openfontlicense.org). Taken from the Debian package console-setup-linux {version},",
        "// /usr/share/consolefonts/Lat15-Terminus*.psf.gz; only the glyphs the screens use are kept.",
        "",
        "extension Font {",
        build("small", "Lat15-Terminus12x6", ASCII, "Small text, 6x12: labels, status lines, summaries."),
        "",
        build("medium", "Lat15-TerminusBold16", ASCII, "Medium bold text, 8x16: titles, alerts."),
        "",
        build("digitsMedium", "Lat15-TerminusBold16", DIGITS, "Medium bold digits, 8 wide.",
              crop=(medium_top, medium_bottom)),
        "",
        build("digitsLarge", "Lat15-TerminusBold24x12", DIGITS, "Large bold digits, 12 wide.",
              crop=(large_top, large_bottom)),
        "",
        build("digitsHuge", "Lat15-TerminusBold32x16", DIGITS, "Huge bold digits, 16 wide, 26 px tall: the primary metric.",
              crop=(big_top, big_bottom), repeat=big_repeat),
        "",
        # A larger panel's fonts (400x240 memory LCD): the same glyphs, bigger.
        build("titleLarge", "Lat15-TerminusBold24x12", ASCII, "Large bold text, 12x24: titles and alerts on a large panel."),
        "",
        build("digitsLarge2x", "Lat15-TerminusBold24x12", DIGITS, "Large bold digits doubled, 24 wide, 30 px tall (a large panel).",
              crop=(large_top, large_bottom), scale=2),
        "",
        build("digitsHuge2x", "Lat15-TerminusBold32x16", DIGITS, "Huge bold digits doubled, 32 wide, 52 px tall: a large panel's primary metric.",
              crop=(big_top, big_bottom), repeat=big_repeat, scale=2),
        "}",
        "",
    ]
    sys.stdout.write("\n".join(parts))


if __name__ == "__main__":
    main()
