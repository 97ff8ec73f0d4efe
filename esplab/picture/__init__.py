"""The journey as a picture: SVG of the topology with the journey drawn on it, and a
self-contained HTML page per lab (no server, no network, no CDN).

:mod:`.svg` draws one journey (``trace ID --svg FILE``); :mod:`.page` builds the
HTML page of a lab (``esplab run LAB --html DIR``): each journey's picture, and for
each stage its decoded packet and its hex, the bytes that stage changed marked and
the ESP header, IV, ciphertext, trailer and ICV in distinct colours.
"""
