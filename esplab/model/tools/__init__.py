"""What userspace types and reads: iproute2's ``ip xfrm`` grammar and printers, xdpsock."""
