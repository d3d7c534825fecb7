// The account lease is the core's connection lease (one hub process holds a single-holder
// connection); the hub builds it on its Redis and hands it to the plugin (`ChannelPluginDeps.lease`).
export type { AccountLease } from "@hub/core";
