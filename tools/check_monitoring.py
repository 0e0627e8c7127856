#!/usr/bin/env python3
##===----------------------------------------------------------------------===##
##
## This source file is part of the ipnd open source project
##
## Copyright (c) the ipnd authors
## Licensed under Apache License v2.0
##
## See LICENSE for license information
##
## SPDX-License-Identifier: Apache-2.0
##
##===----------------------------------------------------------------------===##

"""Checks ipnd's monitoring files against each other and prints the metrics they read.

    python3 tools/check_monitoring.py [--json] [--root DIR]

Reads deploy/prometheus/ipnd.rules.yml, its promtool tests (deploy/prometheus/*.rules.test.yml),
deploy/grafana/ipnd.json and docs/alerts.md, and finds:
- an alert without severity (critical or warning), summary, description or a runbook_url of
  docs/alerts.md#<its name in lower case>, or with no section of that anchor in docs/alerts.md;
  a section of docs/alerts.md named like an alert (Ipnd...) that no alert has;
- an alert without a promtool test in which it fires and one in which it does not;
- a recording rule name read but never defined, or defined but never read;
- a dashboard Grafana would not import as it should: no title, uid or schemaVersion, no
  Prometheus data source variable, a panel without a data source (that variable), targets with
  refId and expr, or a gridPos inside the 24 columns; overlapping panels; an unknown variable;
- an expression that does not parse (PromQL, by promql_parser, a PromQL parser in Rust).

Every selector of every expression is read from the parsed expression, so function names, label
names, grouping labels and recording rules (names with a colon) are never taken for metrics.
The metrics read (with the label names their matchers use) are what the Swift test
(Tests/IPNServerTests/MonitoringTests.swift) compares with a scrape of a running ipnd. The label
names of by, without, on, ignoring and group_left/right are listed too. Exit 1 when anything is
wrong; --json prints {"problems": [...], "alerts": [...], "metrics": {name: [labels]},
"grouping_labels": [...]} and exits 0.
"""
import glob
import json
import os
import re
import sys

import promql_parser
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RULES = "deploy/prometheus/ipnd.rules.yml"
RULE_TESTS = "deploy/prometheus/*.rules.test.yml"
DASHBOARD = "deploy/grafana/ipnd.json"
RUNBOOKS = "docs/alerts.md"
SEVERITIES = {"critical", "warning"}
# Series Prometheus itself makes for a target, not ipnd.
PROMETHEUS_SERIES = {"up"}
# What Grafana puts in place of its built-in variables before a query runs (any valid duration).
GRAFANA_BUILTINS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as file:
        return file.read()


def github_anchor(heading):
    """The anchor GitHub (and most Markdown renderers) give a heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


class Monitoring:
    def __init__(self):
        self.problems = []
        # metric name -> set of label names its matchers use
        self.metrics = {}
        self.recorded_read = set()
        self.prometheus_read = set()
        # label names in by/without/on/ignoring/group_left/group_right
        self.grouping_labels = set()

    def problem(self, text):
        self.problems.append(text)

    # PromQL

    def read_expression(self, expression, where):
        try:
            parsed = promql_parser.parse(expression)
        except Exception as error:  # the parser raises ValueError with its message
            self.problem(f"{where}: does not parse: {error}: {expression}")
            return

        def visit(node):
            if isinstance(node, promql_parser.VectorSelector):
                self.read_selector(node, where)
            elif isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
                self.grouping_labels.update(node.modifier.labels)
            elif isinstance(node, promql_parser.BinaryExpr) and node.modifier is not None:
                if node.modifier.matching is not None:
                    self.grouping_labels.update(node.modifier.matching.labels)
                self.grouping_labels.update(node.modifier.group_labels or [])

        promql_parser.walk(parsed, pre_visit=visit)

    def read_selector(self, selector, where):
        labels = {matcher.name for matcher in selector.matchers.matchers}
        for alternative in selector.matchers.or_matchers or []:
            labels |= {matcher.name for matcher in alternative}
        name = selector.name
        if not name:
            self.problem(f"{where}: a selector without a metric name ({selector}): name the metric")
            return
        if ":" in name:
            self.recorded_read.add(name)
        elif name in PROMETHEUS_SERIES:
            self.prometheus_read.add(name)
        else:
            self.metrics.setdefault(name, set()).update(labels)

    # Rules

    def check_rules(self, runbook_anchors):
        groups = yaml.safe_load(read(RULES))["groups"]
        alerts, recorded = [], set()
        for group in groups:
            for rule in group["rules"]:
                name = rule.get("alert") or rule.get("record")
                self.read_expression(rule["expr"], f"{RULES} {name}")
                if "record" in rule:
                    recorded.add(rule["record"])
                    continue
                alerts.append(name)
                labels, annotations = rule.get("labels", {}), rule.get("annotations", {})
                if labels.get("severity") not in SEVERITIES:
                    self.problem(f"{name}: severity {labels.get('severity')!r}, not one of {sorted(SEVERITIES)}")
                for key in ("summary", "description", "runbook_url"):
                    if not str(annotations.get(key, "")).strip():
                        self.problem(f"{name}: no {key} annotation")
                anchor = name.lower()
                if annotations.get("runbook_url") != f"{RUNBOOKS}#{anchor}":
                    self.problem(f"{name}: runbook_url {annotations.get('runbook_url')!r}, not {RUNBOOKS}#{anchor}")
                if anchor not in runbook_anchors:
                    self.problem(f"{name}: {RUNBOOKS} has no section #{anchor} (a heading \"## {name}\")")
        return alerts, recorded

    def check_runbooks(self, alerts):
        headings = re.findall(r"^## +(.+?)\s*$", read(RUNBOOKS), re.MULTILINE)
        for heading in headings:
            if re.fullmatch(r"Ipnd\w+", heading) and heading not in alerts:
                self.problem(f"{RUNBOOKS}: section {heading} is no alert of {RULES}")

    def check_rule_tests(self, alerts):
        fires, stays_quiet = set(), set()
        for path in sorted(glob.glob(os.path.join(ROOT, RULE_TESTS))):
            for test in yaml.safe_load(open(path, encoding="utf-8"))["tests"]:
                for case in test.get("alert_rule_test", []):
                    (fires if case.get("exp_alerts") else stays_quiet).add(case["alertname"])
        for alert in alerts:
            if alert not in fires:
                self.problem(f"{alert}: no promtool test in which it fires ({RULE_TESTS})")
            if alert not in stays_quiet:
                self.problem(f"{alert}: no promtool test in which it does not fire (exp_alerts: [])")

    # Dashboard

    def check_dashboard(self):
        try:
            dashboard = json.loads(read(DASHBOARD))
        except ValueError as error:
            self.problem(f"{DASHBOARD}: not JSON: {error}")
            return
        for key, kind in (("title", str), ("uid", str), ("schemaVersion", int), ("panels", list)):
            if not isinstance(dashboard.get(key), kind) or not dashboard.get(key):
                self.problem(f"{DASHBOARD}: no {key} ({kind.__name__})")
        if len(dashboard.get("uid", "")) > 40:
            self.problem(f"{DASHBOARD}: uid longer than Grafana's 40 characters")
        variables = {}
        for variable in dashboard.get("templating", {}).get("list", []):
            variables[variable.get("name")] = variable
        data_sources = [name for name, variable in variables.items()
                        if variable.get("type") == "datasource" and variable.get("query") == "prometheus"]
        if not data_sources:
            self.problem(f"{DASHBOARD}: no Prometheus data source variable in templating.list")
            return
        data_source = {"type": "prometheus", "uid": "${%s}" % data_sources[0]}
        for name, variable in variables.items():
            if variable.get("type") == "query":
                query = variable.get("query")
                query = query.get("query") if isinstance(query, dict) else query
                self.read_grafana_query(query, f"{DASHBOARD} variable {name}", variables)
        ids, areas = set(), []
        for panel in self.all_panels(dashboard.get("panels", [])):
            title = panel.get("title") or f"panel {panel.get('id')}"
            where = f"{DASHBOARD} panel {title!r}"
            if not isinstance(panel.get("id"), int) or panel["id"] in ids:
                self.problem(f"{where}: id missing or not unique")
            ids.add(panel.get("id"))
            grid = panel.get("gridPos", {})
            if not all(isinstance(grid.get(key), int) for key in ("h", "w", "x", "y")) \
                    or grid["x"] < 0 or grid["w"] < 1 or grid["x"] + grid["w"] > 24 or grid["h"] < 1:
                self.problem(f"{where}: gridPos {grid} not within Grafana's 24 columns")
                continue
            areas.append((title, grid))
            if panel.get("type") == "row":
                continue
            if not panel.get("type") or not panel.get("title"):
                self.problem(f"{where}: no type or title")
            if panel.get("datasource") != data_source:
                self.problem(f"{where}: datasource {panel.get('datasource')}, not {data_source}")
            targets = panel.get("targets") or []
            if not targets:
                self.problem(f"{where}: no targets")
            for target in targets:
                if not target.get("refId") or not target.get("expr"):
                    self.problem(f"{where}: a target without refId or expr: {target}")
                    continue
                self.read_grafana_query(target["expr"], f"{where} {target['refId']}", variables)
        for index, (title, one) in enumerate(areas):
            for other_title, other in areas[index + 1:]:
                if one["x"] < other["x"] + other["w"] and other["x"] < one["x"] + one["w"] \
                        and one["y"] < other["y"] + other["h"] and other["y"] < one["y"] + one["h"]:
                    self.problem(f"{DASHBOARD}: panels {title!r} and {other_title!r} overlap")

    @staticmethod
    def all_panels(panels):
        for panel in panels:
            yield panel
            yield from Monitoring.all_panels(panel.get("panels", []))

    def read_grafana_query(self, query, where, variables):
        for builtin, value in GRAFANA_BUILTINS.items():
            query = query.replace(builtin, value)
        for name in re.findall(r"\$\{?(\w+)", query):
            if name not in variables:
                self.problem(f"{where}: variable ${name} is not in templating.list")
        values = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", query)
        self.read_expression(values.group(1) if values else query, where)

    def run(self):
        anchors = {github_anchor(heading) for heading in re.findall(r"^#+ +(.+?)\s*$", read(RUNBOOKS), re.MULTILINE)}
        alerts, recorded = self.check_rules(anchors)
        self.check_runbooks(alerts)
        self.check_rule_tests(alerts)
        self.check_dashboard()
        for name in sorted(self.recorded_read - recorded):
            self.problem(f"{name}: read but not recorded by {RULES}")
        for name in sorted(recorded - self.recorded_read):
            self.problem(f"{name}: recorded but read by no alert nor panel")
        return alerts


def main():
    global ROOT
    arguments = sys.argv[1:]
    if "--root" in arguments:
        # Another copy of the files (the tests check that broken copies are caught).
        ROOT = os.path.abspath(arguments[arguments.index("--root") + 1])
    monitoring = Monitoring()
    alerts = monitoring.run()
    if "--json" in arguments:
        json.dump({"problems": monitoring.problems, "alerts": alerts,
                   "grouping_labels": sorted(monitoring.grouping_labels),
                   "metrics": {name: sorted(labels) for name, labels in sorted(monitoring.metrics.items())}},
                  sys.stdout, indent=1)
        print()
        return 0
    for problem in monitoring.problems:
        print(problem, file=sys.stderr)
    print(f"{len(alerts)} alerts, {len(monitoring.metrics)} metrics read, {len(monitoring.problems)} problems")
    return 1 if monitoring.problems else 0


if __name__ == "__main__":
    sys.exit(main())
