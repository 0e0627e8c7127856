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

"""Checks tools/provider_double.py: starts it with throwaway keys and credentials, and talks
to it with small clients written from inquiries.md (not from the double's code).

    python3 tools/provider_double_selftest.py
prints one line per check and "selftest: N passed, M failed"; exits 0 when all passed.
"""
import base64
import datetime
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_ID = "SANDBOX_5YTEST0000000001"
SANDBOX_PATH = "/ams/sandbox/api/v1/payments/inquiryPayment"
PRODUCTION_PATH = "/ams/api/v1/payments/inquiryPayment"
TOKEN_TTL = 3  # seconds: short, so expiry by age is seen within the run

passed, failed = 0, 0


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


# ---------------------------------------------------------------------------------------------
# HTTP


class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lowercased name -> value
        self.body = body

    def json(self):
        return json.loads(self.body)

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")


def call(port, method, path, body=b"", headers=None, timeout=10):
    """One request on a fresh connection; raises on a connection closed without an answer."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
    finally:
        connection.close()


def control(port, name, value=None):
    if value is None:
        return call(port, "GET", "/_double/" + name).json()
    return call(port, "POST", "/_double/" + name, json.dumps(value).encode(), {"Content-Type": "application/json"}).json()


def script(port, provider, order, replies, kind=None):
    body = {"provider": provider, "order": order, "replies": replies}
    if kind:
        body["kind"] = kind
    return control(port, "script", body)


def recorded(port, **query):
    return call(port, "GET", "/_double/requests?" + urllib.parse.urlencode(query)).json()


# ---------------------------------------------------------------------------------------------
# Clients, from inquiries.md


def ipay88(port, ref, amount="10.00", merchant_code="M00003"):
    form = urllib.parse.urlencode({"MerchantCode": merchant_code, "RefNo": ref, "Amount": amount}).encode()
    return call(port, "POST", "/epayment/enquiry.asp", form, {"Content-Type": "application/x-www-form-urlencoded"})


class Antom:
    def __init__(self, merchant_key, antom_public_key):
        self.merchant_key = merchant_key
        self.antom_public_key = antom_public_key

    @staticmethod
    def content(path, client_id, time_text, body):
        return f"POST {path}\n{client_id}.{time_text}.".encode() + body

    def inquire(self, port, ref, path=SANDBOX_PATH, client_id=CLIENT_ID, key=None):
        body = json.dumps({"paymentRequestId": ref}, separators=(",", ":")).encode()
        request_time = str(int(time.time() * 1000))
        signed = (key or self.merchant_key).sign(self.content(path, client_id, request_time, body), padding.PKCS1v15(), hashes.SHA256())
        headers = {"Content-Type": "application/json; charset=UTF-8", "client-id": client_id, "request-time": request_time,
                   "signature": "algorithm=RSA256,keyVersion=1,signature=" + urllib.parse.quote(base64.b64encode(signed).decode(), safe="")}
        return call(port, "POST", path, body, headers)

    def verified(self, reply, path=SANDBOX_PATH):
        """Whether the answer's signature verifies (inquiries.md: before anything else is read)."""
        header = reply.headers.get("signature", "")
        client_id, response_time = reply.headers.get("client-id"), reply.headers.get("response-time")
        if "signature=" not in header or client_id != CLIENT_ID or not response_time:
            return False
        signature = base64.b64decode(urllib.parse.unquote(header.split("signature=", 1)[1]))
        try:
            self.antom_public_key.verify(signature, self.content(path, client_id, response_time, reply.body),
                                         padding.PKCS1v15(), hashes.SHA256())
            return True
        except InvalidSignature:
            return False


def unlimint_token(port, password="pw", terminal="T1"):
    form = urllib.parse.urlencode({"grant_type": "password", "terminal_code": terminal, "password": password}).encode()
    return call(port, "POST", "/api/auth/token", form, {"Content-Type": "application/x-www-form-urlencoded"})


def utc(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def unlimint_payments(port, token, ref, start=None, end=None, request_id=None, token_type="bearer"):
    now = time.time()
    start = utc(now - 3600) if start is None else start
    end = utc(now + 60) if end is None else end
    query = {"request_id": str(uuid.uuid4()) if request_id is None else request_id, "merchant_order_id": ref,
             "start_time": start, "end_time": end, "max_count": "100"}
    return call(port, "GET", "/api/payments?" + urllib.parse.urlencode(query), headers={"Authorization": f"{token_type} {token}"})


def juspay(port, ref, api_key="K", merchant_id="M", version="2023-06-30"):
    headers = {"Authorization": "Basic " + base64.b64encode(f"{api_key}:".encode()).decode(), "x-merchantid": merchant_id}
    if version:
        headers["version"] = version
    return call(port, "GET", "/orders/" + urllib.parse.quote(ref, safe=""), headers=headers)


def citcon_token(port, private_key="PK"):
    return call(port, "POST", "/v1/access-tokens", b'{"token_type":"server"}',
                {"Content-Type": "application/json", "Authorization": f"Bearer {private_key}"})


def citcon_transaction(port, token, txn_id):
    return call(port, "GET", "/v1/transactions/" + urllib.parse.quote(txn_id, safe=""), headers={"Authorization": f"Bearer {token}"})


# ---------------------------------------------------------------------------------------------
# The checks


def test_ipay88(port):
    reply = ipay88(port, "IP-1")
    check("ipay88: unscripted order -> Record not found", reply.status == 200 and reply.text == "Record not found", reply.text)
    check("ipay88: answered as text/html", reply.headers.get("content-type", "").startswith("text/html"))
    script(port, "ipay88", "IP-1", [{"text": "Haven't Paid (0)"}, {"text": "00"}])
    texts = [ipay88(port, "IP-1").text for _ in range(3)]
    check("ipay88: scripted replies in order, the last repeats", texts == ["Haven't Paid (0)", "00", "00"], texts)
    check("ipay88: wrong merchant code -> Invalid parameters", ipay88(port, "IP-1", merchant_code="WRONG").text == "Invalid parameters")
    check("ipay88: amount with a thousands separator -> Invalid parameters", ipay88(port, "IP-1", amount="1,278.99").text == "Invalid parameters")
    last = recorded(port, provider="ipay88", order="IP-1")
    check("ipay88: recorded with the form and its checks",
          len(last) == 6 and last[0]["body"].startswith("MerchantCode=M00003") and last[4]["checks"]["merchant_code"] is False
          and last[5]["checks"]["amount"] is False and [r["scripted"] for r in last] == [None, 0, 1, 1, None, None]
          and last[0]["answered"] == 200, last)


def test_antom(port, antom, other_key):
    reply = antom.inquire(port, "AL-1")
    check("antom: unscripted -> F ORDER_NOT_EXIST, signed", reply.json()["result"]["resultCode"] == "ORDER_NOT_EXIST" and antom.verified(reply), reply.text)
    payment = {"paymentStatus": "SUCCESS", "paymentId": "2026112819400000001", "paymentAmount": {"value": "1000", "currency": "USD"},
               "paymentCreateTime": "2026-11-28T12:00:00+08:00", "paymentTime": "2026-11-28T12:00:05+08:00"}
    script(port, "alipay", "AL-1", [{"payment": payment}, {"payment": payment, "sign": "forged"},
                                    {"payment": payment, "sign": "tampered"}, {"payment": payment, "sign": "none"}])
    good = antom.inquire(port, "AL-1")
    body = good.json()
    check("antom: scripted payment, verified with the Antom public key",
          antom.verified(good) and body["result"]["resultStatus"] == "S" and body["paymentStatus"] == "SUCCESS"
          and body["paymentRequestId"] == "AL-1" and body["paymentAmount"]["value"] == "1000", good.text)
    check("antom: signature header is RSA256, keyVersion 1, URL-encoded",
          good.headers["signature"].startswith("algorithm=RSA256,keyVersion=1,signature=") and "%" in good.headers["signature"])
    forged, tampered, unsigned = (antom.inquire(port, "AL-1") for _ in range(3))
    check("antom: sign forged -> does not verify", not antom.verified(forged) and forged.json()["paymentStatus"] == "SUCCESS")
    check("antom: sign tampered -> does not verify", not antom.verified(tampered) and tampered.json()["paymentAmount"]["value"] != "1000", tampered.text)
    check("antom: sign none -> no signature header", "signature" not in unsigned.headers and not antom.verified(unsigned))
    bad = antom.inquire(port, "AL-1", key=other_key)
    check("antom: bad merchant signature -> F INVALID_SIGNATURE (HTTP 200, signed)",
          bad.status == 200 and bad.json()["result"]["resultCode"] == "INVALID_SIGNATURE" and antom.verified(bad), bad.text)
    wrong_path = antom.inquire(port, "AL-1", path=PRODUCTION_PATH)
    check("antom: SANDBOX_ client on the production path -> KEY_NOT_FOUND",
          wrong_path.json()["result"]["resultCode"] == "KEY_NOT_FOUND" and antom.verified(wrong_path, PRODUCTION_PATH), wrong_path.text)
    script(port, "alipay", "AL-2", [{"result": {"resultCode": "UNKNOWN_EXCEPTION", "resultStatus": "U", "resultMessage": "later"},
                                     "response_time": "epoch"}])
    unknown = antom.inquire(port, "AL-2")
    check("antom: scripted result U, epoch response-time, verified",
          unknown.json() == {"result": {"resultCode": "UNKNOWN_EXCEPTION", "resultStatus": "U", "resultMessage": "later"}}
          and unknown.headers["response-time"].isdigit() and antom.verified(unknown), unknown.text)
    rows = recorded(port, provider="alipay", order="AL-1")
    check("antom: recording shows the signature verdicts",
          [r["checks"]["signature"] for r in rows] == [True, True, True, True, True, False, True]
          and rows[-1]["checks"]["sandbox_path"] is False, [r["checks"] for r in rows])


def test_unlimint(port):
    wrong = unlimint_token(port, password="nope")
    check("unlimint: wrong terminal password -> 401 {name, message}", wrong.status == 401 and set(wrong.json()) == {"name", "message"}, wrong.text)
    issued = unlimint_token(port)
    token = issued.json()
    check("unlimint: token issued", issued.status == 200 and token["token_type"] == "bearer" and token["expires_in"] == TOKEN_TTL
          and token["refresh_token"] and token["refresh_expires_in"] > 0, issued.text)
    empty = unlimint_payments(port, token["access_token"], "UN-1")
    check("unlimint: unscripted -> empty data", empty.status == 200 and empty.json() == {"data": [], "has_more": False}, empty.text)
    script(port, "unlimint", "UN-1", [{"payments": [{"id": "12345", "status": "COMPLETED", "amount": "30.00", "currency": "EUR"}]}])
    listed = unlimint_payments(port, token["access_token"], "UN-1")
    item = listed.json()["data"][0]
    check("unlimint: scripted payment, amount emitted as the number text 30.00",
          b'"amount":30.00' in listed.body and item["merchant_order"]["id"] == "UN-1" and item["payment_data"]["id"] == "12345"
          and item["payment_data"]["status"] == "COMPLETED" and item["payment_data"]["currency"] == "EUR", listed.text)
    now = time.time()
    wide = unlimint_payments(port, token["access_token"], "UN-1", start=utc(now - 8 * 86400), end=utc(now))
    check("unlimint: 8-day window -> 400", wide.status == 400 and "name" in wide.json(), wide.text)
    millis = unlimint_payments(port, token["access_token"], "UN-1", start=utc(now - 60)[:-1] + ".000Z")
    check("unlimint: time not yyyy-MM-ddTHH:mm:ssZ -> 400", millis.status == 400, millis.text)
    check("unlimint: no request_id -> 400", unlimint_payments(port, token["access_token"], "UN-1", request_id="").status == 400)
    check("unlimint: unknown token -> 401", unlimint_payments(port, "forged-token", "UN-1").status == 401)
    rows = recorded(port, provider="unlimint")
    check("unlimint: token request recorded (kind token, auth verdicts)",
          [r["checks"].get("auth") for r in rows if r["kind"] == "token"] == [False, True], rows[:2])
    check("unlimint: window_days recorded", abs(recorded(port, provider="unlimint", order="UN-1")[0]["checks"]["window_days"] - 0.0424) < 0.001)
    control(port, "expire-tokens", {"provider": "unlimint"})
    check("unlimint: expire-tokens -> 401", unlimint_payments(port, token["access_token"], "UN-1").status == 401)
    # A token endpoint scripted to fail once, then issue as usual.
    script(port, "unlimint", None, [{"status": 503}, {}], kind="token")
    first, second = unlimint_token(port), unlimint_token(port)
    check("unlimint: scripted token endpoint 503 then a token", first.status == 503 and second.status == 200 and "access_token" in second.json())
    token = second.json()["access_token"]
    check("unlimint: a new token after expire-tokens is accepted", unlimint_payments(port, token, "UN-1").status == 200)
    return token


def test_juspay(port):
    ref = "JP/1 ü"
    check("juspay: unscripted -> 400 NOT_FOUND status_id 40",
          (lambda r: r.status == 400 and r.json()["status"] == "NOT_FOUND" and r.json()["status_id"] == 40)(juspay(port, ref)))
    script(port, "juspay", ref, [{"order": {"status": "CHARGED", "amount": "1278.99", "currency": "INR", "id": "ordeh_1", "txn_id": "M-JP1-1"}}])
    reply = juspay(port, ref)
    body = reply.json()
    check("juspay: scripted order status (percent-decoded order id, raw amount)",
          reply.status == 200 and body["order_id"] == ref and body["status"] == "CHARGED" and body["status_id"] == 21
          and b'"amount":1278.99' in reply.body and body["txn_id"] == "M-JP1-1", reply.text)
    wrong = juspay(port, ref, api_key="WRONG")
    check("juspay: wrong api key -> 401", wrong.status == 401 and wrong.json()["error_code"] == "access_denied", wrong.text)
    check("juspay: no version header -> 401", juspay(port, ref, version=None).status == 401)
    check("juspay: wrong x-merchantid -> 401", juspay(port, ref, merchant_id="OTHER").status == 401)
    rows = recorded(port, provider="juspay", order=ref)
    check("juspay: recording shows the Basic auth verdicts", [r["checks"]["auth"] for r in rows] == [True, True, False, True, True]
          and rows[3]["checks"]["version"] is False, [r["checks"] for r in rows])


def test_citcon(port):
    check("citcon: wrong private key -> 401", (lambda r: r.status == 401 and r.json()["data"]["code"] == "unauthorized")(citcon_token(port, "WRONG")))
    issued = citcon_token(port)
    data = issued.json()["data"]
    check("citcon: token issued", issued.json()["status"] == "success" and data["token_type"] == "server"
          and abs(data["expiry"] / 1000 - time.time() - TOKEN_TTL) < 1 and isinstance(data["permission"], list), issued.text)
    token = data["access_token"]
    missing = citcon_transaction(port, token, "CT-9")
    check("citcon: unscripted -> 404 fail not_found", missing.status == 404 and missing.json()["data"]["code"] == "not_found", missing.text)
    script(port, "citcon", "CT-1", [{"transaction": {"reference": "ORD-1", "amount": 1000, "currency": "USD", "status": "success"}},
                                    {"fail": {"code": "invalid_request", "message": "nope"}}])
    found = citcon_transaction(port, token, "CT-1")
    check("citcon: scripted transaction", found.json() == {"status": "success", "data": {
        "id": "CT-1", "object": "charge", "reference": "ORD-1", "amount": 1000, "currency": "USD", "status": "success"}}, found.text)
    fail = citcon_transaction(port, token, "CT-1")
    check("citcon: scripted fail", fail.json() == {"status": "fail", "data": {"code": "invalid_request", "message": "nope"}}, fail.text)
    check("citcon: unknown token -> 401", citcon_transaction(port, "forged", "CT-1").status == 401)
    control(port, "expire-tokens", {"provider": None})
    check("citcon: expire-tokens (all) -> 401", citcon_transaction(port, token, "CT-1").status == 401)
    token = citcon_token(port).json()["data"]["access_token"]
    check("citcon: a new token after expire-tokens is accepted", citcon_transaction(port, token, "CT-1").status == 400)
    return token


def test_faults(port):
    script(port, "ipay88", "SLOW", [{"delay": 2, "text": "00"}])
    script(port, "ipay88", "FAST", [{"text": "00"}])
    results = {}

    def slow():
        results["slow"] = ipay88(port, "SLOW").text

    thread = threading.Thread(target=slow)
    started = time.time()
    thread.start()
    time.sleep(0.3)
    fast = ipay88(port, "FAST")
    fast_took = time.time() - started
    in_flight = control(port, "in-flight")["count"]
    stalled = recorded(port, order="SLOW")
    thread.join()
    slow_took = time.time() - started
    check("faults: a 2 s stall does not hold a fast request", fast.text == "00" and fast_took < 1.0, f"{fast_took:.2f}s")
    check("faults: the stall is in flight, unanswered, while it lasts", in_flight == 1 and stalled[0]["answered"] is None, (in_flight, stalled))
    check("faults: the stalled request answers after its delay", results.get("slow") == "00" and 1.9 < slow_took < 3.5, f"{slow_took:.2f}s")
    check("faults: answered recorded once done", recorded(port, order="SLOW")[0]["answered"] == 200)

    script(port, "juspay", "LIMIT", [{"status": 429, "retry_after": 7}])
    limited = juspay(port, "LIMIT")
    check("faults: 429 with Retry-After", limited.status == 429 and limited.headers.get("retry-after") == "7", limited.headers)
    script(port, "citcon", "GARBAGE", [{"garbage": True}])
    token = citcon_token(port).json()["data"]["access_token"]
    garbage = citcon_transaction(port, token, "GARBAGE")
    try:
        json.loads(garbage.body)
        parsed = True
    except ValueError:
        parsed = False
    check("faults: garbage is not JSON", garbage.status == 200 and not parsed)
    script(port, "ipay88", "CLOSE", [{"close": True}])
    try:
        ipay88(port, "CLOSE")
        closed = False
    except (http.client.HTTPException, ConnectionError):
        closed = True
    check("faults: close without an answer", closed and recorded(port, order="CLOSE")[0]["answered"] == "closed")

    # Load: 100 inquiries, each stalled 200 ms, 50 at a time: about 0.4 s when nothing blocks.
    script(port, "ipay88", "LOAD", [{"delay": 0.2, "text": "00"}])
    answers = []
    lock = threading.Lock()

    def worker():
        for _ in range(2):
            text = ipay88(port, "LOAD").text
            with lock:
                answers.append(text)

    started = time.time()
    threads = [threading.Thread(target=worker) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - started
    check("faults: 100 inquiries with 200 ms delays, 50 at once", answers == ["00"] * 100 and took < 2.5, f"{took:.2f}s")


def main():
    workdir = tempfile.mkdtemp(prefix="provider-double-selftest-")
    merchant_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    antom_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    merchant_public = os.path.join(workdir, "merchant-public.b64")
    with open(merchant_public, "w") as handle:
        handle.write(base64.b64encode(merchant_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).decode())
    antom_private = os.path.join(workdir, "antom-private.pem")
    with open(antom_private, "wb") as handle:
        handle.write(antom_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    config_path = os.path.join(workdir, "config.json")
    with open(config_path, "w") as handle:
        json.dump({"ipay88": {"merchant_code": "M00003"},
                   "alipay": {"client_id": CLIENT_ID, "merchant_public_key_file": merchant_public, "antom_private_key_file": antom_private},
                   "unlimint": {"terminal_code": "T1", "terminal_password": "pw", "token_ttl_seconds": TOKEN_TTL},
                   "juspay": {"api_key": "K", "merchant_id": "M"},
                   "citcon": {"private_key": "PK", "token_ttl_seconds": TOKEN_TTL}}, handle)

    started = time.time()
    process = subprocess.Popen([sys.executable, os.path.join(HERE, "provider_double.py"), "--port", "0", "--config", config_path],
                               stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline().strip()
        if not line.startswith("listening "):
            print(f"FAIL the double did not start: {line!r}")
            return 1
        port = int(line.split()[1])
        test_ipay88(port)
        test_antom(port, Antom(merchant_key, antom_key.public_key()), other_key)
        unlimint_access = test_unlimint(port)
        test_juspay(port)
        citcon_access = test_citcon(port)
        issued_at = time.time()  # (at most) when the last two tokens were issued
        # Tokens issued with a 2 s TTL are refused once it has passed (the fault checks take
        # most of that time).
        test_faults(port)
        time.sleep(max(0.0, issued_at + TOKEN_TTL + 0.2 - time.time()))
        script(port, "citcon", "CT-1", [{"transaction": {"reference": "ORD-1"}}])
        check("tokens: unlimint token refused after its TTL",
              unlimint_payments(port, unlimint_access, "UN-1").status == 401)
        check("tokens: citcon token refused after its TTL", citcon_transaction(port, citcon_access, "CT-1").status == 401)

        bad = call(port, "POST", "/_double/script", json.dumps({"provider": "ipay88", "order": "X", "replies": [{"txt": "00"}]}).encode())
        check("control: an unknown reply field is refused", bad.status == 400, bad.text)
        unrouted = call(port, "GET", "/v1/v1/transactions/X")
        check("control: an unknown path is answered 404 and recorded",
              unrouted.status == 404 and recorded(port, kind="unrouted")[-1]["path"] == "/v1/v1/transactions/X")
        control(port, "reset", {})
        check("control: reset forgets requests and scripts", recorded(port) == [] and ipay88(port, "IP-1").text == "Record not found")
        process.stdout.close()
        process.terminate()
        check("control: SIGTERM stops it", process.wait(timeout=5) is not None)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    print(f"selftest: {passed} passed, {failed} failed ({time.time() - started:.1f} s)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
