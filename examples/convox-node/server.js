// A web server, as any app's. Four of them run on Convox behind the load
// balancer; the crontab beside each (see start.sh) runs once per tick for
// all four together.
"use strict";

const http = require("http");
const os = require("os");

const port = Number(process.env.PORT || 3000);

const server = http.createServer((req, res) => {
  if (req.url === "/health") {
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.end("ok\n");
    return;
  }
  res.writeHead(200, { "Content-Type": "text/plain" });
  res.end(`hello from ${os.hostname()}\n`);
});

server.listen(port, () => console.log(`web: listening on :${port}`));

// On SIGTERM (a deploy, a scale-down) finish the requests in flight, then
// exit; Convox waits termination.grace seconds before it kills.
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    console.log(`web: ${signal}, closing`);
    server.close(() => process.exit(0));
    server.closeIdleConnections();
  });
}
