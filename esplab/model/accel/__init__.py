"""Speed-ups beside the walk; each must give exactly what the walk gives."""
