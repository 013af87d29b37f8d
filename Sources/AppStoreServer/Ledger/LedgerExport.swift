import FoundationEssentials
import Glibc

/// Export (docs/ledger.md, "Export"): every stored value of the ledger's identity as the JSON lines bulk import reads,
/// so a ledger can be backed up, moved to another store (SQLite to PostgreSQL) or handed to another system, and what
/// is imported back is the same ledger.
extension Ledger {
    /// Every stored value of this ledger's identity, in the order stored, as JSON lines `importJSONLines` reads:
    /// `{"notification":"<JWS>"}`, `{"transaction":"<JWS>"}` or `{"renewalInfo":"<JWS>"}`, each JWS byte for byte as
    /// it was ingested (its certificate chain put back from the stored form), so each can be verified again. Rows
    /// are read a page at a time under the lock and given to `write` outside it (a chunk of whole lines each call);
    /// a commit made meanwhile is exported when its id comes after the page being read.
    public func exportJSONLines(_ write: ([UInt8]) throws(LedgerError) -> Void) throws(LedgerError) -> LedgerExportResult {
        var result = LedgerExportResult(exported: 0, notifications: 0, transactions: 0, renewalInfos: 0)
        var after: Int64 = 0
        while true {
            let page = try storedPage(after: after)
            var chunk: [UInt8] = []
            chunk.reserveCapacity(page.reduce(0) { $0 + $1.2.utf8.count + 24 })
            for (_, kind, signed) in page {
                let member: String
                switch kind {
                case .notification: member = "notification"; result.notifications += 1
                case .transaction: member = "transaction"; result.transactions += 1
                case .renewalInfo: member = "renewalInfo"; result.renewalInfos += 1
                default: throw .storage("stored event of unknown kind \(QuotedText.quote(kind.rawValue))")
                }
                chunk += Array("{\"\(member)\":\"".utf8)
                Self.appendJSONStringContent(signed, to: &chunk)
                chunk += Array("\"}\n".utf8)
                result.exported += 1
            }
            if !chunk.isEmpty { try write(chunk) }
            guard let last = page.last, page.count == 1000 else { return result }
            after = last.0
        }
    }

    /// The same, written to the file at `path`: made beside it under a temporary name of its own (readable by its
    /// owner only: it holds customers' purchases), flushed to disk, then renamed over `path`, so `path` is either the
    /// whole export or what it was before. `invalidArgument`: the file cannot be created or put in place (`path` a
    /// directory); `storageError`: writing it failed (disk full). The temporary file is removed on any failure.
    public func exportJSONLines(path: String) throws(LedgerError) -> LedgerExportResult {
        guard !path.isEmpty, !path.utf8.contains(0) else { throw .argument("the export file's path is empty or contains a NUL byte") }
        // A name of this export's own, made exclusively (never an existing file or a link followed): two exports to
        // one path at once each write their own and the last rename wins.
        var temporary = ""
        var fd: Int32 = -1
        for _ in 0..<100 {
            temporary = "\(path).partial-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else {
            throw .argument("cannot create the export file \(QuotedText.quote(temporary)): \(String(cString: strerror(errno)))")
        }
        _ = fchmod(fd, 0o600)  // whatever the umask
        var done = false
        defer {
            if fd >= 0 { close(fd) }
            if !done { unlink(temporary) }
        }
        func failure(_ what: String) -> LedgerError {
            .storage("cannot \(what) the export file \(QuotedText.quote(temporary)): \(String(cString: strerror(errno)))")
        }
        let result = try exportJSONLines { (bytes: [UInt8]) throws(LedgerError) in
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { b in Glibc.write(fd, b.baseAddress! + offset, b.count - offset) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw failure("write")
                }
                offset += n
            }
        }
        guard fsync(fd) == 0 else { throw failure("flush") }
        guard rename(temporary, path) == 0 else {
            throw .argument("cannot put the export file in place at \(QuotedText.quote(path)): \(String(cString: strerror(errno)))")
        }
        done = true
        // The rename itself made durable: the directory's entry.
        let slash = path.utf8.lastIndex(of: UInt8(ascii: "/"))
        let directory = slash.map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        let dfd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
        return result
    }

    /// `text` as the content of a JSON string (a verified JWS is base64url and dots, so this copies it; anything else
    /// is escaped all the same).
    static func appendJSONStringContent(_ text: String, to out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), b]
            case 0..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
    }
}

extension LedgerExportResult { public func json() -> [UInt8] { LedgerJSON.bytes(self) } }
