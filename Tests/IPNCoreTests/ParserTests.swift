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
@testable import IPNCore
import Testing

@Suite("Strict JSON parser")
struct JSONParserTests {
    private func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    @Test("numbers, booleans and containers keep their exact source text")
    func sourceText() throws {
        let object = try #require(try parse(#"{"a":30.00,"b":6.03,"c":{"x": [1, 2.50]},"d":true,"e":null,"f":"s\u00e9"}"#).object)
        #expect(object["a"] == .number("30.00"))
        #expect(object["b"]?.signingText == "6.03")
        #expect(object["c"]?.signingText == #"{"x": [1, 2.50]}"#)
        #expect(object["d"]?.signingText == "true")
        #expect(object["e"]?.signingText == "")
        #expect(object["f"]?.signingText == "sé")
        #expect(object.members.map(\.key) == ["a", "b", "c", "d", "e", "f"])
    }

    @Test("escapes decode, surrogate pairs join")
    func escapes() throws {
        #expect(try parse(#""a\"b\\c\/d\n\t\u0041\ud83d\ude00""#) == .string("a\"b\\c/d\n\tA😀"))
    }

    @Test("refuses what is not strict JSON", arguments: [
        "", "{", "{\"a\":1", "{\"a\":1}x", "{'a':1}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":-}",
        "{\"a\":1e}", "{\"a\":0x10}", "{\"a\":NaN}", "{\"a\":tru}", "{\"a\":1,}", "[1,]", "{\"a\" 1}",
        "{\"a\":\"\u{01}\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00x\"}", "{\"a\":\"\\u12\"}",
        "{\"a\":1,\"a\":2}", "\u{FEFF}{}", "{\"a\":1}\u{0}",
    ])
    func refuses(text: String) {
        #expect(throws: JSONError.self) { try JSONParser.parse(Array(text.utf8)) }
    }

    @Test("invalid UTF-8 inside strings is refused")
    func invalidUTF8() {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect(throws: JSONError.self) { try JSONParser.parse(bytes) }
        let overlong: [UInt8] = Array(#"{"a":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8)
        #expect(throws: JSONError.self) { try JSONParser.parse(overlong) }
    }

    @Test("nesting is bounded: 100,000 levels deep is refused without crashing")
    func deepNesting() {
        let deep = Array(repeating: UInt8(ascii: "["), count: 100_000) + Array(repeating: UInt8(ascii: "]"), count: 100_000)
        #expect(throws: JSONError.self) { try JSONParser.parse(deep) }
        let objects = Array(String(repeating: "{\"a\":", count: 100_000).utf8)
        #expect(throws: JSONError.self) { try JSONParser.parse(objects) }
        let ok = Array(repeating: UInt8(ascii: "["), count: 64) + Array(repeating: UInt8(ascii: "]"), count: 64)
        #expect(throws: Never.self) { try JSONParser.parse(ok) }
    }

    @Test("exotic but valid numbers parse as text")
    func numbersAsText() throws {
        let object = try #require(try parse(#"{"a":1e400,"b":-0.0,"c":6.03e2,"d":-1}"#).object)
        #expect(object["a"] == .number("1e400"))
        #expect(object["b"] == .number("-0.0"))
        #expect(object["c"] == .number("6.03e2"))
        #expect(object["d"] == .number("-1"))
    }
}

@Suite("Form bodies")
struct FormBodyTests {
    @Test("decodes percent-escapes in either case and + as space")
    func decodes() throws {
        let form = try FormBody.parse(Array("a=1%2B1&b=x+y&c=%e2%82%AC&d=&e".utf8))
        #expect(try form.value("a") == "1+1")
        #expect(try form.value("b") == "x y")
        #expect(try form.value("c") == "€")
        #expect(try form.value("d") == "")
        #expect(try form.value("e") == "")
        #expect(try form.value("A") == nil)
    }

    @Test("case-insensitive names when asked")
    func caseInsensitive() throws {
        let form = try FormBody.parse(Array("merchantcode=M1&REFNO=R".utf8), caseInsensitiveNames: true)
        #expect(try form.value("MerchantCode") == "M1")
        #expect(try form.value("RefNo") == "R")
    }

    @Test("refuses malformed escapes, invalid UTF-8 and repeated names", arguments: [
        "a=%", "a=%4", "a=%zz", "a=%C3%28", "a=1&a=2", "=1",
    ])
    func refuses(text: String) {
        #expect(throws: FormError.self) { try FormBody.parse(Array(text.utf8)) }
    }

    @Test("undecodable values kept on request: the form parses, and reading such a field is refused")
    func keptUndecodableValues() throws {
        let bytes = Array("a=1&Name=Pe%F1a&b=2".utf8)
        #expect(throws: FormError(message: #"form field "Name" is not valid UTF-8"#)) { try FormBody.parse(bytes) }
        let form = try FormBody.parse(bytes, caseInsensitiveNames: true, undecodableValues: .keep)
        #expect(try form.value("a") == "1")
        #expect(try form.value("B") == "2")
        #expect(form.undecodable == ["Name"])
        #expect(throws: FormError(message: #"form field "Name" is not valid UTF-8"#)) { try form.value("name") }
        // Names are still refused when they are not UTF-8, and escapes when malformed.
        #expect(throws: FormError.self) { try FormBody.parse(Array("N%F1=1".utf8), undecodableValues: .keep) }
        #expect(throws: FormError.self) { try FormBody.parse(Array("a=%G1".utf8), undecodableValues: .keep) }
    }

    @Test("raw bytes beyond ASCII are kept when they are UTF-8 and refused when they are not")
    func rawNonASCII() throws {
        let form = try FormBody.parse(Array("c=€&n=Zoë".utf8))
        #expect(try form.value("c") == "€")
        #expect(try form.value("n") == "Zoë")
        for bytes: [UInt8] in [[0x61, 0x3D, 0xFF], [0x61, 0x3D, 0xC3, 0x28], [0xE2, 0x82, 0x3D, 0x31], [0x61, 0x3D, 0xF0, 0x90, 0x80]] {
            #expect(throws: FormError.self) { try FormBody.parse(bytes) }
        }
    }

    @Test("repeated names differing only in case are refused when names are case-insensitive")
    func repeatedCaseInsensitive() {
        #expect(throws: FormError.self) { try FormBody.parse(Array("Amount=1&amount=2".utf8), caseInsensitiveNames: true) }
        #expect(throws: Never.self) { try FormBody.parse(Array("Amount=1&amount=2".utf8)) }
    }

    @Test("a repeated name is refused in a large form too (past the scanned size)")
    func repeatedInLargeForm() {
        let distinct = (0..<20).map { "f\($0)=\($0)" }.joined(separator: "&")
        #expect(throws: FormError.self) { try FormBody.parse(Array((distinct + "&F7=x").utf8), caseInsensitiveNames: true) }
        #expect(throws: FormError.self) { try FormBody.parse(Array((distinct + "&f19=x").utf8)) }
        #expect(throws: Never.self) { try FormBody.parse(Array((distinct + "&F7=x").utf8)) }
    }

    @Test("encode then parse round-trips random fields")
    func roundTrip() throws {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<300 {
            let fields = (0..<Int(1 + rng.next() % 6)).map { index in ("k\(index)", rng.printable(length: Int(rng.next() % 20))) }
            let parsed = try FormBody.parse(FormBody.encode(fields))
            #expect(parsed.fields.map(\.name) == fields.map(\.0))
            #expect(parsed.fields.map(\.value) == fields.map(\.1))
        }
    }
}

@Suite("JSON text written by ipnd")
struct JSONTextTests {
    @Test("quotes, backslashes and control characters are escaped; everything else is copied as is",
          arguments: [
              ("plain text", #""plain text""#),
              ("a\"b\\c", #""a\"b\\c""#),
              ("line\nbreak\r\ttab", #""line\nbreak\r\ttab""#),
              ("nul\u{0}esc\u{1B}", #""nul\u0000esc\u001b""#),
              ("é 中 😀", "\"é 中 😀\""),
          ])
    func quoted(_ text: String, _ expected: String) throws {
        var out: [UInt8] = []
        JSONText.appendQuoted(text, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
        // And it reads back as the same string.
        let decoded = try JSONSerialization.jsonObject(with: Data(out), options: .fragmentsAllowed) as? String
        #expect(decoded == text)
    }
}

@Suite("Request headers as verification reads them")
struct RawRequestHeaderTests {
    private func request(_ headers: [(String, String)]) -> RawRequest {
        RawRequest(target: "/ipn/x", headers: headers.map { (name: $0.0, value: $0.1) }, body: [])
    }

    @Test("the media type is Content-Type without parameters or blanks, lowercased", arguments: [
        ("application/json", "application/json"),
        ("Application/JSON", "application/json"),
        (" application/x-www-form-urlencoded ; charset=UTF-8", "application/x-www-form-urlencoded"),
        ("\ttext/json\t", "text/json"),
        ("TEXT/PLAIN;charset=utf-8", "text/plain"),
        ("", ""),
    ])
    func mediaType(value: String, expected: String) {
        #expect(request([("cOnTeNt-TyPe", value)]).mediaType == expected)
    }

    @Test("no Content-Type, no media type")
    func noMediaType() {
        #expect(request([("Content-Length", "2")]).mediaType == nil)
    }

    @Test("a header is found whatever its case; a repeated one is refused with its count")
    func singleHeader() throws {
        let signed = request([("Signature", "a"), ("client-id", "c")])
        #expect(try signed.requiredHeader("signature") == "a")
        #expect(try signed.singleHeader("request-time") == nil)
        let repeated = request([("signature", "a"), ("X", "y"), ("SIGNATURE", "b"), ("Signature", "c")])
        #expect(throws: Rejection(.repeatedHeader, "header signature appears 3 times", header: "signature")) { try repeated.requiredHeader("signature") }
        #expect(throws: Rejection(.missingHeader, "header request-time is missing", header: "request-time")) { try signed.requiredHeader("request-time") }
    }
}
