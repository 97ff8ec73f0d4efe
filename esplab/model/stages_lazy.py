"""Journey stages whose decision text is formatted only when someone reads it.

Every descriptor the engine runs yields several stages; formatting their decision
lines (addresses in hex, lengths, sequence numbers) costs more than the rest of the
stage. The engine uses the journey's own lazy stage
(:class:`esplab.model.stages.LazyTextStage`) under the name :class:`LazyStage`.
"""

from __future__ import annotations

from esplab.model.stages import LazyTextStage as LazyStage

__all__ = ["LazyStage"]
