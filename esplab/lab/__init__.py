"""Lab files: loading, checking and running them."""
