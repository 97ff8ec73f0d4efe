"""The software ESP core (RFC 4303) as Linux runs it, and its join to the XFRM tables."""
