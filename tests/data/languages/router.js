// A minimal HTTP router with path parameters and middleware.
"use strict";

const http = require("http");
const { URL } = require("url");

function compile(pattern) {
  const names = [];
  const source = pattern
    .split("/")
    .map((part) => {
      if (part.startsWith(":")) {
        names.push(part.slice(1));
        return "([^/]+)";
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return { regex: new RegExp(`^${source}/?$`), names };
}

class Router {
  constructor() {
    this.routes = [];
    this.middleware = [];
  }

  use(fn) {
    this.middleware.push(fn);
    return this;
  }

  add(method, pattern, handler) {
    const { regex, names } = compile(pattern);
    this.routes.push({ method: method.toUpperCase(), regex, names, handler });
    return this;
  }

  get(pattern, handler) {
    return this.add("GET", pattern, handler);
  }

  post(pattern, handler) {
    return this.add("POST", pattern, handler);
  }

  match(method, pathname) {
    for (const route of this.routes) {
      if (route.method !== method) {
        continue;
      }
      const found = route.regex.exec(pathname);
      if (found) {
        const params = {};
        route.names.forEach((name, i) => {
          params[name] = decodeURIComponent(found[i + 1]);
        });
        return { handler: route.handler, params };
      }
    }
    return null;
  }

  async handle(req, res) {
    const url = new URL(req.url, `http://${req.headers.host || "localhost"}`);
    const found = this.match(req.method, url.pathname);
    if (!found) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "not found", path: url.pathname }));
      return;
    }
    const context = { req, res, url, params: found.params, state: {} };
    let index = 0;
    const next = async () => {
      const fn = this.middleware[index++];
      if (fn) {
        await fn(context, next);
      } else {
        await found.handler(context);
      }
    };
    try {
      await next();
    } catch (error) {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: error.message }));
    }
  }

  listen(port, callback) {
    const server = http.createServer((req, res) => this.handle(req, res));
    return server.listen(port, callback);
  }
}

const logger = async (context, next) => {
  const started = Date.now();
  await next();
  const elapsed = Date.now() - started;
  console.log(`${context.req.method} ${context.url.pathname} ${elapsed}ms`);
};

function json(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

module.exports = { Router, compile, logger, json };
