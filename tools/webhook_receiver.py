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

"""A merchant's webhook receiver, written for ipnd's tests, independent of ipnd's code.

Every request is verified with the Standard Webhooks reference library (`standardwebhooks`
from PyPI) against each configured secret, then answered as the chosen behaviour says, and
recorded as one JSON line in --log:
  {"t": unix seconds, "id": webhook-id, "seq": N, "type": ..., "order": order_ref,
   "verified": [true, ...] (one per secret), "answer": "200" | "500" | "reset" | "timeout" | ...}

Behaviours (--mode):
  ok            200 to everything
  flaky         --fail-rate of the requests fail at random: a 500, a reset connection or a
                timeout (no answer for --hang seconds), evenly; the rest 200
  gone          410 to everything
  retry-after   the first attempt of each webhook-id gets 429 with Retry-After: --retry-after;
                later attempts 200
The receiver prints "listening PORT" on stdout once it accepts connections; --port 0 picks one.
A file named by --control may hold a mode word; it is read before each request, so a test can
switch behaviour (e.g. from gone to ok) while the receiver runs.
"""
import argparse
import http.server
import json
import os
import random
import signal
import socket
import socketserver
import sys
import threading
import time

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen_ids = set()
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def mode(self):
        control = self.server.options.control
        if control and os.path.exists(control):
            with open(control) as handle:
                word = handle.read().strip()
                if word:
                    return word
        return self.server.options.mode

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if len(body) < length:
            # The sender went away mid-request (ipnd killed with -9 while sending): no request
            # arrived, as any HTTP server sees it. ipnd attempts it again after its restart.
            self.close_connection = True
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        verified = []
        for secret in self.server.options.secret:
            try:
                Webhook(secret).verify(body, headers)
                verified.append(True)
            except WebhookVerificationError:
                verified.append(False)
        try:
            event = json.loads(body)
        except ValueError:
            event = {}
        webhook_id = headers.get("webhook-id", "")
        mode = self.mode()
        answer = "200"
        if mode == "gone":
            answer = "410"
        elif mode == "hang":
            answer = "timeout"
        elif mode == "flaky" and random.random() < self.server.options.fail_rate:
            answer = random.choice(["500", "reset", "timeout"])
        elif mode == "retry-after":
            with Receiver.lock:
                first = webhook_id not in Receiver.seen_ids
                Receiver.seen_ids.add(webhook_id)
            if first:
                answer = "429"
        record = {
            "t": time.time(), "id": webhook_id, "seq": event.get("seq"), "type": event.get("type"),
            "order": (event.get("order") or {}).get("order_ref"), "verified": verified, "answer": answer,
            "timestamp": headers.get("webhook-timestamp"), "user_agent": headers.get("user-agent"),
            "content_type": headers.get("content-type"), "signatures": len(headers.get("webhook-signature", "").split()),
            "body": body.decode("utf-8", "replace") if self.server.options.keep_bodies else None,
        }
        with self.server.log_lock:
            self.server.log.write(json.dumps(record) + "\n")
            self.server.log.flush()
        if answer == "reset":
            # Close at once with RST: the client sees a reset connection, no answer.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
            self.close_connection = True
            return
        if answer == "timeout":
            time.sleep(self.server.options.hang)
            self.close_connection = True
            return
        status = int(answer)
        payload = b"ok\n" if status == 200 else b"no\n"
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", str(self.server.options.retry_after))
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def handle_error(self, request, client_address):
        # A sender that went away mid-request (killed, timed out) is what the tests do on purpose.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def main():
    # A parent may have started this with signals blocked (a test runner's threads block them,
    # and children inherit the mask): SIGTERM must still stop it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--secret", action="append", required=True, help="whsec_... (repeat for each)")
    parser.add_argument("--mode", default="ok", choices=["ok", "flaky", "gone", "retry-after", "hang"])
    parser.add_argument("--fail-rate", type=float, default=0.3)
    parser.add_argument("--hang", type=float, default=3.0, help="seconds a 'timeout' answer holds the request")
    parser.add_argument("--retry-after", type=int, default=1)
    parser.add_argument("--control", help="a file whose content, when present, overrides --mode")
    parser.add_argument("--log", required=True)
    parser.add_argument("--keep-bodies", action="store_true")
    options = parser.parse_args()
    server = Server(("127.0.0.1", options.port), Receiver)
    server.options = options
    server.log = open(options.log, "a")
    server.log_lock = threading.Lock()
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
