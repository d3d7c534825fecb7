import { describeAdapterConformance } from "@hub/conformance";
import { slackHarness } from "./harness.js";

// Events API over HTTP: the fake posts signed events to the hub's own server.
describeAdapterConformance("slack (Events API over HTTP)", () => slackHarness({ mode: "http" }));
