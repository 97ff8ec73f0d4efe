"""Journey stages whose decision text is formatted only when someone reads it.

Every descriptor the engine runs yields several stages; formatting their decision
lines (addresses in hex, lengths, sequence numbers) costs more than the rest of the
stage. :class:`LazyStage` is a :class:`~esplab.model.journey.Stage` that keeps the
template and its arguments and formats ``decision`` on first access, so a run
without tracing pays almost nothing for it. It compares, prints and copies like
any Stage.
"""

from __future__ import annotations

from typing import Any

from esplab.model.journey import Stage

__all__ = ["LazyStage"]


class LazyStage(Stage):
    """A Stage with ``decision`` = ``decision.format(*args)``, formatted when first read.

    The parameters are Stage's, in its order, plus ``args``; without ``args`` the
    decision is taken as it is (so ``dataclasses.replace`` works).
    """

    def __init__(self, tap: str, device: str, decision: str, why: str = "",
                 fidelity: Any = "C", counters: dict[str, int] | None = None,
                 data: bytes | None = None, kind: str = "ip", drop: str | None = None,
                 meta: dict[str, Any] | None = None, args: tuple[Any, ...] = ()) -> None:
        # Assigned directly: dataclass __init__ would want the finished decision text.
        d = self.__dict__
        d["tap"] = tap
        d["device"] = device
        d["_template"] = decision
        d["_args"] = args
        d["why"] = why
        d["fidelity"] = fidelity
        d["counters"] = {} if counters is None else counters
        d["data"] = data
        d["kind"] = kind
        d["drop"] = drop
        d["meta"] = {} if meta is None else meta

    @property
    def decision(self) -> str:
        d = self.__dict__
        text: str | None = d.get("_decision")
        if text is None:
            args = d["_args"]
            text = d["_decision"] = d["_template"].format(*args) if args else d["_template"]
        return text

    @decision.setter
    def decision(self, text: str) -> None:
        self.__dict__["_decision"] = text
