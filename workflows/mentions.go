package workflows

import "github.com/lucy-agent/lucy/output"

// allowedMentions are the special mentions (<!channel>, <!here>, a user group) this run's posts may
// carry: those the requester's own message asked for. Everything the model writes may come from a
// page it read, so any other one is neutralized where Lucy posts. A sub-agent's task is the parent
// model's text, not the requester's: it follows the message its parent run answers (sub-agents do
// not delegate further, so the parent's message is the requester's). A scheduled
// job's message is its instruction, which its creator wrote. The list is a pure function of
// recorded input, so passing it in activity inputs changes no command.
func (r *run) allowedMentions() []string {
	text := r.in.Message.Text
	if r.sub != nil {
		text = r.sub.Run.Message.Text
	}
	return output.RequestedMentions(text)
}
