"""The signed network of a run as GraphML, one file per round, for network tools (networkx,
igraph, Gephi).

One static file per round (``graphml/round_000003.graphml``) rather than one dynamic file:
every tool reads a plain directed GraphML graph, and writing one round at a time keeps the
export streaming. Nodes are the agents (role, archetype, faction, emotion); each directed
edge ``source -> target`` is how the source sees the target: ``fav`` (-1..1), ``status``
and, when the run has a relational prior, ``prior`` (the stated sign -1, 0 or +1 of the
pair) and its ``prior_relation``. The graph carries ``run_id`` and ``round``. Written with
the standard library's XML writer; characters XML 1.0 cannot hold are dropped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import BinaryIO

from ..core.priors import Prior, sign_index
from ..core.scenario import Scenario
from ..core.state import RoundRecord

FOLDER = "graphml"
NS = "http://graphml.graphdrawing.org/xmlns"
#: (id, for, name, type) of every GraphML attribute written.
KEYS = (
    ("g_run", "graph", "run_id", "string"),
    ("g_round", "graph", "round", "int"),
    ("g_relation", "graph", "prior_relation", "string"),
    ("n_role", "node", "role", "string"),
    ("n_archetype", "node", "archetype", "string"),
    ("n_faction", "node", "faction", "string"),
    ("n_emotion", "node", "emotion", "double"),
    ("e_fav", "edge", "fav", "double"),
    ("e_status", "edge", "status", "string"),
    ("e_prior", "edge", "prior", "int"),
)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class GraphWriter:
    """Writes each round's network as it streams by (``write``): one file per round."""

    def __init__(self, folder: Path, run_id: str, scenario: Scenario, prior: Prior | None) -> None:
        self.folder = folder
        self.run_id = run_id
        self.relation = prior.relation if prior is not None and prior.relation else ""
        self.signs = sign_index(prior) if self.relation else {}
        faction_of = {name: f for f, names in scenario.factions.items() for name in names}
        self.nodes = {
            a.name: {
                "n_role": a.role,
                "n_archetype": a.archetype.value,
                "n_faction": faction_of.get(a.name, ""),
            }
            for a in scenario.agents
        }
        folder.mkdir(parents=True, exist_ok=True)

    def write(self, record: RoundRecord) -> Path:
        """Write ``record``'s network; returns its path."""
        path = self.folder / f"round_{record.round:06d}.graphml"
        with open(path, "wb") as handle:
            self._graph(handle, record)
        return path

    def _graph(self, handle: BinaryIO, record: RoundRecord) -> None:
        doc = _Doc(handle)
        doc.start("graphml", {"xmlns": NS})
        for key, target, name, kind in KEYS:
            doc.start("key", {"id": key, "for": target, "attr.name": name, "attr.type": kind})
            doc.end("key")
        doc.start("graph", {"id": "G", "edgedefault": "directed"})
        doc.data("g_run", self.run_id)
        doc.data("g_round", str(record.round))
        if self.relation:
            doc.data("g_relation", self.relation)
        agents = record.state.agents
        ids = {name: _text(name) for name in agents}
        for name, agent in agents.items():
            doc.start("node", {"id": ids[name]})
            for key, value in self.nodes.get(name, {}).items():
                if value:
                    doc.data(key, value)
            doc.data("n_emotion", repr(agent.emotion))
            doc.end("node")
        for source, agent in agents.items():
            signs = self.signs.get(source, {})
            for target, rel in agent.relations.items():
                doc.start("edge", {"source": ids[source], "target": ids[target]})
                doc.data("e_fav", repr(rel.fav))
                doc.data("e_status", rel.status.value)
                if target in signs:
                    doc.data("e_prior", str(signs[target]))
                doc.end("edge")
        doc.end("graph")
        doc.end("graphml")
        doc.xml.endDocument()


class _Doc:
    """An XML document written element by element with the standard library's SAX writer
    (imported here: it imports urllib, which an export without GraphML does not need)."""

    def __init__(self, handle: BinaryIO) -> None:
        from xml.sax.saxutils import XMLGenerator
        from xml.sax.xmlreader import AttributesImpl

        self.xml = XMLGenerator(handle, "utf-8", short_empty_elements=True)
        self.xml.startDocument()
        self._attributes = AttributesImpl

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        self.xml.startElement(tag, self._attributes(attrs))

    def end(self, tag: str) -> None:
        self.xml.endElement(tag)

    def data(self, key: str, value: str) -> None:
        self.start("data", {"key": key})
        self.xml.characters(_text(value))
        self.xml.endElement("data")


def _text(value: str) -> str:
    """``value`` without the characters XML 1.0 cannot hold."""
    return _NOT_XML.sub("", value)
