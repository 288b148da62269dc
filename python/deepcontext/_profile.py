"""Reading profiles from Python: ``deepcontext.load(path)``.

The tree comes from the same C++ reader as ``deepcontext report`` and
``deepcontext analyze`` (``libdeepcontext_reader.so``, loaded with ctypes),
so Python and the CLI always agree. Node data stays in the library's
column arrays; a ``Node`` is a light handle (profile, index).

User rules (see docs/ANALYZER.md)::

    import deepcontext

    @deepcontext.rule("many_mm")
    def many_mm(profile):
        total = profile.total("cpu_time")
        for node in profile.find(kind="operator", name="aten::mm"):
            if node.inclusive("cpu_time") > 0.2 * total:
                yield deepcontext.Finding(
                    node, title="aten::mm holds the CPU",
                    benefit_seconds=(0, node.inclusive("cpu_time") / 1e9),
                    evidence=[("cpu_time", node.inclusive("cpu_time"), "ns", ">", 0.2 * total)],
                    suggestion="Batch the matrix products.")

Run them with ``deepcontext analyze --rules my_rules.py PROFILE`` or
``profile.findings(rules=[many_mm])``.
"""

import ctypes
import json
import os

from . import _paths

KINDS = ("root", "thread", "python", "operator", "phase", "scope", "native", "gpu_api",
         "gpu_kernel", "gpu_memcpy", "gpu_memset", "gpu_sync", "process", "gpu_instruction")

_lib = None
_registered_rules = []


def _library():
    global _lib
    if _lib is None:
        path = os.environ.get("DEEPCONTEXT_READER_LIB") or os.path.join(
            _paths.home(), "lib", "libdeepcontext_reader.so")
        lib = ctypes.CDLL(path)
        p = ctypes.c_void_p
        signatures = {
            "dc_reader_open": (p, [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int32]),
            "dc_reader_error": (ctypes.c_char_p, [p]),
            "dc_reader_close": (None, [p]),
            "dc_reader_node_count": (ctypes.c_uint32, [p]),
            "dc_reader_string_count": (ctypes.c_uint32, [p]),
            "dc_reader_string_data": (p, [p]),
            "dc_reader_string_offsets": (p, [p]),
            "dc_reader_metric_count": (ctypes.c_uint32, [p]),
            "dc_reader_metric_name": (ctypes.c_char_p, [p, ctypes.c_uint32]),
            "dc_reader_metric_unit": (ctypes.c_char_p, [p, ctypes.c_uint32]),
            "dc_reader_sources_json": (ctypes.c_char_p, [p]),
            "dc_reader_analyze": (ctypes.c_char_p, [p, ctypes.c_char_p, ctypes.c_char_p,
                                                    ctypes.c_int32, ctypes.c_uint32]),
            "dc_reader_diff": (ctypes.c_char_p, [p, p, ctypes.c_char_p]),
        }
        for column in ("parents", "kinds", "names", "files", "lines"):
            signatures["dc_reader_" + column] = (p, [p])
        for column in ("exclusive", "inclusive", "counts"):
            signatures["dc_reader_" + column] = (p, [p, ctypes.c_uint32])
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes
        _lib = lib
    return _lib


def _column(address, ctype, count, fmt):
    """A read-only memoryview over count items of a library-owned array."""
    if not address or count == 0:
        return memoryview(b"").cast(fmt)
    return memoryview((ctype * count).from_address(address)).cast("B").cast(fmt)


class ProfileError(Exception):
    """A profile file could not be read; the message names the file."""


class Node:
    """One calling-context node. Equal nodes have the same profile and id."""

    __slots__ = ("_profile", "id")

    def __init__(self, profile, index):
        self._profile = profile
        self.id = index

    kind = property(lambda self: KINDS[self._profile._kinds[self.id]]
                    if self._profile._kinds[self.id] < len(KINDS) else "unknown")
    name = property(lambda self: self._profile._string(self._profile._names[self.id]))
    file = property(lambda self: self._profile._string(self._profile._files[self.id]))
    line = property(lambda self: self._profile._lines[self.id])

    @property
    def parent(self):
        return None if self.id == 0 else Node(self._profile, self._profile._parents[self.id])

    @property
    def children(self):
        return [Node(self._profile, i) for i in self._profile._children_of(self.id)]

    def exclusive(self, metric):
        """The node's own value of metric (0 when it has none)."""
        return self._profile._value("exclusive", metric, self.id)

    def inclusive(self, metric):
        """The value of metric over the node's whole subtree."""
        return self._profile._value("inclusive", metric, self.id)

    def count(self, metric):
        """Number of samples of metric recorded in the node itself."""
        return self._profile._value("counts", metric, self.id)

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def path(self):
        """Nodes from the root's child down to this one."""
        return list(reversed([self] + [n for n in self.ancestors() if n.id != 0]))

    def descendants(self):
        stack = list(reversed(self._profile._children_of(self.id)))
        while stack:
            index = stack.pop()
            yield Node(self._profile, index)
            stack.extend(reversed(self._profile._children_of(index)))

    def __eq__(self, other):
        return isinstance(other, Node) and other._profile is self._profile and other.id == self.id

    def __hash__(self):
        return hash((id(self._profile), self.id))

    def __repr__(self):
        where = " %s:%d" % (os.path.basename(self.file), self.line) if self.file else ""
        return "<Node %d %s %s%s>" % (self.id, self.kind, self.name, where)


class Profile:
    """One or several .dctx files merged into one calling-context tree."""

    def __init__(self, *paths):
        if not paths:
            raise ValueError("load() needs at least one profile path")
        lib = _library()
        encoded = [os.fsencode(os.fspath(p)) for p in paths]
        argv = (ctypes.c_char_p * len(encoded))(*encoded)
        handle = lib.dc_reader_open(argv, len(encoded))
        if not handle:
            raise MemoryError("cannot allocate the profile reader")
        error = lib.dc_reader_error(handle).decode("utf-8", "replace")
        if error:
            lib.dc_reader_close(handle)
            raise ProfileError(error)
        self._lib, self._handle = lib, handle
        self.paths = [os.fspath(p) for p in paths]
        n = lib.dc_reader_node_count(handle)
        self._size = n
        self._parents = _column(lib.dc_reader_parents(handle), ctypes.c_uint32, n, "I")
        self._kinds = _column(lib.dc_reader_kinds(handle), ctypes.c_uint8, n, "B")
        self._names = _column(lib.dc_reader_names(handle), ctypes.c_uint32, n, "I")
        self._files = _column(lib.dc_reader_files(handle), ctypes.c_uint32, n, "I")
        self._lines = _column(lib.dc_reader_lines(handle), ctypes.c_uint32, n, "I")
        strings = lib.dc_reader_string_count(handle)
        self._offsets = _column(lib.dc_reader_string_offsets(handle), ctypes.c_uint64,
                                strings + 1, "Q")
        self._data = ctypes.string_at(lib.dc_reader_string_data(handle), self._offsets[strings])
        self._strings = {}
        self.metrics = [lib.dc_reader_metric_name(handle, m).decode("utf-8", "replace")
                        for m in range(lib.dc_reader_metric_count(handle))]
        self.units = {name: lib.dc_reader_metric_unit(handle, m).decode("utf-8", "replace")
                      for m, name in enumerate(self.metrics)}
        self._columns = {}
        self._children = None
        self.sources = json.loads(lib.dc_reader_sources_json(handle))

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.dc_reader_close(handle)
            self._handle = None

    def __len__(self):
        return self._size

    @property
    def metadata(self):
        """Metadata of the first input file."""
        return self.sources[0]["metadata"] if self.sources else {}

    @property
    def root(self):
        return Node(self, 0)

    def node(self, index):
        if not 0 <= index < self._size:
            raise IndexError("node %d is not in the profile (%d nodes)" % (index, self._size))
        return Node(self, index)

    def nodes(self):
        return (Node(self, i) for i in range(self._size))

    def total(self, metric):
        return self._value("inclusive", metric, 0)

    def find(self, kind=None, name=None, file=None, line=None):
        """Nodes matching every given field; file matches a path suffix
        ("train.py" matches "/home/u/train.py")."""
        kind_id = None
        if kind is not None:
            if kind not in KINDS:
                raise ValueError("unknown kind %r; kinds: %s" % (kind, ", ".join(KINDS)))
            kind_id = KINDS.index(kind)
        name_ids = self._string_ids(lambda s: s == name) if name is not None else None
        file_ids = self._string_ids(lambda s: _same_file(s, file)) if file is not None else None
        kinds, names, files, lines = self._kinds, self._names, self._files, self._lines
        result = []
        for i in range(self._size):
            if kind_id is not None and kinds[i] != kind_id:
                continue
            if name_ids is not None and names[i] not in name_ids:
                continue
            if file_ids is not None and files[i] not in file_ids:
                continue
            if line is not None and lines[i] != line:
                continue
            result.append(Node(self, i))
        return result

    def under(self, file, line):
        """Every node below the source line file:line (the Python frames at
        that line and their subtrees), outermost first."""
        tops = self.find(kind="python", file=file, line=line)
        seen, result = set(), []
        for top in tops:
            if any(a.id in seen for a in top.ancestors()):
                continue
            seen.add(top.id)
            result.extend(top.descendants())
        return result

    def to_dataframe(self):
        """One row per node, indexed by id: parent, kind, name, file, line
        and, per metric, the exclusive value (column named after the
        metric) and the inclusive one (`<metric>_inclusive`). Needs pandas."""
        try:
            import pandas
        except ImportError as error:
            raise ImportError("to_dataframe() needs pandas (Debian: python3-pandas)") from error
        import numpy  # pandas requires it

        def array(column, dtype):  # a copy: the frame outlives nothing here
            return numpy.frombuffer(column, dtype=dtype).copy()

        names = [self._string(s) for s in range(len(self._offsets) - 1)]
        strings = numpy.array(names, dtype=object)
        kinds = numpy.array(list(KINDS) + ["unknown"] * (256 - len(KINDS)), dtype=object)
        data = {
            "id": numpy.arange(self._size),
            "parent": array(self._parents, numpy.uint32),
            "kind": kinds[array(self._kinds, numpy.uint8)],
            "name": strings[array(self._names, numpy.uint32)],
            "file": strings[array(self._files, numpy.uint32)],
            "line": array(self._lines, numpy.uint32),
        }
        for metric in self.metrics:
            data[metric] = array(self._metric_column("exclusive", metric), numpy.float64)
            data[metric + "_inclusive"] = array(self._metric_column("inclusive", metric),
                                                numpy.float64)
        return pandas.DataFrame(data).set_index("id")

    def findings(self, rules=None, only=None):
        """The analyzer's findings (built-in rules plus `rules` and those
        registered with @deepcontext.rule), best first, as dicts in the JSON
        shape of `deepcontext analyze --format json`."""
        return json.loads(self.analyze(rules=rules, only=only, format="json"))["findings"]

    def analyze(self, rules=None, only=None, format="text", top=0):
        """Rendered analysis (text or json) with the given user rules."""
        extra = []
        for user_rule in list(_registered_rules) + list(rules or []):
            extra.extend(_run_rule(user_rule, self))
        output = self._lib.dc_reader_analyze(
            self._handle, json.dumps(extra).encode(), ",".join(only or []).encode(),
            1 if format == "json" else 0, top)
        if output is None:
            raise ValueError(self._lib.dc_reader_error(self._handle).decode("utf-8", "replace"))
        return output.decode("utf-8", "replace")

    def diff(self, other, metric=None):
        """Compares this profile (before) with other (after: a Profile or a
        path), as `deepcontext diff --format json` does. Returns a Diff whose
        contexts are ranked by the change of metric (default: the report's
        default metric)."""
        if not isinstance(other, Profile):
            other = Profile(other)
        output = self._lib.dc_reader_diff(self._handle, other._handle,
                                          (metric or "").encode())
        if output is None:
            raise ValueError(self._lib.dc_reader_error(self._handle).decode("utf-8", "replace"))
        return Diff(json.loads(output))

    # Internals.

    def _string(self, index):
        text = self._strings.get(index)
        if text is None:
            text = self._data[self._offsets[index]:self._offsets[index + 1]].decode(
                "utf-8", "replace")
            self._strings[index] = text
        return text

    def _string_ids(self, predicate):
        return {i for i in range(len(self._offsets) - 1) if predicate(self._string(i))}

    def _metric_column(self, which, metric):
        key = (which, metric)
        column = self._columns.get(key)
        if column is None:
            if metric not in self.metrics:
                raise KeyError("unknown metric %r; metrics: %s" % (metric, ", ".join(self.metrics)))
            address = getattr(self._lib, "dc_reader_" + which)(
                self._handle, self.metrics.index(metric))
            column = _column(address, ctypes.c_double, self._size, "d")
            self._columns[key] = column
        return column

    def _value(self, which, metric, index):
        if metric not in self.metrics:
            return 0.0
        return self._metric_column(which, metric)[index]

    def _children_of(self, index):
        if self._children is None:
            children = [[] for _ in range(self._size)]
            parents = self._parents.tolist()
            for child in range(1, self._size):
                children[parents[child]].append(child)
            self._children = children
        return self._children[index]


class Diff:
    """Two profiles compared by `Profile.diff`: the "deepcontext-diff" JSON
    document of `deepcontext diff --format json` (``document``) with
    shortcuts to its parts.

    metric: the metric contexts are ranked by.
    units: {metric: unit}.
    totals: {metric: {"before", "after", "change", "relative"}} (relative is
    (after - before) / before, None when before is 0).
    contexts: one dict per context whose value of any metric changed, those
    whose exclusive value of ``metric`` changed first, largest absolute
    change first (the CLI's ranking), then the rest:
    {"status": "changed" | "added" | "removed",
     "path": [{"kind", "name", "file", "line"}, ...] (outermost frame first),
     "metrics": {metric: {"exclusive": values, "inclusive": values}}}
    where values are dicts like those of totals.
    """

    def __init__(self, document):
        self.document = document
        self.before = document["before"]
        self.after = document["after"]
        self.metric = document["ranked_by"]
        self.units = {m["name"]: m["unit"] for m in document["metrics"]}
        self.totals = {m["name"]: m["total"] for m in document["metrics"]}
        self.contexts = document["contexts"]

    def change(self, context, metric=None, which="exclusive"):
        """The change of metric (default: the ranked one) in a context of
        contexts: after - before of its exclusive (or inclusive) value."""
        values = context["metrics"].get(metric or self.metric)
        return values[which]["change"] if values else 0.0

    def __repr__(self):
        return "<Diff %s -> %s: %d contexts changed, ranked by %s>" % (
            self.before, self.after, len(self.contexts), self.metric)


def _same_file(recorded, wanted):
    return recorded == wanted or recorded.endswith("/" + wanted.lstrip("/"))


def load(*paths):
    """Reads one or several .dctx profiles into a Profile (one tree)."""
    return Profile(*paths)


class Finding(dict):
    """A finding of a user rule, in the analyzer's JSON shape. node: the Node
    blamed (its source line, operator and kernel are filled in);
    benefit_seconds: (low, high) seconds the fix could save; evidence:
    (metric, value, unit, comparator, threshold) tuples."""

    def __init__(self, node, title, benefit_seconds=(0.0, 0.0), evidence=(),
                 suggestion="", example="", severity=None):
        super().__init__()
        low, high = benefit_seconds if isinstance(benefit_seconds, (tuple, list)) else (
            benefit_seconds, benefit_seconds)
        self["node"] = {"id": node.id}
        self["title"] = title
        self["benefit"] = {"low_seconds": float(low), "high_seconds": float(high)}
        self["evidence"] = [dict(zip(("metric", "value", "unit", "comparator", "threshold"), e))
                            for e in evidence]
        self["suggestion"] = suggestion
        self["example"] = example
        if severity is not None:
            if severity not in ("low", "medium", "high"):
                raise ValueError("severity must be low, medium or high")
            self["severity"] = severity


def rule(rule_id):
    """Decorator registering a user rule: a function(profile) returning or
    yielding Finding objects. Its findings carry rule id `rule_id`."""
    def register(function):
        function.rule_id = rule_id
        _registered_rules.append(function)
        return function
    return register


def _run_rule(function, profile):
    rule_id = getattr(function, "rule_id", function.__name__)
    findings = []
    for finding in function(profile) or ():
        if not isinstance(finding, Finding):
            raise TypeError("rule %s returned %r; rules return deepcontext.Finding objects"
                            % (rule_id, finding))
        item = dict(finding)
        item["rule"] = rule_id
        findings.append(item)
    return findings
