import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { DIRQ_BIN, makeTree, removeTree, runDirq } from "./helpers.js";

const exec = promisify(execFile);
const REPO = fileURLToPath(new URL("../../../..", import.meta.url));
const PYTHON_SOURCE = join(REPO, "python");
const NODE_DIR = dirname(process.execPath);
/** Docs whose ```python blocks must each be a whole example file (python/examples/*.py). */
const DOCS = [
  join(REPO, "packages", "dirq", "docs", "python.md"),
  join(PYTHON_SOURCE, "README.md"),
];

/**
 * Debian's python3 with venv, setuptools and wheel (as for the launcher's tests), and pytest and
 * mypy (python3-pytest, python3-mypy: `npm test` installs them when missing), seen from the venv
 * through --system-site-packages. Another interpreter: DIRQ_TEST_PYTHON.
 */
const PYTHON =
  process.env.DIRQ_TEST_PYTHON ?? (existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3");

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The Python SDK (`import dirq`) installed as a user installs it: a wheel built from python/,
 * installed into a fresh venv, driving the built CLI (DIRQ_BIN, the launcher's first choice)
 * in a real child process. Its own tests (python/tests, pytest) run there, then every example
 * the docs show, compared with its expected output, then mypy --strict on a consumer.
 */
describe("Python SDK, installed from its wheel in a venv", { timeout: 600_000 }, () => {
  let work: string;
  let python: string;
  let env: NodeJS.ProcessEnv;

  async function run(args: string[], cwd: string = work): Promise<Outcome> {
    try {
      const { stdout, stderr } = await exec(python, args, { cwd, env, maxBuffer: 1 << 24 });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  before(async () => {
    work = mkdtempSync(join(tmpdir(), "dirq-python-sdk-"));
    await exec(PYTHON, ["-m", "venv", "--system-site-packages", join(work, "venv")]);
    python = join(work, "venv", "bin", "python");
    // pip builds in the folder it is given: a copy keeps build output out of the checkout.
    const source = join(work, "source");
    cpSync(PYTHON_SOURCE, source, {
      recursive: true,
      filter: (path) =>
        !["build", "dist", "__pycache__"].includes(basename(path)) && !path.endsWith(".egg-info"),
    });
    const pip = ["-m", "pip", "--disable-pip-version-check", "-q"];
    const offline = ["--no-index", "--no-build-isolation", "--no-deps"];
    await exec(python, [...pip, "wheel", ...offline, "-w", join(work, "wheels"), source]);
    const [wheel] = readdirSync(join(work, "wheels")).filter((name) => name.endsWith(".whl"));
    assert.ok(wheel, "pip built no wheel");
    await exec(python, [...pip, "install", ...offline, join(work, "wheels", wheel)]);
    for (const folder of ["tests", "examples"]) {
      cpSync(join(PYTHON_SOURCE, folder), join(work, folder), { recursive: true });
    }
    env = {
      ...process.env,
      PATH: [join(work, "venv", "bin"), NODE_DIR, process.env.PATH ?? ""].join(":"),
      DIRQ_BIN,
      DIRQ_PROGRESS: "never",
      PYTHONDONTWRITEBYTECODE: "1",
    };
  });
  after(() => removeTree(work));

  test("import dirq is the installed wheel's, with py.typed", async () => {
    const where = await run(["-c", "import dirq, os; print(os.path.dirname(dirq.__file__))"]);
    assert.equal(where.code, 0, where.stderr);
    assert.ok(where.stdout.startsWith(join(work, "venv")), where.stdout);
    assert.ok(existsSync(join(where.stdout.trim(), "py.typed")));
  });

  test("the SDK's own tests pass (pytest, real files, a real child)", async () => {
    const pytest = await run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]);
    const summary = `${pytest.stdout}\n${pytest.stderr}`;
    assert.doesNotMatch(summary, /No module named pytest/, "install pytest: python3-pytest");
    assert.equal(pytest.code, 0, summary);
    const passed = Number(/(\d+) passed/.exec(pytest.stdout)?.[1] ?? 0);
    assert.ok(passed >= 10, pytest.stdout);
    assert.doesNotMatch(pytest.stdout, /failed|error/i);
  });

  test("every ```python block of the docs is a whole example file", () => {
    const examples = readdirSync(join(PYTHON_SOURCE, "examples")).filter((name) =>
      name.endsWith(".py"),
    );
    const sources = examples.map((name) =>
      readFileSync(join(PYTHON_SOURCE, "examples", name), "utf8"),
    );
    const shown = new Set<string>();
    for (const doc of DOCS) {
      for (const [, block] of readFileSync(doc, "utf8").matchAll(/```python\n([\s\S]*?)```/g)) {
        assert.ok(sources.includes(block ?? ""), `${doc}: not an example file:\n${block}`);
        shown.add(block ?? "");
      }
    }
    assert.ok(examples.length >= 4, examples.join(", "));
    assert.equal(shown.size, examples.length, "the docs show every example");
  });

  for (const name of readdirSync(join(PYTHON_SOURCE, "examples")).filter((file) =>
    file.endsWith(".py"),
  )) {
    test(`examples/${name} prints what ${name.replace(".py", ".expected.txt")} holds`, async () => {
      const expected = readFileSync(
        join(PYTHON_SOURCE, "examples", name.replace(".py", ".expected.txt")),
        "utf8",
      );
      const ran = await run([join("examples", name)]);
      assert.equal(ran.code, 0, ran.stderr);
      assert.equal(ran.stderr, "");
      assert.equal(ran.stdout, expected);
    });
  }

  test("mypy --strict: a consumer is clean, and misuse is caught", async () => {
    const misuse = join(work, "misuse.py");
    writeFileSync(
      misuse,
      [
        "import dirq",
        'db = dirq.open(".")',
        'count: int = db.query("SELECT 1")',
        'dirq.Table("t", "*.x", format="xml")',
        "",
      ].join("\n"),
    );
    // One run checks both files (mypy's start and the standard library's stubs are most of
    // its time): every error it reports must be the misuse's.
    const checked = await run([
      "-m",
      "mypy",
      "--strict",
      "--no-incremental",
      "tests/typing_consumer.py",
      misuse,
    ]);
    assert.doesNotMatch(checked.stderr, /No module named mypy/, "install mypy: python3-mypy");
    assert.equal(checked.code, 1, `${checked.stdout}${checked.stderr}`);
    const elsewhere = checked.stdout
      .split("\n")
      .filter((line) => /: error: /.test(line) && !/misuse\.py:\d+: /.test(line));
    assert.deepEqual(elsewhere, [], "the consumer is clean");
    assert.match(checked.stdout, /misuse\.py:3: error: Incompatible types in assignment/);
    assert.match(checked.stdout, /misuse\.py:4: error: Argument "format" to "Table"/);
  });
});

describe("dirq sdk-stdio from the command line", () => {
  const tree = makeTree({});
  after(() => removeTree(tree));

  test("stdin ending at once is a clean exit; text instead of frames is one clear error", async () => {
    const ended = await runDirq(["sdk-stdio"], { cwd: tree });
    assert.deepEqual(ended, { code: 0, stdout: "", stderr: "" });
    const typed = await runDirq(["sdk-stdio"], { cwd: tree, input: "SELECT 1;\n" });
    assert.equal(typed.code, 1);
    assert.equal(typed.stdout, "");
    assert.match(
      typed.stderr,
      /^dirq: sdk-stdio: a frame's header of \d+ bytes is not a request: stdin is for the dirq SDKs' frames \(docs\/python\.md\)\n$/,
    );
    const extra = await runDirq(["sdk-stdio", "-c", "x.toml"], { cwd: tree });
    assert.equal(extra.code, 1);
    assert.match(extra.stderr, /unexpected argument '-c' for dirq sdk-stdio/);
  });

  test("it is not in dirq --help", async () => {
    const help = await runDirq(["--help"], { cwd: tree });
    assert.equal(help.code, 0);
    assert.doesNotMatch(help.stdout, /sdk-stdio/);
  });
});
