import { describeAdapterConformance } from "@hub/conformance";
import { telegramHarness } from "./harness.js";

describeAdapterConformance("telegram", () => telegramHarness());
describeAdapterConformance("telegram (webhook)", () => telegramHarness({ webhook: true }));
