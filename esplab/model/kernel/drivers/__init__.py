"""Device drivers: the EIP-93 crypto engine driver and the Airoha Ethernet xfrmdev_ops."""
