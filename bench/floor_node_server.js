// python -m bench.floor's Node server: Node's own http module, an empty handler that reads the
// body, parses its JSON and answers 201 with the same small body as bench/floor_apps.py.
"use strict";
const http = require("http");
const answer = Buffer.from('{"messageEventId":"evt_floor","turns":[]}');
http.createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    JSON.parse(Buffer.concat(chunks).toString("utf8"));
    response.writeHead(201, { "content-type": "application/json", "content-length": answer.length });
    response.end(answer);
  });
}).listen(Number(process.argv[2]), "127.0.0.1", () => console.log("listening"));
