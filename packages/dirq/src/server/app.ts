import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { streamSSE } from "hono/streaming";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type DirqErrorCode, isDirqError } from "../errors.js";
import type { EventHub } from "./event-hub.js";

/** What the HTTP layer needs from the rest of the server. */
export interface ServerState {
  /** The `failed to load config: ...` diagnostic when degraded, else `null`. */
  degraded: string | null;
  /** Runs one statement; resolves with the JSON body; rejects with a DirqError for the user. */
  query: (sql: string) => Promise<string>;
  events: EventHub;
  /** Logs an internal fault (its details never reach the client). */
  logFault: (error: unknown) => void;
}

/** Request bodies beyond this are refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** A comment line on idle event streams at least this often. */
export const KEEP_ALIVE_MS = 15_000;

/** The one table that maps core error codes to HTTP statuses; other DirqErrors are 400. */
const STATUS_BY_CODE: Partial<Record<DirqErrorCode, ContentfulStatusCode>> = {
  QUERY_TIMEOUT: 408,
  SERVER_DEGRADED: 503,
};

const METHOD_NOT_ALLOWED = {
  "/query": "POST",
  "/events": "GET",
} as const;

function errorBody(message: string): string {
  return JSON.stringify({ error: message });
}

/** The HTTP API: `POST /query` and `GET /events`, with every error as `{"error": ...}`. */
export function createApp(state: ServerState): Hono {
  const app = new Hono();
  const json = (body: string, status: ContentfulStatusCode) =>
    new Response(body, { status, headers: { "content-type": "application/json" } });

  app.post(
    "/query",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => json(errorBody(`request body is larger than ${MAX_BODY_BYTES} bytes`), 413),
    }),
    async (c) => {
      if (state.degraded !== null) return json(errorBody(state.degraded), 503);
      let request: unknown;
      try {
        request = JSON.parse(await c.req.text());
      } catch (error) {
        return json(errorBody(`request body is not valid JSON: ${(error as Error).message}`), 400);
      }
      const sql = (request as { sql?: unknown } | null)?.sql;
      if (typeof sql !== "string" || sql.trim() === "") {
        const why =
          sql === undefined
            ? "is missing"
            : typeof sql !== "string"
              ? "must be a string"
              : "is empty";
        return json(errorBody(`"sql" ${why}: send {"sql": "<one read-only statement>"}`), 400);
      }
      try {
        return json(await state.query(sql), 200);
      } catch (error) {
        if (!isDirqError(error)) throw error;
        return json(errorBody(error.message), STATUS_BY_CODE[error.code] ?? 400);
      }
    },
  );

  app.get("/events", (c) => {
    if (state.degraded !== null) return json(errorBody(state.degraded), 503);
    return streamSSE(c, async (stream) => {
      const subscription = state.events.subscribe();
      stream.onAbort(() => subscription.close());
      await stream.writeSSE({ event: "ready", data: "{}" });
      for (;;) {
        const frame = await subscription.next(KEEP_ALIVE_MS);
        if (frame === undefined || stream.aborted) break;
        if (frame === null) await stream.write(": keep-alive\n\n");
        else await stream.writeSSE({ event: "row", data: frame });
      }
      subscription.close();
    });
  });

  for (const [path, allowed] of Object.entries(METHOD_NOT_ALLOWED)) {
    app.all(path, (c) =>
      c.text(`Method Not Allowed: use ${allowed} ${path}\n`, 405, { Allow: allowed }),
    );
  }

  app.notFound((c) =>
    json(
      errorBody(
        `no such endpoint: ${c.req.method} ${c.req.path}. The endpoints are POST /query and GET /events`,
      ),
      404,
    ),
  );

  app.onError((error) => {
    state.logFault(error);
    return json(errorBody("internal error; the server log has the details"), 500);
  });

  return app;
}
