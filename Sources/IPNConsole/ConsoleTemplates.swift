//===----------------------------------------------------------------------===//
//
// This source file is part of the ipnd open source project
//
// Copyright (c) the ipnd authors
// Licensed under Apache License v2.0
//
// See LICENSE for license information
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

import Mustache

/// The console's Mustache templates, kept in the binary as string literals.
///
/// Each page inherits `layout` and fills its `main` block; the page's own values are under
/// `page`. Every `{{value}}` is escaped by `HTMLText` (the pragma `library` puts first in each
/// template); no template uses `{{{unescaped}}}`. A missing value in Mustache is looked up in the
/// enclosing objects, so the models give their fields names no enclosing model uses.
enum ConsoleTemplates {
    /// The templates by name, each parsed with `HTMLText` as its content type.
    static func library() throws -> MustacheLibrary {
        var library = MustacheLibrary()
        for (name, text) in all {
            try library.register("{{% CONTENT_TYPE: \(HTMLText.contentTypeName)}}" + text, named: name)
        }
        return library
    }

    static let all: [(String, String)] = [
        ("layout", layout), ("signIn", signIn), ("message", message), ("overview", overview), ("orders", orders),
        ("order", order), ("notifications", notifications), ("notification", notification), ("deliveries", deliveries),
        ("rawRequest", rawRequest), ("deliveryRows", deliveryRows),
    ]

    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>{{pageTitle}} · ipnd</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml">
        <link rel="stylesheet" href="/console.css">
        </head>
        <body>
        <header class="bar">
        <a class="brand" href="/">ipnd</a>
        {{#signedIn}}
        <nav aria-label="Pages">{{#navItems}}<a href="{{href}}"{{#isCurrent}} aria-current="page"{{/isCurrent}}>{{label}}</a>{{/navItems}}</nav>
        <form class="sign-out" method="post" action="/sign-out"><input type="hidden" name="csrf" value="{{csrfToken}}"><button type="submit">Sign out</button></form>
        {{/signedIn}}
        </header>
        <main>
        <h1>{{pageTitle}}</h1>
        {{#flashMessage}}<p class="flash" role="status">{{.}}</p>{{/flashMessage}}
        {{#errorMessage}}<p class="error" role="alert">{{.}}</p>{{/errorMessage}}
        {{$main}}{{/main}}
        </main>
        </body>
        </html>

        """

    static let signIn = """
        {{<layout}}{{$main}}{{#page}}
        <form class="sign-in" method="post" action="/sign-in">
        <input type="hidden" name="csrf" value="{{signInToken}}">
        <input type="hidden" name="next" value="{{nextPath}}">
        <label for="token">Ops token</label>
        <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
        <button type="submit">Sign in</button>
        </form>
        <p class="muted">A token whose SHA-256 is listed in <code>ops.tokens_sha256</code>, the same as the ops API's bearer tokens. The session lasts 12 hours.</p>
        {{/page}}{{/main}}{{/layout}}
        """

    static let message = """
        {{<layout}}{{$main}}{{#page}}
        <p>{{text}}</p>
        <p><a href="{{backLink}}">{{backLabel}}</a></p>
        {{/page}}{{/main}}{{/layout}}
        """

    static let overview = """
        {{<layout}}{{$main}}{{#page}}
        <p class="muted">Notifications: the current hour and the 23 before it, since {{windowStart}}. Orders, flags and deliveries: as they stand now.</p>
        <section>
        <h2>Notifications per hour</h2>
        {{#chart}}
        <div class="chart-wrap">
        <svg class="chart" viewBox="0 0 {{width}} {{height}}" role="img" aria-labelledby="chart-title">
        <title id="chart-title">{{caption}}</title>
        {{#gridLines}}<line class="grid" x1="{{x1}}" x2="{{x2}}" y1="{{y}}" y2="{{y}}"></line><text class="axis" x="{{labelX}}" y="{{labelY}}" text-anchor="end">{{label}}</text>{{/gridLines}}
        {{#bars}}<g><title>{{summary}}</title><rect class="hit" x="{{x}}" y="{{top}}" width="{{width}}" height="{{fullHeight}}"></rect>{{#segments}}<rect class="v-{{verdict}}" x="{{x}}" y="{{y}}" width="{{width}}" height="{{height}}"></rect>{{/segments}}</g>{{/bars}}
        {{#hourLabels}}<text class="axis" x="{{x}}" y="{{y}}" text-anchor="middle">{{label}}</text>{{/hourLabels}}
        </svg>
        </div>
        <ul class="legend">{{#legend}}<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect class="v-{{.}}" width="10" height="10"></rect></svg>{{.}}</li>{{/legend}}</ul>
        {{/chart}}
        </section>
        <section>
        <h2>Notifications by provider and verdict</h2>
        <div class="scroll"><table class="counts" id="verdict-counts">
        <thead><tr><th scope="col">provider</th>{{#verdictColumns}}<th scope="col">{{.}}</th>{{/verdictColumns}}<th scope="col">total</th></tr></thead>
        <tbody>
        {{#providerRows}}<tr><th scope="row">{{rowLabel}}</th>{{#cells}}<td class="num" data-verdict="{{cellVerdict}}">{{#cellLink}}<a href="{{.}}">{{cellCount}}</a>{{/cellLink}}{{^cellLink}}{{cellCount}}{{/cellLink}}</td>{{/cells}}<td class="num">{{rowTotal}}</td></tr>
        {{/providerRows}}
        {{^providerRows}}<tr><td colspan="{{columnCount}}" class="empty">No notifications in these 24 hours.</td></tr>{{/providerRows}}
        </tbody>
        {{#totalRow}}<tfoot><tr><th scope="row">{{rowLabel}}</th>{{#cells}}<td class="num" data-total-verdict="{{cellVerdict}}">{{cellCount}}</td>{{/cells}}<td class="num" id="total-notifications">{{rowTotal}}</td></tr></tfoot>{{/totalRow}}
        </table></div>
        </section>
        <div class="columns">
        <section>
        <h2>Rejections by reason</h2>
        <table class="counts" id="rejection-counts">
        <thead><tr><th scope="col">reason</th><th scope="col">count</th></tr></thead>
        <tbody>
        {{#rejections}}<tr><th scope="row">{{reasonLabel}}</th><td class="num" data-reason="{{reasonLabel}}"><a href="{{reasonLink}}">{{reasonCount}}</a></td></tr>{{/rejections}}
        {{^rejections}}<tr><td colspan="2" class="empty">No rejections.</td></tr>{{/rejections}}
        </tbody>
        </table>
        </section>
        <section>
        <h2>Orders by state</h2>
        <table class="counts" id="state-counts">
        <thead><tr><th scope="col">state</th><th scope="col">orders</th></tr></thead>
        <tbody>
        {{#stateRows}}<tr><th scope="row"><span class="state s-{{stateName}}">{{stateName}}</span></th><td class="num" data-state="{{stateName}}"><a href="{{stateLink}}">{{stateCount}}</a></td></tr>{{/stateRows}}
        {{^stateRows}}<tr><td colspan="2" class="empty">No orders yet.</td></tr>{{/stateRows}}
        </tbody>
        <tfoot><tr><th scope="row">total</th><td class="num" id="total-orders">{{orderTotal}}</td></tr></tfoot>
        </table>
        </section>
        </div>
        <section>
        <h2>Open amount_mismatch flags: <span id="mismatch-count">{{mismatchTotal}}</span></h2>
        {{#hasMismatchOrders}}<div class="scroll"><table>
        <thead><tr><th scope="col">order</th><th scope="col">provider</th><th scope="col">account</th><th scope="col">state</th><th scope="col">amount</th><th scope="col">expected</th></tr></thead>
        <tbody>
        {{#mismatchOrders}}<tr><td><a class="ref" href="{{link}}">{{orderRef}}</a></td><td>{{provider}}</td><td>{{account}}</td><td><span class="state s-{{state}}">{{state}}</span></td><td class="num">{{amount}}</td><td class="num">{{expected}}</td></tr>{{/mismatchOrders}}
        </tbody></table></div>{{/hasMismatchOrders}}
        {{#mismatchMore}}<p class="muted">The {{mismatchShown}} newest are listed.</p>{{/mismatchMore}}
        </section>
        <section>
        <h2>Reconciliation</h2>
        <table class="counts" id="reconciliation">
        <tbody>
        <tr><th scope="row">orders awaiting an inquiry</th><td class="num" id="awaiting-inquiry">{{awaitingInquiry}}</td></tr>
        <tr><th scope="row">oldest waiting since</th><td id="oldest-awaiting">{{#oldestAwaiting}}<time>{{.}}</time>{{/oldestAwaiting}}{{^oldestAwaiting}}none{{/oldestAwaiting}}</td></tr>
        <tr><th scope="row">unsettled (given up)</th><td class="num" id="unsettled-count">{{unsettledTotal}}</td></tr>
        </tbody>
        </table>
        {{^reconciling}}<p class="muted">No account has an inquiry section: ipnd asks no provider about orders that went quiet.</p>{{/reconciling}}
        </section>
        <section>
        <h2>Deliveries</h2>
        <div class="scroll"><table class="counts" id="delivery-targets">
        <thead><tr><th scope="col">target</th><th scope="col">status</th><th scope="col">backlog</th><th scope="col">oldest pending</th><th scope="col">failed</th></tr></thead>
        <tbody>
        {{#targetRows}}<tr><th scope="row"><a href="{{targetLink}}">{{targetName}}</a></th><td>{{#targetPaused}}<span class="bad">paused</span>{{/targetPaused}}{{^targetPaused}}active{{/targetPaused}}</td><td class="num">{{targetBacklog}}</td><td>{{targetOldest}}</td><td class="num">{{#targetFailedLink}}<a class="bad" href="{{.}}">{{targetFailed}}</a>{{/targetFailedLink}}{{^targetFailedLink}}0{{/targetFailedLink}}</td></tr>{{/targetRows}}
        {{^targetRows}}<tr><td colspan="5" class="empty">No delivery targets are configured.</td></tr>{{/targetRows}}
        </tbody>
        </table></div>
        </section>
        {{/page}}{{/main}}{{/layout}}
        """

    static let orders = """
        {{<layout}}{{$main}}{{#page}}
        <form class="filters" method="get" action="/orders">
        <label>Provider <select name="provider"><option value="">any</option>{{#providerOptions}}<option value="{{optionValue}}"{{#optionSelected}} selected{{/optionSelected}}>{{optionValue}}</option>{{/providerOptions}}</select></label>
        <label>Account <input name="account" value="{{accountFilter}}" size="10"></label>
        <label>State <select name="state"><option value="">any</option>{{#stateOptions}}<option value="{{optionValue}}"{{#optionSelected}} selected{{/optionSelected}}>{{optionValue}}</option>{{/stateOptions}}</select></label>
        <label>Since <input name="since" value="{{sinceFilter}}" placeholder="2026-11-21T10:00:00Z" size="22"></label>
        <button type="submit">Filter</button> <a href="/orders">Clear</a>
        </form>
        <form class="filters" method="get" action="/orders" role="search">
        <label>Reference starts with <input type="search" name="q" value="{{searchText}}" size="24"></label>
        <button type="submit">Search</button>
        </form>
        {{#searching}}<p class="muted">Orders of every provider and account whose reference starts with the text, in order of reference (case-sensitive).</p>{{/searching}}
        <div class="scroll"><table id="orders">
        <thead><tr><th scope="col">order</th><th scope="col">provider</th><th scope="col">account</th><th scope="col">state</th><th scope="col">amount</th><th scope="col">refunded</th><th scope="col">expected</th><th scope="col">flags</th><th scope="col">updated</th></tr></thead>
        <tbody>
        {{#orderRows}}<tr><td><a class="ref" href="{{link}}">{{orderRef}}</a></td><td>{{provider}}</td><td>{{account}}</td><td><span class="state s-{{state}}">{{state}}</span></td><td class="num">{{amount}}</td><td class="num">{{refunded}}</td><td class="num">{{expected}}</td><td>{{#flagList}}<span class="flag">{{.}}</span> {{/flagList}}</td><td><time>{{updatedAt}}</time></td></tr>
        {{/orderRows}}
        {{^orderRows}}<tr><td colspan="9" class="empty">No orders match.</td></tr>{{/orderRows}}
        </tbody>
        </table></div>
        <nav class="pager" aria-label="Pages of orders">{{#firstPageLink}}<a href="{{.}}">« First page</a>{{/firstPageLink}}{{#nextPageLink}}<a rel="next" href="{{.}}">Next page »</a>{{/nextPageLink}}</nav>
        {{/page}}{{/main}}{{/layout}}
        """

    /// One request's stored headers and body (the order page on request, the notification page).
    static let rawRequest = """
        <div class="raw">
        <h4>Stored headers</h4>
        <pre>{{#headerLines}}{{.}}
        {{/headerLines}}{{^headerLines}}(none kept)
        {{/headerLines}}</pre>
        <h4>Body ({{bodyBytes}} bytes{{#bodyNotUTF8}}, not UTF-8: undecodable bytes shown as U+FFFD{{/bodyNotUTF8}})</h4>
        <pre>{{#bodyLines}}{{.}}
        {{/bodyLines}}</pre>
        </div>
        """

    /// A table of deliveries, with a retry button on each failed one.
    static let deliveryRows = """
        <div class="scroll"><table class="deliveries">
        <thead><tr><th scope="col">id</th><th scope="col">target</th><th scope="col">event</th><th scope="col">order</th><th scope="col">state</th><th scope="col">attempts</th><th scope="col">last attempt</th><th scope="col">last answer</th><th scope="col">next attempt</th><th scope="col"></th></tr></thead>
        <tbody>
        {{#deliveryRows}}<tr id="delivery-{{deliveryID}}"><td class="num">{{deliveryID}}</td><td>{{deliveryTarget}}</td><td>#{{deliverySeq}} {{deliveryType}}</td><td><a class="ref" href="{{deliveryOrderLink}}">{{deliveryOrderRef}}</a></td><td><span class="dstate d-{{deliveryState}}">{{deliveryState}}</span></td><td class="num">{{deliveryAttempts}}</td><td><time>{{deliveryLastAttempt}}</time></td><td>{{deliveryLastAnswer}}</td><td><time>{{deliveryNextAttempt}}</time></td>
        <td>{{#deliveryRetryable}}<form method="post" action="/deliveries/retry"><input type="hidden" name="csrf" value="{{csrfToken}}"><input type="hidden" name="id" value="{{deliveryID}}"><input type="hidden" name="return" value="{{returnPath}}"><button type="submit">Retry</button></form>{{/deliveryRetryable}}</td></tr>
        {{/deliveryRows}}
        {{^deliveryRows}}<tr><td colspan="10" class="empty">No deliveries.</td></tr>{{/deliveryRows}}
        </tbody>
        </table></div>
        """

    static let order = """
        {{<layout}}{{$main}}{{#page}}
        <dl class="facts" id="order-facts">
        <dt>reference</dt><dd class="ref" id="order-ref">{{orderRef}}</dd>
        <dt>provider / account</dt><dd>{{provider}} / {{account}}</dd>
        <dt>state</dt><dd><span class="state s-{{state}}" id="order-state">{{state}}</span></dd>
        <dt>amount</dt><dd>{{amount}}</dd>
        <dt>refunded</dt><dd>{{refunded}}</dd>
        <dt>expected</dt><dd id="order-expected">{{expected}}</dd>
        <dt>flags</dt><dd>{{#flagList}}<span class="flag">{{.}}</span> {{/flagList}}{{^flagList}}none{{/flagList}}</dd>
        <dt>provider txn id</dt><dd>{{providerTxnID}}</dd>
        <dt>created</dt><dd><time>{{createdAt}}</time></dd>
        <dt>updated</dt><dd><time>{{updatedAt}}</time></dd>
        </dl>
        <section>
        <h2>Expectation</h2>
        <p class="muted">The amount and currency this order must be paid with; a notification authorizing or paying another amount is recorded as <em>mismatch</em> and flags the order.</p>
        <form class="inline" method="post" action="{{expectationAction}}">
        <input type="hidden" name="csrf" value="{{csrfToken}}">
        <label>Amount <input name="amount" inputmode="decimal" required size="10" placeholder="12.34"></label>
        <label>Currency <input name="currency" required size="4" maxlength="3" value="{{currencyGuess}}"></label>
        <button type="submit">Register expectation</button>
        </form>
        </section>
        <section>
        <h2>Timeline</h2>
        <p class="muted">Notifications in the order they arrived, with the transitions and events they caused, by time. {{#rawShown}}<a href="{{rawToggleLink}}">Hide raw requests</a>{{/rawShown}}{{^rawShown}}<a href="{{rawToggleLink}}">Show raw bodies and stored headers</a>{{/rawShown}}</p>
        <ol class="timeline" id="timeline">
        {{#timeline}}<li class="tl tl-{{entryKind}}"><time>{{entryTime}}</time>
        {{#tlNotification}}<span class="kind">notification</span> <a href="{{noteLink}}">#{{noteID}}</a> <span class="verdict v-{{noteVerdict}}" data-verdict="{{noteVerdict}}">{{noteVerdict}}</span>{{#noteReason}} <span class="reason">{{.}}</span>{{/noteReason}}{{#noteStatus}} <span class="pstatus">status {{.}}</span>{{/noteStatus}}{{#noteKind}} <span class="muted">{{.}}</span>{{/noteKind}}{{#noteAmount}} <span class="muted">{{.}}</span>{{/noteAmount}}{{#noteDetail}}<div class="muted small">{{.}}</div>{{/noteDetail}}
        {{#noteRaw}}{{>rawRequest}}{{/noteRaw}}{{/tlNotification}}
        {{#tlTransition}}<span class="kind">transition</span> {{#fromState}}<span class="state s-{{.}}">{{.}}</span> → {{/fromState}}{{^fromState}}new → {{/fromState}}<span class="state s-{{toState}}">{{toState}}</span>{{#causeLink}} <span class="muted">by <a href="{{.}}">#{{causeID}}</a></span>{{/causeLink}}{{^causeLink}} <span class="muted">by the expectation</span>{{/causeLink}}{{/tlTransition}}
        {{#tlEvent}}<span class="kind">event</span> #{{eventSeq}} {{eventType}}{{#eventFlag}} <span class="flag">{{.}}</span>{{/eventFlag}} <span class="muted small">{{eventID}}</span>{{/tlEvent}}
        </li>
        {{/timeline}}
        </ol>
        </section>
        <section id="inquiries">
        <h2>Inquiries</h2>
        {{#asked}}<p class="muted">ipnd asks the provider's status API about this order while it has not settled. Next inquiry: {{#nextInquiryAt}}<time id="next-inquiry">{{.}}</time>{{/nextInquiryAt}}{{^nextInquiryAt}}<span id="next-inquiry">none scheduled</span>{{/nextInquiryAt}}.</p>
        <form class="inline" method="post" action="{{askAction}}">
        <input type="hidden" name="csrf" value="{{csrfToken}}">
        <button type="submit" id="ask-provider">Ask the provider now</button>
        </form>{{/asked}}
        {{^asked}}<p class="muted">This account has no inquiry section in the config: ipnd never asks its provider about its orders.</p>{{/asked}}
        <div class="scroll"><table id="inquiry-rows">
        <thead><tr><th scope="col">#</th><th scope="col">asked</th><th scope="col">trigger</th><th scope="col">outcome</th><th scope="col">HTTP</th><th scope="col">provider status</th><th scope="col">notification</th><th scope="col">ms</th></tr></thead>
        <tbody>
        {{#inquiryRows}}<tr><td>{{inquiryID}}</td><td><time>{{inquiryAskedAt}}</time></td><td>{{inquiryTrigger}}</td><td><span class="outcome o-{{inquiryOutcome}}" data-outcome="{{inquiryOutcome}}">{{inquiryOutcome}}</span>{{#inquiryError}}<div class="muted small">{{.}}</div>{{/inquiryError}}</td><td class="num">{{inquiryHTTP}}</td><td>{{inquiryStatus}}</td><td>{{#inquiryNotificationLink}}<a href="{{.}}">#{{inquiryNotification}}</a>{{/inquiryNotificationLink}}</td><td class="num">{{inquiryMilliseconds}}</td></tr>
        {{/inquiryRows}}
        {{^inquiryRows}}<tr><td colspan="8" class="empty">No inquiries.</td></tr>{{/inquiryRows}}
        </tbody>
        </table></div>
        </section>
        <section>
        <h2>Deliveries</h2>
        {{>deliveryRows}}
        </section>
        {{/page}}{{/main}}{{/layout}}
        """

    static let notifications = """
        {{<layout}}{{$main}}{{#page}}
        <form class="filters" method="get" action="/notifications">
        <label>Provider <select name="provider"><option value="">any</option>{{#providerOptions}}<option value="{{optionValue}}"{{#optionSelected}} selected{{/optionSelected}}>{{optionValue}}</option>{{/providerOptions}}</select></label>
        <label>Account <input name="account" value="{{accountFilter}}" size="10"></label>
        <label>Verdict <select name="verdict"><option value="">any</option>{{#verdictOptions}}<option value="{{optionValue}}"{{#optionSelected}} selected{{/optionSelected}}>{{optionValue}}</option>{{/verdictOptions}}</select></label>
        <label>Since <input name="since" value="{{sinceFilter}}" placeholder="2026-11-21T10:00:00Z" size="22"></label>
        <button type="submit">Filter</button> <a href="/notifications">Clear</a>
        </form>
        <section>
        <h2>Rejections by reason</h2>
        <p class="muted">{{rejectionWindow}}</p>
        <table class="counts" id="rejection-counts">
        <thead><tr><th scope="col">reason</th><th scope="col">count</th></tr></thead>
        <tbody>
        {{#rejections}}<tr><th scope="row">{{reasonLabel}}</th><td class="num" data-reason="{{reasonLabel}}"><a href="{{reasonLink}}">{{reasonCount}}</a></td></tr>{{/rejections}}
        {{^rejections}}<tr><td colspan="2" class="empty">No rejections.</td></tr>{{/rejections}}
        </tbody>
        </table>
        </section>
        <section>
        <h2>Received</h2>
        <div class="scroll"><table id="notifications">
        <thead><tr><th scope="col">id</th><th scope="col">received</th><th scope="col">provider</th><th scope="col">account</th><th scope="col">order</th><th scope="col">verdict</th><th scope="col">reason</th><th scope="col">provider status</th><th scope="col">client</th></tr></thead>
        <tbody>
        {{#notificationRows}}<tr><td class="num"><a href="{{rowLink}}">{{rowID}}</a></td><td><time>{{rowReceived}}</time></td><td>{{rowProvider}}</td><td>{{rowAccount}}</td><td>{{#rowOrderLink}}<a class="ref" href="{{.}}">{{rowOrderRef}}</a>{{/rowOrderLink}}{{^rowOrderLink}}<span class="ref">{{rowOrderRef}}</span>{{/rowOrderLink}}</td><td><span class="verdict v-{{rowVerdict}}">{{rowVerdict}}</span></td><td>{{rowReason}}</td><td>{{rowStatus}}</td><td>{{rowClient}}</td></tr>
        {{/notificationRows}}
        {{^notificationRows}}<tr><td colspan="9" class="empty">No notifications match.</td></tr>{{/notificationRows}}
        </tbody>
        </table></div>
        <nav class="pager" aria-label="Pages of notifications">{{#firstPageLink}}<a href="{{.}}">« First page</a>{{/firstPageLink}}{{#nextPageLink}}<a rel="next" href="{{.}}">Next page »</a>{{/nextPageLink}}</nav>
        </section>
        {{/page}}{{/main}}{{/layout}}
        """

    static let notification = """
        {{<layout}}{{$main}}{{#page}}
        <dl class="facts">
        <dt>id</dt><dd>{{noteID}}</dd>
        <dt>received</dt><dd><time>{{noteReceived}}</time></dd>
        <dt>provider / account</dt><dd>{{noteProvider}} / {{noteAccount}}</dd>
        <dt>order</dt><dd>{{#noteOrderLink}}<a class="ref" href="{{.}}">{{noteOrderRef}}</a>{{/noteOrderLink}}{{^noteOrderLink}}<span class="ref">{{noteOrderRef}}</span>{{/noteOrderLink}}</dd>
        <dt>verdict</dt><dd><span class="verdict v-{{noteVerdict}}">{{noteVerdict}}</span></dd>
        <dt>reason</dt><dd>{{noteReason}}</dd>
        <dt>reason detail</dt><dd>{{noteReasonDetail}}</dd>
        <dt>kind</dt><dd>{{noteKind}}</dd>
        <dt>provider status</dt><dd>{{noteStatus}}</dd>
        <dt>amount</dt><dd>{{noteAmount}}</dd>
        <dt>provider txn id</dt><dd>{{noteTxnID}}</dd>
        <dt>dedup key</dt><dd>{{noteDedupKey}}</dd>
        <dt>client address</dt><dd>{{noteClient}}</dd>
        {{#noteReverifiedLink}}<dt>reverified from</dt><dd><a href="{{.}}">#{{noteReverifiedFrom}}</a></dd>{{/noteReverifiedLink}}
        <dt>detail</dt><dd>{{noteDetail}}</dd>
        </dl>
        {{#noteRaw}}{{>rawRequest}}{{/noteRaw}}
        {{/page}}{{/main}}{{/layout}}
        """

    static let deliveries = """
        {{<layout}}{{$main}}{{#page}}
        <section>
        <h2>Targets</h2>
        <div class="scroll"><table class="counts" id="delivery-targets">
        <thead><tr><th scope="col">target</th><th scope="col">status</th><th scope="col">backlog</th><th scope="col">oldest pending</th><th scope="col">failed</th><th scope="col">actions</th></tr></thead>
        <tbody>
        {{#targetRows}}<tr id="target-{{targetName}}"><th scope="row"><a href="{{targetLink}}">{{targetName}}</a></th><td>{{#targetPaused}}<span class="bad">paused</span> <span class="muted small">since {{targetPausedAt}}: {{targetPausedReason}}</span>{{/targetPaused}}{{^targetPaused}}active{{/targetPaused}}</td><td class="num">{{targetBacklog}}</td><td>{{targetOldest}}</td><td class="num">{{targetFailed}}</td>
        <td class="actions">{{#targetPaused}}<form method="post" action="/deliveries/resume"><input type="hidden" name="csrf" value="{{csrfToken}}"><input type="hidden" name="target" value="{{targetName}}"><button type="submit">Resume</button></form>{{/targetPaused}}{{#targetFailedLink}}<form method="post" action="/deliveries/retry"><input type="hidden" name="csrf" value="{{csrfToken}}"><input type="hidden" name="target" value="{{targetName}}"><input type="hidden" name="return" value="{{returnPath}}"><button type="submit">Retry {{targetFailed}} failed</button></form>{{/targetFailedLink}}</td></tr>
        {{/targetRows}}
        {{^targetRows}}<tr><td colspan="6" class="empty">No delivery targets are configured.</td></tr>{{/targetRows}}
        </tbody>
        </table></div>
        </section>
        <section>
        <h2>Deliveries</h2>
        <form class="filters" method="get" action="/deliveries">
        <label>Target <select name="target"><option value="">any</option>{{#targetOptions}}<option value="{{optionValue}}"{{#optionSelected}} selected{{/optionSelected}}>{{optionValue}}</option>{{/targetOptions}}</select></label>
        <label>State <select name="state"><option value="">any</option>{{#stateOptions}}<option value="{{optionValue}}"{{#optionSelected}} selected{{/optionSelected}}>{{optionValue}}</option>{{/stateOptions}}</select></label>
        <button type="submit">Filter</button> <a href="/deliveries">Clear</a>
        </form>
        {{>deliveryRows}}
        <nav class="pager" aria-label="Pages of deliveries">{{#firstPageLink}}<a href="{{.}}">« First page</a>{{/firstPageLink}}{{#nextPageLink}}<a rel="next" href="{{.}}">Next page »</a>{{/nextPageLink}}</nav>
        </section>
        {{/page}}{{/main}}{{/layout}}
        """
}
