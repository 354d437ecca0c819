"""The USB gadget script against a stand-in configfs tree: the drive is always read-only."""
import pathlib
import subprocess

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "board" / "usb-gadget" / "usb-gadget.sh"


def gadget(root, *args, check=True):
    r = subprocess.run(["sh", str(SCRIPT), *args], env={"GADGET_ROOT": str(root), "UDC": "fake-udc", "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_up_refresh_down_keep_the_drive_read_only(tmp_path):
    root = tmp_path / "usb_gadget"
    root.mkdir()
    image = tmp_path / "usb.img"
    image.write_bytes(b"\0" * 1024)
    gadget(root, "up", image)
    g = root / "bikecomputer"
    lun = g / "functions" / "mass_storage.usb0" / "lun.0"
    assert (lun / "ro").read_text().strip() == "1"
    assert (lun / "file").read_text().strip() == str(image)
    assert (lun / "removable").read_text().strip() == "1"
    assert (g / "UDC").read_text().strip() == "fake-udc"
    assert (g / "configs" / "c.1" / "mass_storage.usb0").is_symlink()

    rebuilt = tmp_path / "usb2.img"
    rebuilt.write_bytes(b"\0" * 2048)
    gadget(root, "refresh", rebuilt)
    assert (lun / "ro").read_text().strip() == "1"
    assert (lun / "file").read_text().strip() == str(rebuilt)

    gadget(root, "down")
    assert (g / "UDC").read_text().strip() == "" or not g.exists()


def test_missing_image_says_how_to_build_it(tmp_path):
    root = tmp_path / "usb_gadget"
    root.mkdir()
    r = gadget(root, "up", tmp_path / "nope.img", check=False)
    assert r.returncode != 0 and "bikecomputer usb-image" in r.stderr


def test_script_never_writes_ro_zero():
    text = SCRIPT.read_text()
    assert "echo 1 > \"$LUN/ro\"" in text
    assert "echo 0 > \"$LUN/ro\"" not in text
