"""The Grafana dashboard (deploy/grafana/orchid-dashboard.json, issue 23) against what orchid really
exports: every PromQL expression of the dashboard (panel targets and template variables) is
parsed, and each series it selects must be exported by a running orchid process (`serve`, a
`gateway` and a `worker`, after traffic that makes the lazily created series appear), each label
it matches on or groups by must be on that series, each `{{label}}` of a legend must survive the
expression's aggregations, and both sides of a vector / vector operation must match on the same
labels. `promtool check rules` then parses every expression with Prometheus's own parser.

The checker is a small PromQL parser that tracks, for each sub-expression, which labels its
result carries (`sum by (route)` keeps `route`, `histogram_quantile` drops `le`, ...). The unit
tests at the top feed it bad expressions, and a copy of the dashboard with a bogus metric, and
expect it to say so."""
import copy
import json
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from support import REPO, SENTENCES, SHORT, Gateway, Worker

DASHBOARD = REPO / "deploy" / "grafana" / "orchid-dashboard.json"

# Labels Prometheus attaches to every series of a scrape target (see deploy/grafana/README.md).
TARGET_LABELS = {"job", "instance"}
# Series Prometheus makes itself for every scrape target, not exported by orchid.
PROMETHEUS_SERIES = {"up": {"job", "instance"}}
# Grafana's interval variables, replaced by a duration before parsing.
GRAFANA_INTERVALS = re.compile(r"\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}")


# --- The Prometheus text exposition -------------------------------------------------------------

class Exposition:
    """Series names with the label names and values seen on them, and each family's type."""

    def __init__(self):
        self.labels = {}  # series name -> {label: {values}}
        self.types = {}   # family name -> counter | gauge | histogram | summary | untyped

    def add_text(self, text):
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(None, 3)
                self.types[name] = kind.strip()
                continue
            if not line or line.startswith("#"):
                continue
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+", line)
            assert m, f"not an exposition line: {line!r}"
            labels = self.labels.setdefault(m.group(1), {})
            for k, v in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""):
                labels.setdefault(k, set()).add(v)
        return self

    def family(self, series):
        """The metric family a series belongs to: `x_bucket`, `x_sum`, `x_count` of a histogram
        (or summary) `x` are `x`; anything else, `x_total` of a counter included, is itself."""
        for suffix in ("_bucket", "_sum", "_count"):
            base = series[: -len(suffix)]
            if series.endswith(suffix) and self.types.get(base) in ("histogram", "summary"):
                if suffix != "_bucket" or self.types[base] == "histogram":
                    return base
        return series

    def label_names(self, series):
        if series in PROMETHEUS_SERIES:
            return set(PROMETHEUS_SERIES[series])
        return set(self.labels[series]) | TARGET_LABELS


# --- A PromQL parser that tracks the labels of each sub-expression ------------------------------

AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
            "and", "or", "unless", "atan2"}
# Binary operators, by precedence (PromQL's: ^ binds tightest and is right-associative).
PRECEDENCE = {"or": 1, "and": 2, "unless": 2, "==": 3, "!=": 3, "<=": 3, "<": 3, ">=": 3, ">": 3,
              "+": 4, "-": 4, "*": 5, "/": 5, "%": 5, "atan2": 5, "^": 6}
SET_OPS = {"and", "or", "unless"}

TOKEN = re.compile(r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<duration>(?:\d+(?:ms|[smhdwy]))+(?![\w.]))
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<var>\$\{[^}]+\}|\$\w+|\[\[\w+\]\])
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>=~|!~|==|!=|<=|>=|[-+*/%^<>=(){}\[\],@:])
""", re.X)


class _Scalar:
    def __repr__(self):
        return "scalar"


SCALAR = _Scalar()  # the type of a scalar result (a set of label names is a vector's)
UNKNOWN = None     # a vector whose labels are unknown (a series already reported missing)


class PromQLError(Exception):
    pass


def tokenize(expr):
    out, pos = [], 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise PromQLError(f"cannot read {expr[pos:pos + 20]!r} in {expr!r}")
        pos = m.end()
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group()))
    return out


class Checker:
    """Parses one expression; `problems` lists what does not hold against the exposition,
    `selectors` the series names it reads. `check()` returns the result's label names (a set),
    or SCALAR."""

    def __init__(self, expr, exposition):
        self.expr = expr
        self.exp = exposition
        self.tokens = tokenize(GRAFANA_INTERVALS.sub("5m", expr))
        self.i = 0
        self.problems = []
        self.selectors = []

    # token helpers
    def peek(self, k=0):
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else ("end", "")

    def take(self, value=None):
        t = self.peek()
        if t[0] == "end" or (value is not None and t[1].lower() != value):
            raise PromQLError(f"expected {value or 'more'} at {t[1]!r} in {self.expr!r}")
        self.i += 1
        return t

    def at(self, *values):
        return self.peek()[0] in ("ident", "op") and self.peek()[1].lower() in values

    def problem(self, text):
        self.problems.append(f"{text} (in {self.expr!r})")

    def check(self):
        labels = self.expression(0)
        if self.peek()[0] != "end":
            raise PromQLError(f"unexpected {self.peek()[1]!r} in {self.expr!r}")
        return labels

    # grammar
    def expression(self, min_prec):
        left = self.unary()
        while True:
            t = self.peek()
            op = t[1].lower()
            if t[0] not in ("op", "ident") or op not in PRECEDENCE or PRECEDENCE[op] < min_prec:
                return left
            self.take()
            prec = PRECEDENCE[op]
            if self.at("bool"):
                self.take()
            on = ignoring = group = None
            if self.at("on", "ignoring"):
                kind = self.take()[1].lower()
                names = self.label_list()
                on, ignoring = (names, None) if kind == "on" else (None, names)
            if self.at("group_left", "group_right"):
                side = self.take()[1].lower()
                group = (side, self.label_list() if self.at("(") else set())
            right = self.expression(prec if op == "^" else prec + 1)
            left = self.binary(op, left, right, on, ignoring, group)

    def binary(self, op, left, right, on, ignoring, group):
        if left == SCALAR and right == SCALAR:
            return SCALAR
        if left == SCALAR:
            return right
        if right == SCALAR:
            return left
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        for side, labels in (("left", left), ("right", right)):
            for name in sorted((on or set()) - labels):
                self.problem(f"on({name}) of `{op}`: the {side} side has no label {name!r} "
                             f"(it has {sorted(labels)})")
        if op in SET_OPS:
            return left | right if op == "or" else left
        if on is not None:
            keys_left = keys_right = on
        else:
            keys_left, keys_right = left - (ignoring or set()), right - (ignoring or set())
        if group is None and keys_left != keys_right:
            self.problem(f"the two sides of `{op}` match on different labels: {sorted(keys_left)} "
                         f"vs {sorted(keys_right)} (a one-to-one match finds no pairs)")
        if group is None:
            return keys_left if on is not None else left
        side, extra = group
        many, one = (left, right) if side == "group_left" else (right, left)
        for name in sorted(extra - one):
            self.problem(f"{side}({name}) of `{op}`: the other side has no label {name!r}")
        return many | extra

    def unary(self):
        if self.at("-", "+"):
            self.take()
            return self.unary()
        return self.postfix(self.primary())

    def postfix(self, labels):
        while True:
            if self.at("["):  # range or subquery: [5m], [1h:1m]
                while not self.at("]"):
                    self.take()
                self.take("]")
            elif self.at("offset"):
                self.take()
                if self.at("-"):
                    self.take()
                self.take()
            elif self.at("@"):
                self.take()
                if self.peek()[0] == "ident":  # start() / end()
                    self.take()
                    self.take("(")
                    self.take(")")
                else:
                    self.take()
            else:
                return labels

    def primary(self):
        kind, value = self.peek()
        if kind in ("number", "duration", "var"):
            self.take()
            return SCALAR
        if kind == "string":
            self.take()
            return SCALAR
        if kind == "ident" and value.lower() in ("inf", "nan"):
            self.take()
            return SCALAR
        if value == "(":
            self.take()
            labels = self.expression(0)
            self.take(")")
            return labels
        if value == "{":
            return self.selector(None)
        if kind == "ident":
            name = value
            if name.lower() in AGGREGATIONS and (self.peek(1)[1] == "(" or
                                                 self.peek(1)[1].lower() in ("by", "without")):
                return self.aggregation()
            if self.peek(1)[1] == "(" and name.lower() not in KEYWORDS:
                return self.function()
            self.take()
            return self.selector(name)
        raise PromQLError(f"unexpected {value!r} in {self.expr!r}")

    def label_list(self):
        self.take("(")
        names = set()
        while not self.at(")"):
            kind, value = self.take()
            if kind not in ("ident", "string"):
                raise PromQLError(f"expected a label name, got {value!r} in {self.expr!r}")
            names.add(value.strip("\"'`"))
            if self.at(","):
                self.take()
        self.take(")")
        return names

    def args(self):
        """The arguments of a call: each one's labels (or SCALAR), and string literals as text."""
        self.take("(")
        out = []
        while not self.at(")"):
            if self.peek()[0] == "string" and self.peek(1)[1] in (",", ")"):
                out.append(self.take()[1][1:-1])
            else:
                out.append(self.expression(0))
            if self.at(","):
                self.take()
        self.take(")")
        return out

    def aggregation(self):
        op = self.take()[1].lower()
        modifier = None
        if self.at("by", "without"):
            modifier = (self.take()[1].lower(), self.label_list())
        params = self.args()
        if modifier is None and self.at("by", "without"):
            modifier = (self.take()[1].lower(), self.label_list())
        vectors = [p for p in params if p is UNKNOWN or isinstance(p, set)]
        if not vectors:
            raise PromQLError(f"{op}() of no vector in {self.expr!r}")
        inner = vectors[-1]
        if inner is UNKNOWN:
            return set(modifier[1]) if modifier and modifier[0] == "by" else UNKNOWN
        if modifier is None:
            result = set()
        elif modifier[0] == "by":
            for name in sorted(modifier[1] - inner):
                self.problem(f"{op} by ({name}): the series aggregated have no label {name!r} "
                             f"(they have {sorted(inner)})")
            result = set(modifier[1])
        else:
            result = inner - modifier[1]
        if op in ("topk", "bottomk", "limitk", "limit_ratio"):
            return inner
        if op == "count_values" and isinstance(params[0], str):
            result = result | {params[0]}
        return result

    def function(self):
        name = self.take()[1]
        params = self.args()
        vectors = [p for p in params if p is UNKNOWN or isinstance(p, set)]
        if vectors and vectors[0] is UNKNOWN:
            return UNKNOWN
        if name == "histogram_quantile":
            if vectors and "le" not in vectors[0]:
                self.problem(f"histogram_quantile over series without an 'le' label "
                             f"(they have {sorted(vectors[0])}): use the _bucket series and keep le")
            return vectors[0] - {"le"} if vectors else SCALAR
        if name in ("label_replace", "label_join") and vectors:
            strings = [p for p in params if isinstance(p, str)]
            sources = strings[2:3] if name == "label_replace" else strings[2:]
            for src in sources:
                if src and src not in vectors[0]:
                    self.problem(f"{name} reads label {src!r}, which the series do not have")
            return vectors[0] | set(strings[:1])
        if name in ("scalar", "time", "pi"):
            return SCALAR
        # rate, increase, abs, clamp_min, sort, ... keep their vector argument's labels; vector(s)
        # and the date functions without an argument have none.
        return vectors[0] if vectors else set()

    def selector(self, name):
        matchers = []
        if self.at("{"):
            self.take("{")
            while not self.at("}"):
                label = self.take()
                if label[0] not in ("ident", "string"):
                    raise PromQLError(f"expected a label name, got {label[1]!r} in {self.expr!r}")
                op = self.take()[1]
                if op not in ("=", "!=", "=~", "!~"):
                    raise PromQLError(f"bad matcher operator {op!r} in {self.expr!r}")
                kind, value = self.take()
                if kind != "string":
                    raise PromQLError(f"matcher value {value!r} is not a string in {self.expr!r}")
                matchers.append((label[1].strip("\"'`"), op, value[1:-1]))
                if self.at(","):
                    self.take()
            self.take("}")
        if name is None:
            regex = [v for label, op, v in matchers if label == "__name__" and op == "=~"]
            exact = [v for label, op, v in matchers if label == "__name__" and op == "="]
            if exact:
                names = exact
            elif regex:
                names = sorted(n for n in self.exp.labels if re.fullmatch(regex[0], n))
                if not names:
                    self.problem(f"no exported series matches __name__=~{regex[0]!r}")
                    return UNKNOWN
            else:
                raise PromQLError(f"a selector without a metric name in {self.expr!r}")
        else:
            names = [name]
        labels = set()
        for n in names:
            self.selectors.append(n)
            if n not in self.exp.labels and n not in PROMETHEUS_SERIES:
                family = self.exp.family(n)
                hint = ""
                if self.exp.types.get(n) in ("histogram", "summary"):
                    hint = f" ({n} is a {self.exp.types[n]}: its series are {n}_bucket, _sum, _count)"
                elif family == n:
                    hint = " (no orchid process exports it)"
                self.problem(f"series {n!r} is not exported{hint}")
                return UNKNOWN
            labels |= self.exp.label_names(n)
        if labels:
            for label, op, value in matchers:
                if label == "__name__":
                    continue
                if label not in labels:
                    self.problem(f"{names[0] if len(names) == 1 else names}: no label {label!r} "
                                 f"to match {label}{op}\"{value}\" (it has {sorted(labels)})")
                elif op == "=" and label not in TARGET_LABELS and "$" not in value and not any(
                        value in self.exp.labels.get(n, {}).get(label, ()) for n in names):
                    self.problem(f"{names}: {label}=\"{value}\" matches no exported series")
        return labels


def check_expr(expr, exposition, legend=""):
    """Problems of one expression (a list of strings; empty when it holds), and the series it reads."""
    c = Checker(expr, exposition)
    try:
        labels = c.check()
    except PromQLError as e:
        return [f"does not parse: {e}"], c.selectors
    if isinstance(labels, set):
        for name in re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", legend or ""):
            if name not in labels:
                c.problem(f"legend {{{{{name}}}}}: the result has no label {name!r} "
                          f"(it keeps {sorted(labels)})")
    return c.problems, c.selectors


def check_variable_query(query, exposition):
    """Grafana's Prometheus variable queries: label_values(selector, label), label_values(label),
    query_result(expr), metrics(regex)."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*", query, re.S)
    if m:
        c = Checker(m.group(1), exposition)
        try:
            labels = c.check()
        except PromQLError as e:
            return [f"does not parse: {e}"], c.selectors
        if isinstance(labels, set) and m.group(2) not in labels:
            c.problem(f"label_values(..., {m.group(2)}): the series have no label {m.group(2)!r}")
        return c.problems, c.selectors
    m = re.fullmatch(r"\s*label_values\(\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*", query)
    if m:
        known = TARGET_LABELS.union(*(set(v) for v in exposition.labels.values()))
        return ([] if m.group(1) in known else [f"no exported series has label {m.group(1)!r}"]), []
    m = re.fullmatch(r"\s*query_result\((.*)\)\s*", query, re.S)
    if m:
        return check_expr(m.group(1), exposition)
    m = re.fullmatch(r"\s*metrics\((.*)\)\s*", query, re.S)
    if m:
        hits = [n for n in exposition.labels if re.search(m.group(1), n)]
        return ([] if hits else [f"metrics({m.group(1)}) matches no exported series"]), hits
    return [f"unknown variable query {query!r}"], []


# --- The dashboard --------------------------------------------------------------------------------

def dashboard_queries(dashboard):
    """(where, expr, legend) of every Prometheus target, and (where, query) of every query variable."""
    targets, variables = [], []

    def walk(panels, path):
        for p in panels:
            where = f"{path}panel {p.get('id')} {p.get('title')!r}"
            for t in p.get("targets", []):
                if "expr" in t:
                    targets.append((f"{where} target {t.get('refId')}", t["expr"], t.get("legendFormat", "")))
            walk(p.get("panels", []), path)

    walk(dashboard["panels"], "")
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            variables.append((f"variable ${v['name']}", q))
    return targets, variables


def check_dashboard(dashboard, exposition):
    """Every problem of the dashboard's queries, and every series they read."""
    problems, series = [], set()
    targets, variables = dashboard_queries(dashboard)
    for where, expr, legend in targets:
        found, read = check_expr(expr, exposition, legend)
        problems += [f"{where}: {p}" for p in found]
        series.update(read)
    for where, query in variables:
        found, read = check_variable_query(query, exposition)
        problems += [f"{where}: {p}" for p in found]
        series.update(read)
    return problems, series


def load_dashboard():
    with open(DASHBOARD, encoding="utf-8") as f:
        return json.load(f)


# --- Unit tests of the checker (no server) --------------------------------------------------------

SAMPLE = """\
# TYPE orchid_http_requests_total counter
orchid_http_requests_total{route="/v1/embeddings",status="200"} 3
orchid_http_requests_total{route="other",status="404"} 1
# TYPE orchid_http_request_seconds histogram
orchid_http_request_seconds_bucket{route="/v1/embeddings",le="0.005"} 1
orchid_http_request_seconds_bucket{route="/v1/embeddings",le="+Inf"} 3
orchid_http_request_seconds_sum{route="/v1/embeddings"} 0.03
orchid_http_request_seconds_count{route="/v1/embeddings"} 3
# TYPE orchid_scheduler_queued_tokens gauge
orchid_scheduler_queued_tokens 0
# TYPE orchid_scheduler_queue_seconds histogram
orchid_scheduler_queue_seconds_bucket{class="query",le="+Inf"} 2
orchid_scheduler_queue_seconds_sum{class="query"} 0.001
orchid_scheduler_queue_seconds_count{class="query"} 2
orchid_scheduler_queue_seconds_bucket{class="bulk",le="+Inf"} 0
orchid_scheduler_queue_seconds_sum{class="bulk"} 0
orchid_scheduler_queue_seconds_count{class="bulk"} 0
# TYPE orchid_weird_count gauge
orchid_weird_count 1
"""


@pytest.fixture(scope="module")
def sample():
    return Exposition().add_text(SAMPLE)


def test_family_names_strip_histogram_suffixes_only(sample):
    assert sample.family("orchid_http_request_seconds_bucket") == "orchid_http_request_seconds"
    assert sample.family("orchid_http_request_seconds_sum") == "orchid_http_request_seconds"
    assert sample.family("orchid_http_request_seconds_count") == "orchid_http_request_seconds"
    assert sample.family("orchid_http_requests_total") == "orchid_http_requests_total"
    assert sample.family("orchid_weird_count") == "orchid_weird_count"  # a gauge: not a suffix


@pytest.mark.parametrize("expr, legend", [
    ('sum by (route, status) (rate(orchid_http_requests_total{job=~"$job", status=~"5.."}[$__rate_interval]))',
     "{{route}} {{status}}"),
    ("histogram_quantile(0.99, sum by (le, route) (rate(orchid_http_request_seconds_bucket[5m])))", "{{route}}"),
    ("sum(rate(orchid_http_request_seconds_sum[5m])) / sum(rate(orchid_http_request_seconds_count[5m]))", ""),
    ("sum by (route) (rate(orchid_http_request_seconds_sum[5m]))\n  /\n"
     "sum by (route) (rate(orchid_http_request_seconds_count[5m]))", "{{route}}"),
    ('histogram_quantile(0.5, sum(rate(orchid_scheduler_queue_seconds_bucket{class="bulk"}[5m])) by (le, class))',
     "p50 {{class}}"),
    ("max by (instance) (orchid_scheduler_queued_tokens) * 2 - 1 > bool 0", "{{instance}}"),
    ('up{job=~"$job"} == 0', "{{job}} {{instance}}"),
    ('sum(rate(orchid_http_requests_total{status="404"}[5m] offset 1h)) or vector(0)', ""),
])
def test_checker_accepts_what_holds(sample, expr, legend):
    problems, _ = check_expr(expr, sample, legend)
    assert problems == []


@pytest.mark.parametrize("expr, legend, complaint", [
    ("sum(rate(orchid_bogus_requests_total[5m]))", "", "'orchid_bogus_requests_total' is not exported"),
    # The histogram's family name is not a series: its series have suffixes.
    ("histogram_quantile(0.9, sum by (le) (rate(orchid_http_request_seconds[5m])))", "",
     "orchid_http_request_seconds is a histogram"),
    ("rate(orchid_http_requests_count[5m])", "", "is not exported"),
    # A label the metric does not carry, in a matcher, a grouping, or a legend.
    ('rate(orchid_scheduler_queue_seconds_count{route="/embed"}[5m])', "", "no label 'route'"),
    ("sum by (class) (rate(orchid_http_requests_total[5m]))", "", "have no label 'class'"),
    ("sum by (status) (rate(orchid_http_requests_total[5m]))", "{{route}}", "legend {{route}}"),
    # An inner aggregation dropped the label an outer one groups by.
    ("sum by (route) (sum by (status) (rate(orchid_http_requests_total[5m])))", "", "have no label 'route'"),
    # histogram_quantile without `le`.
    ("histogram_quantile(0.9, sum by (route) (rate(orchid_http_request_seconds_bucket[5m])))", "",
     "without an 'le' label"),
    # A value of an exact matcher that no series has.
    ('rate(orchid_scheduler_queue_seconds_count{class="batch"}[5m])', "", 'class="batch" matches no'),
    # A ratio whose sides keep different labels matches nothing.
    ("sum by (route) (rate(orchid_http_requests_total[5m])) / sum(rate(orchid_http_requests_total[5m]))",
     "", "match on different labels"),
    ("sum(rate(orchid_http_requests_total[5m]) / ", "", "does not parse"),
])
def test_checker_rejects_what_does_not_hold(sample, expr, legend, complaint):
    problems, _ = check_expr(expr, sample, legend)
    assert any(complaint in p for p in problems), problems


def test_checker_reads_variable_queries(sample):
    assert check_variable_query('label_values({__name__=~"orchid_.+"}, job)', sample)[0] == []
    assert check_variable_query("label_values(orchid_http_requests_total, route)", sample)[0] == []
    assert check_variable_query("label_values(orchid_scheduler_queued_tokens, route)", sample)[0]
    assert check_variable_query('label_values({__name__=~"vllm_.+"}, job)', sample)[0]
    assert check_variable_query("label_values(nope_total, job)", sample)[0]


def test_a_bogus_metric_in_a_copy_of_the_dashboard_is_caught():
    """The real dashboard's queries with one name changed: the check must name that panel."""
    dashboard = load_dashboard()
    exposition = Exposition().add_text(SAMPLE)
    targets, _ = dashboard_queries(dashboard)
    assert len(targets) >= 20, "the dashboard has fewer panels than expected"
    bad = copy.deepcopy(dashboard)
    panel = next(p for p in bad["panels"] if any("orchid_http_requests_total" in t.get("expr", "")
                                                for t in p.get("targets", [])))
    panel["targets"][0]["expr"] = panel["targets"][0]["expr"].replace(
        "orchid_http_requests_total", "orchid_http_requests_bogus_total")
    problems, _ = check_dashboard(bad, exposition)
    assert any("orchid_http_requests_bogus_total" in p and repr(panel["title"]) in p
               for p in problems), problems


def test_dashboard_is_an_importable_grafana_dashboard():
    d = load_dashboard()
    assert d["title"] and d["uid"] and d["schemaVersion"] >= 36
    ids = []

    def walk(panels):
        for p in panels:
            ids.append(p["id"])
            g = p["gridPos"]
            assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
            if p["type"] != "row":
                assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
                assert p["targets"], p["title"]
                for t in p["targets"]:
                    assert t["datasource"] == p["datasource"], p["title"]
            walk(p.get("panels", []))

    walk(d["panels"])
    assert len(ids) == len(set(ids)), "panel ids repeat"
    boxes = [(p["title"], p["gridPos"]) for p in d["panels"]]
    for i, (t1, a) in enumerate(boxes):
        for t2, b in boxes[i + 1:]:
            apart = (a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"] or
                     a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"])
            assert apart, f"panels {t1!r} and {t2!r} overlap"
    names = [v["name"] for v in d["templating"]["list"]]
    assert names[0] == "datasource" and d["templating"]["list"][0]["query"] == "prometheus"
    assert len(names) == len(set(names))


def test_every_expression_parses_with_promtool(tmp_path):
    """Prometheus's own parser (`promtool check rules`) on every expression, with Grafana's
    variables replaced by what Grafana would put there."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: scripts/install-deps.sh --test installs the prometheus package"
    targets, variables = dashboard_queries(load_dashboard())
    exprs = [e for _, e, _ in targets]
    for _, q in variables:
        m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q, re.S)
        if m:
            exprs.append(m.group(1))
    rules = {"groups": [{"name": "orchid-dashboard", "rules": [
        {"record": f"orchid_dashboard:expr_{i}", "expr": GRAFANA_INTERVALS.sub("5m", e)}
        for i, e in enumerate(exprs)]}]}
    path = tmp_path / "rules.json"  # YAML is a superset of JSON
    path.write_text(json.dumps(rules, indent=1))
    r = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# --- Against real orchid processes ------------------------------------------------------------------

def post(url, path, body, timeout=60):
    return requests.post(f"{url}{path}", json=body, timeout=timeout)


@pytest.fixture(scope="module")
def exported(server):
    """The exposition of `serve`, a `gateway` and its `worker`, after traffic that makes every
    lazily created series appear: each route the dashboard shows, 4xx replies, and a burst that
    overloads a small-queue worker (429s, the worker's and the gateway's error counters)."""
    worker = Worker(None, None, "--max-batch-tokens", "256", "--max-queued-tokens", "256")
    gateway = Gateway([worker], "--chunk-tokens", "100000")
    try:
        text = SENTENCES[SHORT[0]]
        for url in (server.url, gateway.url):
            assert post(url, "/v1/embeddings", {"input": ["a", "b"]}).status_code == 200
            assert post(url, "/embed", {"inputs": "x"}).status_code == 200
            assert post(url, "/v1/embeddings", {"input": [text] * 16}).status_code == 200  # bulk
            assert post(url, "/v1/embeddings", {"input": 5}).status_code == 400
            assert requests.get(f"{url}/nope", timeout=10).status_code == 404
            assert requests.get(f"{url}/health", timeout=10).status_code == 200
        statuses = []
        with ThreadPoolExecutor(16) as pool:
            for _ in range(5):
                statuses += list(pool.map(
                    lambda _: post(gateway.url, "/v1/embeddings", {"input": [text] * 16}).status_code,
                    range(32)))
                if 429 in statuses:
                    break
        assert 429 in statuses, f"no 429 from the small-queue worker: {statuses}"
        time.sleep(0.5)  # let the last replies' counters land
        texts = {"serve": requests.get(f"{server.url}/metrics", timeout=10).text,
                 "gateway": gateway.metrics(), "worker": worker.metrics()}
    finally:
        gateway.proc.stop()
        worker.proc.kill()
    exposition = Exposition()
    for t in texts.values():
        exposition.add_text(t)
    return exposition, texts


def test_every_dashboard_query_holds_against_real_orchid_metrics(exported, report):
    exposition, texts = exported
    for name in ("orchid_worker_errors_total", "orchid_gateway_replica_errors_total",
                 "orchid_http_requests_total", "orchid_scheduler_batch_tokens_bucket"):
        assert name in exposition.labels, f"the traffic did not make {name} appear"
    problems, series = check_dashboard(load_dashboard(), exposition)
    assert not problems, "\n".join(problems)
    used = {exposition.family(s) for s in series if s not in PROMETHEUS_SERIES}
    exported_families = {exposition.family(s) for s in exposition.labels}
    assert used <= exported_families
    unused = sorted(exported_families - used)
    report.append(("grafana dashboard", f"{len(used)} of {len(exported_families)} exported metric "
                   f"families on the dashboard" + (f"; not shown: {', '.join(unused)}" if unused else "")))
