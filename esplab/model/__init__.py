"""The emulated device model: XFRM, the software ESP core, the EIP-93 engine, ports."""
