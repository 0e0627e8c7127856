import IPNCore

/// Decides which client address to believe. The TCP peer is the client unless it is a trusted
/// proxy; then `X-Forwarded-For` is read from the right, skipping trusted proxies, and the first
/// untrusted address is the client. Entries a proxy could not have written are not believed.
enum ClientAddress {
    static func resolve(peer: IPAddress?, forwardedFor: [String], trustedProxies: [IPNetwork]) -> IPAddress? {
        guard let peer else { return nil }
        guard trustedProxies.containsAddress(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: " \t") }
        var client = peer
        for hop in hops.reversed() {
            guard let address = IPAddress(hop) else { return client }
            client = address
            guard trustedProxies.containsAddress(address) else { return address }
        }
        return client
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        var result = self
        while let first = result.first, set.contains(first) { result.removeFirst() }
        while let last = result.last, set.contains(last) { result.removeLast() }
        return String(result)
    }
}
