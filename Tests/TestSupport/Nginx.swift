public import Foundation
import Glibc

/// A real nginx from Debian, started on loopback for one test and stopped after it.
public final class Nginx: @unchecked Sendable {
    // @unchecked: `process` and `directory` are set in init and only read afterwards.
    public let port: Int
    public let directory: URL
    private let process: Subprocess

    /// Starts nginx with `serverBlock` (the inside of a `server { }` block; `listen` is
    /// added for `port` with TLS when `tls` holds a certificate and key).
    public init(serverBlock: String, tls: (cert: String, key: String)? = nil, extraHTTP: String = "") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Nginx.freePort()
        let listen: String
        if let tls {
            listen = """
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(tls.cert);
                ssl_certificate_key \(tls.key);
                """
        } else {
            listen = "listen 127.0.0.1:\(port);"
        }
        let conf = """
            worker_processes 1;
            daemon off;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/error.log warn;
            events { worker_connections 4096; }
            http {
              access_log off;
              client_body_temp_path \(directory.path)/body;
              proxy_temp_path \(directory.path)/proxy;
              fastcgi_temp_path \(directory.path)/fastcgi;
              uwsgi_temp_path \(directory.path)/uwsgi;
              scgi_temp_path \(directory.path)/scgi;
              \(extraHTTP)
              server {
                \(listen)
                \(serverBlock)
              }
            }
            """
        let confURL = directory.appendingPathComponent("nginx.conf")
        try conf.write(to: confURL, atomically: true, encoding: .utf8)
        process = Subprocess()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", confURL.path, "-p", directory.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try Nginx.waitForPort(port)
    }

    /// Stops nginx and removes its directory.
    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// A port nothing listens on now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Int32 in
                _ = bind(fd, p, len)
                return getsockname(fd, p, &len)
            }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Waits until something accepts on `port` (up to 60 s: a loaded run starts nginx slowly).
    public static func waitForPort(_ port: Int) throws {
        for _ in 0..<3_000 {
            if (try? RawClient(port: port, timeoutSeconds: 1)) != nil { return }
            usleep(20_000)
        }
        throw NginxError.didNotStart(port)
    }

    public enum NginxError: Error { case didNotStart(Int) }
}

/// A throwaway CA and a server certificate for 127.0.0.1, made with openssl at test time.
public struct TestCertificates: Sendable {
    public let caCert: String
    public let serverCert: String
    public let serverKey: String
    public let clientCert: String
    public let clientKey: String
    /// Where the files are (the CA's key among them).
    public let directory: String

    public init() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pki-\(UUID().uuidString)").path
        directory = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        caCert = "\(dir)/ca.pem"
        serverCert = "\(dir)/server.pem"
        serverKey = "\(dir)/server.key"
        clientCert = "\(dir)/client.pem"
        clientKey = "\(dir)/client.key"
        try run(
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/ca.key", "-out", caCert,
            "-days", "1", "-subj", "/CN=AuthGate Test CA")
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: "\(dir)/san.ext", atomically: true, encoding: .utf8)
        for (name, cert, key) in [("server", serverCert, serverKey), ("client", clientCert, clientKey)] {
            try run(
                "openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", "\(dir)/\(name).csr",
                "-subj", "/CN=\(name)")
            try run(
                "openssl", "x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", caCert, "-CAkey", "\(dir)/ca.key",
                "-CAcreateserial", "-out", cert, "-days", "1", "-extfile", "\(dir)/san.ext")
        }
        for key in [serverKey, clientKey] { chmod(key, 0o600) }
    }

    /// Deletes the files, keys included (a test defers this once it has made them).
    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Another client certificate from the same CA, for `CN=commonName`: the paths of the
    /// certificate and its key (readable by its owner only).
    public func issueClient(_ commonName: String) throws -> (cert: String, key: String) {
        let cert = "\(directory)/\(commonName).pem"
        let key = "\(directory)/\(commonName).key"
        try run(
            "openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", "\(directory)/\(commonName).csr",
            "-subj", "/CN=\(commonName)")
        try run(
            "openssl", "x509", "-req", "-in", "\(directory)/\(commonName).csr", "-CA", caCert, "-CAkey",
            "\(directory)/ca.key", "-CAcreateserial", "-out", cert, "-days", "1")
        chmod(key, 0o600)
        return (cert, key)
    }
}

/// Runs a command and throws when it fails.
public func run(_ arguments: String...) throws {
    let p = Subprocess()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = arguments
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    if p.terminationStatus != 0 { throw CommandFailed(command: arguments.joined(separator: " "), status: p.terminationStatus) }
}

public struct CommandFailed: Error {
    public let command: String
    public let status: Int32
}

/// The resident set size of this process in bytes.
public func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let parts = text.split(separator: " ")
    return (Int(parts.count > 1 ? parts[1] : "0") ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}
