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

"""An independent client for ipnd: builds notifications for all five providers exactly as
each provider's published protocol signs them (providers.md), without sharing any code with
ipnd. Used by tests (signatures made by another implementation must verify), by the crash
test and by the benchmark.

Library use:   build(provider, account, order=..., status=..., amount="10.00", currency="USD", uid=...)
               -> Request(path, headers, body)
Command line:  ipn_client.py send PROVIDER --url http://127.0.0.1:8080 --account-json '{...}' --order O --status S
               ipn_client.py print PROVIDER ...   (prints the request as JSON)

Account settings (JSON): citcon {"api_secret"} or {"api_token"}; ipay88 {"merchant_code",
"merchant_key", "signature": "sha1|sha256|hmac-sha512"}; alipay {"client_id",
"private_key_file"}; unlimint {"callback_secret"}; juspay {"username", "password"}.
"""
import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse
from dataclasses import dataclass, field

EXPONENTS = {"JPY": 0, "KRW": 0, "VND": 0, "CLP": 0, "ISK": 0, "KWD": 3, "BHD": 3, "JOD": 3, "OMR": 3, "TND": 3}


@dataclass
class Request:
    path: str
    headers: list = field(default_factory=list)
    body: bytes = b""


def to_minor(amount: str, currency: str) -> int:
    exponent = EXPONENTS.get(currency, 2)
    whole, _, fraction = amount.partition(".")
    if len(fraction) > exponent:
        raise ValueError(f"{amount} has more decimals than {currency} allows")
    return int(whole) * 10 ** exponent + int((fraction + "0" * exponent)[:exponent] or "0")


def compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


# --- Citcon: fields-driven string, sorted keys, &secret= (SHA-256) or &token= (MD5) ---

def citcon_sign(values: dict, secret=None, token=None) -> str:
    keys = sorted(set(["fields"] + values["fields"].split(",")) - {"sign"}, key=lambda k: k.encode())
    text = "&".join(f"{k}={'' if values.get(k) is None else values[k]}" for k in keys)
    if token is not None:
        return hashlib.md5((text + "&token=" + token).encode()).hexdigest()
    return hashlib.sha256((text + "&secret=" + secret).encode()).hexdigest()


def citcon(account, order, status, amount, currency, uid, **_):
    minor = to_minor(amount, currency)
    if account.get("api_secret") is None:
        values = {"id": uid, "amount": str(minor), "currency": currency, "reference": order,
                  "notify_status": status, "notify_id": "n-" + uid, "time": "2026-11-21 10:00:00",
                  "fields": "id,amount,currency,reference,notify_status,notify_id,time"}
        values["sign"] = citcon_sign(values, token=account["api_token"])
        return Request("/ipn/citcon", [("Content-Type", "application/x-www-form-urlencoded")],
                       urllib.parse.urlencode(values).encode())
    values = {"id": uid, "transaction_type": "charge", "reference": order, "amount": minor,
              "currency": currency, "status": status, "time_created": "2026-11-21T10:00:00.000Z",
              "fields": "id,transaction_type,reference,amount,currency,status,time_created"}
    # Numbers sign by their source text, which json.dumps writes as str(minor).
    signing = dict(values, amount=str(minor))
    values["sign"] = citcon_sign(signing, secret=account["api_secret"])
    return Request("/ipn/citcon", [("Content-Type", "application/json")], compact(values))


# --- iPay88: key + code + PaymentId + RefNo + amount digits + currency + status ---

def ipay88(account, order, status, amount, currency, uid, **_):
    whole, _, fraction = amount.partition(".")
    fraction = (fraction + "00")[:2]
    posted = f"{int(whole):,}.{fraction}"
    digits = posted.replace(",", "").replace(".", "")
    code, key, payment_id = account["merchant_code"], account["merchant_key"], "2"
    text = key + code + payment_id + order + digits + currency + status
    mode = account.get("signature", "sha256")
    if mode == "sha1":
        signature = base64.b64encode(hashlib.sha1(text.encode()).digest()).decode()
    elif mode == "hmac-sha512":
        signature = hmac.new(key.encode(), text.encode(), hashlib.sha512).hexdigest()
    else:
        signature = hashlib.sha256(text.encode()).hexdigest()
    fields = [("MerchantCode", code), ("PaymentId", payment_id), ("RefNo", order), ("Amount", posted),
              ("Currency", currency), ("Remark", ""), ("TransId", "T" + uid), ("AuthCode", "123456"),
              ("Status", status), ("ErrDesc", ""), ("Signature", signature)]
    return Request("/ipn/ipay88", [("Content-Type", "application/x-www-form-urlencoded")],
                   urllib.parse.urlencode(fields).encode())


# --- Alipay (Antom): RSA-SHA256 over "POST path\nclientId.requestTime.body" ---

def rsa_sha256_sign(private_key_file: str, content: bytes) -> bytes:
    with tempfile.NamedTemporaryFile() as data:
        data.write(content)
        data.flush()
        return subprocess.run(["openssl", "dgst", "-sha256", "-sign", private_key_file, data.name],
                              check=True, capture_output=True).stdout


def alipay(account, order, status, amount, currency, uid, path="/ipn/alipay", request_time="2026-11-21T04:01:02Z", **_):
    notify_type = "PAYMENT_PENDING" if status == "PENDING" else "PAYMENT_RESULT"
    result_status = "U" if status == "PENDING" else status
    body = compact({"notifyType": notify_type,
                    "result": {"resultCode": "SUCCESS" if status == "S" else "PROCESS", "resultStatus": result_status,
                               "resultMessage": "independent client"},
                    "paymentRequestId": order, "paymentId": "P" + uid,
                    "paymentAmount": {"currency": currency, "value": str(to_minor(amount, currency))},
                    "paymentCreateTime": "2026-11-21T12:01:00+08:00", "paymentTime": "2026-11-21T12:01:01+08:00"})
    return alipay_request(account, path, body, request_time)


def alipay_request(account, path, body, request_time="2026-11-21T04:01:02Z"):
    content = b"POST " + path.encode() + b"\n" + account["client_id"].encode() + b"." + request_time.encode() + b"." + body
    signature = urllib.parse.quote(base64.b64encode(rsa_sha256_sign(account["private_key_file"], content)).decode(), safe="")
    return Request(path, [("Content-Type", "application/json; charset=UTF-8"), ("client-id", account["client_id"]),
                          ("request-time", request_time),
                          ("signature", f"algorithm=RSA256,keyVersion=1,signature={signature}")], body)


# --- Unlimint: hex SHA-512 of body + secret ---

def unlimint(account, order, status, amount, currency, uid, **_):
    body = ('{"callback_time":"2026-11-21T09:30:06.828Z","payment_method":"BANKCARD","merchant_order":{"id":%s},'
            '"payment_data":{"id":%s,"status":%s,"amount":%s,"currency":%s}}'
            % (json.dumps(order), json.dumps(uid), json.dumps(status), amount, json.dumps(currency))).encode()
    signature = hashlib.sha512(body + account["callback_secret"].encode()).hexdigest()
    return Request("/ipn/unlimint", [("Content-Type", "application/json"), ("Signature", signature)], body)


# --- Juspay: HTTP Basic, event id ---

def juspay(account, order, status, amount, currency, uid, **_):
    body = compact({"id": "evt_" + uid, "date_created": "2026-11-21T10:15:30Z", "event_name": "ORDER_SUCCEEDED",
                    "content": {"order": {"id": "ord_" + uid, "order_id": order, "status": status,
                                          "amount": amount, "currency": currency, "amount_refunded": 0,
                                          "txn_id": "txn-" + uid}}})
    credentials = base64.b64encode(f"{account['username']}:{account['password']}".encode()).decode()
    return Request("/ipn/juspay", [("Content-Type", "application/json"), ("Authorization", "Basic " + credentials)], body)


BUILDERS = {"citcon": citcon, "ipay88": ipay88, "alipay": alipay, "unlimint": unlimint, "juspay": juspay}


def build(provider, account, **kwargs) -> Request:
    return BUILDERS[provider](account, **kwargs)


def send(url: str, request: Request, account_name: str = "default", timeout: float = 10):
    """Posts the request; returns (status, body bytes, headers dict)."""
    parsed = urllib.parse.urlparse(url)
    path = request.path if account_name == "default" else f"{request.path}/{account_name}"
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    try:
        connection.request("POST", path, body=request.body, headers=dict(request.headers))
        response = connection.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        connection.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["send", "print"])
    parser.add_argument("provider", choices=sorted(BUILDERS))
    parser.add_argument("--account-json", required=True, help="account settings as JSON")
    parser.add_argument("--account", default="default")
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--order", required=True)
    parser.add_argument("--status", required=True)
    parser.add_argument("--amount", default="10.00")
    parser.add_argument("--currency", default="USD")
    parser.add_argument("--uid", default=None)
    args = parser.parse_args()
    uid = args.uid or os.urandom(8).hex()
    request = build(args.provider, json.loads(args.account_json), order=args.order, status=args.status,
                    amount=args.amount, currency=args.currency, uid=uid)
    if args.account != "default" and args.provider == "alipay":
        request = build(args.provider, json.loads(args.account_json), order=args.order, status=args.status,
                        amount=args.amount, currency=args.currency, uid=uid, path=f"/ipn/alipay/{args.account}")
        request.path = "/ipn/alipay"
    if args.action == "print":
        print(json.dumps({"path": request.path, "headers": request.headers, "body": request.body.decode()}))
        return 0
    status, body, _ = send(args.url, request, args.account)
    print(status, body.decode(errors="replace"))
    return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
