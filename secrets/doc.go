// Package secrets keeps the credentials a team gives Lucy for its other tools (an API key, a bearer
// token, a mailbox password) so that none of them ever reaches the model, a workflow's history, a log,
// the Web UI or a Slack message.
//
//   - Store keeps each credential encrypted at rest (AES-256-GCM under LUCY_SECRETS_KEY) in Lucy's state
//     store, one object per team and service, so every worker and `lucy secrets` see the same keys.
//     Runs carry the service name only; the value is read inside the activity that uses it.
//   - RemovePasted takes a key someone pasted into a message out of it before the gateway hands the
//     message to Temporal.
//   - Scrub takes known secret values out of anything a tool returns or fails with.
//
// It is a leaf: the gateway (which stores what the Add key form submits), the tools that use a
// credential and the `lucy secrets` command all import it.
package secrets
