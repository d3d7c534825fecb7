import { fileURLToPath } from "node:url";

/** The folder of the web chat's static files, served by the gateway at `/`. */
export const webRoot: string = fileURLToPath(new URL("../public", import.meta.url));
