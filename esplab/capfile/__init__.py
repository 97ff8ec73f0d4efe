"""Real captures: decode and diagnose ESP traffic from a board, given its SAs."""
