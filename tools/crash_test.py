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

"""Crash test for ipnd: kill -9 under load, restart, re-send what was not acknowledged.

Runs the built `ipnd serve` binary with all five providers configured, drives it with
concurrent signed notifications built by tools/ipn_client.py (an implementation independent of
ipnd), and kills it with SIGKILL at random moments, restarting it each time. Like a provider,
the load generator re-sends every notification until it sees the success acknowledgement, and
re-sends some acknowledged ones too. At the end it reads the SQLite file itself and checks:

  * every acknowledged notification is in the store (its dedup key, its first-delivery row);
  * no dedup key was applied twice (one non-duplicate row per key, one transition per row);
  * every order is in the state its notifications imply (the highest-ranked one) with its amount;
  * nothing was rejected, and PRAGMA integrity_check is ok.

With --deliveries, a delivery target is configured too: tools/webhook_receiver.py verifies every
request with the Standard Webhooks library, and at the end every event in the store must have
been delivered (2xx) at least once, signed, each order's events first delivered in seq order,
one webhook-id per event, and one event per transition.

It prints the counts and exits non-zero on any violation.

    tools/crash_test.py --binary .build/debug/ipnd --kills 20      # long form (make crash-test)
    tools/crash_test.py --binary .build/debug/ipnd --kills 3       # short form (make test)
"""
import argparse
import base64
import faulthandler
import collections
import http.client
import json
import os
import queue
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ipn_client  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "Tests", "IPNServerTests", "Fixtures")
RANK = {"pending": 10, "authorized": 20, "paid": 40}

ACCOUNTS = {
    "citcon": {"api_secret": "braintree"},
    "ipay88": {"merchant_code": "KH00001", "merchant_key": "Apple88KEY", "signature": "sha256"},
    "alipay": {"client_id": "SANDBOX_5YTEST0000000001",
               "private_key_file": os.path.join(FIXTURES, "alipay-test-private-key.pem")},
    "unlimint": {"callback_secret": "pzQf529Wa0AV"},
    "juspay": {"username": "crash-user", "password": "crash:password"},
}
ACKS = {
    "citcon": b"ok", "ipay88": b"RECEIVEOK", "unlimint": b"OK", "juspay": b"OK",
    "alipay": b'{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}',
}
# Each provider's status words for pending, authorized and paid (providers.md), when it has them.
LADDERS = {
    "citcon": [("pending", "pending"), ("authorized", "authorized"), ("success", "paid")],
    "ipay88": [("6", "pending"), ("1", "paid")],
    "alipay": [("PENDING", "pending"), ("S", "paid")],
    "unlimint": [("IN_PROGRESS", "pending"), ("AUTHORIZED", "authorized"), ("COMPLETED", "paid")],
    "juspay": [("PENDING_VBV", "pending"), ("AUTHORIZED", "authorized"), ("CHARGED", "paid")],
}
AMOUNTS = {  # (amount, currency, minor units)
    "citcon": ("10.00", "USD", 1000), "ipay88": ("1278.99", "MYR", 127899), "alipay": ("42.00", "SGD", 4200),
    "unlimint": ("6.03", "USD", 603), "juspay": ("600.00", "INR", 60000),
}


def dedup_key(provider, status, uid):
    """The dedup key providers.md gives each notification, computed here, not by ipnd."""
    if provider == "citcon":
        return f"{uid}|charge|{status}"
    if provider == "ipay88":
        return f"T{uid}|{status}"
    if provider == "alipay":
        return f"PAYMENT_PENDING|P{uid}|U" if status == "PENDING" else f"PAYMENT_RESULT|P{uid}|{status}"
    if provider == "unlimint":
        return f"payment|{uid}|{status}"
    return f"evt_{uid}"


class Notification:
    def __init__(self, provider, order, status, state, uid):
        self.provider, self.order, self.status, self.state, self.uid = provider, order, status, state, uid
        amount, currency, _ = AMOUNTS[provider]
        self.request = ipn_client.build(provider, ACCOUNTS[provider], order=order, status=status,
                                        amount=amount, currency=currency, uid=uid)
        self.key = dedup_key(provider, status, uid)
        self.acked = False
        self.resent = False


def config_yaml(store, delivery_url=None, secret=None):
    public_key = open(os.path.join(FIXTURES, "alipay-test-public-key.b64")).read().strip()
    return f"""server:
  host: 127.0.0.1
  port: 0
  request_timeout_seconds: 10
store:
  path: {store}
ops:
  host: 127.0.0.1
  port: 0
providers:
  citcon:
    - account: default
      api_secret: braintree
  ipay88:
    - account: default
      merchant_code: KH00001
      merchant_key: Apple88KEY
      signature: auto
  alipay:
    - account: default
      client_id: SANDBOX_5YTEST0000000001
      public_key: "{public_key}"
  unlimint:
    - account: default
      callback_secret: pzQf529Wa0AV
  juspay:
    - account: default
      username: crash-user
      password: "crash:password"
""" + (f"""deliveries:
  - name: crash
    url: {delivery_url}
    secret: "{secret}"
    timeout_seconds: 5
""" if delivery_url else "")


class Daemon:
    """The ipnd process: started, killed with SIGKILL, started again; its port follows."""

    def __init__(self, binary, config, log_path, environment=None):
        self.binary, self.config, self.log = binary, config, open(log_path, "ab")
        self.environment = environment
        self.process = None
        self.port = None
        self.ops = None
        self.lock = threading.Lock()

    def start(self, timeout=60):
        process = subprocess.Popen([self.binary, "serve", "--config", self.config], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, env=self.environment)
        ready = threading.Event()
        found = {}

        def read():
            for line in process.stderr:
                self.log.write(line)
                match = re.search(rb"msg=listening .*provider_listener=127\.0\.0\.1:(\d+)", line)
                if match:
                    ops = re.search(rb"ops_listener=127\.0\.0\.1:(\d+)", line)
                    found["port"], found["ops"] = int(match.group(1)), int(ops.group(1)) if ops else None
                    ready.set()
            self.log.flush()
        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(timeout):
            process.kill()
            raise RuntimeError(f"ipnd did not start listening within {timeout}s (see {self.log.name})")
        with self.lock:
            self.process, self.port, self.ops = process, found["port"], found["ops"]

    def kill(self):
        with self.lock:
            process, self.port = self.process, None
        process.send_signal(signal.SIGKILL)
        status = process.wait()
        if status != -signal.SIGKILL:
            raise RuntimeError(f"ipnd exited with {status} before it was killed")

    def current_port(self):
        with self.lock:
            return self.port


class Load:
    """Workers delivering notifications until acknowledged, as providers do."""

    def __init__(self, daemon, rng, duplicate_rate, orders_wanted):
        self.daemon, self.rng, self.duplicate_rate = daemon, rng, duplicate_rate
        self.retry = queue.Queue()
        self.fresh = collections.deque()
        self.lock = threading.Lock()
        self.generating = True
        self.orders = {}  # order -> list of Notification
        self.counts = collections.Counter()
        self.in_flight = 0
        self.next_order = 0
        self.run_id = f"{os.getpid()}-{int(time.time())}"
        self.orders_wanted = orders_wanted

    def new_order(self):
        index = self.next_order
        self.next_order += 1
        provider = sorted(LADDERS)[index % len(LADDERS)]
        ladder = LADDERS[provider]
        chosen = self.rng.sample(ladder, self.rng.randint(1, len(ladder)))
        order = f"CRASH-{self.run_id}-{index}"
        notifications = [Notification(provider, order, status, state, f"{self.run_id}-{index}-{j}")
                         for j, (status, state) in enumerate(chosen)]
        self.orders[order] = notifications
        self.fresh.extend(notifications)

    def next(self):
        """The next notification to send, or None when everything is acknowledged."""
        while True:
            try:
                item = self.retry.get_nowait()
                with self.lock:
                    self.in_flight += 1
                return item
            except queue.Empty:
                pass
            with self.lock:
                if not self.fresh and (self.generating or self.next_order < self.orders_wanted):
                    self.new_order()
                if self.fresh:
                    self.in_flight += 1
                    return self.fresh.popleft()
                if self.in_flight == 0 and self.retry.empty():
                    return None
            time.sleep(0.01)

    def send(self, notification):
        port = self.daemon.current_port()
        if port is None:
            return False
        request = notification.request
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
            connection.request("POST", request.path, body=request.body, headers=dict(request.headers))
            response = connection.getresponse()
            body = response.read()
            connection.close()
        except (OSError, http.client.HTTPException):
            return False
        if response.status == 200 and body == ACKS[notification.provider]:
            return True
        with self.lock:
            self.counts[f"status_{response.status}"] += 1
        if response.status != 503:
            raise RuntimeError(f"{notification.provider} {notification.key}: {response.status} {body[:200]!r}")
        return False

    def worker(self, errors):
        while True:
            notification = self.next()
            if notification is None:
                return
            try:
                ok = self.send(notification)
            except Exception as error:  # a wrong answer is a failed test, not a retry
                errors.append(str(error))
                ok = False
            with self.lock:
                self.in_flight -= 1
                self.counts["requests"] += 1
                if ok:
                    self.counts["acks"] += 1
                    if notification.acked:
                        self.counts["duplicate_acks"] += 1
                    notification.acked = True
                else:
                    self.counts["unacknowledged"] += 1
                # Providers re-send some notifications they already saw acknowledged.
                resend = not ok or (not notification.resent and self.rng.random() < self.duplicate_rate)
                if ok and resend:
                    notification.resent = True
            if errors:
                return
            if resend:
                if not ok:
                    time.sleep(0.05)  # the daemon may be restarting
                self.retry.put(notification)


def verify(store, load):
    db = sqlite3.connect(store)
    failures = []
    integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    if integrity != "ok":
        failures.append(f"integrity_check: {integrity}")
    notifications = [n for ns in load.orders.values() for n in ns]
    acked = [n for n in notifications if n.acked]
    if len(acked) != len(notifications):
        failures.append(f"{len(notifications) - len(acked)} notifications were never acknowledged")
    keys = {(p, k): nid for p, k, nid in db.execute("SELECT provider, dedup_key, notification_id FROM dedup_keys")}
    first_rows = {}
    for provider, key, verdict, nid in db.execute(
            "SELECT provider, dedup_key, verdict, id FROM notifications WHERE verdict NOT IN ('duplicate', 'rejected')"):
        if (provider, key) in first_rows:
            failures.append(f"dedup key {provider} {key} applied twice: notifications {first_rows[(provider, key)][1]} and {nid}")
        first_rows[(provider, key)] = (verdict, nid)
    missing = [n for n in acked if (n.provider, n.key) not in keys or (n.provider, n.key) not in first_rows]
    for n in missing[:10]:
        failures.append(f"acknowledged but not stored: {n.provider} {n.key}")
    for nid, count in db.execute("SELECT notification_id, COUNT(*) FROM transitions GROUP BY notification_id HAVING COUNT(*) > 1"):
        failures.append(f"notification {nid} made {count} transitions")
    unexpected = [row for row in first_rows.values() if row[0] not in ("applied", "stale")]
    for verdict, nid in unexpected[:10]:
        failures.append(f"notification {nid} has verdict {verdict}")
    rejected = db.execute("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected'").fetchone()[0]
    if rejected:
        failures.append(f"{rejected} notifications rejected")
    wrong = 0
    for order, ns in load.orders.items():
        provider = ns[0].provider
        expected = max((n.state for n in ns), key=RANK.get)
        row = db.execute("SELECT id, state, amount_minor, currency FROM orders WHERE provider = ? AND account = 'default' "
                         "AND order_ref = ?", (provider, order)).fetchone()
        _, currency, minor = AMOUNTS[provider]
        if row is None or row[1:] != (expected, minor, currency):
            wrong += 1
            if wrong <= 10:
                failures.append(f"order {provider} {order}: {row and row[1:]}, expected {(expected, minor, currency)}")
            continue
        applied = db.execute("SELECT COUNT(*) FROM notifications WHERE order_id = ? AND verdict = 'applied'", (row[0],)).fetchone()[0]
        transitions = db.execute("SELECT COUNT(*) FROM transitions WHERE order_id = ?", (row[0],)).fetchone()[0]
        if applied != transitions:
            failures.append(f"order {order}: {applied} applied notifications but {transitions} transitions")
    counts = {
        "stored_notifications": db.execute("SELECT COUNT(*) FROM notifications").fetchone()[0],
        "stored_duplicates": db.execute("SELECT COUNT(*) FROM notifications WHERE verdict = 'duplicate'").fetchone()[0],
        "orders_in_store": db.execute("SELECT COUNT(*) FROM orders").fetchone()[0],
        "transitions": db.execute("SELECT COUNT(*) FROM transitions").fetchone()[0],
        "wrong_orders": wrong,
        "acked_not_stored": len(missing),
        "integrity": integrity,
    }
    db.close()
    return failures, counts


class Receiver:
    """tools/webhook_receiver.py on a fixed port, its log read back."""

    def __init__(self, workdir, secret):
        self.log = os.path.join(workdir, "received.jsonl")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tools", "webhook_receiver.py"), "--port", "0", "--secret", secret,
             "--log", self.log], stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening "):
            raise RuntimeError(f"the receiver did not start: {line!r}")
        self.port = int(line.split()[1])

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def stop(self):
        self.process.kill()
        self.process.wait()


def wait_for_deliveries(store, receiver, timeout):
    """Until every event in the store was answered 2xx, or `timeout` seconds."""
    deadline = time.time() + timeout
    while True:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        seqs = {row[0] for row in db.execute("SELECT seq FROM events")}
        db.close()
        delivered = {r["seq"] for r in receiver.requests() if r["answer"] == "200"}
        if seqs <= delivered or time.time() > deadline:
            return
        time.sleep(0.2)


def verify_deliveries(store, receiver):
    db = sqlite3.connect(store)
    failures = []
    events = db.execute("SELECT seq, id, order_id FROM events ORDER BY seq").fetchall()
    transitions = db.execute("SELECT COUNT(*) FROM transitions").fetchone()[0]
    db.close()
    if len(events) != transitions:
        failures.append(f"{len(events)} events for {transitions} transitions")
    if [seq for seq, _, _ in events] != list(range(1, len(events) + 1)):
        failures.append("event seqs are not 1..N without a gap")
    requests = receiver.requests()
    first_delivery = {}
    ids = {}
    for request in requests:
        if not all(request["verified"]):
            failures.append(f"seq {request['seq']}: signature not verified")
        known = ids.setdefault(request["seq"], request["id"])
        if known != request["id"]:
            failures.append(f"seq {request['seq']} sent with two webhook-ids")
        if request["answer"] == "200":
            first_delivery.setdefault(request["seq"], request["t"])
    undelivered = [seq for seq, _, _ in events if seq not in first_delivery]
    for seq in undelivered[:10]:
        failures.append(f"event {seq} was never delivered")
    by_order = collections.defaultdict(list)
    for seq, event_id, order_id in events:
        if ids.get(seq, event_id) != event_id:
            failures.append(f"seq {seq} delivered with webhook-id {ids[seq]}, not the event's id {event_id}")
        by_order[order_id].append(seq)
    for order_id, seqs in by_order.items():
        times = [first_delivery[seq] for seq in seqs if seq in first_delivery]
        if times != sorted(times):
            failures.append(f"order {order_id}: events first delivered out of seq order")
    counts = {
        "events": len(events), "delivered_events": len(first_delivery), "delivery_requests": len(requests),
        "undelivered_events": len(undelivered),
    }
    return failures, counts


def main():
    # Stopped from outside (the test harness's timeout sends SIGTERM first): every thread's
    # stack on stderr, so a hang says where it was.
    faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)
    # A test runner may start this with signals blocked (its threads block them, and children
    # inherit the mask): the daemons and servers started from here must get SIGTERM and SIGQUIT.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "debug", "ipnd"))
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--min-orders", type=int, default=50, help="orders to deliver even if the kills end sooner")
    parser.add_argument("--gap", type=float, nargs=2, default=(0.05, 1.0), metavar=("MIN", "MAX"),
                        help="seconds of load between a restart and the next kill (uniform)")
    parser.add_argument("--duplicate-rate", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--deliveries", action="store_true", help="also deliver events to a receiver and check them")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    workdir = args.workdir or tempfile.mkdtemp(prefix="ipnd-crash-")
    os.makedirs(workdir, exist_ok=True)
    store = os.path.join(workdir, "ipnd.sqlite")
    config = os.path.join(workdir, "ipnd.yaml")
    receiver = None
    environment = dict(os.environ)
    if args.deliveries:
        secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
        receiver = Receiver(workdir, secret)
        # The retry schedule's waits, a hundredth: 5 s becomes 50 ms.
        environment["IPND_DELIVERY_RETRY_SCALE"] = "0.01"
    with open(config, "w") as file:
        file.write(config_yaml(store, receiver and f"http://127.0.0.1:{receiver.port}/hooks", receiver and secret))
    os.chmod(config, 0o600)
    print(f"crash-test: seed {seed}, {args.kills} kills, {args.workers} workers, workdir {workdir}", flush=True)

    daemon = Daemon(args.binary, config, os.path.join(workdir, "ipnd.log"), environment)
    daemon.start()
    load = Load(daemon, rng, args.duplicate_rate, args.min_orders)
    errors = []
    workers = [threading.Thread(target=load.worker, args=(errors,), daemon=True) for _ in range(args.workers)]
    started = time.time()
    for worker in workers:
        worker.start()
    kills = 0
    try:
        for _ in range(args.kills):
            time.sleep(rng.uniform(*args.gap))
            if errors:
                break
            daemon.kill()
            kills += 1
            daemon.start()
        with load.lock:
            load.generating = False
        deadline = time.time() + 300
        for worker in workers:
            worker.join(max(1, deadline - time.time()))
        if any(worker.is_alive() for worker in workers):
            errors.append("the load did not finish within 300 s of the last kill")
        if receiver:
            wait_for_deliveries(store, receiver, 120)
        daemon.kill()  # the last stop is a kill as well
    except Exception as error:
        errors.append(f"{type(error).__name__}: {error}")
        if daemon.process and daemon.process.poll() is None:
            daemon.process.kill()
    elapsed = time.time() - started

    failures, counts = verify(store, load)
    failures = errors + failures
    if receiver:
        delivery_failures, delivery_counts = verify_deliveries(store, receiver)
        receiver.stop()
        failures += delivery_failures
        counts.update(delivery_counts)
    sent = sum(len(ns) for ns in load.orders.values())
    summary = {
        "kills": kills, "seconds": round(elapsed, 1), "orders": len(load.orders), "notifications": sent,
        "requests": load.counts["requests"], "acks": load.counts["acks"],
        "unacknowledged_attempts": load.counts["unacknowledged"], "duplicate_acks": load.counts["duplicate_acks"],
        "answers_503": load.counts["status_503"], **counts,
    }
    print("crash-test: " + " ".join(f"{key}={value}" for key, value in summary.items()), flush=True)
    if failures:
        for failure in failures[:40]:
            print(f"crash-test: FAIL {failure}", flush=True)
        print(f"crash-test: FAILED (seed {seed}; store and daemon log in {workdir})", flush=True)
        return 1
    print("crash-test: PASS", flush=True)
    if args.workdir is None:
        for name in os.listdir(workdir):
            os.remove(os.path.join(workdir, name))
        os.rmdir(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
