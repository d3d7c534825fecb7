import { describeAdapterConformance } from "@hub/conformance";
import { whatsappHarness } from "./harness.js";

describeAdapterConformance("whatsapp", () => whatsappHarness());
