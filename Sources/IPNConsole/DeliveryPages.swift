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

import HTTPTypes
import Hummingbird
import IPNCore
import IPNStore
import Logging

extension OpsConsole {
    /// `GET /deliveries`: each target's standing with resume and retry, and the deliveries
    /// (filtered by target and state), newest first, a page at a time.
    func deliveriesPage(_ request: Request) async -> Response {
        let filters = ListFilters(FormQuery(request.uri))
        var filter = DeliveryFilter(limit: Self.pageSize + 1)
        var problem: String?
        do throws(FilterError) {
            filter.target = try filters.targetText.map(Self.targetName)
            filter.state = try filters.deliveryState()
            filter.beforeID = try filters.before()
        } catch {
            problem = error.message
        }
        let chosen = filter
        return await page(request) { () async throws(StoreError) -> Response in
            let targets = try await store.deliveryTargets()
            let rows = problem == nil ? try await store.deliveries(chosen) : []
            let model = DeliveriesPage(
                targetRows: targets.map(TargetRow.init),
                targetOptions: SelectOption.list(targets.map(\.name), selected: filters.targetText),
                stateOptions: SelectOption.list(DeliveryState.allCases.map(\.rawValue), selected: filters.stateText),
                deliveryRows: rows.prefix(Self.pageSize).map(DeliveryRow.init),
                returnPath: filters.link("/deliveries"),
                firstPageLink: chosen.beforeID == nil ? nil : filters.link("/deliveries"),
                nextPageLink: rows.count > Self.pageSize ? filters.link("/deliveries", before: rows[Self.pageSize - 1].id) : nil)
            return render("deliveries", title: "Deliveries", current: "/deliveries", request: request, page: model,
                          status: problem == nil ? .ok : .badRequest, error: problem)
        }
    }

    /// `POST /deliveries/retry`: `id` (one delivery) or `target` (its failed deliveries) back
    /// to pending for an immediate attempt, as `ipnd deliveries retry` does; then back to
    /// `return` (a console page).
    func retryDeliveries(_ request: Request) async -> Response {
        let form = await ConsoleForm.read(request)
        let back = form?["return"].flatMap { URLText.isLocalPath($0) ? $0 : nil } ?? "/deliveries"
        let selection: DeliveryRetrySelection
        if let idText = form?["id"] {
            guard let id = Int64(idText), id > 0 else {
                return message("\"\(idText.prefix(64))\" is not a delivery id.", title: "Nothing retried", status: .badRequest,
                               request: request, back: (back, "Back"))
            }
            selection = .ids([id])
        } else if let target = form?["target"] {
            do throws(FilterError) {
                selection = .target(try Self.targetName(target), state: .failed, since: nil)
            } catch {
                return message(error.message, title: "Nothing retried", status: .badRequest, request: request, back: (back, "Back"))
            }
        } else {
            return message("Choose a delivery or a target to retry.", title: "Nothing retried", status: .badRequest,
                           request: request, back: (back, "Back"))
        }
        return await page(request) { () async throws(StoreError) -> Response in
            let count = try await store.retryDeliveries(selection, now: Self.now())
            logger.info("deliveries put back to pending", metadata: ["count": "\(count)", "via": "console"])
            return Self.redirect(Flash.path(back, done: "retried", count: count))
        }
    }

    /// `POST /deliveries/resume`: resumes a paused `target`, as `ipnd deliveries resume` does.
    func resumeTarget(_ request: Request) async -> Response {
        let form = await ConsoleForm.read(request)
        let name: String
        do throws(FilterError) {
            name = try Self.targetName(form?["target"] ?? "")
        } catch {
            return message(error.message, title: "Nothing resumed", status: .badRequest, request: request,
                           back: ("/deliveries", "Deliveries"))
        }
        return await page(request) { () async throws(StoreError) -> Response in
            let due = try await store.resumeTarget(name, now: Self.now())
            logger.info("delivery target resumed", metadata: ["target": "\(name)", "due": "\(due)", "via": "console"])
            return Self.redirect(Flash.path("/deliveries", done: "resumed", count: due))
        }
    }

    /// A delivery target's name as the config allows it: [a-z0-9_-]{1,64}.
    static func targetName(_ text: String) throws(FilterError) -> String {
        let allowed = text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard (1...64).contains(text.utf8.count), allowed else {
            throw FilterError("target \"\(text.prefix(64))\" is not a delivery target name ([a-z0-9_-], 1 to 64 characters)")
        }
        return text
    }
}

/// The deliveries page's values.
struct DeliveriesPage: Sendable {
    let targetRows: [TargetRow]
    let targetOptions: [SelectOption]
    let stateOptions: [SelectOption]
    let deliveryRows: [DeliveryRow]
    /// Where a retry from this page comes back to.
    let returnPath: String
    let firstPageLink: String?
    let nextPageLink: String?
}
