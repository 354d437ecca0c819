"""An openant stand-in for the ANT+ glue's tests (test_radios_faked.py, test_ant_supervision.py):
a channel that records what the glue configured, and the module table to put in sys.modules with
a Node class of the test's own (what its stick does)."""
import types


class FakeChannel:
    class Type:
        BIDIRECTIONAL_RECEIVE = 0

    def __init__(self):
        self.on_broadcast_data = None
        self.opened = False
        self.id = None

    def set_id(self, number, device_type, trans): self.id = (number, device_type, trans)
    def enable_extended_messages(self, on): self.extended = on
    def set_search_timeout(self, t): pass
    def set_period(self, p): self.period = p
    def set_rf_freq(self, f): self.rf = f
    def open(self): self.opened = True
    def close(self): self.opened = False


def modules(node_class) -> dict:
    """sys.modules entries for `from openant... import`: the devices' network key, FakeChannel,
    and `node_class` as openant.easy.node.Node."""
    return {
        "openant": types.ModuleType("openant"),
        "openant.devices": types.SimpleNamespace(ANTPLUS_NETWORK_KEY=[0] * 8),
        "openant.easy": types.ModuleType("openant.easy"),
        "openant.easy.channel": types.SimpleNamespace(Channel=FakeChannel),
        "openant.easy.node": types.SimpleNamespace(Node=node_class),
    }
