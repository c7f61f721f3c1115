// HTTPWire module.
