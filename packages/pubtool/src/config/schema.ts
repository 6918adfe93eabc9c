// zod's functional build (`zod/mini`): the same checks, issues and English messages as its
// chained API, but only what the schema uses is bundled; the chained API is most of zod, and
// the CLI's bundle compiled all of it at every start of `pubtool`.
import { en } from "zod/locales";
import * as z from "zod/mini";

z.config(en());

/** The registry kinds pubtool publishes to. */
export const REGISTRY_KINDS = ["rustreg", "pyreg", "jsreg"] as const;
export type RegistryKind = (typeof REGISTRY_KINDS)[number];

const nonEmptyString = () => z.string().check(z.minLength(1, "must not be empty"));

const bareFileName = z.string().check(
  z.minLength(1, "must not be empty"),
  z.refine((value) => !value.includes("/") && !value.includes("\\"), {
    message: 'must be a bare file name such as "release.yml", not a path',
  }),
  z.refine((value) => /\.ya?ml$/.test(value), {
    message: 'must name a workflow file ending in ".yml" or ".yaml"',
  }),
);

const trustPolicySchema = z.strictObject({
  workflow: bareFileName,
  environment: z.optional(nonEmptyString()),
  repository: z.optional(
    z.string().check(z.regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, 'must be "<owner>/<repo>"')),
  ),
});

const packageSchema = z.strictObject({
  name: nonEmptyString(),
  kind: z.enum(REGISTRY_KINDS, { message: 'must be "rustreg", "pyreg" or "jsreg"' }),
  path: z._default(nonEmptyString(), "."),
  paths: z.optional(z.array(nonEmptyString())),
  /** jsreg: the dist-tag a prerelease version is published under (`next` when not given). */
  dist_tag: z.optional(
    z.string().check(
      z.regex(/^(?!v?\d)[A-Za-z][A-Za-z0-9._-]*$/, {
        message: 'must be a dist-tag name such as "next", not a version',
      }),
    ),
  ),
  trust_policy: z.optional(trustPolicySchema),
});

/** The whole `pubtool.toml` file. */
export const configSchema = z.strictObject({
  package: z._default(
    z.array(
      packageSchema.check(
        z.refine((entry) => entry.dist_tag === undefined || entry.kind === "jsreg", {
          message: "only jsreg packages have dist-tags",
          path: ["dist_tag"],
        }),
      ),
    ),
    [],
  ),
});

export type TrustPolicy = z.infer<typeof trustPolicySchema>;
export type PackageEntry = z.infer<typeof packageSchema>;
export type ConfigFile = z.infer<typeof configSchema>;
