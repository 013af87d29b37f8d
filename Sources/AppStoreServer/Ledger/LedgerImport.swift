import FoundationEssentials
import Glibc
import Synchronization

/// Bulk import (docs/ledger.md, "Bulk import"): a file of JSON lines of signed values, verified on every core and
/// committed in batches; re-running it after an interruption stores what is missing and nothing twice.
///
/// A line is one of (empty lines are skipped and not counted):
///
///     {"notification": "<JWS>"}     a notification's signedPayload (deep-verified: its transaction and renewal info too)
///     {"signedPayload": "<JWS>"}    the same: the body of Apple's POST, as received
///     {"transaction": "<JWS>"}      a signed transaction
///     {"renewalInfo": "<JWS>"}      a signed renewal info
///     <JWS>                         a bare compact JWS: a notification's signedPayload
///
/// Each batch: lines parsed and their payload's digest looked up (a payload already stored with the same signature is
/// counted `alreadyPresent` without verifying the line again; another signature is verified), the rest verified in
/// parallel outside the ledger's lock, then every verified value committed in one transaction. A line longer than the verifier's `maxJWSBytes` (plus 64 bytes
/// of JSON around it) is refused without being held in memory.
public struct LedgerImportOptions: Sendable {
    /// Lines per batch (one transaction each); 0: 1000.
    public var batchSize: Int = 0
    /// Verifying threads; 0: one per core.
    public var workers: Int = 0
    /// Called after each committed batch: the lines read so far, the input's bytes read so far, and its size (0 when
    /// unknown).
    public var progress: (@Sendable (_ lines: Int64, _ bytes: Int64, _ totalBytes: Int64) -> Void)?

    public init(batchSize: Int = 0, workers: Int = 0, progress: (@Sendable (Int64, Int64, Int64) -> Void)? = nil) {
        self.batchSize = batchSize
        self.workers = workers
        self.progress = progress
    }
}

extension Ledger {
    /// The largest number of refusals `LedgerImportResult.refused` lists (`refusedCount` counts them all).
    public static let maximumListedRefusals = 1000

    /// Imports the JSON lines file at `path` (see `LedgerImportOptions`). Refused lines are reported in the result,
    /// not thrown; a file that cannot be read is `invalidArgument`, a database failure `storageError` (the batches
    /// committed before it stay: run it again to finish).
    public func importJSONLines(path: String, options: LedgerImportOptions = LedgerImportOptions()) throws(LedgerError) -> LedgerImportResult {
        guard !path.utf8.contains(0) else { throw .argument("the import file's path contains a NUL byte") }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw .argument("cannot open the import file \(QuotedText.quote(path)): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var st = stat()
        let total: Int64 = fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG ? Int64(st.st_size) : 0
        var reader = LineReader(fd: fd, limit: verifier.maxJWSBytes + 64)
        return try importLines(options: options, totalBytes: total) { () throws(LedgerError) -> ImportLine? in
            do throws(LineReader.Failure) { return try reader.next() } catch {
                throw .argument("cannot read the import file \(QuotedText.quote(path)): \(error.message)")
            }
        }
    }

    /// The same, over JSON lines in memory.
    public func importJSONLines(_ bytes: [UInt8], options: LedgerImportOptions = LedgerImportOptions()) throws(LedgerError) -> LedgerImportResult {
        var start = 0
        var number: Int64 = 0
        let limit = verifier.maxJWSBytes + 64
        return try importLines(options: options, totalBytes: Int64(bytes.count)) { () -> ImportLine? in
            guard start < bytes.count else { return nil }
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            number += 1
            defer { start = end + 1 }
            return ImportLine(number: number, bytes: end - start > limit ? nil : Array(bytes[start..<end]),
                              length: end - start, offset: Int64(end))
        }
    }

    private func importLines(options: LedgerImportOptions, totalBytes: Int64,
                             next: () throws(LedgerError) -> ImportLine?) throws(LedgerError) -> LedgerImportResult {
        let batchSize = options.batchSize > 0 ? options.batchSize : 1000
        let workers = options.workers > 0 ? options.workers : max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        var result = LedgerImportResult(read: 0, stored: 0, alreadyPresent: 0, refusedCount: 0, refused: [])
        func refuse(_ line: Int64, _ status: String, _ reason: String, _ message: String) {
            result.refusedCount += 1
            if result.refused.count < Self.maximumListedRefusals {
                result.refused.append(LedgerImportRefusal(line: line, status: status, reason: reason, message: message))
            }
        }
        let verifier = self.verifier
        var done = false
        while !done {
            var batch: [ImportLine] = []
            while batch.count < batchSize {
                guard let line = try next() else { done = true; break }
                if line.isBlank { continue }
                batch.append(line)
            }
            guard !batch.isEmpty else { break }
            result.read += Int64(batch.count)
            // Parse, then look the payloads up (cheap: a digest and an index probe each), then verify the rest.
            let parsed = batch.map { ImportValue.parse($0, maxJWSBytes: verifier.maxJWSBytes) }
            let digests = parsed.map { p -> String? in if case .value(_, _, let d?) = p { d } else { nil } }
            let present = try withRefreshedStore { store throws(LedgerError) in
                try store.storedPayloads(Set(digests.compactMap { $0 }))
            }
            var toVerify: [(index: Int, kind: LedgerEventKind, jws: String)] = []
            for (i, p) in parsed.enumerated() {
                switch p {
                case .refused(let status, let reason, let message): refuse(batch[i].number, status, reason, message)
                case .value(let kind, let jws, let digest):
                    // The same payload with the same signature: stored already (a forged signature is verified).
                    if let digest, let signature = present[digest], !signature.isEmpty,
                       jws.split(separator: ".", omittingEmptySubsequences: false).last == signature {
                        result.alreadyPresent += 1
                    } else {
                        toVerify.append((i, kind, jws))
                    }
                }
            }
            let verified = ParallelWork.map(toVerify, workers: workers) { v in LedgerEvent.verify(v.kind, v.jws, with: verifier) }
            var events: [LedgerEvent] = []
            for (v, outcome) in zip(toVerify, verified) {
                switch outcome {
                case .success(let e): events.append(e)
                case .failure(let f): refuse(batch[v.index].number, f.statusCode.name, f.reason.name, f.message)
                }
            }
            if !events.isEmpty {
                for outcome in commitBatch(events) {
                    switch outcome {
                    case .success(let r): if r.stored { result.stored += 1 } else { result.alreadyPresent += 1 }
                    case .failure(let e): throw e
                    }
                }
            }
            options.progress?(result.read, batch.last?.offset ?? 0, totalBytes)
        }
        return result
    }
}

/// One line of the input: its bytes (nil when longer than the limit: not kept), its length and where it ends.
struct ImportLine {
    let number: Int64
    let bytes: [UInt8]?
    let length: Int
    /// The input's bytes read up to the end of this line.
    let offset: Int64

    var isBlank: Bool {
        guard let bytes else { return false }
        return bytes.allSatisfy { $0 == 32 || $0 == 9 || $0 == 13 }
    }
}

/// A line, parsed: a signed value (and its payload's hex SHA-256 when it could be read without verifying), or why not.
enum ImportValue {
    case value(LedgerEventKind, String, String?)
    case refused(status: String, reason: String, message: String)

    static func parse(_ line: ImportLine, maxJWSBytes: Int) -> ImportValue {
        func malformed(_ message: String) -> ImportValue {
            .refused(status: AppStoreStatus.invalidJwtFormat.name, reason: FailureReason.malformed.name, message: message)
        }
        func tooLarge(_ message: String) -> ImportValue {
            let f = VerificationFailure(.inputTooLarge, message)  // as the verifier refuses it
            return .refused(status: f.statusCode.name, reason: f.reason.name, message: f.message)
        }
        guard let bytes = line.bytes else {
            return tooLarge("the line is \(line.length) bytes, more than the verifier's maxJWSBytes (\(maxJWSBytes)) "
                + "and the JSON around it: not read")
        }
        var trimmed = bytes[...]
        while let f = trimmed.first, f == 32 || f == 9 { trimmed = trimmed.dropFirst() }
        while let l = trimmed.last, l == 32 || l == 9 || l == 13 { trimmed = trimmed.dropLast() }
        let kind: LedgerEventKind
        let jws: String
        if trimmed.first == UInt8(ascii: "{") {
            guard let json = try? JSONParser.parse(Array(trimmed)), case .object(let members) = json else {
                return malformed("not a JSON object")
            }
            let known: [(String, LedgerEventKind)] = [("notification", .notification), ("signedPayload", .notification),
                                                      ("transaction", .transaction), ("renewalInfo", .renewalInfo)]
            guard members.count == 1, let name = members.first?.key, let value = members.first?.value,
                  let k = known.first(where: { $0.0 == name })?.1 else {
                return malformed("expected an object with one member: notification, signedPayload, transaction or "
                    + "renewalInfo; got \(members.map { QuotedText.quote($0.key) }.joined(separator: ", "))")
            }
            guard case .string(let s) = value else { return malformed("\(QuotedText.quote(name)) is not a string") }
            (kind, jws) = (k, s)
        } else {
            guard let s = String(validating: trimmed, as: UTF8.self) else { return malformed("the line is not UTF-8") }
            (kind, jws) = (.notification, s)
        }
        guard jws.utf8.count <= maxJWSBytes else {
            return tooLarge("the JWS is \(jws.utf8.count) bytes, more than the verifier's maxJWSBytes (\(maxJWSBytes))")
        }
        // The payload's digest, to skip what is stored; a value whose payload does not decode is left to the verifier.
        var copy = jws
        let digest: String? = copy.withUTF8 { u in
            guard case .success(let split) = CompactJWS.split(UnsafeRawBufferPointer(u)) else { return nil }
            return LedgerDigest.sha256Hex(split.payload)
        }
        return .value(kind, jws, digest)
    }
}

/// Reads lines from a file descriptor in 1 MiB blocks; a line longer than `limit` is skipped through to its end
/// without being kept.
struct LineReader {
    struct Failure: Error { let message: String }
    let fd: Int32
    let limit: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var eof = false
    private var number: Int64 = 0
    private var consumed: Int64 = 0

    init(fd: Int32, limit: Int) {
        self.fd = fd
        self.limit = limit
    }

    mutating func next() throws(Failure) -> ImportLine? {
        var skipped = 0  // bytes of an over-long line dropped so far
        while true {
            if let nl = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                number += 1
                let length = skipped + nl - start
                let line = ImportLine(number: number, bytes: skipped > 0 || length > limit ? nil : Array(buffer[start..<nl]),
                                      length: length, offset: consumed + Int64(nl + 1))
                start = nl + 1
                return line
            }
            if eof {
                guard start < buffer.count || skipped > 0 else { return nil }
                number += 1
                let length = skipped + buffer.count - start
                let line = ImportLine(number: number, bytes: skipped > 0 || length > limit ? nil : Array(buffer[start...]),
                                      length: length, offset: consumed + Int64(buffer.count))
                start = buffer.count
                return line
            }
            // Keep the unread tail (dropped when it is already longer than a line may be), then read more.
            if buffer.count - start > limit {
                skipped += buffer.count - start
                consumed += Int64(buffer.count)
                buffer = []
            } else {
                consumed += Int64(start)
                buffer.removeFirst(start)
            }
            start = 0
            let old = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: 1 << 20))
            let n = buffer.withUnsafeMutableBytes { b in read(fd, b.baseAddress! + old, 1 << 20) }
            if n < 0 {
                if errno == EINTR { buffer.removeLast(1 << 20); continue }
                throw Failure(message: String(cString: strerror(errno)))
            }
            buffer.removeLast((1 << 20) - n)
            if n == 0 { eof = true }
        }
    }
}

/// Runs `body` over `items` on `workers` threads (the caller's among them); the results in order.
enum ParallelWork {
    static func map<T, R>(_ items: [T], workers: Int, _ body: @escaping (T) -> R) -> [R] {
        let threads = min(workers, items.count)
        guard threads > 1 else { return items.map(body) }
        let results = UnsafeMutableBufferPointer<R?>.allocate(capacity: items.count)
        results.initialize(repeating: nil)
        defer { results.deinitialize(); results.deallocate() }
        let job = Job(count: items.count) { i in results[i] = body(items[i]) }
        var spawned: [pthread_t] = []
        for _ in 1..<threads {
            var t = pthread_t()
            let context = Unmanaged.passRetained(job).toOpaque()
            if pthread_create(&t, nil, { c in
                Unmanaged<Job>.fromOpaque(c!).takeRetainedValue().run()
                return nil
            }, context) == 0 {
                spawned.append(t)
            } else {
                Unmanaged<Job>.fromOpaque(context).release()  // fewer threads: the others share the work
            }
        }
        job.run()
        for t in spawned { pthread_join(t, nil) }
        return results.map { $0! }
    }

    /// Hands out indexes until none are left.
    private final class Job: @unchecked Sendable {
        let count: Int
        let next = Atomic<Int>(0)
        let work: (Int) -> Void
        init(count: Int, work: @escaping (Int) -> Void) {
            self.count = count
            self.work = work
        }
        func run() {
            while true {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < count else { return }
                work(i)
            }
        }
    }
}

extension LedgerImportResult { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
