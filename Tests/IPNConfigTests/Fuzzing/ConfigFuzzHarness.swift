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

import Foundation
import IPNConfig
import IPNCore

/// What the config-loader fuzz target (`Fuzz/Targets/config.swift`) runs on every input, kept
/// here so that `swift test` replays every input a fuzzer ever crashed on.
///
/// Input: the config file's bytes, optionally followed by a NUL byte and `NAME=value` lines for
/// the environment. The file is written to a sandbox directory that also holds a secret file
/// (`secret`, mode 0600) and the Alipay test key pair, so `_file` keys have something to read;
/// the sandbox is `$CREDENTIALS_DIRECTORY`.
///
/// Only IPNConfig, IPNCore and Foundation may be used here: the fuzz build compiles this file on
/// its own.
enum ConfigFuzzHarness {
    /// The value of the sandbox's secret file: no error message or summary may ever show it.
    static let fileSecret = "fuzz-file-secret-5b1c"

    static let sandbox: String = {
        let path = NSTemporaryDirectory() + "ipnd-config-fuzz-\(getpid())-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        write(path + "/secret", fileSecret + "\n", mode: 0o600)
        write(path + "/public.b64", FuzzKeys.publicKey, mode: 0o644)
        write(path + "/private.pem", FuzzKeys.privateKey, mode: 0o600)
        return path
    }()

    static func run(_ data: [UInt8]) {
        let nul = data.firstIndex(of: 0) ?? data.endIndex
        var environment = ["CREDENTIALS_DIRECTORY": sandbox]
        if nul < data.endIndex {
            for line in data[(nul + 1)...].split(separator: UInt8(ascii: "\n")) {
                let text = String(decoding: line, as: UTF8.self)
                let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                environment[String(parts[0])] = parts.count == 2 ? String(parts[1]) : ""
            }
        }
        let path = sandbox + "/ipnd.yaml"
        write(path, data[..<nul], mode: 0o600)
        do {
            let config = try ConfigLoader.load(path: path, environment: environment)
            for account in config.accounts {
                for (key, value) in account.provider.summary {
                    check(!value.contains(fileSecret) && !key.contains(fileSecret), "summary of \(account.keyPath) shows a secret")
                }
            }
            // `store.postgres.password_file: secret` reads the sandbox's secret as the password.
            check(!config.store.summary.contains(fileSecret), "the store summary shows a secret")
            check(!"\(config.store)".contains(fileSecret), "the store settings print a secret")
            for target in config.deliveries {
                check(!target.summary.contains(fileSecret), "summary of delivery target \(target.name) shows a secret")
            }
        } catch {
            check(!error.description.contains(fileSecret), "config error shows a secret: \(error.description.prefix(200))")
        }
    }

    static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fatalError("fuzz invariant violated: \(message())") }
    }

    private static func write(_ path: String, _ text: String, mode: Int) {
        write(path, Array(text.utf8)[...], mode: mode)
    }

    private static func write(_ path: String, _ bytes: ArraySlice<UInt8>, mode: Int) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: mode])
    }
}

/// The Alipay test key pair made for ipnd (not Antom's), as in the test fixtures.
enum FuzzKeys {
    static let publicKey = """
        MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAnlGbAxlV7/TO1Z/b0mPt7IRYQwPD2Ho+oc1daoyFlN3x3a5Y9WiszCasod6mUFIHHublne4BeCwfY9vbBRBDsGXuN9c6WQirb636uQ2bXWG1YyWHPNavT3VBSDZVT4M8eBxg6AnRM74e8Aq9czi5dyHruvGJ7MU5i32dinzu8WVGf5aaEDb/w+j02/0WA3V5ceH00zi/6G4XT9qqAQMI5AdVbJiUCe/kzAmqqPTvq/X/maDB//rSFKnsDBR101/3l9UG+YyTAuLv/bDHazZfMQ/bVgvNH7GYCfSpVxCz7Ke4rx7PUjvX404Idvt7jkqoZEoNn1nA2yZ+Y0bDaorz5QIDAQAB
        """
    static let privateKey = """
        -----BEGIN PRIVATE KEY-----
        MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCeUZsDGVXv9M7V
        n9vSY+3shFhDA8PYej6hzV1qjIWU3fHdrlj1aKzMJqyh3qZQUgce5uWd7gF4LB9j
        29sFEEOwZe431zpZCKtvrfq5DZtdYbVjJYc81q9PdUFINlVPgzx4HGDoCdEzvh7w
        Cr1zOLl3Ieu68YnsxTmLfZ2KfO7xZUZ/lpoQNv/D6PTb/RYDdXlx4fTTOL/obhdP
        2qoBAwjkB1VsmJQJ7+TMCaqo9O+r9f+ZoMH/+tIUqewMFHXTX/eX1Qb5jJMC4u/9
        sMdrNl8xD9tWC80fsZgJ9KlXELPsp7ivHs9SO9fjTgh2+3uOSqhkSg2fWcDbJn5j
        RsNqivPlAgMBAAECggEAANpvmToIzS4P8wfMLSSbu+E93WTiTPm9Z60gUUOfDGa0
        9+9AZ+rESxP0SGB8CWoSDHfx95TdKZeStuFHiSA8h3Fa6NMi65U1l+ZspZSJQ+YT
        17C9cjXaSQfYrgMGqxv3mxuLeeAbGS6mfi20EYvWE3ynPmEwvS6WFJi870VbiJuq
        K1nGqOlRm34szFPLtUf5tb0XgguuM1CjH/5llqmT+nwWPtaj4bu5yVI3d3zUj93j
        y7X6vndFkdSA6Vel0MioCdhkJrlpFqZb7AeS6Awu7RwbVtxV93d7joWbmGAnZdhZ
        AKGSZrOpKTF6FKZpI7q1pZpClrmeQYQBLNm/GEr8oQKBgQDPAQW8kcYEh2NjK5sy
        M0+9X1IZBZQEXLirbAc9aT8gHf9heGzTy3dCmlajkbBjk2pUiFJ0ngY042RA6acu
        BA8wlRFU8J7oIWr+aMIPAGxeaednFwj/sFRGP6j7H8R1NJbefvg9ExeNXQpc9r8A
        GCx3HNuj2WOSOd/t2uuoqfs9NQKBgQDDyppiGFDRpZB9FUPJQFqmRxipb35ZL+I+
        2/DsyGlQbBymMsqTS9p2rH6IKM8zomQM5APj98PSSTA3VZV+lGwVzX4r64fD/zjj
        X8StnON+G0Jtb6afZldz2eoP3YEcSwRHfSE3MWDA+amCTdGt1csxNUaefD9LXlsi
        UR90Lmih8QKBgDkxRB98eyRnL6uHscJl8OMWgf1N0D6AS7l5CGsMOBeskhGhDxhZ
        P+MT91oL95sbcKZYX8e+nWJhbSKOK9WH45Z9qSM5s/3YtdICqZMxf796LSgLcj4K
        vs4F6q8vcL0dQY3JsNZW/wvcp+9VcSIai7aBL6IOfvc4rEjwUmnwROz9AoGAXSTj
        sUs0F6iWRot5RiLxfS1RlDnQeAmJrrHfuiXVxEbKkl6TdOOfONnzED+p4zycMG3B
        VBCo/j+HSqvShPeDPBQYtDhGzH18yN7kqFt89p9tSLbXI/oCHMFM0uNj6tvdW00y
        IhnBl8yuUalH2VVeZzibMgaV7fsji/3f4tu5N2ECgYAEmJlAL3Sr/QrV0KmsWJnu
        686fQo3JNWqRSzh21+pNqEHXHzTI+4AxBuHld7I2IS9ew/TATqjd0ltKM2kjdp9B
        jcSOewzC+884UYsA0dBXMrklv/kHiE0+t2AedZgWBllHWb8LBv7UbGQwuPq/c5Yl
        34rV2S/YUosyhZ7ggGRMKw==
        -----END PRIVATE KEY-----
        """
}
