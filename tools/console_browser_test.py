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

"""Drives the ops console in a real browser (Debian's headless Chromium through chromedriver,
with Selenium) against a running ipnd, as an operator would, and reports what it saw.

The Swift test (Tests/IPNServerTests/ConsoleBrowserTests.swift) starts the daemon, fills it
through real HTTP, writes a scenario file and runs this script; the script prints one JSON
object with what each page showed, which the Swift test compares with what the CLI reports.

Besides that report, every page is captured at 1280 and 360 px wide into --artifacts, and every
console message of level SEVERE and every request the browser saw fail (a network error, or an
HTTP status of 400 or more) is listed under "console_errors" and "failed_requests", except the
few refusals a step provokes on purpose (a bad token's 401, a form without its CSRF token's 403),
which each step names.

Usage: console_browser_test.py SCENARIO.json
Scenario keys: base_url, token, bad_token, artifacts, shuffled_order_path, hostile_prefix,
hostile_ref, hostile_notifications_path, expectation_order_path, search_prefix, failed_delivery_id, paused_target.
"""
import json
import os
import sys
import time
from urllib.parse import urlparse

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDTHS = (1280, 360)


class Browser:
    def __init__(self, scenario):
        self.base = scenario["base_url"].rstrip("/")
        self.artifacts = scenario["artifacts"]
        os.makedirs(self.artifacts, exist_ok=True)
        for path in (CHROMIUM, CHROMEDRIVER):
            if not os.path.exists(path):
                sys.exit(f"{path} is missing: `make test` installs Debian's chromium and chromium-driver")
        options = Options()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--no-first-run", "--disable-extensions", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync", "--lang=en-US",
                         "--window-size=1280,900"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(30)
        self.console_errors = []
        self.failed_requests = []
        self.screenshots = []
        self.overflowing = []
        self.requests = {}

    def url(self, path):
        return self.base + path

    def get(self, path):
        self.driver.get(self.url(path))

    def path(self):
        parsed = urlparse(self.driver.current_url)
        return parsed.path + (("?" + parsed.query) if parsed.query else "")

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css):
        return self.find(css).text

    def check_step(self, step, allowed=()):
        """Moves the browser's logs into the report, except the refusals `allowed` names:
        (status, path prefix) pairs a step expects for its own document."""
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            method, params = message.get("method"), message.get("params", {})
            if method == "Network.requestWillBeSent":
                self.requests[params["requestId"]] = params["request"]["url"]
            elif method == "Network.responseReceived":
                response = params["response"]
                status = int(response.get("status", 0))
                if status >= 400:
                    path = urlparse(response["url"]).path
                    if not any(status == code and path.startswith(prefix) for code, prefix in allowed):
                        self.failed_requests.append({"step": step, "url": response["url"], "status": status})
            elif method == "Network.loadingFailed":
                if params.get("canceled"):
                    continue
                self.failed_requests.append({
                    "step": step, "url": self.requests.get(params.get("requestId"), "?"),
                    "error": params.get("errorText"), "blocked": params.get("blockedReason")})
        for entry in self.driver.get_log("browser"):
            if entry.get("level") != "SEVERE":
                continue
            message = entry.get("message", "")
            # Chromium's own line for a document answered 4xx, which the step expects.
            if "Failed to load resource: the server responded with a status of" in message and any(
                    f"status of {code}" in message and f"{self.base}{prefix}" in message for code, prefix in allowed):
                continue
            self.console_errors.append({"step": step, "message": message})
        try:
            alert = self.driver.switch_to.alert
            self.console_errors.append({"step": step, "message": f"an alert opened: {alert.text}"})
            alert.dismiss()
        except NoAlertPresentException:
            pass

    def shoot(self, name):
        """Captures the whole page at each width; notes a page wider than the window (the
        page itself must not scroll sideways: wide tables scroll in their own box)."""
        for width in WIDTHS:
            metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600}
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            time.sleep(0.05)
            page_width = self.driver.execute_script("return document.documentElement.scrollWidth")
            viewport = self.driver.execute_script("return window.innerWidth")
            if page_width > viewport + 1:
                self.overflowing.append({"page": name, "width": width, "scroll_width": page_width})
            height = self.driver.execute_script("return document.documentElement.scrollHeight")
            metrics["height"] = max(600, min(int(height), 6000))
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            time.sleep(0.05)
            path = os.path.join(self.artifacts, f"{name}-{width}.png")
            self.driver.save_screenshot(path)
            self.screenshots.append(path)
        self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def page_is_inert(self):
        """Nothing a hostile value carried ran or loaded: no image element, no marker set."""
        return {
            "images": self.driver.execute_script("return document.images.length"),
            "scripts": self.driver.execute_script("return document.scripts.length"),
            "pwned": self.driver.execute_script("return window.__ipndPwned !== undefined"),
        }

    def submit(self, form_css):
        self.click(self.find(form_css + " button[type=submit]"))

    def click(self, element):
        """Clicks `element` and waits for the page it leads to: the old page's marker gone, the
        new one loaded."""
        self.driver.execute_script("window.__ipndOldPage = true")
        element.click()
        WebDriverWait(self.driver, 30).until(lambda driver: driver.execute_script(
            "return window.__ipndOldPage === undefined && document.readyState === 'complete'"))


def main():
    scenario = json.load(open(sys.argv[1]))
    browser = Browser(scenario)
    report = {}
    try:
        run(browser, scenario, report)
    finally:
        report["console_errors"] = browser.console_errors
        report["failed_requests"] = browser.failed_requests
        report["screenshots"] = browser.screenshots
        report["overflowing"] = browser.overflowing
        browser.driver.quit()
        print(json.dumps(report))


def run(browser, scenario, report):
    # Signed out, a page leads to the sign-in form.
    browser.get("/orders?state=paid")
    report["signed_out_path"] = browser.path()
    browser.check_step("signed out")
    browser.shoot("sign-in")

    # A bad token is refused, and no session starts.
    browser.find("#token").send_keys(scenario["bad_token"])
    browser.submit("form.sign-in")
    report["bad_token"] = {
        "path": browser.path(), "error": browser.text("p.error"),
        "session_cookie": any(c["name"] == "ipnd_session" for c in browser.driver.get_cookies()),
    }
    browser.check_step("bad token", allowed=[(401, "/sign-in")])

    # The right one signs in and returns to the page asked for.
    browser.find("#token").send_keys(scenario["token"])
    browser.submit("form.sign-in")
    report["good_token"] = {"path": browser.path(), "title": browser.text("h1")}
    cookie = next((c for c in browser.driver.get_cookies() if c["name"] == "ipnd_session"), None)
    report["cookie"] = None if cookie is None else {
        "http_only": cookie.get("httpOnly"), "same_site": cookie.get("sameSite"), "secure": cookie.get("secure"),
        "lifetime_seconds": int(cookie.get("expiry", 0) - time.time()),
    }
    browser.check_step("sign in")

    # Overview: the counts as shown.
    browser.get("/")
    report["overview"] = {
        "verdicts": {cell.get_attribute("data-total-verdict"): int(cell.text)
                     for cell in browser.find_all("#verdict-counts [data-total-verdict]")},
        "total_notifications": int(browser.text("#total-notifications")),
        "states": {cell.get_attribute("data-state"): int(cell.text) for cell in browser.find_all("#state-counts [data-state]")},
        "total_orders": int(browser.text("#total-orders")),
        "rejections": {cell.get_attribute("data-reason"): int(cell.text)
                       for cell in browser.find_all("#rejection-counts [data-reason]")},
        "mismatch": int(browser.text("#mismatch-count")),
        "chart_bars": len(browser.find_all("svg.chart g")),
        "chart_segments": len(browser.find_all("svg.chart g rect[class^='v-']")),
    }
    browser.check_step("overview")
    browser.shoot("overview")

    # Orders, newest first, a page at a time.
    browser.get("/orders")
    first = [a.text for a in browser.find_all("#orders a.ref")]
    browser.shoot("orders")
    browser.click(browser.find("a[rel=next]"))
    second = [a.text for a in browser.find_all("#orders a.ref")]
    report["orders_pages"] = {"first": first, "second": second}
    browser.check_step("orders")

    # Search by reference prefix, paged in order of reference.
    browser.get("/orders")
    browser.find("input[name=q]").send_keys(scenario["search_prefix"])
    browser.submit("form[role=search]")
    pages = [[a.text for a in browser.find_all("#orders a.ref")]]
    while browser.find_all("a[rel=next]") and len(pages) < 10:
        browser.click(browser.find("a[rel=next]"))
        pages.append([a.text for a in browser.find_all("#orders a.ref")])
    report["search_pages"] = pages
    browser.check_step("search")

    # The order whose notifications came out of order: one timeline, in arrival order.
    browser.get(scenario["shuffled_order_path"])
    timeline = []
    for item in browser.find_all("#timeline li"):
        verdicts = item.find_elements(By.CSS_SELECTOR, "[data-verdict]")
        timeline.append({"kind": item.get_attribute("class").split("tl-")[-1],
                         "verdict": verdicts[0].get_attribute("data-verdict") if verdicts else None})
    report["timeline"] = timeline
    report["order_state"] = browser.text("#order-state")
    browser.shoot("order")
    browser.click(browser.find("a[href$='?raw=1']"))
    report["raw"] = {"bodies": len(browser.find_all("#timeline .raw")), "text": browser.find("#timeline .raw").text}
    browser.check_step("order")
    browser.shoot("order-raw")

    # A notification's own page, from the timeline.
    browser.click(browser.find("#timeline a[href^='/notifications/']"))
    report["notification_page"] = {"title": browser.text("h1"), "raw": browser.find(".raw").text}
    browser.check_step("notification")
    browser.shoot("notification")

    # A hostile reference: found by searching for it, shown as text everywhere, running nothing.
    browser.get("/orders")
    browser.find("input[name=q]").send_keys(scenario["hostile_prefix"])
    browser.submit("form[role=search]")
    hostile = {"search": browser.page_is_inert(), "search_results": [a.text for a in browser.find_all("#orders a.ref")]}
    browser.check_step("hostile search")
    browser.click(browser.find("#orders a.ref"))
    hostile["order_ref_shown"] = browser.text("#order-ref")
    hostile["title_shown"] = browser.driver.title
    hostile["order"] = browser.page_is_inert()
    browser.check_step("hostile order")
    browser.shoot("order-hostile")
    browser.get(scenario["hostile_notifications_path"])
    hostile["notifications"] = browser.page_is_inert()
    hostile["notifications_shown"] = [a.text for a in browser.find_all("#notifications a.ref")]
    browser.check_step("notifications")
    browser.shoot("notifications")
    browser.get("/")
    hostile["overview"] = browser.page_is_inert()
    report["hostile"] = hostile

    # Registering an expectation from the order page.
    browser.get(scenario["expectation_order_path"])
    browser.find("input[name=amount]").send_keys("12.34")
    currency = browser.find("input[name=currency]")
    currency.clear()
    currency.send_keys("USD")
    browser.submit("form.inline")
    report["expectation"] = {"flash": browser.text("p.flash"), "expected": browser.text("#order-expected")}
    browser.check_step("expectation")

    # The same form without its CSRF token is refused.
    browser.driver.execute_script("document.querySelector('form.inline input[name=csrf]').remove()")
    browser.find("input[name=amount]").send_keys("99.99")
    browser.submit("form.inline")
    report["without_csrf"] = {"title": browser.text("h1"), "error": browser.text("p.error")}
    browser.check_step("without csrf", allowed=[(403, "/orders/")])

    # Deliveries: retry a failed one, resume a paused target.
    browser.get("/deliveries")
    browser.shoot("deliveries")
    row = f"#delivery-{scenario['failed_delivery_id']}"
    report["failed_row_state"] = browser.text(row + " .dstate")
    browser.click(browser.find(row + " button[type=submit]"))
    report["retry"] = {"flash": browser.text("p.flash"), "path": browser.path()}
    browser.check_step("retry")
    browser.click(browser.find(f"#target-{scenario['paused_target']} form[action='/deliveries/resume'] button"))
    report["resume"] = {"flash": browser.text("p.flash")}
    browser.check_step("resume")

    # Signing out ends the session: pages lead to the sign-in form again.
    browser.click(browser.find("form.sign-out button"))
    report["signed_out"] = {"path": browser.path()}
    browser.get("/")
    report["after_sign_out"] = {"path": browser.path()}
    browser.check_step("sign out")


if __name__ == "__main__":
    main()
