// appstore-bench: Swift-side benchmarks of the AppStoreServer module, driven by benchmarks/run.
//
//   AppStoreBench verify --vectors DIR [--seconds S] [--runs N] [--only CASE[,CASE...]]
//   AppStoreBench sign --key KEY.p8 [--seconds S] [--runs N] [--only CASE[,CASE...]]
//
// Every case prints one machine-readable line on stdout:
//   RESULT swift <case> <calls per second> <JWS verified (created) per call>
// (best of --runs runs, each repeating the call over the inputs until --seconds elapsed). benchmarks/run pairs
// these with the C floor and prints the human-readable report. Any failed verification or malformed result aborts
// with exit 1. The sign group also prints one `SAMPLE swift <case> ...` line per timed run (that run's last
// result) for benchmarks/run to verify independently of the library (benchmarks/c/sign_check.c).
import AppStoreServer
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var group = ""
    var vectors = ""
    var key = ""
    var seconds = 1.5
    var runs = 3
    var only: Set<String> = []

    func wants(_ name: String) -> Bool { only.isEmpty || only.contains(name) }
}

@main
struct AppStoreBench {
    /// Adding a group: write `enum XBench { static func run(_ o: Options) }` and add it here.
    static let groups: [String: @Sendable (Options) -> Void] = [
        "verify": VerifyBench.run,
        "sign": SignBench.run,
    ]

    static func main() {
        let o = parse(Array(CommandLine.arguments.dropFirst()))
        guard let run = groups[o.group] else { usage("unknown group \"\(o.group)\"") }
        run(o)
    }

    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 0
        func value() -> String {
            i += 1
            guard i < args.count else { usage("\(args[i - 1]) needs a value") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--vectors": o.vectors = value()
            case "--key": o.key = value()
            case "--seconds": o.seconds = Double(value()) ?? { usage("--seconds needs a number") }()
            case "--runs": o.runs = Int(value()) ?? { usage("--runs needs an integer") }()
            case "--only": o.only = Set(value().split(separator: ",").map(String.init))
            case let a where a.hasPrefix("-"): usage("unknown option \(a)")
            case let a where o.group.isEmpty: o.group = a
            case let a: usage("unexpected argument \(a)")
            }
            i += 1
        }
        if o.group.isEmpty { usage("no group given") }
        if o.runs < 1 || o.seconds <= 0 { usage("--runs must be >= 1 and --seconds > 0") }
        return o
    }

    static func usage(_ why: String) -> Never {
        let groups = AppStoreBench.groups.keys.sorted().joined(separator: "|")
        Bench.writeError("AppStoreBench: \(why)\nusage: AppStoreBench {\(groups)} [--vectors DIR] [--key KEY.p8] [--seconds S] [--runs N] [--only CASE,...]\n")
        exit(2)
    }
}

// MARK: harness

enum Bench {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }

    static func writeError(_ text: String) {
        fflush(nil)
        var t = text
        t.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }

    static func fail(_ message: String) -> Never {
        writeError("AppStoreBench: FAILED: \(message)\n")
        exit(1)
    }

    /// Runs `op` over `inputs` (cycling) until `seconds` elapse, `runs` times; prints the best rate.
    /// `op` verifies one input, checks the result (aborting on failure) and returns how many JWS it verified.
    /// One untimed pass over every input comes first: it warms caches and checks every vector once.
    /// `afterRun` (optional) runs after each timed run, outside the timing.
    static func measure(_ name: String, _ o: Options, _ inputs: [String], afterRun: () -> Void = {},
                        _ op: (Int, String) -> Int) {
        guard o.wants(name) else { return }
        guard !inputs.isEmpty else { fail("\(name): no input vectors") }
        for (i, s) in inputs.enumerated() { _ = op(i, s) }
        var best = 0.0
        var bestJWSPerCall = 0.0
        for _ in 0..<o.runs {
            var calls = 0, jws = 0, i = 0
            let start = now()
            var elapsed = 0.0
            repeat {
                jws += op(i, inputs[i])
                calls += 1
                i += 1
                if i == inputs.count { i = 0 }
                elapsed = now() - start
            } while elapsed < o.seconds
            let rate = Double(calls) / elapsed
            afterRun()
            if rate > best {
                best = rate
                bestJWSPerCall = Double(jws) / Double(calls)
            }
        }
        print("RESULT swift \(name) \(best) \(bestJWSPerCall)")
        fflush(nil)
    }

    static func lines(_ dir: String, _ file: String) -> [String] {
        let path = dir + "/" + file
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path)) else { fail("cannot read \(path)") }
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init)
    }
}

// MARK: verify group

enum VerifyBench {
    static let bundleId = "com.example.bench"
    static let appAppleId: Int64 = 1234567890

    static func makeVerifier(_ root: [UInt8], _ cache: ChainCacheConfiguration) -> SignedDataVerifier {
        do {
            return try SignedDataVerifier(rootCertificates: [root], bundleId: bundleId, appAppleId: appAppleId,
                                          environment: .production, enableOnlineChecks: false, chainCache: cache)
        } catch {
            Bench.fail("cannot create verifier: \(error)")
        }
    }

    static func run(_ o: Options) {
        if o.vectors.isEmpty { AppStoreBench.usage("verify needs --vectors DIR (gen_vectors.py output)") }
        let rootPath = o.vectors + "/root.der"
        guard let root = try? Data(contentsOf: URL(fileURLWithPath: rootPath)) else { Bench.fail("cannot read \(rootPath)") }
        let transactions = Bench.lines(o.vectors, "transactions.jws")
        let notifications = Bench.lines(o.vectors, "notifications.jws")

        let cached = makeVerifier([UInt8](root), .default)
        let uncached = makeVerifier([UInt8](root), .disabled)

        func transaction(_ v: SignedDataVerifier, _ name: String) -> (Int, String) -> Int {
            { i, jws in
                switch v.verifyAndDecodeTransaction(signedTransaction: jws) {
                case .valid(let t):
                    guard t.bundleId == bundleId, t.transactionId != nil else {
                        Bench.fail("\(name): transaction #\(i) decoded without bundleId/transactionId")
                    }
                    return 1
                case .invalid(let f):
                    Bench.fail("\(name): transaction #\(i): \(f)")
                }
            }
        }

        let before = cached.chainCacheStatistics
        Bench.measure("transaction_cached", o, transactions, transaction(cached, "transaction_cached"))
        let after = cached.chainCacheStatistics
        // The first warm-up call may miss; after that every call must hit, or this is not the cached case.
        if o.wants("transaction_cached") && after.misses - before.misses > 1 {
            Bench.fail("transaction_cached: \(after.misses - before.misses) chain cache misses (expected at most 1)")
        }

        Bench.measure("transaction_first_sight", o, transactions, transaction(uncached, "transaction_first_sight"))
        if uncached.chainCacheStatistics.hits != 0 { Bench.fail("transaction_first_sight: the disabled cache hit") }

        Bench.measure("notification", o, notifications) { i, jws in
            switch cached.verifyAndDecodeNotification(signedPayload: jws) {
            case .valid(let n):
                guard n.notificationType != nil, n.data?.bundleId == bundleId else {
                    Bench.fail("notification: #\(i) decoded without notificationType/data.bundleId")
                }
                return 1
            case .invalid(let f):
                Bench.fail("notification: #\(i): \(f)")
            }
        }

        Bench.measure("notification_deep", o, notifications) { i, jws in
            switch cached.verifyAndDecodeNotificationDeep(signedPayload: jws) {
            case .valid(let d):
                guard let tx = d.transaction, tx.bundleId == bundleId else {
                    Bench.fail("notification_deep: #\(i) has no verified nested transaction")
                }
                return 1 + 1 + (d.renewalInfo == nil ? 0 : 1) + (d.appTransaction == nil ? 0 : 1)
            case .invalid(let f):
                Bench.fail("notification_deep: #\(i): \(f)")
            }
        }
    }
}
