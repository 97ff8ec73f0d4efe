"""``ip xfrm`` as iproute2 6.15 parses and prints it (``ip/xfrm_state.c``, ``ip/xfrm_policy.c``,
``ip/ipxfrm.c``), ``ip xfrm monitor`` and the loader of pasted ``ip xfrm`` output."""
