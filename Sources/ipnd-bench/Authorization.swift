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

import ArgumentParser
import Foundation
import IPNConfig
import IPNConsole
import IPNCore

/// `ipnd-bench authz`: what the ops listener's access check costs a request, in the parts that
/// grow with the config: finding the user of a bearer token (SHA-256, then a constant-time
/// compare against every digest of every user), the permission table's lookup and the role
/// check, and a proxy person's role from a groups header. Prints p50 and p99 per request, in µs,
/// over `--requests` timed one by one.
struct BenchAuthorization: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authz", abstract: "Time the ops listener's access decision per request (bearer token, table, role).")

    @Option(help: "Users in ops.users (each with one token digest).")
    var users = 100

    @Option(help: "Requests to time.")
    var requests = 200_000

    func run() async throws {
        let people = (0..<users).map { index in
            OpsUser(name: "person\(index)@example.com", role: OpsRole.allCases[index % 3],
                    digests: [Crypto.digest(.sha256, Array("token-\(index)".utf8))])
        }
        let credentials = OpsCredentials(users: people)
        let proxy = ProxyAuthSettings(
            trustedProxies: [], userHeader: "X-Auth-Request-Email", groupsHeader: "X-Auth-Request-Groups",
            roles: [("payments-admins", .admin), ("payments ops", .operator), ("support", .viewer)])
        let routes = Array(OpsPermissions.table.keys)
        let token = "token-\(users - 1)"  // the last user: every digest is compared anyway
        var bearer: [Double] = []
        var groups: [Double] = []
        bearer.reserveCapacity(requests)
        groups.reserveCapacity(requests)
        var allowed = 0
        for index in 0..<requests {
            let route = routes[index % routes.count]
            var started = DispatchTime.now().uptimeNanoseconds
            if let (user, _) = credentials.holder(token: token),
               let action = OpsPermissions.rule(method: route.method, path: route.path)?.action(wantsRaw: index % 2 == 0),
               Principal(name: user.name, role: user.role, via: .api).may(action) {
                allowed += 1
            }
            bearer.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1000)
            started = DispatchTime.now().uptimeNanoseconds
            if let role = proxy.role(person: "pat@example.com", groupFields: ["engineering, support , payments ops"]),
               let action = OpsPermissions.rule(method: route.method, path: route.path)?.action(wantsRaw: false), role >= action.role {
                allowed += 1
            }
            groups.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1000)
        }
        func line(_ name: String, _ samples: [Double]) -> String {
            let sorted = samples.sorted()
            let p50 = sorted[sorted.count / 2]
            let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            return "\(name): p50 \(String(format: "%.2f", p50)) µs, p99 \(String(format: "%.2f", p99)) µs, max \(String(format: "%.1f", sorted.last ?? 0)) µs"
        }
        print("access decision per request, \(users) users, \(requests) requests (\(allowed) allowed):")
        print(line("  bearer token + table + role", bearer))
        print(line("  proxy groups + table + role", groups))
    }
}
