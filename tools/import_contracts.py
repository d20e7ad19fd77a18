"""An import-linter contract that finds import cycles between single modules.

import-linter's own `acyclic_siblings` compares the children of a package, each squashed
with its descendants, so it cannot see a cycle between a package's face (`__init__`) and a
module inside it, such as `labmgr.cli` -> `labmgr.cli.app` -> `labmgr.cli`. This contract
works on single modules, counts every import grimp finds (inside functions too; only
`if TYPE_CHECKING:` blocks are left out when the session says so), and also counts
`from package import submodule` as importing `package`, whose `__init__` that line runs.

    [[tool.importlinter.contracts]]
    name = "No import cycles in evals"
    type = "acyclic_modules"
    containers = ["evals"]
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

__all__ = ["AcyclicModulesContract", "import_cycles"]

_FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\b")


def _inside(module: str, containers: Iterable[str]) -> bool:
    return any(module == c or module.startswith(c + ".") for c in containers)


def _edges(graph: grimp.ImportGraph, modules: set[str]) -> dict[str, set[str]]:
    """Each module's imports among `modules`, with `from P import sub` counted as P too."""
    edges: dict[str, set[str]] = {module: set() for module in modules}
    for importer in modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            if imported in modules and imported != importer:
                edges[importer].add(imported)
            parent = imported.rpartition(".")[0]
            if parent not in modules or parent == importer:
                continue
            for detail in graph.get_import_details(importer=importer, imported=imported):
                match = _FROM_IMPORT.match(detail["line_contents"])
                if match and match.group(1) == parent:
                    edges[importer].add(parent)
    return edges


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _a_cycle(edges: dict[str, set[str]], component: list[str]) -> list[str]:
    """One closed path through a component, for the report: start, …, start."""
    members = set(component)
    start = component[0]
    path, seen = [start], {start}
    node = start
    while True:
        following = sorted(edges[node] & members)
        if start in following and len(path) > 1:
            return [*path, start]
        unseen = [m for m in following if m not in seen]
        node = unseen[0] if unseen else following[0]
        if node in seen:
            return [*path[path.index(node) :], node]
        path.append(node)
        seen.add(node)


class AcyclicModulesContract(Contract):
    """No import cycle between any two modules inside `containers`."""

    type_name = "acyclic_modules"

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        containers = list(self.containers)  # type: ignore[call-overload]
        modules = {m for m in graph.modules if _inside(m, containers)}
        edges = _edges(graph, modules)
        cycles = [_a_cycle(edges, component) for component in import_cycles(edges)]
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(f"Import cycle ({len(cycle) - 1} modules):", bold=True)
            output.indent_cursor()
            output.print_error(" -> ".join(cycle), bold=False)
            output.new_line()
