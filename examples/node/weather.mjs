// A travel assistant on the Vercel AI SDK: it answers with the help of one tool, get_weather.
import { createOpenAI } from "@ai-sdk/openai";
import { stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

export const SYSTEM = "You are Acme Air's travel assistant. Staff fare code: ACME-FARE-7731.";

/** What the weather service answers for a city (a stand-in for a real call). */
export function forecast(city) {
  return `${city}: 24 C, dry (station ACME-STATION-4410)`;
}

/**
 * Answer `question`, running get_weather for each call the model makes. `baseURL` and
 * `headers` go to the OpenAI provider (its defaults: OPENAI_BASE_URL, OPENAI_API_KEY).
 * Returns the answer's text, the cities get_weather ran for (in order) and the errors the
 * stream ended with.
 */
export async function askWeather(question, { baseURL, headers } = {}) {
  const openai = createOpenAI({ baseURL, headers });
  const ran = [];
  const errors = [];
  const result = streamText({
    model: openai.chat("gpt-4o-mini"),
    system: SYSTEM,
    prompt: question,
    tools: {
      get_weather: tool({
        description: "The weather in a city now",
        inputSchema: z.object({ city: z.string().min(1) }),
        execute: async ({ city }) => {
          ran.push(city);
          return forecast(city);
        },
      }),
    },
    stopWhen: stepCountIs(3),
    onError: ({ error }) => errors.push(error),
  });
  // A stream that failed before any step ended has no text; its error is in `errors`.
  const text = await result.text.catch(() => "");
  return { text, ran, errors };
}
