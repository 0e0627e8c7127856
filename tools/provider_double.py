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

"""A double of the five providers' status-inquiry APIs, written for ipnd's tests from the
spec's inquiries.md (the protocols to the byte), independent of ipnd's code.

One HTTP/1.1 server (a thread per connection, keep-alive) serves every provider, dispatched
by path. It checks each request as the real provider would, answers what a test scripted for
the order (or the provider's "not found"), and records every request it got.

    python3 tools/provider_double.py --port 0 --config CONFIG.json
prints "listening PORT" on stdout once it accepts connections, then nothing else; it exits
on SIGTERM or SIGINT.

CONFIG.json (any provider may be absent; its routes then answer 404):
  {"ipay88":   {"merchant_code": "M00003"},
   "alipay":   {"client_id": "SANDBOX_5YTEST0000000001",
                "merchant_public_key_file": "PATH (base64 DER SPKI or PEM)",
                "antom_private_key_file": "PATH (PEM, PKCS#8 or PKCS#1)",
                "key_version": 1          (optional: when given, any other keyVersion fails)},
   "unlimint": {"terminal_code": "T1", "terminal_password": "pw", "token_ttl_seconds": 300},
   "juspay":   {"api_key": "K", "merchant_id": "M"},
   "citcon":   {"private_key": "PK", "token_ttl_seconds": 3600}}
  (`merchant_public_key` / `antom_private_key` may hold the key text itself instead of a file;
  a relative file path is taken from the working directory, else from the config's directory.)

Provider routes (base URLs: iPay88 http://127.0.0.1:P/epayment/enquiry.asp, Antom, Unlimint
and Juspay http://127.0.0.1:P, Citcon http://127.0.0.1:P/v1):
  POST /epayment/enquiry.asp                      iPay88 re-query (form MerchantCode, RefNo, Amount)
  POST /ams/api/v1/payments/inquiryPayment        Antom (and /ams/sandbox/api/v1/...), RSA256 signed
  POST /api/auth/token                            Unlimint token (grant_type=password | refresh_token)
  GET  /api/payments?request_id&merchant_order_id&start_time&end_time&max_count   Unlimint
  GET  /orders/<order_id>                         Juspay order status (Basic api_key:, x-merchantid, version)
  POST /v1/access-tokens                          Citcon token (Bearer private_key, {"token_type":"server"})
  GET  /v1/transactions/<id>                      Citcon transaction (Bearer access_token)
A request that fails the provider's checks gets the provider's own rejection and consumes no
scripted reply: iPay88 `Invalid parameters`; Antom result F INVALID_SIGNATURE, KEY_NOT_FOUND
(wrong client-id, keyVersion, or a SANDBOX_ client on the production path and vice versa),
PARAM_ILLEGAL or MEDIA_TYPE_NOT_ACCEPTABLE (HTTP 200, signed); Unlimint 401/400
{name, message}; Juspay 401 {status: "error", error_code: "access_denied", error_info};
Citcon 401 {status: "fail", data: {code: "unauthorized", message}}.

Control routes (JSON):
  POST /_double/script  {"provider": P, "order": KEY, "replies": [REPLY, ...]}
        Replies are used in order, one per inquiry that passed the checks; the last repeats.
        Scripting again replaces the list; "replies": [] removes the script. The order KEY is
        iPay88 RefNo, Antom paymentRequestId, Unlimint merchant_order_id, Juspay the path's
        order id and Citcon the path's transaction id (both percent-decoded).
        {"provider": "unlimint"|"citcon", "kind": "token", "replies": [...]} scripts the token
        endpoint instead (generic fields only; a composed answer issues a token as usual).
        REPLY fields, all optional:
          delay (seconds before answering), status (HTTP status), retry_after (adds
          Retry-After), headers ({name: value}; replaces a default header of that name, null
          removes it), body (raw text sent as is; Antom still signs it), garbage: true
          (unparseable bytes), close: true | "reset" (close the connection, after any delay,
          without an answer; "reset" sends a TCP RST), and the provider's composition:
          ipay88   text: "00" | "Payment fail" | "Record not found" | ...
          alipay   result {resultCode, resultStatus, resultMessage} (default SUCCESS/S),
                   payment {...} merged at the top level (paymentRequestId defaults to the
                   order), sign: "valid" | "forged" | "none" | "tampered",
                   response_time: "TEXT" | "epoch" (default ISO 8601, +08:00),
                   client_id: the answer's client-id header (default the configured one)
          unlimint payments [{id, status, amount, currency, created, merchant_order_id,
                   payment_method, ...more payment_data fields}], has_more
          juspay   order {status, amount, currency, id, txn_id, status_id, ...} | not_found: true
          citcon   transaction {id, object, reference, amount, currency, status, ...}
                   | fail {code, message} (HTTP 400 unless status says otherwise)
        Amounts (Unlimint, Juspay, Citcon) given as strings are emitted unquoted, verbatim:
        "30.00" becomes the JSON number 30.00. A null field value removes the field.
        A reply without body, garbage or composition answers a non-2xx `status` with the
        provider's error shape, else the provider's "not found".
        Unscripted orders: iPay88 `Record not found`; Antom result F ORDER_NOT_EXIST; Unlimint
        {"data":[],"has_more":false}; Juspay 400 NOT_FOUND (status_id 40); Citcon 404
        {"status":"fail","data":{"code":"not_found",...}}.
  POST /_double/expire-tokens {"provider": "unlimint"|"citcon"|null}   every token issued so
        far (of that provider, or of both) becomes invalid.
  POST /_double/reset    forgets scripts, recorded requests and tokens.
  GET  /_double/requests[?provider=P&order=O&kind=K]   every request received, oldest first:
        {"t", "provider", "kind": "inquiry"|"token"|"unrouted", "order", "method", "path",
         "query": {name: first value}, "headers": {lowercased name: value}, "body": text,
         "checks": {...the double's verdicts...}, "scripted": index of the reply used or null,
         "answered": HTTP status, "closed" (closed without an answer), or null while in flight}
        and "client_gone": true when the client left before its answer was written.
        checks: iPay88 content_type, merchant_code, ref_no, amount (two decimals); Antom
        content_type, client_id, sandbox_path, request_time (epoch ms), key_version (null when
        left out), signature; Unlimint token content_type, auth; Unlimint inquiry auth,
        request_id, times, window_days, max_count, outside_window (scripted payments left out
        because their `created` is outside the window, as Unlimint lists by creation time);
        Juspay auth (Basic), merchant_id, version; Citcon token auth, content_type, body;
        Citcon inquiry auth; any route of an unconfigured provider configured: false; a
        route asked with the wrong method method: false (405).
  GET  /_double/in-flight   {"count": N} requests being answered right now.
"""
import argparse
import base64
import datetime
import hmac
import http.server
import json
import os
import re
import secrets
import signal
import socket
import socketserver
import sys
import threading
import time
import traceback
import urllib.parse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

PROVIDERS = ("ipay88", "alipay", "unlimint", "juspay", "citcon")
TOKEN_PROVIDERS = ("unlimint", "citcon")

# Bytes no parser takes for JSON, UTF-8 text or an iPay88 word.
GARBAGE = b"\x00\xff\xfe<garbage \x80\x81\x82 {\"not\": json"

GENERIC_REPLY_FIELDS = {"delay", "status", "retry_after", "headers", "body", "garbage", "close"}
# Each provider's own reply fields (scripting refuses others, so a typo is not silently ignored).
PROVIDER_REPLY_FIELDS = {
    "ipay88": {"text"},
    "alipay": {"result", "payment", "sign", "response_time", "client_id"},
    "unlimint": {"payments", "has_more"},
    "juspay": {"order", "not_found"},
    "citcon": {"transaction", "fail"},
}
# Fields that make a reply composed (the others only adjust how it is sent or signed).
COMPOSING_FIELDS = {"ipay88": {"text"}, "alipay": {"result", "payment"}, "unlimint": {"payments", "has_more"},
                    "juspay": {"order", "not_found"}, "citcon": {"transaction", "fail"}}

# Juspay's order status words and their status_id (docs.juspay.io transaction status table).
JUSPAY_STATUS_IDS = {
    "NEW": 10, "STARTED": 20, "CHARGED": 21, "JUSPAY_DECLINED": 22, "PENDING_VBV": 23,
    "AUTHENTICATION_FAILED": 26, "AUTHORIZATION_FAILED": 27, "AUTHORIZING": 28, "COD_INITIATED": 29,
    "VOIDED": 31, "AUTO_REFUNDED": 36, "PARTIAL_CHARGED": 37, "NOT_FOUND": 40,
}

ANTOM_CONTENT_TYPE = "application/json; charset=UTF-8"
UNLIMINT_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
IPAY88_AMOUNT = re.compile(r"^\d+\.\d{2}$")


# ---------------------------------------------------------------------------------------------
# JSON with verbatim numbers


class Raw(str):
    """JSON text emitted verbatim: an amount's exact number text ("30.00" stays 30.00)."""


def to_json(value):
    """Compact JSON, non-ASCII kept as UTF-8, `Raw` values emitted as they are."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(str(k), ensure_ascii=False) + ":" + to_json(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def number(value):
    """An amount as scripted: a string is the number's exact JSON text; a number is itself."""
    if isinstance(value, str):
        return Raw(value)
    return value


def merged(defaults, given):
    """`defaults` updated with `given`, where a None in `given` removes the field."""
    out = dict(defaults)
    for key, value in (given or {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def utc_iso(seconds, millis=False):
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    if millis:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_utc(text):
    """Seconds since the epoch of an ISO 8601 time, or None."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


# ---------------------------------------------------------------------------------------------
# Keys


def read_key_text(config, name, base_dir):
    """The text of key `name` from config[name] or the file config[name + '_file']."""
    if config.get(name):
        return config[name]
    path = config.get(name + "_file")
    if not path:
        raise SystemExit(f"provider_double: config lacks {name}_file")
    if not os.path.isabs(path) and not os.path.exists(path):
        path = os.path.join(base_dir, path)
    with open(path) as handle:
        return handle.read()


def load_public_key(text):
    text = text.strip()
    if text.startswith("-----"):
        return serialization.load_pem_public_key(text.encode())
    return serialization.load_der_public_key(base64.b64decode("".join(text.split())))


def load_private_key(text):
    text = text.strip()
    if text.startswith("-----"):
        return serialization.load_pem_private_key(text.encode(), password=None)
    return serialization.load_der_private_key(base64.b64decode("".join(text.split())), password=None)


def rsa_sign(key, content):
    return key.sign(content, padding.PKCS1v15(), hashes.SHA256())


def antom_content(path, client_id, time_text, body):
    """What Antom signs: "POST " + path + "\\n" + client-id + "." + time + "." + body."""
    return b"POST " + path.encode() + b"\n" + client_id.encode() + b"." + time_text.encode() + b"." + body


# ---------------------------------------------------------------------------------------------
# What is sent back


class Answer:
    """One answer: status, header fields in order, body bytes; or a closed connection."""

    def __init__(self, status=200, content_type=None, body=b"", headers=None):
        self.status = status
        self.headers = list(headers or [])
        if content_type:
            self.headers.insert(0, ("Content-Type", content_type))
        self.body = body if isinstance(body, bytes) else body.encode("utf-8")
        self.delay = 0.0
        self.close = None  # None, "fin" or "reset"

    def set_header(self, name, value):
        self.headers = [(n, v) for n, v in self.headers if n.lower() != name.lower()]
        if value is not None:
            self.headers.append((name, str(value)))

    def header(self, name):
        for n, v in self.headers:
            if n.lower() == name.lower():
                return v
        return None


def json_answer(status, value, content_type="application/json"):
    return Answer(status, content_type, to_json(value))


def antom_answer(status, value):
    return json_answer(status, value, ANTOM_CONTENT_TYPE)


class Request:
    """A request as the handler read it, and its record."""

    def __init__(self, method, raw_path, headers, body):
        self.method = method
        split = urllib.parse.urlsplit(raw_path)
        self.path = split.path
        self.query = {}
        for name, value in urllib.parse.parse_qsl(split.query, keep_blank_values=True):
            self.query.setdefault(name, value)
        self.headers = headers
        self.body = body
        self.record = None

    def header(self, name):
        return self.headers.get(name.lower())

    def form(self):
        """The body as an urlencoded form ({name: first value}), or None when it is not one."""
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError:
            return None
        try:
            pairs = urllib.parse.parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text))
        except ValueError:
            return None
        form = {}
        for name, value in pairs:
            form.setdefault(name, value)
        return form

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None


# ---------------------------------------------------------------------------------------------
# The double's state and the providers


class Double:
    def __init__(self, config, base_dir):
        self.config = config
        self.lock = threading.Lock()
        self.scripts = {}  # (provider, kind, order) -> {"replies": [...], "next": n}
        self.requests = []
        self.tokens = {p: {} for p in TOKEN_PROVIDERS}  # provider -> {access token: expires at}
        self.refresh_tokens = {}  # Unlimint refresh token -> expires at
        self.in_flight = 0
        self.merchant_public_key = None
        self.antom_private_key = None
        self.forged_key = None
        alipay = config.get("alipay")
        if alipay:
            self.merchant_public_key = load_public_key(read_key_text(alipay, "merchant_public_key", base_dir))
            self.antom_private_key = load_private_key(read_key_text(alipay, "antom_private_key", base_dir))
            # Another key, for answers whose signature must not verify ("forged").
            self.forged_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    # -- scripts ------------------------------------------------------------------------------

    def set_script(self, provider, kind, order, replies):
        with self.lock:
            if replies:
                self.scripts[(provider, kind, order)] = {"replies": replies, "next": 0}
            else:
                self.scripts.pop((provider, kind, order), None)

    def next_reply(self, provider, kind, order, record):
        """The scripted reply for this request (consuming it), or None when unscripted."""
        with self.lock:
            script = self.scripts.get((provider, kind, order))
            if not script:
                return None
            index = min(script["next"], len(script["replies"]) - 1)
            script["next"] += 1
            record["scripted"] = index
            return script["replies"][index]

    # -- tokens -------------------------------------------------------------------------------

    def issue_token(self, provider, ttl):
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[provider][token] = time.time() + ttl
        return token

    def token_valid(self, provider, token):
        with self.lock:
            expires = self.tokens[provider].get(token)
        return expires is not None and time.time() < expires

    def expire_tokens(self, provider):
        with self.lock:
            for name in ([provider] if provider else TOKEN_PROVIDERS):
                self.tokens[name].clear()
            if provider in (None, "unlimint"):
                self.refresh_tokens.clear()

    def reset(self):
        with self.lock:
            self.scripts.clear()
            self.requests = []
            for name in TOKEN_PROVIDERS:
                self.tokens[name].clear()
            self.refresh_tokens.clear()

    # -- replies ------------------------------------------------------------------------------

    def render(self, provider, reply, compose, not_found, error_body, content_type):
        """The answer a scripted `reply` (or None: unscripted) makes.

        compose(reply) -> Answer builds the provider's composed answer; not_found() -> Answer
        the provider's "not found"; error_body(status) -> Answer a generic error of that status.
        Each is called only when needed (composing may issue a token)."""
        if reply is None:
            return not_found()
        if "body" in reply:
            answer = Answer(reply.get("status", 200), content_type, str(reply["body"]))
        elif reply.get("garbage"):
            answer = Answer(reply.get("status", 200), content_type, GARBAGE)
        elif COMPOSING_FIELDS.get(provider, set()) & reply.keys():
            answer = compose(reply)
            if "status" in reply:
                answer.status = reply["status"]
        elif "status" in reply and not 200 <= reply["status"] < 300:
            answer = error_body(reply["status"])
        else:
            answer = not_found()
            if "status" in reply:
                answer.status = reply["status"]
        answer.delay = float(reply.get("delay", 0) or 0)
        if reply.get("retry_after") is not None:
            answer.set_header("Retry-After", reply["retry_after"])
        for name, value in (reply.get("headers") or {}).items():
            answer.set_header(name, value)
        close = reply.get("close")
        if close:
            answer.close = "reset" if close == "reset" else "fin"
        return answer

    # -- iPay88 -------------------------------------------------------------------------------

    def ipay88_inquiry(self, request):
        config = self.config["ipay88"]
        checks = request.record["checks"]
        form = request.form() if "application/x-www-form-urlencoded" in (request.header("content-type") or "") else None
        checks["content_type"] = form is not None
        form = form or {}
        ref = form.get("RefNo")
        request.record["order"] = ref
        checks["merchant_code"] = form.get("MerchantCode") == config["merchant_code"]
        checks["ref_no"] = bool(ref)
        checks["amount"] = bool(IPAY88_AMOUNT.match(form.get("Amount", "")))
        text = lambda body, status=200: Answer(status, "text/html", body)
        if not all(checks.values()):
            return text("Invalid parameters")
        reply = self.next_reply("ipay88", "inquiry", ref, request.record)
        return self.render(
            "ipay88", reply,
            compose=lambda r: text(str(r["text"])),
            not_found=lambda: text("Record not found"),
            error_body=lambda status: text(f"<html><body>HTTP {status}</body></html>", status),
            content_type="text/html")

    # -- Antom --------------------------------------------------------------------------------

    @staticmethod
    def antom_result(code, message, status="F"):
        return {"result": {"resultCode": code, "resultStatus": status, "resultMessage": message}}

    def alipay_inquiry(self, request):
        config = self.config["alipay"]
        client_id = config["client_id"]
        checks = request.record["checks"]
        body = request.json()
        order = None
        if isinstance(body, dict):
            order = body.get("paymentRequestId") or body.get("paymentId")
            order = order if isinstance(order, str) else None
        request.record["order"] = order

        sent_client = request.header("client-id")
        sent_time = request.header("request-time")
        fields = {}
        for part in (request.header("signature") or "").split(","):
            name, _, value = part.strip().partition("=")
            if name:
                fields[name.strip()] = value.strip()
        sandbox_path = request.path.startswith("/ams/sandbox/")
        checks["content_type"] = (request.header("content-type") or "").lower().startswith("application/json")
        checks["client_id"] = sent_client == client_id
        checks["sandbox_path"] = sandbox_path == client_id.startswith("SANDBOX_")
        checks["request_time"] = bool(sent_time) and sent_time.isdigit()
        # keyVersion may be left out (Antom then takes the client's newest key: the verdict is
        # null); when the config names one, any other fails.
        wanted_version = config.get("key_version")
        sent_version = fields.get("keyVersion")
        checks["key_version"] = None if sent_version is None else sent_version.isdigit() and (
            wanted_version is None or int(sent_version) == int(wanted_version))
        # The signature as Antom's Java side reads it: URL-decoded (a raw '+' becomes a space,
        # so an unencoded signature fails), then base64.
        signature = None
        try:
            signature = base64.b64decode(urllib.parse.unquote_plus(fields.get("signature", "")), validate=True)
        except ValueError:
            pass
        verified = False
        if signature and fields.get("algorithm") == "RSA256" and sent_client and sent_time is not None:
            try:
                self.merchant_public_key.verify(signature, antom_content(request.path, sent_client, sent_time, request.body),
                                                padding.PKCS1v15(), hashes.SHA256())
                verified = True
            except InvalidSignature:
                pass
        checks["signature"] = verified

        reply = None
        if not (checks["client_id"] and checks["sandbox_path"] and checks["key_version"] is not False):
            answer = antom_answer(200, self.antom_result("KEY_NOT_FOUND", "The key is not found for this client-id, keyVersion and environment."))
        elif not sent_time:
            answer = antom_answer(200, self.antom_result("PARAM_ILLEGAL", "The request-time header is missing."))
        elif not verified:
            answer = antom_answer(200, self.antom_result("INVALID_SIGNATURE", "The signature is invalid."))
        elif not checks["content_type"]:
            answer = antom_answer(200, self.antom_result("MEDIA_TYPE_NOT_ACCEPTABLE", "The content type is not acceptable."))
        elif order is None:
            answer = antom_answer(200, self.antom_result("PARAM_ILLEGAL", "paymentRequestId and paymentId are both missing."))
        else:
            reply = self.next_reply("alipay", "inquiry", order, request.record)

            def compose(r):
                result = r.get("result") or {"resultCode": "SUCCESS", "resultStatus": "S", "resultMessage": "success"}
                out = {"result": result}
                if "payment" in r:
                    out.update(merged({"paymentRequestId": order}, r["payment"]))
                return antom_answer(200, out)

            answer = self.render(
                "alipay", reply, compose,
                not_found=lambda: antom_answer(200, self.antom_result("ORDER_NOT_EXIST", "The order does not exist.")),
                error_body=lambda status: antom_answer(status, self.antom_result("UNKNOWN_EXCEPTION", f"HTTP {status}", "U")),
                content_type=ANTOM_CONTENT_TYPE)
        self.antom_sign(request, answer, reply or {})
        return answer

    def antom_sign(self, request, answer, reply):
        """Adds client-id, response-time and signature to an Antom answer as `reply` says."""
        client_id = reply.get("client_id") or self.config["alipay"]["client_id"]
        wanted_time = reply.get("response_time")
        if wanted_time == "epoch":
            response_time = str(int(time.time() * 1000))
        elif wanted_time:
            response_time = str(wanted_time)
        else:
            # ISO 8601 with Antom's +08:00 offset, as its documentation's samples show.
            moment = datetime.datetime.now(datetime.timezone(datetime.timedelta(hours=8)))
            response_time = moment.isoformat(timespec="milliseconds")
        mode = reply.get("sign", "valid")
        extra = {k.lower() for k in (reply.get("headers") or {})}
        if "client-id" not in extra:
            answer.set_header("client-id", client_id)
        if "response-time" not in extra:
            answer.set_header("response-time", response_time)
        if mode == "none" or "signature" in extra:
            return
        key = self.forged_key if mode == "forged" else self.antom_private_key
        signed = rsa_sign(key, antom_content(request.path, client_id, response_time, answer.body))
        value = urllib.parse.quote(base64.b64encode(signed).decode(), safe="")
        answer.set_header("signature", f"algorithm=RSA256,keyVersion=1,signature={value}")
        if mode == "tampered":
            answer.body = self.tamper(answer.body)

    @staticmethod
    def tamper(body):
        """The body changed after signing: the amount multiplied by ten when there is one,
        else a field added; still well-formed JSON so only the signature can tell."""
        try:
            value = json.loads(body)
        except ValueError:
            return body + b" "
        if isinstance(value, dict):
            amount = value.get("paymentAmount")
            if isinstance(amount, dict) and isinstance(amount.get("value"), str):
                amount["value"] += "0"
            else:
                value["tampered"] = True
            return to_json(value).encode()
        return body + b" "

    # -- Unlimint -----------------------------------------------------------------------------

    def unlimint_error(self, status, name, message):
        return json_answer(status, {"name": name, "message": message})

    def unlimint_token(self, request):
        config = self.config["unlimint"]
        checks = request.record["checks"]
        ttl = int(config.get("token_ttl_seconds", 300))
        form = request.form() if "application/x-www-form-urlencoded" in (request.header("content-type") or "") else None
        checks["content_type"] = form is not None
        form = form or {}
        grant = form.get("grant_type")
        if grant == "password":
            auth = form.get("terminal_code") == config["terminal_code"] and hmac.compare_digest(
                form.get("password", "").encode(), str(config["terminal_password"]).encode())
        elif grant == "refresh_token":
            with self.lock:
                expires = self.refresh_tokens.get(form.get("refresh_token", ""))
            auth = form.get("terminal_code") == config["terminal_code"] and expires is not None and time.time() < expires
        else:
            auth = False
        checks["auth"] = auth
        if not auth:
            return self.unlimint_error(401, "unauthorized", "Invalid terminal_code, password or grant")
        reply = self.next_reply("unlimint", "token", None, request.record)

        def issue(_reply=None):
            token = self.issue_token("unlimint", ttl)
            refresh = secrets.token_urlsafe(24)
            with self.lock:
                self.refresh_tokens[refresh] = time.time() + max(ttl, 1800)
            return json_answer(200, {"access_token": token, "token_type": "bearer", "expires_in": ttl,
                                     "refresh_token": refresh, "refresh_expires_in": max(ttl, 1800)})

        return self.render("unlimint", reply, issue, issue,
                           lambda status: self.unlimint_error(status, "server_error", f"HTTP {status}"),
                           "application/json")

    def unlimint_inquiry(self, request):
        checks = request.record["checks"]
        query = request.query
        order = query.get("merchant_order_id")
        request.record["order"] = order
        kind, _, token = (request.header("authorization") or "").strip().partition(" ")
        checks["auth"] = kind.lower() == "bearer" and self.token_valid("unlimint", token.strip())
        if not checks["auth"]:
            return self.unlimint_error(401, "unauthorized", "The access token is missing, invalid or expired")
        request_id = query.get("request_id", "")
        checks["request_id"] = 1 <= len(request_id) <= 50
        if not checks["request_id"]:
            return self.unlimint_error(400, "validation_error", "request_id: size must be between 1 and 50")
        start_text, end_text = query.get("start_time", ""), query.get("end_time", "")
        checks["times"] = bool(UNLIMINT_TIME.match(start_text) and UNLIMINT_TIME.match(end_text))
        if not checks["times"]:
            return self.unlimint_error(400, "validation_error", "start_time and end_time: yyyy-MM-ddTHH:mm:ssZ required")
        start, end = parse_utc(start_text), parse_utc(end_text)
        if start is None or end is None:
            checks["times"] = False
            return self.unlimint_error(400, "validation_error", "start_time and end_time: not valid times")
        checks["window_days"] = round((end - start) / 86400, 4)
        if not 0 < end - start < 7 * 86400:
            return self.unlimint_error(400, "validation_error", "end_time must be after start_time and within 7 days of it")
        if "max_count" in query:
            checks["max_count"] = query["max_count"].isdigit() and 1 <= int(query["max_count"]) <= 10000
            if not checks["max_count"]:
                return self.unlimint_error(400, "validation_error", "max_count: must be between 1 and 10000")
        if order is None:
            # Every payment in the window: the double knows none that are not scripted.
            return json_answer(200, {"data": [], "has_more": False})
        reply = self.next_reply("unlimint", "inquiry", order, request.record)

        def compose(r):
            items, dropped = [], 0
            for given in r.get("payments") or []:
                given = dict(given)
                merchant_order = given.pop("merchant_order_id", order)
                method = given.pop("payment_method", "BANKCARD")
                data = merged({"id": str(secrets.randbelow(10**9) + 10**9),
                               "created": utc_iso(min(max(time.time(), start), end - 1), millis=True)}, given)
                if "amount" in data:
                    data["amount"] = number(data["amount"])
                created = parse_utc(data.get("created")) if isinstance(data.get("created"), str) else None
                if created is not None and not start <= created <= end:
                    dropped += 1  # Unlimint lists only the payments created within the window.
                    continue
                items.append({"payment_method": method,
                              "merchant_order": {"id": merchant_order, "description": f"Order {merchant_order}"},
                              "payment_data": data,
                              "customer": {"email": "customer@example.com", "id": "customer-1", "locale": "en"}})
            if dropped:
                checks["outside_window"] = dropped
            return json_answer(200, {"data": items, "has_more": bool(r.get("has_more", False))})

        return self.render("unlimint", reply, compose,
                           not_found=lambda: json_answer(200, {"data": [], "has_more": False}),
                           error_body=lambda status: self.unlimint_error(status, "server_error", f"HTTP {status}"),
                           content_type="application/json")

    # -- Juspay -------------------------------------------------------------------------------

    @staticmethod
    def juspay_unauthorized(message):
        return json_answer(401, {"status": "error", "error_code": "access_denied", "error_info": {
            "user_message": "Unauthorized.", "developer_message": message,
            "code": "UNAUTHORIZED", "category": "USER_ERROR"}})

    @staticmethod
    def juspay_not_found(order):
        return json_answer(400, {"status": "NOT_FOUND", "error_info": {
            "user_message": "Order Not Found", "developer_message": "Order Not Found",
            "code": "RESOURCE_NOT_FOUND", "category": "USER_ERROR"}, "status_id": 40, "order_id": order})

    def juspay_inquiry(self, request, order):
        config = self.config["juspay"]
        checks = request.record["checks"]
        request.record["order"] = order
        expected = "Basic " + base64.b64encode((config["api_key"] + ":").encode()).decode()
        checks["auth"] = hmac.compare_digest((request.header("authorization") or "").strip().encode(), expected.encode())
        checks["merchant_id"] = request.header("x-merchantid") == config["merchant_id"]
        checks["version"] = request.header("version") == "2023-06-30"
        if not checks["auth"]:
            return self.juspay_unauthorized("Invalid API Key. Please pass a valid and active api key.")
        if not checks["merchant_id"]:
            return self.juspay_unauthorized("The x-merchantid header does not name this API key's merchant.")
        if not checks["version"]:
            return self.juspay_unauthorized("The version header must be 2023-06-30.")
        reply = self.next_reply("juspay", "inquiry", order, request.record)

        def compose(r):
            if r.get("not_found"):
                return self.juspay_not_found(order)
            given = r.get("order") or {}
            status = given.get("status")
            out = {"customer_email": "customer@example.com", "customer_phone": "9999999999", "customer_id": "customer-1"}
            if status in JUSPAY_STATUS_IDS:
                out["status_id"] = JUSPAY_STATUS_IDS[status]
            out.update({"merchant_id": config["merchant_id"], "order_id": order,
                        "date_created": utc_iso(time.time()), "refunded": False, "amount_refunded": 0})
            out = merged(out, given)
            if "amount" in out:
                out["amount"] = number(out["amount"])
                out.setdefault("effective_amount", out["amount"])
            return json_answer(200, out)

        return self.render("juspay", reply, compose,
                           not_found=lambda: self.juspay_not_found(order),
                           error_body=lambda status: json_answer(status, {
                               "status": "error", "error_code": "internal_error", "error_message": f"HTTP {status}"}),
                           content_type="application/json")

    # -- Citcon -------------------------------------------------------------------------------

    @staticmethod
    def citcon_fail(status, code, message):
        return json_answer(status, {"status": "fail", "data": {"code": code, "message": message}})

    def citcon_token(self, request):
        config = self.config["citcon"]
        checks = request.record["checks"]
        ttl = int(config.get("token_ttl_seconds", 3600))
        body = request.json()
        scheme, _, key = (request.header("authorization") or "").strip().partition(" ")
        checks["auth"] = scheme.lower() == "bearer" and hmac.compare_digest(key.strip().encode(), str(config["private_key"]).encode())
        checks["content_type"] = (request.header("content-type") or "").lower().startswith("application/json")
        checks["body"] = isinstance(body, dict) and body.get("token_type") == "server"
        if not all(checks.values()):
            return self.citcon_fail(401, "unauthorized", "Invalid private key or token request")
        reply = self.next_reply("citcon", "token", None, request.record)

        def issue(_reply=None):
            token = self.issue_token("citcon", ttl)
            return json_answer(200, {"status": "success", "data": {
                "access_token": token, "token_type": "server", "expiry": int((time.time() + ttl) * 1000),
                "permission": ["transaction.read", "charge.create", "refund.create"]}})

        return self.render("citcon", reply, issue, issue,
                           lambda status: self.citcon_fail(status, "server_error", f"HTTP {status}"),
                           "application/json")

    def citcon_inquiry(self, request, txn_id):
        checks = request.record["checks"]
        request.record["order"] = txn_id
        kind, _, token = (request.header("authorization") or "").strip().partition(" ")
        checks["auth"] = kind.lower() == "bearer" and self.token_valid("citcon", token.strip())
        if not checks["auth"]:
            return self.citcon_fail(401, "unauthorized", "The access token is missing, invalid or expired")
        reply = self.next_reply("citcon", "inquiry", txn_id, request.record)

        def compose(r):
            if "fail" in r:
                fail = r["fail"] or {}
                return self.citcon_fail(400, fail.get("code", "error"), fail.get("message", "failed"))
            data = merged({"id": txn_id, "object": "charge"}, r.get("transaction"))
            if "amount" in data:
                data["amount"] = number(data["amount"])
            return json_answer(200, {"status": "success", "data": data})

        return self.render("citcon", reply, compose,
                           not_found=lambda: self.citcon_fail(404, "not_found", f"Transaction {txn_id} not found"),
                           error_body=lambda status: self.citcon_fail(status, "server_error", f"HTTP {status}"),
                           content_type="application/json")

    # -- routing ------------------------------------------------------------------------------

    def route(self, request):
        """(provider, kind, method wanted, handler taking the request) or None."""
        path = request.path
        if path == "/epayment/enquiry.asp":
            return "ipay88", "inquiry", "POST", self.ipay88_inquiry
        if path in ("/ams/api/v1/payments/inquiryPayment", "/ams/sandbox/api/v1/payments/inquiryPayment"):
            return "alipay", "inquiry", "POST", self.alipay_inquiry
        if path == "/api/auth/token":
            return "unlimint", "token", "POST", self.unlimint_token
        if path == "/api/payments":
            return "unlimint", "inquiry", "GET", self.unlimint_inquiry
        match = re.fullmatch(r"/orders/([^/]+)", path)
        if match:
            order = urllib.parse.unquote(match.group(1))
            return "juspay", "inquiry", "GET", lambda r: self.juspay_inquiry(r, order)
        if path == "/v1/access-tokens":
            return "citcon", "token", "POST", self.citcon_token
        match = re.fullmatch(r"/v1/transactions/([^/]+)", path)
        if match:
            txn = urllib.parse.unquote(match.group(1))
            return "citcon", "inquiry", "GET", lambda r: self.citcon_inquiry(r, txn)
        return None


# ---------------------------------------------------------------------------------------------
# HTTP


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "provider-double/1"

    def log_message(self, *args):
        pass  # Everything is in the requests list; nothing goes to stdout or stderr.

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if len(body) < length:
            raise ConnectionError("the client went away mid-request")
        return body

    def dispatch(self):
        double = self.server.double
        try:
            body = self.read_body()
        except (ConnectionError, ValueError):
            self.close_connection = True
            return
        headers = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = headers[key] + ", " + value if key in headers else value
        request = Request(self.command, self.path, headers, body)
        if request.path.startswith("/_double/"):
            self.send(self.control(request))
            return

        route = double.route(request)
        provider, kind = (route[0], route[1]) if route else (None, "unrouted")
        record = {"t": time.time(), "provider": provider, "kind": kind, "order": None, "method": self.command,
                  "path": request.path, "query": request.query, "headers": headers,
                  "body": body.decode("utf-8", "replace"), "checks": {}, "scripted": None, "answered": None}
        request.record = record
        with double.lock:
            double.requests.append(record)
            double.in_flight += 1
        answer = self.answer(route, request)
        if answer.delay > 0:
            time.sleep(answer.delay)
        # Recorded before the first byte goes out: a client that has its answer finds it
        # recorded, and no longer in flight.
        with double.lock:
            double.in_flight -= 1
            record["answered"] = "closed" if answer.close else answer.status
        if not self.send(answer):
            with double.lock:
                record["client_gone"] = True

    def answer(self, route, request):
        """The answer to a provider request (`route` from Double.route, or None)."""
        record = request.record
        try:
            if route is None:
                return json_answer(404, {"error": "no such route", "path": request.path})
            if route[0] not in self.server.double.config:
                record["checks"]["configured"] = False
                return json_answer(404, {"error": f"{route[0]} is not configured"})
            if self.command != route[2]:
                record["checks"]["method"] = False
                answer = json_answer(405, {"error": f"{route[2]} only"})
                answer.set_header("Allow", route[2])
                return answer
            return route[3](request)
        except Exception:  # A bug in the double: say so in the answer and the record.
            record["double_error"] = traceback.format_exc()
            return Answer(500, "text/plain", "provider double error\n" + record["double_error"])

    def send(self, answer):
        """Writes `answer` (or closes the connection); False when the client had gone."""
        try:
            if answer.close:
                self.close_connection = True
                if answer.close == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                else:
                    self.connection.shutdown(socket.SHUT_RDWR)
                self.connection.close()
                return True
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer.body)
            self.wfile.flush()
            return True
        except (ConnectionError, OSError):
            self.close_connection = True
            return False

    # -- control ------------------------------------------------------------------------------

    def control(self, request):
        double = self.server.double
        name = request.path[len("/_double/"):]
        body = request.json() if request.body else {}
        if request.body and not isinstance(body, dict):
            return json_answer(400, {"error": "the body must be a JSON object"})
        body = body or {}
        if name == "script" and request.method == "POST":
            error = validate_script(body)
            if error:
                return json_answer(400, {"error": error})
            kind = body.get("kind", "inquiry")
            order = body.get("order") if kind == "inquiry" else None
            double.set_script(body["provider"], kind, order, body["replies"])
            return json_answer(200, {"ok": True, "replies": len(body["replies"])})
        if name == "expire-tokens" and request.method == "POST":
            provider = body.get("provider")
            if provider not in (None,) + TOKEN_PROVIDERS:
                return json_answer(400, {"error": "provider: unlimint, citcon or null"})
            double.expire_tokens(provider)
            return json_answer(200, {"ok": True})
        if name == "reset" and request.method == "POST":
            double.reset()
            return json_answer(200, {"ok": True})
        if name == "requests" and request.method == "GET":
            query = request.query
            with double.lock:
                chosen = [r for r in double.requests
                          if ("provider" not in query or r["provider"] == query["provider"])
                          and ("order" not in query or r["order"] == query["order"])
                          and ("kind" not in query or r["kind"] == query["kind"])]
                text = json.dumps(chosen, ensure_ascii=False)
            return Answer(200, "application/json", text)
        if name == "in-flight" and request.method == "GET":
            with double.lock:
                count = double.in_flight
            return json_answer(200, {"count": count})
        return json_answer(404, {"error": "no such control route"})


def validate_script(body):
    """Why a /_double/script body is wrong, or None. Unknown reply fields are refused, so a
    test's typo does not silently become the default answer."""
    provider = body.get("provider")
    if provider not in PROVIDERS:
        return f"provider must be one of {', '.join(PROVIDERS)}"
    kind = body.get("kind", "inquiry")
    if kind not in ("inquiry", "token") or (kind == "token" and provider not in TOKEN_PROVIDERS):
        return "kind: inquiry, or token for unlimint and citcon"
    if kind == "inquiry" and not isinstance(body.get("order"), str):
        return "order: a string (the order key the request names)"
    replies = body.get("replies")
    if not isinstance(replies, list) or not all(isinstance(r, dict) for r in replies):
        return "replies: a list of objects"
    allowed = GENERIC_REPLY_FIELDS | (PROVIDER_REPLY_FIELDS[provider] if kind == "inquiry" else set())
    for index, reply in enumerate(replies):
        unknown = set(reply) - allowed
        if unknown:
            return f"replies[{index}]: unknown fields {sorted(unknown)} for {provider} {kind}"
        if "status" in reply and not (isinstance(reply["status"], int) and 100 <= reply["status"] <= 599):
            return f"replies[{index}].status: an HTTP status"
        if "delay" in reply and not isinstance(reply["delay"], (int, float)):
            return f"replies[{index}].delay: seconds"
        if "headers" in reply and not isinstance(reply["headers"], dict):
            return f"replies[{index}].headers: an object"
        if reply.get("sign", "valid") not in ("valid", "forged", "none", "tampered"):
            return f"replies[{index}].sign: valid, forged, none or tampered"
        if "payments" in reply and not isinstance(reply["payments"], list):
            return f"replies[{index}].payments: a list"
    return None


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        # A client that went away (ipnd's timeout, a test's close) is what the tests do on purpose.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


def main():
    # A parent may have started this with signals blocked (a test runner's threads block them,
    # and children inherit the mask): SIGTERM and SIGINT must still stop it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--config", required=True, help="a JSON file: each provider's credentials")
    options = parser.parse_args()
    with open(options.config) as handle:
        config = json.load(handle)
    unknown = set(config) - set(PROVIDERS)
    if unknown:
        raise SystemExit(f"provider_double: unknown providers in the config: {sorted(unknown)}")
    server = Server(("127.0.0.1", options.port), Handler)
    server.double = Double(config, os.path.dirname(os.path.abspath(options.config)))
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
