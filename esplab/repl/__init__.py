"""The interactive shell: a thin prompt-toolkit loop over the command core."""
