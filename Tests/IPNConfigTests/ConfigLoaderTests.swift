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
import Testing

/// A temporary directory holding a config file and its secret files.
struct ConfigDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    @discardableResult
    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let path = url.appendingPathComponent(name).path
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    func load(_ yaml: String, mode: Int = 0o600, environment: [String: String] = [:]) throws(ConfigError) -> IPNDConfig {
        let path: String
        do {
            path = try write("ipnd.yaml", yaml, mode: mode)
        } catch {
            fatalError("cannot write test config: \(error)")
        }
        return try ConfigLoader.load(path: path, environment: environment)
    }

    /// The error loading `yaml` gives, or nil when it loads.
    func error(_ yaml: String, mode: Int = 0o600, environment: [String: String] = [:]) -> ConfigError? {
        do {
            _ = try load(yaml, mode: mode, environment: environment)
            return nil
        } catch {
            return error
        }
    }
}

let minimalProviders = """
    providers:
      unlimint:
        - account: default
          callback_secret: pzQf529Wa0AV
    """

@Suite("Config loading and validation")
struct ConfigLoaderTests {
    @Test("defaults apply and relative store paths resolve against the config directory")
    func defaults() throws {
        let dir = try ConfigDirectory()
        let config = try dir.load("store:\n  path: data/ipnd.sqlite\n" + minimalProviders)
        #expect(config.server == ServerSettings())
        #expect(config.server.port == 8080)
        #expect(config.server.maxBodyBytes == 65536)
        #expect(config.ops.port == 8081)
        #expect(config.store.path == dir.url.appendingPathComponent("data/ipnd.sqlite").path)
        #expect(config.accounts.count == 1)
        #expect(config.account(provider: "unlimint", name: "default") != nil)
    }

    @Test("every section of product.md section 2 is read")
    func fullConfig() throws {
        let dir = try ConfigDirectory()
        let token = Hex.encode(Crypto.digest(.sha256, Array("ops-token".utf8)))
        let config = try dir.load("""
            server:
              host: 0.0.0.0
              port: 9090
              max_body_bytes: 1024
              request_timeout_seconds: 5
              idle_timeout_seconds: 30
              trusted_proxies: [10.0.0.0/8, "::1"]
            store:
              path: /tmp/x.sqlite
              max_batch: 1
            ops:
              host: 127.0.0.1
              port: 9091
              tokens_sha256: [\(token)]
            providers:
              unlimint:
                - account: default
                  callback_secret: [old, new]
                  allow_ips: [203.0.113.0/24]
                - account: shop2
                  callback_secret: other
            """)
        #expect(config.server.host == "0.0.0.0")
        #expect(config.server.port == 9090)
        #expect(config.server.maxBodyBytes == 1024)
        #expect(config.server.requestTimeoutSeconds == 5)
        #expect(config.server.idleTimeoutSeconds == 30)
        #expect(config.server.trustedProxies.map(\.description) == ["10.0.0.0/8", "::1/128"])
        #expect(config.store.path == "/tmp/x.sqlite")
        #expect(config.store.maxBatch == 1)
        #expect(config.ops.port == 9091)
        #expect(config.ops.tokenDigests == [Crypto.digest(.sha256, Array("ops-token".utf8))])
        let account = try #require(config.account(provider: "unlimint", name: "default"))
        #expect(account.allowIPs?.map(\.description) == ["203.0.113.0/24"])
        #expect(config.account(provider: "unlimint", name: "shop2") != nil)
        #expect(account.provider.summary.first?.value == "2 secret(s), redacted")
    }

    @Test("product.md's sample sections load as written, empty lists included")
    func specSample() throws {
        let config = try ConfigDirectory().load("""
            server:
              host: 127.0.0.1          # provider-facing listener
              port: 8080
              max_body_bytes: 65536    # larger requests get 413 and are not stored
              request_timeout_seconds: 10   # the whole request (headers and body) must arrive within this
              idle_timeout_seconds: 60      # idle keep-alive connections are closed after this
              trusted_proxies: []      # CIDRs whose X-Forwarded-For is believed for client IPs
            store:
              path: /var/lib/ipnd/ipnd.sqlite
            ops:
              host: 127.0.0.1          # ops API listener (separate port, never exposed publicly)
              port: 8081
              tokens_sha256: []        # hex SHA-256 of accepted bearer tokens
            """ + "\n" + minimalProviders)
        #expect(config.server.trustedProxies.isEmpty)
        #expect(config.ops.tokenDigests.isEmpty)
        #expect(config.ops.port == 8081)
    }

    @Test("a missing secret fails naming the key")
    func missingSecret() throws {
        let error = try ConfigDirectory().error("""
            providers:
              unlimint:
                - account: default
            """)
        #expect(error?.key == "providers.unlimint[0].callback_secret")
        #expect(error?.message.contains("required") == true)
    }

    @Test("unknown keys fail naming the key", arguments: [
        ("server:\n  prot: 8080\n", "server.prot"),
        ("colour: blue\n", "colour"),
        ("ops:\n  token: x\n", "ops.token"),
        ("store:\n  file: x\n", "store.file"),
    ])
    func unknownKey(yaml: String, key: String) throws {
        let error = try ConfigDirectory().error(yaml + minimalProviders)
        #expect(error?.key == key)
        #expect(error?.message.contains("unknown key") == true)
    }

    @Test("an unknown key inside a provider account names it")
    func unknownAccountKey() throws {
        let error = try ConfigDirectory().error("""
            providers:
              unlimint:
                - account: default
                  callback_secret: x
                  callback_secrets: y
            """)
        #expect(error?.key == "providers.unlimint[0].callback_secrets")
    }

    @Test("bad ports fail naming the key", arguments: ["70000", "-1", "abc", "80.5", "[1]"])
    func badPort(value: String) throws {
        let error = try ConfigDirectory().error("server:\n  port: \(value)\n" + minimalProviders)
        #expect(error?.key == "server.port")
        #expect(error?.message.contains("TCP port") == true)
    }

    @Test("other malformed values name their key", arguments: [
        ("server:\n  max_body_bytes: 0\n", "server.max_body_bytes"),
        ("server:\n  trusted_proxies: [10.0.0.0/33]\n", "server.trusted_proxies[0]"),
        ("ops:\n  tokens_sha256: [abc]\n", "ops.tokens_sha256[0]"),
        ("ops:\n  tokens_sha256: [E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855]\n", "ops.tokens_sha256[0]"),
        ("ops:\n  port: 8080\n", "ops.port"),
        ("server: 3\n", "server"),
        ("server:\n  host: 999.999.1.1\n", "server.host"),
        ("server:\n  host: 10.0.0\n", "server.host"),
        ("ops:\n  host: \"[::1]\"\n", "ops.host"),
        ("ops:\n  host: ipnd_ops.internal\n", "ops.host"),
        ("ops:\n  host: -ipnd.internal\n", "ops.host"),
    ])
    func malformed(yaml: String, key: String) throws {
        #expect(try ConfigDirectory().error(yaml + minimalProviders)?.key == key)
    }

    @Test("the SHA-256 of an empty token is refused, saying why: no bearer token can match it")
    func emptyTokenDigest() throws {
        let error = try ConfigDirectory().error(
            "ops:\n  tokens_sha256: [e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855]\n" + minimalProviders)
        #expect(error?.key == "ops.tokens_sha256[0]")
        #expect(error?.message.contains("empty string") == true, "\(String(describing: error))")
    }

    @Test("listener hosts: IP addresses as getaddrinfo takes them, and host names", arguments: [
        "0.0.0.0", "127.0.0.1", "::", "::1", "fe80::1%eth0", "localhost", "ipnd-1.internal.example.com", "ipnd.",
    ])
    func listenerHosts(host: String) throws {
        let config = try ConfigDirectory().load("server:\n  host: \"\(host)\"\nops:\n  host: \"\(host)\"\n" + minimalProviders)
        #expect(config.server.host == host)
        #expect(config.ops.host == host)
    }

    @Test("an Antom public key under 2048 bits is refused, naming the key")
    func smallAlipayKey() throws {
        let key1024 = "MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC2hjDyaTPq+HMN/4vc/+zumkI8qA8PncEW+FtX4pQ2fkxn+43usRPvEuI65+7wXF1zMPMw7yEoQYBIncepX1502Oy9aw7kbwERQppbF45fo8S4rEJZaVoT+02lmcmz9MMzs/DXFe13/FTe2PKgsDrW54sB3+Vu/QVJzhhN9RnonQIDAQAB"
        let error = try ConfigDirectory().error("""
            providers:
              alipay:
                - account: default
                  client_id: C1
                  public_key: "\(key1024)"
            """)
        #expect(error?.key == "providers.alipay[0].public_key")
        #expect(error?.message.contains("1024-bit") == true, "\(String(describing: error))")
    }

    @Test("a Juspay username with a colon, which Basic credentials can never carry, is refused")
    func juspayUsernameColon() throws {
        let error = try ConfigDirectory().error("""
            providers:
              juspay:
                - account: default
                  username: [good-user, "merchant:1"]
                  password: pw
            """)
        #expect(error?.key == "providers.juspay[0].username")
        #expect(error?.message.contains("must not contain") == true)
        #expect(error?.description.contains("merchant:1") == false)
    }

    @Test("unknown providers, empty provider lists and duplicate accounts are refused")
    func providerShape() throws {
        let dir = try ConfigDirectory()
        #expect(dir.error("providers:\n  paypal:\n    - account: default\n")?.key == "providers.paypal")
        let emptyList = dir.error("providers:\n  unlimint: []\n")
        #expect(emptyList?.key == "providers.unlimint")
        #expect(emptyList?.message.contains("found an empty list") == true, "\(String(describing: emptyList))")
        #expect(dir.error("server:\n  port: 1\n")?.key == "providers")
        #expect(dir.error("""
            providers:
              unlimint:
                - account: a
                  callback_secret: x
                - account: a
                  callback_secret: y
            """)?.key == "providers.unlimint[1].account")
        #expect(dir.error("providers:\n  unlimint:\n    - account: a/b\n      callback_secret: x\n")?.key == "providers.unlimint[0].account")
        // Dot-segments: a client removes them from the path, so no request could name the account.
        for name in [".", "..", "\"..\""] {
            let error = dir.error("providers:\n  unlimint:\n    - account: \(name)\n      callback_secret: x\n")
            #expect(error?.key == "providers.unlimint[0].account", "\(name)")
        }
        #expect(dir.error("providers:\n  unlimint:\n    - account: ..a\n      callback_secret: x\n") == nil)
    }

    @Test("secrets from files: relative to CREDENTIALS_DIRECTORY when set, trailing newline dropped, lists rotate")
    func secretFiles() throws {
        let dir = try ConfigDirectory()
        try dir.write("creds/unlimint", "from-credentials\n")
        try dir.write("creds/unlimint-old", "older\r\n")
        try dir.write("local-secret", "from-config-dir\n")
        let yaml = """
            providers:
              unlimint:
                - account: default
                  callback_secret_file: [unlimint, unlimint-old]
            """
        let config = try dir.load(yaml, environment: ["CREDENTIALS_DIRECTORY": dir.url.appendingPathComponent("creds").path])
        let provider = try #require(config.accounts.first?.provider as? Unlimint)
        let body = Array("{}".utf8)
        for secret in ["from-credentials", "older"] {
            let request = RawRequest(target: "/", headers: [("Signature", Unlimint.signature(body: body, secret: secret))], body: body)
            do {
                _ = try provider.verify(request)
            } catch {
                #expect(error.reason != .badSignature, "secret \(secret) did not verify")
            }
        }
        let local = try dir.load("""
            providers:
              unlimint:
                - account: default
                  callback_secret_file: local-secret
            """)
        #expect(local.accounts.count == 1)
        #expect(dir.error(yaml)?.key == "providers.unlimint[0].callback_secret_file[0]")
    }

    @Test("a secret both inline and from a file, an empty secret, or an unreadable file is refused")
    func secretMistakes() throws {
        let dir = try ConfigDirectory()
        try dir.write("s", "x")
        #expect(dir.error("providers:\n  unlimint:\n    - callback_secret: a\n      callback_secret_file: s\n")?.key
            == "providers.unlimint[0].callback_secret")
        #expect(dir.error("providers:\n  unlimint:\n    - callback_secret: \"\"\n")?.key == "providers.unlimint[0].callback_secret")
        #expect(dir.error("providers:\n  unlimint:\n    - callback_secret: [a, \"\"]\n")?.key == "providers.unlimint[0].callback_secret[1]")
        let missing = dir.error("providers:\n  unlimint:\n    - callback_secret_file: nope\n")
        #expect(missing?.key == "providers.unlimint[0].callback_secret_file")
        #expect(missing?.message.contains("No such file") == true)
    }

    @Test("secrets in world-readable files or configs stop startup; group-readable (root:ipnd 0640) is allowed")
    func permissions() throws {
        let dir = try ConfigDirectory()
        let worldReadable = dir.error(minimalProviders, mode: 0o644)
        #expect(worldReadable?.key == "providers.unlimint[0].callback_secret")
        #expect(worldReadable?.message.contains("0644") == true)
        #expect(dir.error(minimalProviders, mode: 0o604)?.key == "providers.unlimint[0].callback_secret")
        #expect(dir.error(minimalProviders, mode: 0o640) == nil)
        #expect(dir.error(minimalProviders, mode: 0o600) == nil)
        // A config without inline secrets may be world-readable; its secret files may not.
        try dir.write("secret", "x\n", mode: 0o644)
        let fileYAML = "providers:\n  unlimint:\n    - callback_secret_file: secret\n"
        #expect(dir.error(fileYAML, mode: 0o644)?.key == "providers.unlimint[0].callback_secret_file")
        try dir.write("secret", "x\n", mode: 0o400)
        #expect(dir.error(fileYAML, mode: 0o644) == nil)
        try dir.write("secret", "x\n", mode: 0o440)
        #expect(dir.error(fileYAML, mode: 0o644) == nil)
    }

    @Test("IPND_ variables override scalar keys; unknown ones are errors")
    func environmentOverrides() throws {
        let dir = try ConfigDirectory()
        let config = try dir.load(minimalProviders, environment: [
            "IPND_SERVER_PORT": "9000", "IPND_STORE_PATH": "other.sqlite", "IPND_SERVER_TRUSTED_PROXIES": "10.0.0.1, 10.0.0.2",
            "IPND_CONFIG": "ignored", "IPND_LOG_LEVEL": "debug",
        ])
        #expect(config.server.port == 9000)
        #expect(config.store.path == dir.url.appendingPathComponent("other.sqlite").path)
        #expect(config.server.trustedProxies.count == 2)
        let bad = dir.error(minimalProviders, environment: ["IPND_SERVER_PORT": "http"])
        #expect(bad?.key == "server.port")
        #expect(bad?.message.hasSuffix("(the value comes from IPND_SERVER_PORT)") == true, "\(String(describing: bad))")
        let badItem = dir.error(minimalProviders, environment: ["IPND_SERVER_TRUSTED_PROXIES": "10.0.0.0/8, nonsense"])
        #expect(badItem?.message.hasSuffix("(the value comes from IPND_SERVER_TRUSTED_PROXIES)") == true, "\(String(describing: badItem))")
        // A bad value in the file itself is not blamed on the environment.
        let fromFile = dir.error("server:\n  port: http\n" + minimalProviders, environment: ["IPND_OPS_PORT": "9001"])
        #expect(fromFile?.key == "server.port")
        #expect(fromFile?.message.contains("IPND_") == false)
        let typo = dir.error(minimalProviders, environment: ["IPND_SERVER_PROT": "9000"])
        #expect(typo?.key == "IPND_SERVER_PROT")
    }

    @Test("errors never contain secrets")
    func noSecretsInErrors() throws {
        let dir = try ConfigDirectory()
        let error = dir.error("""
            providers:
              unlimint:
                - account: default
                  callback_secret: sup3r-s3cret-value
                  colour: red
            """, mode: 0o644)
        #expect(error != nil)
        #expect(error?.description.contains("sup3r-s3cret-value") == false)
    }

    @Test("unreadable files and invalid YAML are reported plainly")
    func fileProblems() throws {
        #expect(throws: ConfigError.self) { try ConfigLoader.load(path: "/nonexistent/ipnd.yaml", environment: [:]) }
        let error = try ConfigDirectory().error("server: [unclosed\n")
        #expect(error?.key == nil)
        #expect(error?.message.contains("not valid YAML") == true)
        #expect(try ConfigDirectory().error("server:\n  port: 1\n  port: 2\n" + minimalProviders) != nil)
    }

    @Test("YAML syntax errors say where, and never quote the file (it holds secrets)")
    func yamlErrorsQuoteNothing() throws {
        let duplicated = try ConfigDirectory().error("""
            providers:
              unlimint:
                - account: default
                  callback_secret: first-s3cret-value
                  callback_secret: second-s3cret-value
            """)
        #expect(duplicated?.message.contains(#"duplicated key "callback_secret""#) == true, "\(String(describing: duplicated))")
        let unclosed = try ConfigDirectory().error("""
            providers:
              unlimint:
                - account: default
                  callback_secret: "unclosed-s3cret-value
            """)
        #expect(unclosed?.message.contains("line 4, column") == true, "\(String(describing: unclosed))")
        let tab = try ConfigDirectory().error("providers:\n  juspay:\n    - account: default\n      password: tab-s3cret\t\n\tusername: x\n")
        #expect(tab?.message.contains("not valid YAML") == true)
        for error in [duplicated, unclosed, tab] {
            #expect(error?.description.contains("s3cret") == false, "\(String(describing: error))")
        }
    }

    @Test("an empty config file is reported as empty (it used to leak a buffer in Foundation's file reader)")
    func emptyFile() throws {
        let error = try ConfigDirectory().error("")
        #expect(error?.key == nil)
        #expect(error?.message.hasSuffix("is empty") == true)
    }

    @Test("a secret or key file that is a device, a FIFO, a directory or huge is refused at once, never read without end")
    func unreadableKinds() throws {
        let dir = try ConfigDirectory()
        let fifo = dir.url.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        try dir.write("huge", String(repeating: "x", count: (1 << 20) + 1))
        try dir.write("secret", "s3cret\n")
        for (path, reason) in [("/dev/zero", "not a regular file"), (fifo, "not a regular file"), (dir.url.path, "not a regular file"),
                               ("huge", "larger than 1048576 bytes")] {
            let error = dir.error("providers:\n  unlimint:\n    - callback_secret_file: \(path)\n")
            #expect(error?.key == "providers.unlimint[0].callback_secret_file", "\(path)")
            #expect(error?.message.hasSuffix(reason) == true, "\(path): \(error?.message ?? "loaded")")
        }
        let key = dir.error("""
            providers:
              alipay:
                - client_id: C
                  public_key_file: /dev/zero
            """)
        #expect(key?.key == "providers.alipay[0].public_key_file")
        #expect(dir.error("providers:\n  unlimint:\n    - callback_secret_file: secret\n") == nil)
    }
}

@Suite("Loading without secrets, for commands that only open the store")
struct SkipSecretsTests {
    let yaml = """
        store:
          path: s.sqlite
        providers:
          unlimint:
            - account: default
              callback_secret_file: unlimint-callback-secret
          alipay:
            - account: shop2
              client_id: C1
              public_key_file: antom.pem
              simulate_private_key_file: nowhere.pem
        """

    @Test("secret files that are not there (LoadCredential= only gives them to the service) are not read")
    func skipsFiles() throws {
        let dir = try ConfigDirectory()
        #expect(dir.error(yaml)?.key == "providers.unlimint[0].callback_secret_file")
        let path = try dir.write("ipnd.yaml", yaml, mode: 0o644)
        let config = try ConfigLoader.load(path: path, environment: [:], secrets: .skip)
        #expect(config.accounts.isEmpty)
        #expect(config.accountNames == [AccountName(provider: "unlimint", account: "default"), AccountName(provider: "alipay", account: "shop2")])
        #expect(config.hasAccount(provider: "alipay", name: "shop2"))
        #expect(!config.hasAccount(provider: "alipay", name: "default"))
        #expect(config.store.path == dir.url.appendingPathComponent("s.sqlite").path)
    }

    @Test("the rest is validated as strictly: unknown keys and missing secrets still fail, naming the key")
    func stillStrict() throws {
        let dir = try ConfigDirectory()
        let unknown = try dir.write("a.yaml", yaml + "\n      colour: red\n")
        #expect(throws: ConfigError(key: "providers.alipay[0].colour",
                                    "unknown key; providers.alipay[0] takes account, allow_ips, client_id, public_key, public_key_file, notify_path, simulate_private_key_file, inquiry")) {
            try ConfigLoader.load(path: unknown, environment: [:], secrets: .skip)
        }
        let missing = try dir.write("b.yaml", "providers:\n  unlimint:\n    - account: default\n")
        do {
            _ = try ConfigLoader.load(path: missing, environment: [:], secrets: .skip)
            Issue.record("a missing secret was accepted")
        } catch {
            #expect(error.key == "providers.unlimint[0].callback_secret")
        }
        let badPort = try dir.write("c.yaml", "server:\n  port: http\n" + yaml)
        #expect(throws: ConfigError.self) { try ConfigLoader.load(path: badPort, environment: [:], secrets: .skip) }
    }
}
