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

# tools/example_receiver.py, as the README shows it: your application's orders table, kept by ipnd's events.
# pip install standardwebhooks; IPND_SECRET=whsec_... python3 tools/example_receiver.py
import os
import sqlite3
from http.server import BaseHTTPRequestHandler, HTTPServer
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

webhook = Webhook(os.environ["IPND_SECRET"])  # the target's `secret` in ipnd.yaml
db = sqlite3.connect(os.environ.get("ORDERS_DB", "orders.db"), check_same_thread=False)
db.execute("""CREATE TABLE IF NOT EXISTS orders (provider TEXT, account TEXT, order_ref TEXT,
              state TEXT, amount_minor INTEGER, currency TEXT, seq INTEGER,
              PRIMARY KEY (provider, account, order_ref))""")


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            event = webhook.verify(body, {name.lower(): value for name, value in self.headers.items()})
        except WebhookVerificationError:
            self.send_response(400)
            self.end_headers()
            return
        if event["type"].startswith("order."):
            order = event["order"]
            # Upsert by seq: a redelivery, or an older event arriving late, never overwrites a newer state.
            db.execute("""INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)
                          ON CONFLICT (provider, account, order_ref) DO UPDATE SET
                            state = excluded.state, amount_minor = excluded.amount_minor,
                            currency = excluded.currency, seq = excluded.seq
                          WHERE excluded.seq > orders.seq""",
                       (order["provider"], order["account"], order["order_ref"], order["state"],
                        order["amount_minor"], order["currency"], event["seq"]))
            db.commit()
        self.send_response(204)  # any 2xx: delivered; anything else is retried
        self.end_headers()


HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "9000"))), Hook).serve_forever()
