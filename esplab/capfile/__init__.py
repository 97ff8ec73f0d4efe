"""Real captures: decode and diagnose ESP traffic from a board, given its SAs.

``esplab decode`` and ``esplab diagnose`` (``cli``) read a pcap/pcapng capture
(``frames``, streaming, memory flat whatever the size) and an SA file in one of
three forms (``safile``; a pasted ``ip xfrm state`` is checked by ``xfrmdump``).
For each frame ``linklayer`` finds the ESP, ``decoder`` checks and decrypts it with
the keys of its SA (``opener``, on the software ESP core; ``inner`` reads the packet
it carried) and ``sequence`` follows its sequence number; the verdicts are plain data
(``records``), written by ``formats`` as JSON lines and drawn by ``report`` as rich
tables. ``pipeline`` is the loop, ``parallel`` the same loop over several
processes. ``diagnose`` runs the table of known driver and configuration mistakes
(``hypotheses``, on the trial machinery of ``trials``) on the packets that fail.

Nothing here imports scapy: decode starts fast and runs on bytes.
"""
