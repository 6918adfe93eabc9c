import assert from "node:assert/strict";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  type FakeServer,
  makeTree,
  removeTree,
  runPubtool,
  sendJson,
  startServer,
} from "./helpers.js";

const trees: string[] = [];
let host: FakeServer;
/** Poll answers per client id (the scenario), consumed in order; the last one repeats. */
const SCENARIOS: Record<string, Record<string, unknown>[]> = {
  success: [
    { error: "authorization_pending" },
    { error: "slow_down", interval: 1 },
    { access_token: "gho_secret_token", token_type: "bearer", scope: "" },
  ],
  denied: [{ error: "authorization_pending" }, { error: "access_denied" }],
  expired: [{ error: "authorization_pending" }, { error: "expired_token" }],
  "env-client": [{ access_token: "gho_env_token", token_type: "bearer", scope: "" }],
};
const polls = new Map<string, number[]>();

before(async () => {
  host = await startServer((request, response, base) => {
    const form = new URLSearchParams(request.body.toString("utf8"));
    const clientId = form.get("client_id") ?? "";
    if (request.method === "POST" && request.url === "/login/device/code") {
      if (!(clientId in SCENARIOS)) return sendJson(response, 400, { error: "unknown client" });
      return sendJson(response, 200, {
        device_code: `device-${clientId}`,
        user_code: "WDJB-MJHT",
        verification_uri: `${base}/login/device`,
        expires_in: 900,
        interval: 0,
      });
    }
    if (request.method === "POST" && request.url === "/login/oauth/access_token") {
      assert.equal(form.get("grant_type"), "urn:ietf:params:oauth:grant-type:device_code");
      assert.equal(form.get("device_code"), `device-${clientId}`);
      const times = polls.get(clientId) ?? [];
      times.push(Date.now());
      polls.set(clientId, times);
      const answers = SCENARIOS[clientId] ?? [];
      return sendJson(response, 200, answers[Math.min(times.length, answers.length) - 1]);
    }
    sendJson(response, 404, {});
  });
});
after(async () => {
  await host.close();
  trees.forEach(removeTree);
});

function newHome(): string {
  const root = makeTree({});
  trees.push(root);
  return root;
}

describe("auth login (device flow)", { concurrency: true }, () => {
  it("shows the code, honours authorization_pending and slow_down, stores the token 0600 in 0700", async () => {
    const home = newHome();
    const env = { PUBTOOL_GITHUB_URL: host.url };
    const result = await runPubtool(["auth", "login", "--client-id", "success"], {
      cwd: home,
      env,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      new RegExp(`^open ${host.url}/login/device and enter the code WDJB-MJHT$`, "m"),
    );
    assert.ok(!result.stdout.includes("gho_secret_token"));
    const times = polls.get("success") ?? [];
    assert.equal(times.length, 3);
    assert.ok((times[2] ?? 0) - (times[1] ?? 0) >= 900, "slow_down raised the interval to 1 s");
    const file = join(home, ".config", "pubtool", "auth.json");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(home, ".config", "pubtool")).mode & 0o777, 0o700);
    assert.equal(
      (JSON.parse(readFileSync(file, "utf8")) as { access_token: string }).access_token,
      "gho_secret_token",
    );

    const status = await runPubtool(["auth", "status"], { cwd: home, env });
    assert.equal(status.code, 0);
    assert.match(
      status.stdout,
      /^logged in to http:\/\/127\.0\.0\.1:\d+ since .* \(client id success\)/,
    );
    assert.ok(!status.stdout.includes("gho_secret_token"));

    const logout = await runPubtool(["auth", "logout"], { cwd: home, env });
    assert.equal(logout.code, 0);
    assert.ok(!existsSync(file));
    const afterLogout = await runPubtool(["auth", "status"], { cwd: home, env });
    assert.equal(afterLogout.code, 1);
    assert.equal(afterLogout.stdout, "not logged in; run pubtool auth login\n");
  });

  it("access_denied fails with exit 1 and stores nothing", async () => {
    const home = newHome();
    const result = await runPubtool(["auth", "login", "--client-id", "denied"], {
      cwd: home,
      env: { PUBTOOL_GITHUB_URL: host.url },
    });
    assert.equal(result.code, 1);
    assert.equal(result.stderr, "pubtool: the sign-in was denied\n");
    assert.ok(!existsSync(join(home, ".config", "pubtool", "auth.json")));
  });

  it("expired_token fails with exit 1", async () => {
    const home = newHome();
    const result = await runPubtool(["auth", "login", "--client-id", "expired"], {
      cwd: home,
      env: { PUBTOOL_GITHUB_URL: host.url },
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /the device code expired; run pubtool auth login again/);
  });

  it("the client id comes from PUBTOOL_GITHUB_CLIENT_ID; without XDG_CONFIG_HOME the token goes to ~/.config", async () => {
    const home = newHome();
    const result = await runPubtool(["auth", "login"], {
      cwd: home,
      env: {
        PUBTOOL_GITHUB_URL: host.url,
        PUBTOOL_GITHUB_CLIENT_ID: "env-client",
        XDG_CONFIG_HOME: undefined,
      },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.ok(existsSync(join(home, ".config", "pubtool", "auth.json")));
  });

  it("an unknown client id is reported", async () => {
    const result = await runPubtool(["auth", "login", "--client-id", "nope"], {
      cwd: newHome(),
      env: { PUBTOOL_GITHUB_URL: host.url },
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /could not start the device flow: unknown client/);
  });
});

describe("auth login: where the token goes", { concurrency: true }, () => {
  it("without a client id: exit 2, says how to get one, contacts nobody", async () => {
    const quiet = await startServer((_request, response) => sendJson(response, 500, {}));
    try {
      const result = await runPubtool(["auth", "login"], {
        cwd: newHome(),
        env: { PUBTOOL_GITHUB_URL: quiet.url },
      });
      assert.equal(result.code, 2);
      assert.match(result.stderr, /no device-flow client id: register a GitHub App.*--client-id/);
      assert.equal(quiet.requests.length, 0);
    } finally {
      await quiet.close();
    }
  });

  it("a symlinked auth.json is replaced, not written through; the API base is recorded", async () => {
    const home = newHome();
    const dir = join(home, ".config", "pubtool");
    mkdirSync(dir, { recursive: true });
    const target = join(home, "victim.txt");
    writeFileSync(target, "do not touch\n");
    symlinkSync(target, join(dir, "auth.json"));
    const result = await runPubtool(["auth", "login", "--client-id", "env-client"], {
      cwd: home,
      env: { PUBTOOL_GITHUB_URL: host.url, PUBTOOL_GITHUB_API_URL: "http://127.0.0.1:7" },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(readFileSync(target, "utf8"), "do not touch\n");
    assert.ok(!lstatSync(join(dir, "auth.json")).isSymbolicLink());
    const stored = JSON.parse(readFileSync(join(dir, "auth.json"), "utf8")) as { api: string };
    assert.equal(stored.api, "http://127.0.0.1:7");
    assert.equal(statSync(join(dir, "auth.json")).mode & 0o777, 0o600);
  });
});
