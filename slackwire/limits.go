package slackwire

// Slack's limits on text, in characters (runes), as Slack counts them.
const (
	// MaxMessageChars is the most text one message may carry (chat.postMessage's text).
	MaxMessageChars = 40_000
	// MaxSectionChars is the most text a section block may carry.
	MaxSectionChars = 3_000
	// MaxBlocks is the most blocks one message may carry.
	MaxBlocks = 50
)

// personSubtypes are the message subtypes that are still a person saying something new. Every other
// subtype (message_changed, message_deleted, channel_join, bot_message, ...) is not.
var personSubtypes = map[string]bool{"": true, "file_share": true, "thread_broadcast": true, "me_message": true}

// IsPersonSubtype reports whether a message event of this subtype is a person saying something new:
// what may start or steer work.
func IsPersonSubtype(subtype string) bool { return personSubtypes[subtype] }

// IsContentSubtype reports whether a message of this subtype carries something someone said, a bot
// included: what a thread read back as context keeps.
func IsContentSubtype(subtype string) bool {
	return personSubtypes[subtype] || subtype == "bot_message"
}

// TaskUpdate is a task card as a stream's task_update chunk carries it (chat.startStream,
// appendStream, stopStream): Slack updates the card of an ID in place. Status is pending,
// in_progress, complete or error.
type TaskUpdate struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Status  string `json:"status,omitempty"`
	Details string `json:"details,omitempty"`
	Output  string `json:"output,omitempty"`
}
