"""The USB gadget script against a stand-in configfs tree: the drive is always read-only."""
import pathlib
import subprocess

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "board" / "usb-gadget" / "usb-gadget.sh"


def gadget(root, *args, check=True, owner=None):
    env = {"GADGET_ROOT": str(root), "UDC": "fake-udc", "PATH": "/usr/bin:/bin"}
    if owner:
        env["IMAGE_OWNER"] = owner
    r = subprocess.run(["sh", str(SCRIPT), *args], env=env, capture_output=True, text=True)
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
    # The kernel is handed the image the script opened (its fd 3), never the path to open again.
    assert (lun / "file").read_text().strip() == "/proc/self/fd/3"
    assert (lun / "removable").read_text().strip() == "1"
    assert (g / "UDC").read_text().strip() == "fake-udc"
    assert (g / "configs" / "c.1" / "mass_storage.usb0").is_symlink()

    rebuilt = tmp_path / "usb2.img"
    rebuilt.write_bytes(b"\0" * 2048)
    gadget(root, "refresh", rebuilt)
    assert (lun / "ro").read_text().strip() == "1"
    assert (lun / "file").read_text().strip() == "/proc/self/fd/3"

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


def test_a_link_or_another_users_file_in_place_of_the_image_is_refused(tmp_path):
    """Issue 27: the image is the app user's, in a directory of theirs; the script runs as root.
    A symbolic link in its place (to /etc/shadow, say), or a file of another user, is refused
    before anything reaches the gadget."""
    import os
    import pwd
    root = tmp_path / "usb_gadget"
    root.mkdir()
    secret = tmp_path / "shadow"
    secret.write_text("root:SECRET:19000:0:99999:7:::\n")
    link = tmp_path / "usb.img"
    link.symlink_to(secret)
    me = pwd.getpwuid(os.getuid()).pw_name
    r = gadget(root, "up", link, check=False, owner=me)
    assert r.returncode != 0 and "symbolic link" in r.stderr, r.stderr
    lun = root / "bikecomputer" / "functions" / "mass_storage.usb0" / "lun.0"
    assert not (lun / "file").exists() or (lun / "file").read_text().strip() == ""
    other = "nobody" if me != "nobody" else "root"
    r = gadget(root, "up", secret, check=False, owner=other)
    assert r.returncode != 0 and f"not a regular file of {other}" in r.stderr, r.stderr
    assert not (lun / "file").exists() or (lun / "file").read_text().strip() == ""
    fifo = tmp_path / "fifo.img"
    os.mkfifo(fifo)
    r = gadget(root, "up", fifo, check=False, owner=me)
    assert r.returncode != 0 and "not a regular file" in r.stderr, r.stderr


def test_a_refused_refresh_leaves_the_drive_as_it_was(tmp_path):
    """The new image is checked before the old one is ejected: a link in its place does not
    leave the drive empty (found in the VM: the drive had no medium after a refused refresh)."""
    import os
    import pwd
    me = pwd.getpwuid(os.getuid()).pw_name
    root = tmp_path / "usb_gadget"
    root.mkdir()
    image = tmp_path / "usb.img"
    image.write_bytes(b"\0" * 1024)
    gadget(root, "up", image, owner=me)
    lun = root / "bikecomputer" / "functions" / "mass_storage.usb0" / "lun.0"
    link = tmp_path / "planted.img"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").write_text("not the image\n")
    r = gadget(root, "refresh", link, check=False, owner=me)
    assert r.returncode != 0 and "symbolic link" in r.stderr, r.stderr
    assert (lun / "file").read_text().strip() == "/proc/self/fd/3", "the medium was not ejected"
