import ArgumentParser
import Foundation
import IPNCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// `ipnd-bench provider`: iPay88's re-query as a fast stand-in for `make bench`'s reconciliation
/// pass: answers every POST `Record not found` after `--delay-ms`, as a provider's status API
/// that takes its time, and counts them (`GET /count`). The test suite's provider double
/// (tools/provider_double.py) checks the protocol; this one only has to cost its host little.
struct BenchProvider: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider", abstract: "Answer iPay88 re-queries after a delay and count them (GET /count).")

    @Option(help: "The port to listen on, on 127.0.0.1.")
    var port: Int

    @Option(help: "How long each answer takes, in milliseconds.")
    var delayMs = 200

    func run() async throws {
        let tally = Tally()
        let delay = TimeAmount.milliseconds(Int64(delayMs))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 512)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(SlowProviderHandler(tally: tally, delay: delay))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        print("listening \(port)")
        fflush(nil)
        try await channel.closeFuture.get()
    }
}

final class SlowProviderHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart

    private let tally: Tally
    private let delay: TimeAmount
    private var head: HTTPRequestHead?

    init(tally: Tally, delay: TimeAmount) {
        self.tally = tally
        self.delay = delay
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            if head.method == .GET {
                ReceiverHandler.answer(context, version: head.version, .ok, tally.text)
                return
            }
            tally.count(nil)
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: delay) {
                ReceiverHandler.answer(loopBound.value, version: head.version, .ok, "Record not found", contentType: "text/html")
            }
        }
    }
}
