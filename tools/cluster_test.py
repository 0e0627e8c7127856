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

"""Several `ipnd serve` processes on one PostgreSQL database, checked from outside.

Starts a private PostgreSQL server (scripts/pg-test-server.sh, in a temporary directory, so that
restarting it drops nobody else's connections), or with --shared-server uses the one IPND_TEST_PG_*
name, creates a database, and runs NODES daemons of the built binary on it. Notifications are built by tools/ipn_client.py (independent of ipnd) and sent
to the nodes at random, re-sent until acknowledged, as providers do. Scenarios (flags combine):

  --dedup N        N notifications, each delivered 10 times at once, split across the nodes:
                   exactly one `applied` and nine `duplicate` each
  --lifecycles N   N orders whose lifecycle notifications arrive shuffled, concurrently, on
                   alternate nodes: every order ends in the state its notifications imply
  --load           a stream of new orders while feed readers (--readers, 1 by default) long-poll
                   GET /api/v1/events on alternate nodes: each must see strictly increasing seqs
                   and, at the end, exactly the committed events, each once
  --kills K        kill -9 a random node K times under load, restarting it each time
  --kill-sequencer K  kill -9 the node numbering the feed (the holder of the sequencer lock, named
                   by its connection's application_name) K times under load, restarting it
  --long-transaction S  while under load, hold a transaction (a snapshot and a transaction id)
                   open S seconds on the same database: the readers' feed must go on meanwhile
  --pg-restarts R  restart PostgreSQL (pg_ctl restart -m immediate) R times under load; with
                   --pg-down S it stays down S seconds each time: the nodes answer 503 while it is
                   down and apply again after
  --deliveries     a delivery target (tools/webhook_receiver.py): every event delivered at least
                   once, signed, each order's events first delivered in seq order; with neither
                   kills nor restarts, exactly once

At the end it reads the database with psql and checks: every acknowledged notification stored,
no dedup key applied twice, every order in the state its notifications imply, one event per
transition. It prints `cluster-test: key=value ...` and `cluster-test: PASS`, or FAIL lines.
"""
import argparse
import base64
import faulthandler
import collections
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crash_test  # noqa: E402
import ipn_client  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANK = {"pending": 10, "authorized": 20, "paid": 40}


class Postgres:
    """A server from scripts/pg-test-server.sh, and psql against one database of this run's own.

    With `shared`, the server the environment names (IPND_TEST_PG_*: the one `make test` runs for
    the whole suite), in a new database that is dropped afterwards; restarting it then drops every
    connection to it, so the caller must be the only one using it meanwhile. Otherwise a private
    server in a temporary directory, stopped and removed afterwards."""

    def __init__(self, shared=False):
        script = os.path.join(ROOT, "scripts", "pg-test-server.sh")
        self.script = script
        self.shared = shared
        if shared:
            self.env = {key: value for key, value in os.environ.items() if key.startswith("IPND_TEST_PG_")}
            self.dir = self.env["IPND_TEST_PG_SOCKET_DIR"]
            self.database = "ipnd_cluster_%d_%d" % (os.getpid(), random.randrange(1 << 30))
        else:
            self.dir = tempfile.mkdtemp(prefix="ipndcl.", dir="/tmp")
            os.chmod(self.dir, 0o755)
            subprocess.run([script, "start", self.dir], check=True, stdout=subprocess.DEVNULL)
            env = subprocess.run([script, "env", self.dir], check=True, capture_output=True, text=True).stdout
            self.env = dict(re.findall(r"export (\w+)=(\S*)", env))
            self.database = "ipnd_cluster"
        self.psql("CREATE DATABASE " + self.database, database=self.env["IPND_TEST_PG_DATABASE"])

    def psql(self, sql, database=None):
        result = subprocess.run(
            [os.path.join(self.env["IPND_TEST_PG_BIN"], "psql"), "--no-psqlrc", "--quiet", "--no-align", "--tuples-only",
             "--field-separator=\t", "--set=ON_ERROR_STOP=1", f"--host={self.env['IPND_TEST_PG_SOCKET_DIR']}",
             f"--port={self.env['IPND_TEST_PG_PORT']}", f"--username={self.env['IPND_TEST_PG_USER']}",
             f"--dbname={database or self.database}", "-c", sql],
            capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"psql: {result.stderr.strip()}")
        return [line.split("\t") for line in result.stdout.splitlines() if line]

    def restart(self, down=0):
        subprocess.run([self.script, "restart-immediate", self.dir, str(down)], check=True, stdout=subprocess.DEVNULL)

    def stop(self):
        if self.shared:
            try:
                self.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.database, database=self.env["IPND_TEST_PG_DATABASE"])
            except RuntimeError as error:
                print(f"cluster-test: database {self.database} not dropped: {error}")
            return
        subprocess.run([self.script, "stop", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


def config_yaml(pg, delivery_url=None, secret=None):
    base = crash_test.config_yaml("/nonexistent", delivery_url, secret)
    store = f"""store:
  postgres:
    host: {pg.env['IPND_TEST_PG_SOCKET_DIR']}
    port: {pg.env['IPND_TEST_PG_PORT']}
    database: {pg.database}
    user: {pg.env['IPND_TEST_PG_USER']}
    tls: disable
    pool_size: 12
"""
    base = re.sub(r"store:\n  path: [^\n]*\n", store, base)
    return base.replace("ops:\n  host: 127.0.0.1\n  port: 0\n", "ops:\n  host: 127.0.0.1\n  port: 0\n  tokens_sha256: [" +
                        TOKEN_DIGEST + "]\n")


TOKEN = "cluster-test-token"
TOKEN_DIGEST = __import__("hashlib").sha256(TOKEN.encode()).hexdigest()


# A node is crash_test's daemon: started, killed with SIGKILL, started again; its provider and
# ops ports follow.
Node = crash_test.Daemon


class Cluster:
    """The nodes; `any_port` picks a live one at random."""

    def __init__(self, nodes):
        self.nodes = nodes

    def any_port(self, rng=random):
        ports = [n.current_port() for n in self.nodes]
        ports = [p for p in ports if p]
        return rng.choice(ports) if ports else None


def send(port, request, timeout=15):
    """(status, body) or None when the node could not be reached."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        connection.request("POST", request.path, body=request.body, headers=dict(request.headers))
        response = connection.getresponse()
        body = response.read()
        connection.close()
        return response.status, body
    except (OSError, http.client.HTTPException):
        return None


def deliver_until_acked(cluster, notification, counts, lock, deadline):
    while time.time() < deadline:
        port = cluster.any_port()
        result = send(port, notification.request) if port else None
        with lock:
            counts["requests"] += 1
            if result and result[0] == 503:
                counts["answers_503"] += 1
        if result and result[0] == 200 and result[1] == crash_test.ACKS[notification.provider]:
            notification.acked = True
            return True
        if result and result[0] not in (200, 503):
            raise RuntimeError(f"{notification.provider} {notification.key}: {result[0]} {result[1][:200]!r}")
        time.sleep(0.05)
    return False


def dedup_scenario(cluster, count, run_id, failures):
    """Each notification 10 times at once, split across the nodes: one applied."""
    notifications = []
    for index in range(count):
        n = crash_test.Notification("unlimint", f"DUP-{run_id}-{index}", "COMPLETED", "paid", f"dup-{run_id}-{index}")
        notifications.append(n)
        results = [None] * 10

        def post(slot, n=n):
            node = cluster.nodes[slot % len(cluster.nodes)]
            results[slot] = send(node.current_port(), n.request)
        threads = [threading.Thread(target=post, args=(slot,)) for slot in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if any(r is None or r[0] != 200 for r in results):
            failures.append(f"dedup {n.order}: answers {[r and r[0] for r in results]}")
        n.acked = True
    return notifications


def lifecycle_scenario(cluster, count, run_id, rng, failures):
    """Shuffled lifecycles, concurrently, on alternate nodes."""
    orders = {}
    for index in range(count):
        provider = sorted(crash_test.LADDERS)[index % len(crash_test.LADDERS)]
        order = f"LIFE-{run_id}-{index}"
        steps = [crash_test.Notification(provider, order, status, state, f"life-{run_id}-{index}-{j}")
                 for j, (status, state) in enumerate(crash_test.LADDERS[provider])]
        rng.shuffle(steps)
        orders[order] = steps
    lock = threading.Lock()
    counts = collections.Counter()
    deadline = time.time() + 120

    def worker(steps):
        for n in steps:
            if not deliver_until_acked(cluster, n, counts, lock, deadline):
                failures.append(f"lifecycle {n.order}: not acknowledged")
    threads = [threading.Thread(target=worker, args=(steps,)) for steps in orders.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return orders


class FeedReader(threading.Thread):
    """Long-polls the feed on alternate nodes, keeping every seq it sees in order."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster, self.seen, self.after, self.stop_at = cluster, [], 0, None
        self.errors = []

    def run(self):
        index = 0
        while True:
            if self.stop_at and time.time() > self.stop_at:
                return
            nodes = [n for n in self.cluster.nodes if n.current_port()]
            if not nodes:
                time.sleep(0.05)
                continue
            node = nodes[index % len(nodes)]
            index += 1
            try:
                connection = http.client.HTTPConnection("127.0.0.1", node.ops, timeout=10)
                connection.request("GET", f"/api/v1/events?after={self.after}&limit=200&wait=1",
                                   headers={"Authorization": f"Bearer {TOKEN}"})
                response = connection.getresponse()
                body = response.read()
                connection.close()
            except (OSError, http.client.HTTPException):
                time.sleep(0.05)
                continue
            if response.status == 503:
                time.sleep(0.1)
                continue
            if response.status != 200:
                self.errors.append(f"feed answered {response.status}: {body[:200]!r}")
                return
            page = json.loads(body)
            for event in page["events"]:
                if self.seen and event["seq"] <= self.seen[-1]:
                    self.errors.append(f"seq {event['seq']} after {self.seen[-1]}")
                self.seen.append(event["seq"])
            self.after = page["next_after"]


def sequencing_node(pg, nodes):
    """The node holding the sequencer lock (its connection's application_name names its pid), or None."""
    rows = pg.psql(f"""
        SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = {SEQUENCER_LOCK >> 32} AND l.objid = {SEQUENCER_LOCK & 0xFFFFFFFF} AND l.objsubid = 1""")
    for (name,) in rows:
        match = re.search(r"-(\d+)-\d+$", name)
        for node in nodes:
            if match and node.process and node.process.poll() is None and node.process.pid == int(match.group(1)):
                return node
    return None


# EventSequencer.lockKey ('ipndseqr').
SEQUENCER_LOCK = 0x69706E6473657172


class LongTransaction(threading.Thread):
    """psql holding a transaction open (a snapshot and a transaction id) for `seconds`."""

    def __init__(self, pg, seconds):
        super().__init__(daemon=True)
        self.pg, self.seconds, self.error = pg, seconds, None

    def run(self):
        try:
            self.pg.psql(f"BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT txid_current(); SELECT count(*) FROM events; "
                         f"SELECT pg_sleep({self.seconds}); COMMIT")
        except Exception as error:  # noqa: BLE001 - reported as a failure
            self.error = error


def verify(pg, orders, notifications):
    failures = []
    acked = [n for n in notifications if n.acked]
    if len(acked) != len(notifications):
        failures.append(f"{len(notifications) - len(acked)} notifications were never acknowledged")
    keys = {(p, k) for p, k in pg.psql("SELECT provider, dedup_key FROM dedup_keys")}
    firsts = collections.Counter((p, k) for p, k in pg.psql(
        "SELECT provider, dedup_key FROM notifications WHERE verdict NOT IN ('duplicate', 'rejected')"))
    for key, count in firsts.items():
        if count > 1:
            failures.append(f"dedup key {key} applied {count} times")
    missing = [n for n in acked if (n.provider, n.key) not in keys]
    for n in missing[:10]:
        failures.append(f"acknowledged but not stored: {n.provider} {n.key}")
    for nid, count in pg.psql("SELECT notification_id, count(*) FROM transitions GROUP BY notification_id HAVING count(*) > 1"):
        failures.append(f"notification {nid} made {count} transitions")
    states = {(p, o): (s, int(a) if a else None) for p, o, s, a in pg.psql("SELECT provider, order_ref, state, amount_minor FROM orders")}
    wrong = 0
    for order, ns in orders.items():
        provider = ns[0].provider
        expected = max((n.state for n in ns), key=RANK.get)
        got = states.get((provider, order))
        if got != (expected, crash_test.AMOUNTS[provider][2]):
            wrong += 1
            if wrong <= 10:
                failures.append(f"order {provider} {order}: {got}, expected {expected}")
    transitions = int(pg.psql("SELECT count(*) FROM transitions")[0][0])
    events = int(pg.psql("SELECT count(*) FROM events WHERE type = 'order.state_changed'")[0][0])
    if transitions != events:
        failures.append(f"{events} order.state_changed events for {transitions} transitions")
    counts = {
        "orders": len(orders), "notifications": len(notifications), "acked_not_stored": len(missing), "wrong_orders": wrong,
        "stored_notifications": int(pg.psql("SELECT count(*) FROM notifications")[0][0]), "transitions": transitions,
        "events": events,
    }
    return failures, counts


STARTED = time.time()


def phase(name):
    """Notes on stderr how long the run has taken when it reaches `name`."""
    print(f"cluster-test: {time.time() - STARTED:6.1f}s {name}", file=sys.stderr, flush=True)


def main():
    # Stopped from outside (the test harness's timeout sends SIGTERM first): every thread's
    # stack on stderr, so a hang says where it was.
    faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)
    # A test runner may start this with signals blocked (its threads block them, and children
    # inherit the mask): the daemons and servers started from here must get SIGTERM and SIGQUIT.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "debug", "ipnd"))
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--dedup", type=int, default=0)
    parser.add_argument("--lifecycles", type=int, default=0)
    parser.add_argument("--load", action="store_true")
    parser.add_argument("--kills", type=int, default=0)
    parser.add_argument("--kill-sequencer", type=int, default=0)
    parser.add_argument("--long-transaction", type=float, default=0)
    parser.add_argument("--readers", type=int, default=1)
    parser.add_argument("--pg-restarts", type=int, default=0)
    parser.add_argument("--pg-down", type=float, default=0,
                        help="seconds PostgreSQL stays down after each crash (longer than ipnd's 5 s batch timeout: 503s)")
    parser.add_argument("--deliveries", action="store_true")
    parser.add_argument("--min-orders", type=int, default=60)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--gap", type=float, nargs=2, default=(0.2, 0.8))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--shared-server", action="store_true",
                        help="use the server IPND_TEST_PG_* name (make test's), in a database of this run's own")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    run_id = f"{os.getpid()}-{int(time.time())}"
    workdir = tempfile.mkdtemp(prefix="ipnd-cluster-")
    print(f"cluster-test: seed {seed}, {args.nodes} nodes, workdir {workdir}", flush=True)
    pg = Postgres(shared=args.shared_server)
    receiver = None
    failures = []
    summary = {}
    nodes = []
    try:
        environment = dict(os.environ)
        secret = None
        if args.deliveries:
            secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
            receiver = crash_test.Receiver(workdir, secret)
            environment["IPND_DELIVERY_RETRY_SCALE"] = "0.01"
            # A killed node's leases are taken over once they run out: 5 s here, 45 s in production.
            environment["IPND_DELIVERY_LEASE_SECONDS"] = "5"
        config = os.path.join(workdir, "ipnd.yaml")
        with open(config, "w") as file:
            file.write(config_yaml(pg, receiver and f"http://127.0.0.1:{receiver.port}/hooks", secret))
        os.chmod(config, 0o600)
        nodes = [Node(args.binary, config, os.path.join(workdir, f"node{i}.log"), environment) for i in range(args.nodes)]
        for node in nodes:
            node.start()
        cluster = Cluster(nodes)
        notifications = []
        orders = {}
        phase("nodes started")
        if args.dedup:
            dups = dedup_scenario(cluster, args.dedup, run_id, failures)
            notifications += dups
            for n in dups:
                orders[n.order] = [n]
            applied = collections.Counter(row[0] for row in pg.psql(
                f"SELECT verdict FROM notifications WHERE order_ref LIKE 'DUP-{run_id}-%'"))
            if applied["applied"] != args.dedup or applied["duplicate"] != 9 * args.dedup:
                failures.append(f"dedup: {dict(applied)} for {args.dedup} notifications delivered 10 times each")
            summary["dedup_applied"] = applied["applied"]
            summary["dedup_duplicates"] = applied["duplicate"]
        if args.lifecycles:
            lifecycles = lifecycle_scenario(cluster, args.lifecycles, run_id, rng, failures)
            orders.update(lifecycles)
            notifications += [n for ns in lifecycles.values() for n in ns]
        readers = []
        if args.load or args.kills or args.kill_sequencer or args.pg_restarts or args.long_transaction:
            readers = [FeedReader(cluster) for _ in range(args.readers)]
            for reader in readers:
                reader.start()
            load = crash_test.Load(cluster, rng, 0.1, args.min_orders)
            load.daemon = cluster
            cluster.current_port = cluster.any_port
            errors = []
            workers = [threading.Thread(target=load.worker, args=(errors,), daemon=True) for _ in range(args.workers)]
            for worker in workers:
                worker.start()
            kills = restarts = sequencer_kills = 0
            for _ in range(args.kills):
                time.sleep(rng.uniform(*args.gap))
                node = rng.choice(nodes)
                node.kill()
                kills += 1
                node.start()
            for _ in range(args.kill_sequencer):
                time.sleep(rng.uniform(*args.gap))
                deadline = time.time() + 30
                node = sequencing_node(pg, nodes)
                while node is None and time.time() < deadline:
                    time.sleep(0.1)
                    node = sequencing_node(pg, nodes)
                if node is None:
                    failures.append("no node held the sequencer lock within 30 s")
                    break
                phase(f"killing the sequencing node (pid {node.process.pid})")
                before = max((max(r.seen, default=0) for r in readers), default=0)
                node.kill()
                sequencer_kills += 1
                # The feed goes on while the killed node is down: another node takes the lock.
                newest = 0
                deadline = time.time() + 30
                while time.time() < deadline:
                    newest = max((max(r.seen, default=0) for r in readers), default=0)
                    if newest > before + 5:
                        break
                    time.sleep(0.1)
                if newest <= before + 5:
                    failures.append(f"the feed stopped after the sequencing node was killed (seq {before}, then {newest})")
                node.start()
            if args.long_transaction:
                holder = LongTransaction(pg, args.long_transaction)
                holder.start()
                time.sleep(1)
                started_at = max((max(r.seen, default=0) for r in readers), default=0)
                holder.join(args.long_transaction + 60)
                ended_at = max((max(r.seen, default=0) for r in readers), default=0)
                if holder.error:
                    failures.append(f"the long transaction failed: {holder.error}")
                if ended_at <= started_at:
                    failures.append(f"the feed did not move while a transaction was held open (seq {started_at}, then {ended_at})")
                summary["seqs_during_long_transaction"] = ended_at - started_at
            for _ in range(args.pg_restarts):
                time.sleep(rng.uniform(*args.gap))
                phase("restarting PostgreSQL")
                pg.restart(args.pg_down)
                phase("PostgreSQL back")
                restarts += 1
            if not args.kills and not args.pg_restarts and not args.kill_sequencer and not args.long_transaction:
                time.sleep(rng.uniform(*args.gap) * 3)
            with load.lock:
                load.generating = False
            for worker in workers:
                worker.join(300)
            failures += errors
            orders.update(load.orders)
            notifications += [n for ns in load.orders.values() for n in ns]
            summary.update(kills=kills, sequencer_kills=sequencer_kills, pg_restarts=restarts, requests=load.counts["requests"],
                           answers_503=load.counts["status_503"])
        phase("load done")
        if receiver:
            deadline = time.time() + 120
            while time.time() < deadline:
                seqs = {int(row[0]) for row in pg.psql("SELECT seq FROM events")}
                delivered = {r["seq"] for r in receiver.requests() if r["answer"] == "200"}
                if seqs <= delivered:
                    break
                time.sleep(0.3)
        phase("deliveries done")
        if readers:
            # Every committed event is numbered (the nodes still run), then the readers catch up.
            deadline = time.time() + 30
            while int(pg.psql("SELECT count(*) FROM events_unsequenced")[0][0]) and time.time() < deadline:
                time.sleep(0.1)
            newest = int(pg.psql("SELECT coalesce(max(seq), 0) FROM events")[0][0])
            deadline = time.time() + 30
            while any(reader.after < newest for reader in readers) and time.time() < deadline:
                time.sleep(0.1)
            seqs = [int(row[0]) for row in pg.psql("SELECT seq FROM events ORDER BY seq")]
            for index, reader in enumerate(readers):
                reader.stop_at = time.time()
                reader.join(15)
                failures += [f"feed reader {index}: {error}" for error in reader.errors]
                if reader.seen != sorted(set(reader.seen)):
                    failures.append(f"feed reader {index} saw seqs out of order or twice")
                if reader.seen != seqs:
                    missed = sorted(set(seqs) - set(reader.seen))[:10]
                    failures.append(f"feed reader {index} saw {len(reader.seen)} of {len(seqs)} committed events (missed {missed})")
            summary["feed_seen"] = min(len(reader.seen) for reader in readers)
            summary["feed_readers"] = len(readers)
        if receiver:
            delivery_failures, delivery_counts = verify_deliveries(
                pg, receiver, exactly_once=not args.kills and not args.pg_restarts and not args.kill_sequencer)
            failures += delivery_failures
            summary.update(delivery_counts)
        phase("feed done")
        for node in nodes:
            if node.process and node.process.poll() is None:
                node.kill()
        verify_failures, counts = verify(pg, orders, notifications)
        failures += verify_failures
        summary.update(counts)
    except Exception as error:
        failures.append(f"{type(error).__name__}: {error}")
    finally:
        for node in nodes:
            if node.process and node.process.poll() is None:
                node.process.kill()
        if receiver:
            receiver.stop()
        pg.stop()
    print("cluster-test: " + " ".join(f"{k}={v}" for k, v in summary.items()), flush=True)
    if failures:
        for failure in failures[:40]:
            print(f"cluster-test: FAIL {failure}", flush=True)
        print(f"cluster-test: FAILED (seed {seed}; logs in {workdir})", flush=True)
        return 1
    print("cluster-test: PASS", flush=True)
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


def verify_deliveries(pg, receiver, exactly_once):
    failures = []
    events = {int(seq): event_id for seq, event_id in pg.psql("SELECT seq, id FROM events")}
    requests = receiver.requests()
    delivered = collections.Counter(r["seq"] for r in requests if r["answer"] == "200")
    for request in requests:
        if not all(request["verified"]):
            failures.append(f"seq {request['seq']}: signature not verified")
        if events.get(request["seq"], request["id"]) != request["id"]:
            failures.append(f"seq {request['seq']} sent with webhook-id {request['id']}, not the event's id")
    undelivered = [seq for seq in events if seq not in delivered]
    for seq in undelivered[:10]:
        failures.append(f"event {seq} was never delivered")
    twice = [seq for seq, count in delivered.items() if count > 1]
    if exactly_once and twice:
        failures.append(f"events delivered twice with no crash or restart: {sorted(twice)[:10]}")
    # Per order, each event first delivered after the one before it (README, "Connecting your application").
    first = {}
    for request in requests:
        if request["answer"] == "200":
            first.setdefault(request["seq"], (request["t"], request["order"]))
    by_order = collections.defaultdict(list)
    for seq in sorted(first):
        by_order[first[seq][1]].append(first[seq][0])
    out_of_order = [order for order, times in by_order.items() if times != sorted(times)]
    for order in out_of_order[:10]:
        failures.append(f"order {order}: events first delivered out of seq order")
    return failures, {"events_delivered": len(delivered), "delivered_twice": len(twice), "undelivered_events": len(undelivered),
                      "orders_out_of_order": len(out_of_order)}


if __name__ == "__main__":
    sys.exit(main())
