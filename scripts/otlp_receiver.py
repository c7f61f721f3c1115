#!/usr/bin/env python3
"""A minimal OTLP/HTTP trace receiver for AuthGate's tracing test.

    python3 otlp_receiver.py --out spans.jsonl [--port 0]

Accepts POST /v1/traces (application/x-protobuf, gzip or not), decodes the
ExportTraceServiceRequest with the `opentelemetry-proto` package, appends each span to
--out as one JSON line ({"trace_id", "span_id", "parent_span_id", "name", "kind",
"status", "service", "attributes": {key: value}}; ids in lower-case hex) and answers 200
with an empty ExportTraceServiceResponse. Anything else: 404 or 400.
Prints one JSON line {"port", "endpoint"} on stdout once it listens; stops on SIGTERM.
"""

import argparse
import gzip
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value_of(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value_of(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else None


def spans_of(request):
    for resource_spans in request.resource_spans:
        resource = {kv.key: value_of(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                yield {
                    "trace_id": s.trace_id.hex(),
                    "span_id": s.span_id.hex(),
                    "parent_span_id": s.parent_span_id.hex(),
                    "name": s.name,
                    "kind": s.kind,
                    "status": s.status.code,
                    "service": resource.get("service.name"),
                    "attributes": {kv.key: value_of(kv.value) for kv in s.attributes},
                }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def answer(self, status, body=b"", ctype="application/x-protobuf"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/v1/traces":
                return self.answer(404, b"not found", "text/plain")
            try:
                if self.headers.get("Content-Encoding", "") == "gzip":
                    body = gzip.decompress(body)
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
            except Exception as e:  # a malformed export is the exporter's bug: say so
                return self.answer(400, str(e).encode(), "text/plain")
            with lock, open(args.out, "a") as f:
                for span in spans_of(request):
                    f.write(json.dumps(span) + "\n")
            self.answer(200, trace_service_pb2.ExportTraceServiceResponse().SerializeToString())

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    port = server.server_address[1]
    print(json.dumps({"port": port, "endpoint": f"http://127.0.0.1:{port}"}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
