import type { RequestKwargs } from "./types.js";

/** Smallest `max_tokens` DSPy lets through for OpenAI's reasoning models. */
export const REASONING_MIN_MAX_TOKENS = 16_000;

/**
 * Whether `model` names one of OpenAI's reasoning models as DSPy recognises them: o1, o3, o4, o5
 * (with -mini, -nano or -pro, and a date), and the gpt-5 family except gpt-5-chat. A provider
 * prefix (`openai/o3`) is ignored; case does not matter.
 */
export function isReasoningModel(model: string): boolean {
  const family = (model.split("/").pop() ?? "").toLowerCase();
  const oSeries = /^o[1345](-(mini|nano|pro))?(-\d{4}-\d{2}-\d{2})?$/;
  const gpt5 = /^gpt-5(-.*)?$/;
  return oSeries.test(family) || (gpt5.test(family) && !family.startsWith("gpt-5-chat"));
}

/**
 * The request arguments of a reasoning-model call: `max_tokens` becomes `max_completion_tokens`
 * (the API refuses `max_tokens` for these models), the call's limit winning over the defaults';
 * a temperature other than 1 or a limit under 16000 is refused, as DSPy refuses them.
 */
export function reasoningArguments(
  model: string,
  defaults: RequestKwargs,
  call: RequestKwargs,
): RequestKwargs {
  const callLimit = oneLimit(call);
  const merged: RequestKwargs = { ...defaults, ...call };
  const callClears = call.max_tokens === null || call.max_completion_tokens === null;
  const limit = callLimit ?? (callClears ? undefined : oneLimit(defaults));
  delete merged.max_tokens;
  delete merged.max_completion_tokens;
  if (limit !== undefined) merged.max_completion_tokens = limit;
  const temperature = merged.temperature ?? undefined;
  const tooFewTokens =
    limit !== undefined && (typeof limit !== "number" || limit < REASONING_MIN_MAX_TOKENS);
  if ((temperature !== undefined && temperature !== 1) || tooFewTokens) {
    throw new TypeError(
      `${model} is an OpenAI reasoning model: it requires temperature 1 or none and ` +
        `max_tokens >= ${REASONING_MIN_MAX_TOKENS} or none (as DSPy), got temperature ` +
        `${String(temperature ?? "none")} and max_tokens ${String(limit ?? "none")}; e.g. ` +
        `new CompatLM({ model: "${model}", temperature: 1, max_tokens: 16000 }).`,
    );
  }
  return merged;
}

/** The token limit of `kwargs`, given as `max_tokens` or `max_completion_tokens`. */
function oneLimit(kwargs: RequestKwargs): unknown {
  const tokens = kwargs.max_tokens ?? undefined;
  const completion = kwargs.max_completion_tokens ?? undefined;
  if (tokens !== undefined && completion !== undefined && tokens !== completion) {
    throw new TypeError(
      "pass max_tokens or max_completion_tokens, not both (they differ): reasoning models take " +
        "one limit, sent as max_completion_tokens.",
    );
  }
  return tokens ?? completion;
}
