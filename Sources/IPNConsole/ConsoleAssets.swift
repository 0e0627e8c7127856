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

/// The console's only two files besides its pages, kept in the binary: no font, script or
/// image comes from anywhere else.
enum ConsoleAssets {
    /// `/console.css`: system fonts, one column on a phone, tables scrolling sideways in their
    /// own box rather than widening the page.
    static let stylesheet = """
        :root { --fg: #1d232b; --muted: #5c6773; --line: #d8dde3; --bg: #ffffff; --panel: #f5f7f9; --accent: #1f5fbf;
          --applied: #2e8540; --recorded: #5b8fd6; --stale: #a0a7b0; --duplicate: #c8ccd2; --mismatch: #d9822b;
          --unknown: #8e5bd6; --unlinked: #e0b63a; --rejected: #c23b3b; }
        * { box-sizing: border-box; }
        html { -webkit-text-size-adjust: 100%; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
          color: var(--fg); background: var(--bg); }
        a { color: var(--accent); }
        code, pre, .ref, time { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 13px; }
        .bar { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 16px; padding: 8px 16px; background: #17202b; color: #fff; }
        .bar a { color: #fff; text-decoration: none; }
        .brand { font-weight: 700; letter-spacing: .02em; margin-right: 8px; }
        .bar nav { display: flex; flex-wrap: wrap; gap: 2px 14px; flex: 1; }
        .bar nav a { padding: 4px 0; opacity: .8; }
        .bar nav a[aria-current="page"] { opacity: 1; border-bottom: 2px solid #fff; }
        .sign-out button { background: transparent; color: #fff; border: 1px solid #6b7785; }
        main { padding: 12px 16px 40px; max-width: 1280px; }
        h1 { font-size: 22px; margin: 8px 0 12px; word-break: break-all; }
        h2 { font-size: 17px; margin: 24px 0 8px; }
        h4 { margin: 10px 0 4px; font-size: 13px; }
        .muted { color: var(--muted); }
        .small { font-size: 12px; }
        .flash { background: #e7f4ea; border-left: 4px solid var(--applied); padding: 8px 12px; }
        .error { background: #fbeaea; border-left: 4px solid var(--rejected); padding: 8px 12px; }
        .bad { color: var(--rejected); font-weight: 600; }
        .empty { color: var(--muted); font-style: italic; }
        .scroll { overflow-x: auto; max-width: 100%; }
        table { border-collapse: collapse; margin: 4px 0; }
        th, td { text-align: left; padding: 5px 10px 5px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
        thead th { font-size: 12px; color: var(--muted); font-weight: 600; white-space: nowrap; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
        td > a.ref, td > span.ref { display: inline-block; min-width: 9em; max-width: 24em; }
        tfoot th, tfoot td { font-weight: 700; border-bottom: none; }
        .ref { overflow-wrap: anywhere; }
        .columns { display: flex; flex-wrap: wrap; gap: 0 48px; }
        form.filters, form.inline { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 8px 12px; margin: 8px 0;
          padding: 10px 12px; background: var(--panel); border-radius: 6px; }
        label { display: inline-flex; flex-direction: column; font-size: 12px; color: var(--muted); gap: 2px; }
        input, select, button { font: inherit; font-size: 14px; padding: 5px 8px; border: 1px solid #b9c1ca; border-radius: 4px; background: #fff; color: var(--fg); max-width: 100%; }
        button { cursor: pointer; background: var(--accent); color: #fff; border-color: var(--accent); }
        td form { margin: 0; }
        td.actions { display: flex; flex-wrap: wrap; gap: 6px; }
        td button { padding: 2px 10px; font-size: 13px; }
        form.sign-in { display: flex; flex-direction: column; gap: 8px; max-width: 360px; }
        form.sign-in label { font-size: 14px; color: var(--fg); }
        .pager { display: flex; gap: 16px; margin: 10px 0; }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
        dl.facts dt { color: var(--muted); }
        dl.facts dd { margin: 0; overflow-wrap: anywhere; }
        .state, .verdict, .dstate, .flag { display: inline-block; padding: 0 6px; border-radius: 3px; font-size: 12px; background: #e9edf1; }
        .flag { background: #fdebd3; color: #7a3f00; }
        .s-paid, .s-authorized, .v-applied.verdict, .d-delivered { background: #dff1e3; }
        .s-failed, .s-canceled, .s-expired, .s-charged_back, .v-rejected.verdict, .d-failed { background: #f7dede; }
        .v-mismatch.verdict, .d-paused { background: #fbe6cf; }
        ol.timeline { list-style: none; padding: 0; margin: 0; border-left: 2px solid var(--line); }
        ol.timeline li { padding: 6px 0 6px 14px; position: relative; }
        ol.timeline li time { display: block; color: var(--muted); font-size: 12px; }
        .tl-transition { background: #f3f8f4; }
        .tl-event { background: #f4f6fb; }
        .kind { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
        .raw pre { background: var(--panel); padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 420px; overflow: auto; margin: 0; }
        /* Right-to-left, so that a narrow window shows the latest hours first, scrolled to the right end. */
        .chart-wrap { overflow-x: auto; direction: rtl; }
        .chart-wrap svg { direction: ltr; }
        svg.chart { width: 100%; min-width: 520px; max-width: 900px; height: auto; display: block; }
        svg.chart .grid { stroke: var(--line); stroke-width: 1; }
        svg.chart .axis { fill: var(--muted); font-size: 12px; font-family: system-ui, sans-serif; }
        svg.chart .hit { fill: transparent; }
        svg.chart g:hover .hit { fill: #eef2f6; }
        .legend { display: flex; flex-wrap: wrap; gap: 4px 14px; list-style: none; padding: 0; margin: 6px 0; font-size: 12px; }
        .legend li { display: inline-flex; align-items: center; gap: 4px; }
        .swatch { width: 10px; height: 10px; }
        rect.v-applied { fill: var(--applied); } rect.v-recorded { fill: var(--recorded); } rect.v-stale { fill: var(--stale); }
        rect.v-duplicate { fill: var(--duplicate); } rect.v-mismatch { fill: var(--mismatch); } rect.v-unknown_status { fill: var(--unknown); }
        rect.v-unlinked { fill: var(--unlinked); } rect.v-rejected { fill: var(--rejected); }
        @media (max-width: 600px) {
          body { font-size: 14px; }
          main { padding: 8px 10px 32px; }
          .bar { padding: 8px 10px; }
          h1 { font-size: 19px; }
          dl.facts { grid-template-columns: 1fr; gap: 0; }
          dl.facts dd { margin-bottom: 6px; }
          th, td { padding-right: 8px; }
        }

        """

    /// `/favicon.svg`: so that browsers do not ask for a `/favicon.ico` that is not there.
    static let favicon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#17202b"/><path d="M4 11V5h2v6zm4 0V5h3a2 2 0 0 1 0 4H10v2z" fill="#fff"/></svg>
        """
}
