"""A small query helper over `deepcontext export --format json` output."""


class Node:
    def __init__(self, tree, raw):
        self._tree = tree
        self.id = raw["id"]
        self.parent_id = raw["parent"]
        self.kind = raw["kind"]
        self.name = raw["name"]
        self.file = raw["file"]
        self.line = raw["line"]
        self.children_ids = raw.get("children", [])
        self.exclusive = raw.get("exclusive", {})
        self.inclusive = raw.get("inclusive", {})

    @property
    def parent(self):
        return None if self.parent_id is None else self._tree.nodes[self.parent_id]

    @property
    def children(self):
        return [self._tree.nodes[i] for i in self.children_ids]

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def path(self):
        return list(reversed([self] + list(self.ancestors())))

    def label(self):
        if self.kind == "python":
            return "%s (%s:%d)" % (self.name, self.file.rsplit("/", 1)[-1], self.line)
        return self.name

    def excl(self, metric):
        return self.exclusive.get(metric, {}).get("sum", 0.0)

    def calls(self):
        return self.exclusive.get("calls", {}).get("sum", 0.0)

    def incl(self, metric):
        return self.inclusive.get(metric, 0.0)

    def __repr__(self):
        return " > ".join(n.label() for n in self.path()[1:])


class Tree:
    def __init__(self, data):
        self.data = data
        self.nodes = [Node(self, raw) for raw in data["nodes"]]
        self.metadata = data["sources"][0]["metadata"] if data["sources"] else {}

    @property
    def root(self):
        return self.nodes[0]

    def find(self, kind=None, name=None, file_suffix=None, line=None):
        return [n for n in self.nodes
                if (kind is None or n.kind == kind)
                and (name is None or n.name == name)
                and (file_suffix is None or n.file.endswith(file_suffix))
                and (line is None or n.line == line)]

    def total(self, metric):
        return self.root.incl(metric)
