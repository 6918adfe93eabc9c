import { z } from "zod";

/** The registry kinds pubtool publishes to. */
export const REGISTRY_KINDS = ["rustreg", "pyreg", "jsreg"] as const;
export type RegistryKind = (typeof REGISTRY_KINDS)[number];

const bareFileName = z
  .string()
  .min(1, "must not be empty")
  .refine((value) => !value.includes("/") && !value.includes("\\"), {
    message: 'must be a bare file name such as "release.yml", not a path',
  })
  .refine((value) => /\.ya?ml$/.test(value), {
    message: 'must name a workflow file ending in ".yml" or ".yaml"',
  });

const trustPolicySchema = z.strictObject({
  workflow: bareFileName,
  environment: z.string().min(1, "must not be empty").optional(),
  repository: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, 'must be "<owner>/<repo>"')
    .optional(),
});

const packageSchema = z.strictObject({
  name: z.string().min(1, "must not be empty"),
  kind: z.enum(REGISTRY_KINDS, { message: 'must be "rustreg", "pyreg" or "jsreg"' }),
  path: z.string().min(1, "must not be empty").default("."),
  paths: z.array(z.string().min(1, "must not be empty")).optional(),
  /** jsreg: the dist-tag a prerelease version is published under (`next` when not given). */
  dist_tag: z
    .string()
    .regex(/^(?!v?\d)[A-Za-z][A-Za-z0-9._-]*$/, {
      message: 'must be a dist-tag name such as "next", not a version',
    })
    .optional(),
  trust_policy: trustPolicySchema.optional(),
});

/** The whole `pubtool.toml` file. */
export const configSchema = z.strictObject({
  package: z
    .array(
      packageSchema.refine((entry) => entry.dist_tag === undefined || entry.kind === "jsreg", {
        message: "only jsreg packages have dist-tags",
        path: ["dist_tag"],
      }),
    )
    .default([]),
});

export type TrustPolicy = z.infer<typeof trustPolicySchema>;
export type PackageEntry = z.infer<typeof packageSchema>;
export type ConfigFile = z.infer<typeof configSchema>;
