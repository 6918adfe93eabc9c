import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import {
  type FakeServer,
  makeTree,
  removeTree,
  runPubtool,
  sendJson,
  startServer,
  writeTree,
} from "./helpers.js";

const trees: string[] = [];
let api: FakeServer;

const page = (names: string[]) => ({
  total_count: names.length,
  secrets: names.map((name) => ({
    name,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-02-01T00:00:00Z",
  })),
});

before(async () => {
  api = await startServer((request, response, base) => {
    if (request.headers.authorization !== "Bearer gho_good")
      return sendJson(response, 401, { message: "Bad credentials" });
    const url = new URL(request.url, base);
    const pageNumber = url.searchParams.get("page") ?? "1";
    switch (url.pathname) {
      case "/repos/acme/demo/actions/secrets":
        if (pageNumber === "1") {
          return sendJson(
            response,
            200,
            page(["CARGO_REGISTRY_TOKEN", "SLACK_WEBHOOK", "PYPI_API_TOKEN"]),
            {
              link: `<${base}/repos/acme/demo/actions/secrets?per_page=100&page=2>; rel="next", <${base}/repos/acme/demo/actions/secrets?per_page=100&page=2>; rel="last"`,
            },
          );
        }
        return sendJson(response, 200, page(["JSREG_TOKEN", "DEPLOY_KEY"]));
      case "/repos/acme/private/actions/secrets":
        return sendJson(
          response,
          200,
          page([
            "CARGO_RELEASE_TOKEN",
            "PROD_PYPI_KEY",
            "NPM_PUBLISH_SECRET",
            "CARGO_VERSION",
            "UV_PUBLISH_TOKEN",
          ]),
        );
      case "/repos/acme/private/environments":
        return sendJson(response, 404, { message: "Not Found" });
      case "/repos/acme/demo/environments":
        return sendJson(response, 200, {
          total_count: 2,
          environments: [{ name: "release" }, { name: "staging" }],
        });
      case "/repos/acme/demo/environments/release/secrets":
        return sendJson(response, 200, page(["RUST_REGISTRY_TOKEN", "NPM_TOKEN"]));
      case "/repos/acme/demo/environments/staging/secrets":
        return sendJson(response, 200, page(["OTHER"]));
      default:
        return sendJson(response, 404, { message: "Not Found" });
    }
  });
});
after(async () => {
  await api.close();
  trees.forEach(removeTree);
});

function home(loggedIn: boolean, token = "gho_good", apiUrl = api.url): string {
  const root = makeTree({});
  trees.push(root);
  if (loggedIn) {
    writeTree(root, {
      ".config/pubtool/auth.json": JSON.stringify({
        host: "http://127.0.0.1",
        api: apiUrl,
        client_id: "y",
        access_token: token,
        token_type: "bearer",
        scope: "",
        created_at: "now",
      }),
    });
  }
  return root;
}

const SECRET_VALUES = {
  RUST_REGISTRY_TOKEN: "cioAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
  PYREG_API_TOKEN: "",
  JSREG_TOKEN: "npm_BBBBBBBBBBBBBBBBBBBBBBBBBBBB",
  RUSTREG_DOCTOR_TOKEN: "plain-secret-value",
};

function assertNoValues(text: string) {
  for (const value of Object.values(SECRET_VALUES).filter(Boolean))
    assert.ok(!text.includes(value), "a secret value was printed");
  assert.ok(!text.includes("gho_good"));
}

describe("token list", { concurrency: true }, () => {
  it("scans the environment; empty variables are unset; values are never printed", async () => {
    const root = home(false);
    const result = await runPubtool(["token", "list"], { cwd: root, env: SECRET_VALUES });
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.trimEnd().split("\n");
    assert.match(lines[0] ?? "", /^REGISTRY +SOURCE +ENV\/NAME +DETAILS$/);
    assert.equal(lines.length, 4);
    assert.match(
      result.stdout,
      /^rustreg +env +RUST_REGISTRY_TOKEN +publish fallback; set, 36 chars, rustreg API token format \(cio prefix\)$/m,
    );
    assert.match(
      result.stdout,
      /^rustreg +env +RUSTREG_DOCTOR_TOKEN +doctor read token; set, 18 chars$/m,
    );
    assert.match(
      result.stdout,
      /^jsreg +env +JSREG_TOKEN +publish fallback \(alternative name\); set, 32 chars, jsreg/m,
    );
    assert.doesNotMatch(result.stdout, /PYREG_API_TOKEN/);
    assertNoValues(result.stdout + result.stderr);
  });

  it("an empty environment prints only the header", async () => {
    const result = await runPubtool(["token", "list"], { cwd: home(false) });
    assert.equal(result.code, 0);
    assert.equal(result.stdout, "REGISTRY  SOURCE  ENV/NAME  DETAILS\n");
  });

  it("--secrets without a login: a one-line note, the environment rows, exit 0", async () => {
    const root = home(false);
    const result = await runPubtool(["token", "list", "--secrets"], {
      cwd: root,
      env: { ...SECRET_VALUES, GITHUB_REPOSITORY: "acme/demo", PUBTOOL_GITHUB_API_URL: api.url },
    });
    assert.equal(result.code, 0);
    assert.equal(
      result.stderr,
      "note: not logged in; run `pubtool auth login` to list repository and environment secrets\n",
    );
    assert.match(result.stdout, /RUST_REGISTRY_TOKEN/);
  });

  it("--secrets lists matching repository and environment secret names across pages", async () => {
    const root = home(true);
    const result = await runPubtool(["token", "list", "--secrets"], {
      cwd: root,
      env: { ...SECRET_VALUES, GITHUB_REPOSITORY: "acme/demo", PUBTOOL_GITHUB_API_URL: api.url },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /^rustreg +repo-secret +CARGO_REGISTRY_TOKEN +acme\/demo, updated 2026-02-01T00:00:00Z$/m,
    );
    assert.match(result.stdout, /^pyreg +repo-secret +PYPI_API_TOKEN /m);
    assert.match(result.stdout, /^jsreg +repo-secret +JSREG_TOKEN /m, "second page");
    assert.match(
      result.stdout,
      /^rustreg +environment-secret +release\/RUST_REGISTRY_TOKEN +acme\/demo, environment release/m,
    );
    assert.match(result.stdout, /^jsreg +environment-secret +release\/NPM_TOKEN /m);
    assert.doesNotMatch(result.stdout, /SLACK_WEBHOOK|DEPLOY_KEY|OTHER/);
    assertNoValues(result.stdout + result.stderr);
  });

  it("--secrets finds the repository from the git remote", async () => {
    const root = home(true);
    execFileSync("git", ["init", "-q"], { cwd: root });
    execFileSync("git", ["remote", "add", "origin", "git@github.com:acme/demo.git"], { cwd: root });
    const result = await runPubtool(["token", "list", "--secrets"], {
      cwd: root,
      env: { PUBTOOL_GITHUB_API_URL: api.url },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /repo-secret +CARGO_REGISTRY_TOKEN/);
  });

  it("--secrets with a rejected login (401): a note, the environment rows, exit 1", async () => {
    const root = home(true, "gho_revoked");
    const result = await runPubtool(["token", "list", "--secrets"], {
      cwd: root,
      env: { ...SECRET_VALUES, GITHUB_REPOSITORY: "acme/demo", PUBTOOL_GITHUB_API_URL: api.url },
    });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /^note: secrets not listed: the workflow host rejected the stored login \(HTTP 401\); run pubtool auth login again\n$/,
    );
    assert.match(result.stdout, /env +RUST_REGISTRY_TOKEN/);
    assert.ok(!(result.stdout + result.stderr).includes("gho_revoked"));
  });
});

describe("token list: binding, remotes, inventory", { concurrency: true }, () => {
  it("the stored login is not sent to another API base", async () => {
    const other = await startServer((_request, response) =>
      sendJson(response, 200, { secrets: [] }),
    );
    try {
      const result = await runPubtool(["token", "list", "--secrets"], {
        cwd: home(true),
        env: { GITHUB_REPOSITORY: "acme/demo", PUBTOOL_GITHUB_API_URL: other.url },
      });
      assert.equal(result.code, 1);
      assert.match(
        result.stderr,
        /the stored login belongs to http:\/\/127\.0\.0\.1:\d+, not http:\/\/127\.0\.0\.1:\d+ \(PUBTOOL_GITHUB_API_URL\); it is not sent there/,
      );
      assert.equal(other.requests.length, 0);
    } finally {
      await other.close();
    }
  });

  it("a non-GitHub origin remote names no repository on the workflow host", async () => {
    const github = await startServer((_request, response) =>
      sendJson(response, 200, { secrets: [] }),
    );
    try {
      const root = home(true, "gho_good", github.url);
      execFileSync("git", ["init", "-q"], { cwd: root });
      execFileSync("git", ["remote", "add", "origin", "git@gitlab.com:acme/demo.git"], {
        cwd: root,
      });
      const result = await runPubtool(["token", "list", "--secrets"], {
        cwd: root,
        env: { PUBTOOL_GITHUB_API_URL: github.url },
      });
      assert.equal(result.code, 1);
      assert.match(
        result.stderr,
        /the origin remote is on gitlab\.com, not on the workflow host; set GITHUB_REPOSITORY/,
      );
      assert.equal(github.requests.length, 0);
    } finally {
      await github.close();
    }
  });

  it("CARGO_RELEASE_TOKEN-style names, a 404 on the environments list, and the tools' own variables", async () => {
    const result = await runPubtool(["token", "list", "--secrets"], {
      cwd: home(true),
      env: {
        GITHUB_REPOSITORY: "acme/private",
        PUBTOOL_GITHUB_API_URL: api.url,
        CARGO_REGISTRY_TOKEN: "cio_env_value",
        CARGO_REGISTRIES_MIRROR_TOKEN: "mirror-value",
        TWINE_PASSWORD: "pypi-twine-value",
        UV_PUBLISH_TOKEN: "pypi-uv-value",
        POETRY_PYPI_TOKEN_PYPI: "pypi-poetry-value",
        NODE_AUTH_TOKEN: "npm_node_auth_value",
      },
    });
    assert.equal(result.code, 0, result.stderr);
    for (const [registry, name] of [
      ["rustreg", "CARGO_RELEASE_TOKEN"],
      ["pyreg", "PROD_PYPI_KEY"],
      ["jsreg", "NPM_PUBLISH_SECRET"],
      ["pyreg", "UV_PUBLISH_TOKEN"],
    ]) {
      assert.match(result.stdout, new RegExp(`^${registry} +repo-secret +${name} `, "m"));
    }
    assert.doesNotMatch(result.stdout, /CARGO_VERSION/);
    for (const [registry, name] of [
      ["rustreg", "CARGO_REGISTRY_TOKEN"],
      ["rustreg", "CARGO_REGISTRIES_MIRROR_TOKEN"],
      ["pyreg", "TWINE_PASSWORD"],
      ["pyreg", "UV_PUBLISH_TOKEN"],
      ["pyreg", "POETRY_PYPI_TOKEN_PYPI"],
      ["jsreg", "NODE_AUTH_TOKEN"],
    ]) {
      assert.match(result.stdout, new RegExp(`^${registry} +env +${name} `, "m"));
    }
    assert.ok(!/value/.test(result.stdout.replace(/DETAILS/, "")), result.stdout);
  });
});

describe(
  "token list --secrets: where the login goes, and why the host refused",
  {
    concurrency: true,
  },
  () => {
    it("a next-page link to another host is not followed and the login is not sent there", async () => {
      const elsewhere = await startServer((_request, response) =>
        sendJson(response, 200, page(["STOLEN_TOKEN"])),
      );
      const github = await startServer((request, response, base) => {
        const url = new URL(request.url, base);
        if (url.pathname === "/repos/acme/demo/actions/secrets") {
          // Same host name, another port: a different origin.
          return sendJson(response, 200, page(["CARGO_REGISTRY_TOKEN"]), {
            link: `<${elsewhere.url}/repos/acme/demo/actions/secrets?page=2>; rel="next"`,
          });
        }
        return sendJson(response, 404, { message: "Not Found" });
      });
      try {
        const result = await runPubtool(["token", "list", "--secrets"], {
          cwd: home(true, "gho_good", github.url),
          env: { GITHUB_REPOSITORY: "acme/demo", PUBTOOL_GITHUB_API_URL: github.url },
        });
        assert.equal(result.code, 1);
        assert.equal(elsewhere.requests.length, 0, "the other host was asked");
        assert.match(
          result.stderr,
          new RegExp(
            `next-page link points to ${elsewhere.url.replaceAll(".", "\\.")}, not to the configured API base ${github.url.replaceAll(".", "\\.")}; stopped there without sending the stored login`,
          ),
        );
        assert.ok(!result.stderr.includes("/repos/acme/demo/actions/secrets?page=2"));
        assert.ok(!(result.stdout + result.stderr).includes("gho_good"));
      } finally {
        await Promise.all([elsewhere.close(), github.close()]);
      }
    });

    it("a next-page link on the API base, also an API base with a path, is followed", async () => {
      const github = await startServer((request, response, base) => {
        const url = new URL(request.url, base);
        if (url.pathname === "/api/v3/repos/acme/demo/actions/secrets") {
          if (url.searchParams.get("page") === "2")
            return sendJson(response, 200, page(["NPM_TOKEN"]));
          return sendJson(response, 200, page(["CARGO_REGISTRY_TOKEN"]), {
            link: `<${base}/api/v3/repos/acme/demo/actions/secrets?page=2>; rel="next"`,
          });
        }
        if (url.pathname === "/api/v3/repos/acme/demo/environments")
          return sendJson(response, 200, { environments: [] });
        return sendJson(response, 404, { message: "Not Found" });
      });
      try {
        const api = `${github.url}/api/v3`;
        const result = await runPubtool(["token", "list", "--secrets"], {
          cwd: home(true, "gho_good", api),
          env: { GITHUB_REPOSITORY: "acme/demo", PUBTOOL_GITHUB_API_URL: api },
        });
        assert.equal(result.code, 0, result.stderr);
        assert.match(result.stdout, /repo-secret +NPM_TOKEN/);
      } finally {
        await github.close();
      }
    });

    it("a 403 says whether it is the rate limit or a missing permission, in GitHub's words", async () => {
      const github = await startServer((request, response) => {
        if (request.url.startsWith("/repos/acme/limited/")) {
          return sendJson(
            response,
            403,
            { message: "API rate limit exceeded for user ID 1." },
            { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1893456000" },
          );
        }
        return sendJson(response, 403, { message: "Resource not accessible by integration" });
      });
      try {
        const limited = await runPubtool(["token", "list", "--secrets"], {
          cwd: home(true, "gho_good", github.url),
          env: { GITHUB_REPOSITORY: "acme/limited", PUBTOOL_GITHUB_API_URL: github.url },
        });
        assert.equal(limited.code, 1);
        assert.match(
          limited.stderr,
          /rate limit is exhausted \(HTTP 403: API rate limit exceeded for user ID 1\.\); the limit resets at 2030-01-01T00:00:00\.000Z/,
        );
        const denied = await runPubtool(["token", "list", "--secrets"], {
          cwd: home(true, "gho_good", github.url),
          env: { GITHUB_REPOSITORY: "acme/demo", PUBTOOL_GITHUB_API_URL: github.url },
        });
        assert.equal(denied.code, 1);
        assert.match(
          denied.stderr,
          /refused access \(HTTP 403: Resource not accessible by integration\); the stored login needs read access/,
        );
        assert.doesNotMatch(denied.stderr, /rate limit/);
      } finally {
        await github.close();
      }
    });
  },
);
