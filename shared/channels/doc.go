// Package channels is agents' connections to messaging platforms (Slack, Telegram, WhatsApp,
// Discord): a connection per agent and platform account with its credentials sealed, the
// platform's webhook calls turned into chat turns of the agent, and its answers sent back
// through the platform's API. The platforms themselves are adapters (shared/adapters/channels)
// behind Platform.
package channels
