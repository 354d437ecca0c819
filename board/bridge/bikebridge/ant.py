"""ANT+ through a USB stick with openant: one receive channel per paired device (device number 0
= pair with the first found), extended messages on so every page carries the channel id, and each
8-byte broadcast page forwarded raw."""
import logging

from . import protocol

log = logging.getLogger("bikebridge.ant")

# Channel periods (1/32768 s) per device type, from the ANT+ profiles.
PERIODS = {120: 8070, 11: 8182, 121: 8086, 122: 8102, 123: 8118}
RF_FREQUENCY = 57


def channel_id_from(data, fallback: protocol.AntId) -> protocol.AntId:
    """openant hands extended messages as longer arrays: bytes 9–10 device number, 11 device
    type, 12 transmission type."""
    if len(data) >= 13:
        return protocol.AntId(data[9] | data[10] << 8, data[11], data[12])
    return fallback


def run(bridge, devices) -> None:
    """devices: [(device_type, device_number, transmission_type)]. Blocks in openant's loop."""
    from openant.devices import ANTPLUS_NETWORK_KEY  # lazy: tests do not need openant or a stick
    from openant.easy.channel import Channel
    from openant.easy.node import Node

    node = Node()
    node.set_network_key(0x00, ANTPLUS_NETWORK_KEY)
    for device_type, number, trans in devices:
        fallback = protocol.AntId(number, device_type, trans)
        ch = node.new_channel(Channel.Type.BIDIRECTIONAL_RECEIVE, 0x00, 0x01)

        def on_data(data, fallback=fallback, device_type=device_type):
            who = channel_id_from(data, fallback)
            bridge.notify(who, device_type, bytes(data[:8]))

        ch.on_broadcast_data = on_data
        ch.on_burst_data = on_data
        ch.set_id(number, device_type, trans)
        ch.enable_extended_messages(1)
        ch.set_search_timeout(0xFF)
        ch.set_period(PERIODS[device_type])
        ch.set_rf_freq(RF_FREQUENCY)
        ch.open()
        bridge.link(fallback, device_type, protocol.LINK_SEARCHING)
        log.info("ANT+ channel open: type %d number %d", device_type, number)
    try:
        node.start()
    finally:
        node.stop()
