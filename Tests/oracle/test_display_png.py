"""The PNG writer checked by an independent decoder (Python's zlib and struct), pixel for pixel
against the PBM of the same screen, both written by `bikesim screens`."""
import struct
import subprocess
import zlib


def read_png(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"{path.name}: bad CRC in {kind}"
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert (depth, colour, interlace) == (1, 0, 0)
    raw = zlib.decompress(idat)  # checks the Adler-32 too
    row_bytes = (width + 7) // 8
    assert len(raw) == height * (row_bytes + 1)
    pixels = []
    for y in range(height):
        row = raw[y * (row_bytes + 1):(y + 1) * (row_bytes + 1)]
        assert row[0] == 0
        pixels.append([(row[1 + x // 8] >> (7 - x % 8)) & 1 for x in range(width)])
    return width, height, pixels


def read_pbm(path):
    tokens = [t for line in path.read_text().splitlines() if not line.startswith("#") for t in line.split()]
    assert tokens[0] == "P1"
    width, height = int(tokens[1]), int(tokens[2])
    bits = "".join(tokens[3:])
    return width, height, [[int(bits[y * width + x]) for x in range(width)] for y in range(height)]


def test_png_matches_pbm(bikesim, tmp_path):
    subprocess.run([bikesim, "screens", "--out", str(tmp_path), "--scale", "2", "--pbm"], check=True, capture_output=True)
    pngs = sorted(tmp_path.glob("*.png"))
    assert len(pngs) >= 20
    for png in pngs:
        w, h, pixels = read_png(png)
        pw, ph, expected = read_pbm(png.with_suffix(".pbm"))
        # --scale 2 for the OLEDs; the 400x240 panel's pictures at half that (docs/screens.md).
        k = 1 if pw > 128 else 2
        assert (w, h) == (pw * k, ph * k), f"{png.name}: {w}x{h} for a {pw}x{ph} panel"
        assert any(any(row) for row in expected), f"{png.name} is blank"
        for y in range(h):
            assert pixels[y] == [expected[y // k][x // k] for x in range(w)], f"{png.name} row {y}"
