// Run through callgate's tapes: `callgate tape run tapes -- node --test` (npm test).
import assert from "node:assert/strict";
import { test } from "node:test";
import { askWeather } from "../weather.mjs";

/** The base URL of tape `name`: the folder tapes/<name>/. */
const tape = (name) => `${process.env.CALLGATE_TAPE_URL}/t/${name}/v1`;
const QUESTION = "Paris or Oslo this weekend? My booking is ACME-BOOKING-2208.";

test("the assistant looks up both cities, then answers", async () => {
  const { text, ran, errors } = await askWeather(QUESTION, { baseURL: tape("weather") });
  // First, so that a request the tape does not hold fails with the tape's line.
  assert.deepEqual(
    errors.map((error) => error.message),
    [],
  );
  assert.deepEqual(ran, ["Paris", "Oslo"]);
  assert.equal(text, "Paris is sunny; Oslo has rain.");
});

// The same tape served as a fault: the Oslo call streamed on the Paris call's index. ai 7
// merges both into one call whose arguments do not parse, runs get_weather for neither city and
// sends the model the tool error; the recorded script ends at the fault, so that follow-up gets
// the provider's error and the answer is empty.
test("a reused index runs no tool and ends the answer with an error", async () => {
  const headers = { "x-callgate-mutate": "reuse_slot" };
  const { text, ran, errors } = await askWeather(QUESTION, { baseURL: tape("weather"), headers });
  assert.deepEqual(ran, []);
  assert.equal(text, "");
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /^callgate tape: request 2 came after the fault reuse_slot/);
});
