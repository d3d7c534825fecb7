import type { SlackBotIdentity } from "./normalize.js";

/** The envelope fields that say which installation of the app an event was sent for. */
export interface EventAddress {
  team_id?: string | null | undefined;
  enterprise_id?: string | null | undefined;
  is_ext_shared_channel?: boolean | undefined;
  authorizations?:
    | Array<{ team_id?: string | null | undefined; enterprise_id?: string | null | undefined }>
    | undefined;
}

/**
 * Why an event is not for this bot's workspace, or undefined when it is (or cannot be told). An app
 * installed in several workspaces gets all their events at one request URL, signed with one secret; this
 * hub holds one workspace's token, so an answer elsewhere would be posted with the wrong token. The
 * event's `authorizations` (the installation it was sent for) must name this workspace (or, on
 * Enterprise Grid, its organization); without them, the envelope's `team_id`. An event of a channel
 * shared between organizations (Slack Connect) may list the other side's installation only: it is kept.
 */
export function otherWorkspace(address: EventAddress, bot: SlackBotIdentity): string | undefined {
  if (!bot.teamId || address.is_ext_shared_channel) return undefined;
  const ours = (team: string | null | undefined, enterprise: string | null | undefined) =>
    team === bot.teamId || (!!bot.enterpriseId && enterprise === bot.enterpriseId);
  const installs = address.authorizations ?? [];
  if (installs.length > 0) {
    if (installs.some((a) => ours(a.team_id, a.enterprise_id))) return undefined;
    return `an event for another workspace (${installs[0]?.team_id ?? installs[0]?.enterprise_id ?? "unknown"})`;
  }
  if (!address.team_id || ours(address.team_id, address.enterprise_id)) return undefined;
  return `an event for another workspace (${address.team_id})`;
}
