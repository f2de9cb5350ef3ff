// python -m bench.floor's Node server: Node's own http module, an empty handler that reads the
// body, parses its JSON and answers 201 with the same small body as bench/floor_apps.py.
"use strict";
const http = require("http");
const answer = Buffer.from('{"messageEventId":"evt_floor","turns":[]}');
const frame = Buffer.from('id: 1234\nevent: turn.content.delta\ndata: {"type":"turn.content.delta","body":{"text":"'
  + "x".repeat(300) + '"}}\n\n');

// GET /?n=N: an event stream of N frames, one per turn of the event loop (waiting for "drain" when
// the socket is full).
function stream(request, response) {
  const count = Number(new URL(request.url, "http://127.0.0.1").searchParams.get("n") || 1);
  response.writeHead(200, { "content-type": "text/event-stream" });
  let sent = 0;
  const write = () => {
    if (sent === count) {
      response.end();
      return;
    }
    sent += 1;
    if (response.write(frame)) setImmediate(write);
    else response.once("drain", write);
  };
  write();
}

http.createServer((request, response) => {
  if (request.method === "GET") {
    stream(request, response);
    return;
  }
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    JSON.parse(Buffer.concat(chunks).toString("utf8"));
    response.writeHead(201, { "content-type": "application/json", "content-length": answer.length });
    response.end(answer);
  });
}).listen(Number(process.argv[2]), "127.0.0.1", () => console.log("listening"));
