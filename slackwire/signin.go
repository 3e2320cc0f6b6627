package slackwire

// The Sign in button of a per-person sign-in (integrations/mcp/oauth): a URL button, which opens the
// provider's authorization URL in the clicker's browser and which Slack also delivers to the app
// as a block_actions interaction carrying the clicking user ("If you're using url, you'll still
// receive an interaction payload and will need to send an acknowledgment response",
// https://docs.slack.dev/reference/block-kit/block-elements/button-element). The gateway records
// that click against the link (its value is the link's state), which is how the callback knows who
// opened it (docs/security.md).
const (
	// SignInAction is the button's action_id.
	SignInAction = "lucy_sign_in"
	// SignInBlock is the block_id of the message's actions block.
	SignInBlock = "lucy_sign_in"
	// SignInMetadata is the event_type of the metadata on the message with the button: a retried
	// tool call finds the button it posted.
	SignInMetadata = "lucy_sign_in_request"
)
