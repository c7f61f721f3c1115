// Node's `http` module through AuthGate, with a keep-alive agent holding one socket:
// BASE/public/node and BASE/api/node, twice each, alternating, on the same connection.
//
//   node node_client.js BASE_URL EXPECTED_BODY
// Prints one line per check and exits non-zero on any failure.
"use strict";
const http = require("http");

const [base, body] = process.argv.slice(2);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
let failed = false;

function check(ok, what) {
  console.log((ok ? "ok   " : "FAIL ") + what);
  if (!ok) failed = true;
}

function get(path) {
  return new Promise((resolve, reject) => {
    const req = http.get(base + path, { agent, timeout: 10000 }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (data += c));
      res.on("end", () => resolve({ status: res.statusCode, data, reused: req.reusedSocket, socket: req.socket }));
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
  });
}

(async () => {
  let first;
  const paths = ["/public/node", "/api/node", "/public/node", "/api/node"];
  for (const [i, path] of paths.entries()) {
    const r = await get(path);
    check(r.status === 200 && r.data === body, `${path} #${i}: ${r.status} ${JSON.stringify(r.data.slice(0, 60))}`);
    first = first || r.socket;
    check(i === 0 || (r.reused && r.socket === first), `${path} #${i}: the keep-alive socket is reused`);
  }
  agent.destroy();
  process.exit(failed ? 1 : 0);
})().catch((e) => {
  console.log("FAIL " + e.message);
  process.exit(1);
});
