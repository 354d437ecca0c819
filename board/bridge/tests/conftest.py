import pathlib
import sys

BRIDGE = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BRIDGE))
