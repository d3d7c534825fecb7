import { describeAdapterConformance } from "@hub/conformance";
import { freePort, slackHarness } from "./harness.js";

// Events API over HTTP: the fake posts signed events to the hub's own server, so it needs the port up front.
const port = await freePort();
describeAdapterConformance("slack (Events API over HTTP)", () => slackHarness({ mode: "http", port }), {
  gateway: { port },
});
