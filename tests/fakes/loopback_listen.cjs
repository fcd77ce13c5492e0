// Preloaded (`node --require …/loopback_listen.cjs server.js`) into a Node server that listens
// on every interface (`app.listen(PORT)`, as server-everything's Streamable HTTP transport
// does): a listen without a host binds 127.0.0.1 instead, so the test's server is reachable
// from this machine only. A listen that names its host is left as it is.
"use strict";
const net = require("node:net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    const hostGiven = typeof args[1] === "string";
    if (!hostGiven) args.splice(1, 0, "127.0.0.1");
  } else if (first !== null && typeof first === "object" && !Array.isArray(first) && first.path === undefined
             && first.host === undefined) {
    args[0] = { ...first, host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
