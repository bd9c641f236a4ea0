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
from xml.sax.saxutils import XMLGenerator
from xml.sax.xmlreader import AttributesImpl

from .priors import Prior, sign_index
from .scenario import Scenario
from .state import RoundRecord

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
        xml = XMLGenerator(handle, "utf-8", short_empty_elements=True)
        xml.startDocument()
        _start(xml, "graphml", {"xmlns": NS})
        for key, target, name, kind in KEYS:
            _start(xml, "key", {"id": key, "for": target, "attr.name": name, "attr.type": kind})
            xml.endElement("key")
        _start(xml, "graph", {"id": "G", "edgedefault": "directed"})
        _data(xml, "g_run", self.run_id)
        _data(xml, "g_round", str(record.round))
        if self.relation:
            _data(xml, "g_relation", self.relation)
        agents = record.state.agents
        for name, agent in agents.items():
            _start(xml, "node", {"id": _text(name)})
            for key, value in self.nodes.get(name, {}).items():
                if value:
                    _data(xml, key, value)
            _data(xml, "n_emotion", repr(agent.emotion))
            xml.endElement("node")
        for source, agent in agents.items():
            signs = self.signs.get(source, {})
            for target, rel in agent.relations.items():
                _start(xml, "edge", {"source": _text(source), "target": _text(target)})
                _data(xml, "e_fav", repr(rel.fav))
                _data(xml, "e_status", rel.status.value)
                if target in signs:
                    _data(xml, "e_prior", str(signs[target]))
                xml.endElement("edge")
        xml.endElement("graph")
        xml.endElement("graphml")
        xml.endDocument()


def _start(xml: XMLGenerator, tag: str, attrs: dict[str, str]) -> None:
    xml.startElement(tag, AttributesImpl(attrs))


def _data(xml: XMLGenerator, key: str, value: str) -> None:
    _start(xml, "data", {"key": key})
    xml.characters(_text(value))
    xml.endElement("data")


def _text(value: str) -> str:
    """``value`` without the characters XML 1.0 cannot hold."""
    return _NOT_XML.sub("", value)
