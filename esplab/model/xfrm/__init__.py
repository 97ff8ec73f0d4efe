"""The XFRM SAD/SPD model and ``ip xfrm`` in iproute2's grammar."""
