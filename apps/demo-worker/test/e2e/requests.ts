import { execFileSync } from "node:child_process";
import { request as httpRequest } from "node:http";
import { expect } from "vitest";
import type { SharedDemo } from "./shared-dev.setup.ts";

/** POSTs `body` (JSON-encoded unless it is a string) as `application/json`, with extra headers. */
export function postJson(
  dev: SharedDemo,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${dev.url}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Asserts a coded JSON error answer: the status, `{ error: { code, message } }`. */
export async function expectCoded(response: Response, status: number, code: string): Promise<void> {
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await response.json()) as { error?: { code?: string; message?: string } };
  expect({ status: response.status, code: body.error?.code }).toEqual({ status, code });
  expect(typeof body.error?.message).toBe("string");
}

/** Sends a raw HTTP/1.1 request with any headers (fetch will not set `Host`); resolves status and body. */
export function rawRequest(
  dev: SharedDemo,
  options: { method: string; path: string; headers: Record<string, string>; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port: dev.port,
        method: options.method,
        path: options.path,
        headers: options.headers,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Resident memory (bytes) of the workerd processes in wrangler's process group. */
export function workerdRss(dev: SharedDemo): number {
  const table = execFileSync("ps", ["-eo", "pgid=,rss=,comm="], { encoding: "utf8" });
  let kib = 0;
  for (const line of table.split("\n")) {
    const [pgid, rss, comm] = line.trim().split(/\s+/);
    if (Number(pgid) === dev.pid && comm?.includes("workerd")) kib += Number(rss);
  }
  return kib * 1024;
}

/**
 * Streams a body of `totalBytes` (1 MiB chunks of spaces) to `path`, with a declared
 * `Content-Length` or chunked, and stops writing as soon as the server answers. Resolves the
 * status and body text, or status 0 when the connection broke before an answer.
 */
export function sendLargeBody(
  dev: SharedDemo,
  options: {
    method: string;
    path: string;
    totalBytes: number;
    declareLength: boolean;
    contentType: string;
  },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    let answered = false;
    const headers: Record<string, string> = { "Content-Type": options.contentType };
    if (options.declareLength) headers["Content-Length"] = String(options.totalBytes);
    const req = httpRequest(
      { host: "127.0.0.1", port: dev.port, method: options.method, path: options.path, headers },
      (res) => {
        answered = true;
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", () => {
      if (!answered) resolve({ status: 0, body: "" });
    });
    const chunk = Buffer.alloc(1_048_576, 0x20);
    let sent = 0;
    const pump = () => {
      while (!answered && sent < options.totalBytes) {
        const part = chunk.subarray(0, Math.min(chunk.byteLength, options.totalBytes - sent));
        sent += part.byteLength;
        if (!req.write(part)) {
          req.once("drain", pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}
