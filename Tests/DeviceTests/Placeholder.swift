import Device
